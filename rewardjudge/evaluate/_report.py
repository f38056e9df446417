"""Reports on a finished evaluation: summary, histogram, paired comparison.

Means, medians and bootstrap intervals (fixed seed) are over valued rows (``scored`` and
``penalized``); ``unscored`` rows are counted, never averaged. Label verdicts are counted per
label; a label-only run has no mean (see docs/evaluation.md).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ConfigError
from ..grade import STATUSES, Grade
from ._journal import STATUS_CODES

__all__ = ["Comparison", "RunStats", "Summary", "SummaryBuilder", "bootstrap_ci", "compare", "grade_label",
           "save_histogram", "summarize"]


#: more distinct values than this are resampled as this many equal-count quantile bins
BOOTSTRAP_SUPPORT = 2048


def _support(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, counts) of ``x``; past ``BOOTSTRAP_SUPPORT`` of them, (means, sizes) of equal-count bins."""
    uniq, counts = np.unique(x, return_counts=True)
    if uniq.size <= BOOTSTRAP_SUPPORT:
        return uniq, counts
    xs = np.sort(x)
    edges = np.linspace(0, xs.size, BOOTSTRAP_SUPPORT + 1).astype(np.int64)
    sizes = np.diff(edges)
    sums = np.add.reduceat(xs, edges[:-1])
    return sums / sizes, sizes


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, confidence: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; (nan, nan) for no values.

    Resamples as a multinomial over the distinct values (cost ``n_boot`` x distinct values, not x
    ``n``); past ``BOOTSTRAP_SUPPORT`` distinct values, over that many equal-count quantile bins.
    """
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    support, counts = _support(x)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    block = max(1, min(n_boot, 1_000_000 // support.size))  # bound the draws held at once
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        draws = rng.multinomial(x.size, counts / x.size, size=stop - start)
        means[start:stop] = draws @ support / x.size
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def _grade_dict(g: Grade | Mapping[str, Any]) -> Mapping[str, Any]:
    return g.to_dict() if isinstance(g, Grade) else g


#: verdict fields read as a label, first match wins (see ``grade_label``)
LABEL_FIELDS = ("label", "verdict", "score", "grade", "decision")


def _as_label(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and v.strip():
        return v.strip()
    return None


def grade_label(grade: Grade | Mapping[str, Any]) -> str | None:
    """The label of a scored grade's label-valued verdict, or None.

    First match in ``extra``: ``label``, then ``verdict`` when a string or bool, then the first
    string or bool among the verdict object's ``LABEL_FIELDS``. Numeric verdicts have no label.

    >>> grade_label(Grade(value=1.0, grader_key="g", extra={"verdict": {"reasoning": "ok", "score": "PASS"}}))
    'PASS'
    >>> grade_label(Grade(value=0.6, grader_key="g", extra={"verdict": {"reasoning": "ok", "score": 4}})) is None
    True
    """
    g = _grade_dict(grade)
    if g.get("status", "scored" if g.get("value") is not None else "unscored") != "scored":
        return None
    extra = g.get("extra") or {}
    if not isinstance(extra, Mapping):
        return None
    verdict = extra.get("verdict")
    fields = [verdict.get(k) for k in LABEL_FIELDS] if isinstance(verdict, Mapping) else [verdict]
    return next((lab for lab in map(_as_label, [extra.get("label"), *fields]) if lab is not None), None)


@dataclass
class Summary:
    """What a run produced; ``labels`` counts scored rows per ``grade_label`` (``label_shares``: shares)."""

    n: int
    counts: dict[str, int]
    mean: float | None
    ci: tuple[float, float] | None
    confidence: float
    mean_scored: float | None
    latency_s: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    grader_key: str | None = None
    grader_version: str | None = None
    errors: dict[str, int] = field(default_factory=dict)
    p50: float | None = None
    labels: dict[str, int] = field(default_factory=dict)
    label_shares: dict[str, float] = field(default_factory=dict)
    labels_only: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        lines = [f"rows: {self.n}  " + "  ".join(f"{s}: {self.counts.get(s, 0)}" for s in STATUSES)]
        if self.labels_only:
            lines.append("mean value: none (label-only verdicts: a categorical scorer without values "
                         "is counted by label)")
        elif self.mean is not None:
            ci = f" [{self.ci[0]:.4f}, {self.ci[1]:.4f}] ({self.confidence:.0%} bootstrap CI)" if self.ci else ""
            lines.append(f"mean value: {self.mean:.4f}{ci} over {self.n - self.counts.get('unscored', 0)} valued rows")
            lines.append(f"median (p50) value: {self.p50:.4f}")
        else:
            lines.append("mean value: n/a (no valued rows)")
        if self.mean_scored is not None:
            lines.append(f"mean of scored rows only: {self.mean_scored:.4f}")
        if self.labels:
            lines.append("labels: " + "  ".join(f"{lab}: {k}" for lab, k in self.labels.items()))
            lines.append("label shares: " + "  ".join(f"{lab}: {self.label_shares.get(lab, 0.0):.1%}"
                                                      for lab in self.labels))
        if self.latency_s:
            lat = self.latency_s
            lines.append(f"judge latency per row: mean {lat['mean']:.3f}s  p50 {lat['p50']:.3f}s  "
                         f"p95 {lat['p95']:.3f}s")
        if self.tokens:
            lines.append("tokens: " + "  ".join(f"{k} {v}" for k, v in sorted(self.tokens.items())))
        lines.append(f"judge requests (attempts): {self.attempts}")
        if self.errors:
            top = sorted(self.errors.items(), key=lambda kv: -kv[1])[:5]
            lines.append("most common unscored reasons:")
            lines += [f"  {n:>6}  {reason}" for reason, n in top]
        return "\n".join(lines)


_MAX_ERROR_KINDS = 1000  # distinct unscored reasons kept; the rest count under "other"


class SummaryBuilder:
    """A ``Summary`` built in one pass, ``add`` a grade at a time, then ``summary()``.

    Holds counters and per row its value (float64) and latency (float32): 12 bytes a row.
    ``capacity`` preallocates them (the row count, when known).
    """

    def __init__(self, capacity: int = 1024):
        self.n = self.attempts = 0
        self.counts = Counter(dict.fromkeys(STATUSES, 0))
        self.labels, self.tokens, self.errors = Counter(), Counter(), Counter()
        self.keys: set[Any] = set()
        self.versions: set[Any] = set()
        self.labels_only = False
        self._values = np.empty(max(1, capacity))
        self._status = np.empty(max(1, capacity), dtype=np.int8)
        self._nv = 0
        self._lat = np.empty(max(1, capacity), dtype=np.float32)
        self._nl = 0

    def _grow(self, name: str, used: int) -> np.ndarray:
        arr = getattr(self, name)
        if used == arr.size:
            arr = np.resize(arr, arr.size * 2)
            setattr(self, name, arr)
        return arr

    def add(self, grade: Grade | Mapping[str, Any], label: str | None = None) -> None:
        """Count one grade (a Grade or its dict); ``label`` if already read."""
        g = _grade_dict(grade)
        self.n += 1
        status = g.get("status")
        self.counts[status] += 1
        if g.get("value") is not None:
            self._grow("_values", self._nv)[self._nv] = float(g["value"])
            self._grow("_status", self._nv)[self._nv] = STATUS_CODES.get(status, 0)
            self._nv += 1
        if g.get("latency_s") is not None:
            self._grow("_lat", self._nl)[self._nl] = float(g["latency_s"])
            self._nl += 1
        extra = g.get("extra")
        self.labels_only |= isinstance(extra, Mapping) and extra.get("labels_only") is True
        label = grade_label(g) if label is None else label
        if label is not None:
            self.labels[label] += 1
        if status == "unscored":
            self._count_error(g.get("error"))
        for k, v in (g.get("usage") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                self.tokens[k] += int(v)
        self.attempts += int(g.get("attempts") or 0)
        for seen, v in ((self.keys, g.get("grader_key")), (self.versions, g.get("grader_version"))):
            if len(seen) < 2:
                seen.add(v)

    def _count_error(self, error: str | None) -> None:
        reason = (error or "unknown").split(":")[0][:80]
        if reason not in self.errors and len(self.errors) >= _MAX_ERROR_KINDS:
            reason = "other"
        self.errors[reason] += 1

    @property
    def values(self) -> np.ndarray:
        """Values of valued rows (scored and penalized), in the order added."""
        return self._values[:self._nv]

    def values_of(self, status: str) -> np.ndarray:
        return self.values[self._status[:self._nv] == STATUS_CODES[status]]

    def summary(self, *, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Summary:
        values = self.values if not self.labels_only else np.empty(0)
        scored = self.values_of("scored") if not self.labels_only else np.empty(0)
        lat: dict[str, float] = {}
        if self._nl:
            a = self._lat[:self._nl].astype(np.float64)
            lat = {"mean": float(a.mean()), "p50": float(np.quantile(a, 0.5)),
                   "p95": float(np.quantile(a, 0.95)), "max": float(a.max())}
        return Summary(
            n=self.n, counts=dict(self.counts), confidence=confidence,
            **_center(values, confidence=confidence, n_boot=n_boot, seed=seed),
            mean_scored=float(scored.mean()) if scored.size else None,
            latency_s=lat, tokens=dict(self.tokens), attempts=self.attempts,
            grader_key=next(iter(self.keys)) if len(self.keys) == 1 else None,
            grader_version=next(iter(self.versions)) if len(self.versions) == 1 else None,
            errors=dict(self.errors), **_label_counts(dict(self.labels)), labels_only=self.labels_only)


def _center(values: np.ndarray, **boot: Any) -> dict[str, Any]:
    """``mean``, ``p50`` and bootstrap ``ci`` of values (None each for none)."""
    if not values.size:
        return {"mean": None, "p50": None, "ci": None}
    return {"mean": float(values.mean()), "p50": float(np.quantile(values, 0.5)),
            "ci": bootstrap_ci(values, **boot)}


def _label_counts(counts: Mapping[str, int]) -> dict[str, dict]:
    """``labels`` (most frequent first) and each one's share of the labelled rows."""
    ordered = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    total = sum(ordered.values())
    return {"labels": ordered, "label_shares": {lab: k / total for lab, k in ordered.items()} if total else {}}


def summarize(grades: Iterable[Grade | Mapping[str, Any]], *, confidence: float = 0.95,
              n_boot: int = 2000, seed: int = 0) -> Summary:
    """Summary of Grades (or their ``to_dict()`` forms), in one pass."""
    return _builder(grades).summary(confidence=confidence, n_boot=n_boot, seed=seed)


def _builder(grades: Iterable[Grade | Mapping[str, Any]]) -> SummaryBuilder:
    builder = SummaryBuilder()
    for g in grades:
        builder.add(g)
    return builder


def save_histogram(grades: "Iterable[Grade | Mapping[str, Any]] | SummaryBuilder", path: str | os.PathLike, *,
                   title: str | None = None) -> Path:
    """A PNG histogram of values (Grades, their dicts, or a run's ``SummaryBuilder``), scored and
    penalized stacked: a bar per value when few, else 20 bins; a label-only run: a bar per label."""
    builder = grades if isinstance(grades, SummaryBuilder) else _builder(grades)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _histogram_figure(builder, title).savefig(out)  # a bare Figure: no pyplot, no display, no global state
    return out


def _histogram_figure(builder: SummaryBuilder, title: str | None) -> Any:
    """``save_histogram``'s Figure (bare: no pyplot state); whole-number count ticks."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(6, 3.5), dpi=100)
    ax = fig.subplots()
    if builder.labels_only:
        labels = _label_counts(builder.labels)["labels"]
        if labels:
            ax.bar(list(labels), list(labels.values()), color="#4C72B0")
        ax.set_xlabel("label")
        drawn = bool(labels)
    else:
        drawn = _value_bars(ax, {s: builder.values_of(s) for s in ("scored", "penalized")})
        ax.set_xlabel("grade value")
    ax.set_ylabel("rows")
    ax.set_title(title or f"grades (n={builder.n}, unscored={builder.counts.get('unscored', 0)})")
    if not drawn:
        ax.text(0.5, 0.5, "no valued rows", ha="center", va="center", transform=ax.transAxes)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.5 rows
    fig.tight_layout()
    return fig


def _value_bars(ax: Any, by: dict[str, np.ndarray]) -> bool:
    """Scored and penalized values stacked; whether there was any value."""
    distinct = np.unique(np.concatenate([by["scored"], by["penalized"]])).tolist()
    if not distinct:
        return False
    if len(distinct) <= 12:
        width = 0.8 * (min(np.diff(distinct)) if len(distinct) > 1 else 1.0)
        bottom = np.zeros(len(distinct))
        for status, color in (("scored", "#4C72B0"), ("penalized", "#DD8452")):
            heights = np.array([np.count_nonzero(by[status] == v) for v in distinct], dtype=float)
            if heights.any():
                ax.bar(distinct, heights, width=width, bottom=bottom, color=color, label=status)
                bottom += heights
        ax.set_xticks(distinct)
    else:
        ax.hist([by["scored"], by["penalized"]], bins=20, stacked=True,
                color=["#4C72B0", "#DD8452"], label=["scored", "penalized"])
    ax.legend()
    return True


@dataclass
class RunStats:
    """One side of a comparison: its valued rows' mean, median, interval and label counts."""

    n_valued: int
    mean: float | None
    p50: float | None
    ci: tuple[float, float] | None
    labels: dict[str, int] = field(default_factory=dict)
    label_shares: dict[str, float] = field(default_factory=dict)
    labels_only: bool = False

    def line(self, name: str) -> str:
        if self.labels_only:
            text = f"{name}: label-only verdicts (no mean)"
        elif self.mean is None:
            text = f"{name}: no valued rows"
        else:
            text = (f"{name}: mean {self.mean:.4f} [{self.ci[0]:.4f}, {self.ci[1]:.4f}]  "
                    f"p50 {self.p50:.4f}  over {self.n_valued} valued rows")
        if self.labels:
            text += "  labels: " + "  ".join(f"{lab}: {k}" for lab, k in self.labels.items())
        return text


@dataclass
class Comparison:
    """Paired difference ``b - a`` over rows valued in both runs; ``a`` and ``b`` describe each run alone."""

    n_pairs: int
    n_excluded: int
    mean_a: float | None
    mean_b: float | None
    mean_diff: float | None
    ci: tuple[float, float] | None
    confidence: float
    b_better: int
    a_better: int
    ties: int
    a: RunStats | None = None
    b: RunStats | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        sides = [s.line(name) for name, s in (("a", self.a), ("b", self.b)) if s is not None]
        if self.mean_diff is None:
            return "\n".join([*sides, f"no row is valued in both runs ({self.n_excluded} rows excluded)"])
        lo, hi = self.ci
        verdict = ("b is higher" if lo > 0 else "a is higher" if hi < 0 else "no clear difference")
        return "\n".join([
            *sides,
            f"paired rows: {self.n_pairs} (excluded {self.n_excluded}: unscored or missing in one run)",
            f"mean a: {self.mean_a:.4f}  mean b: {self.mean_b:.4f}",
            f"b - a: {self.mean_diff:+.4f} [{lo:+.4f}, {hi:+.4f}] ({self.confidence:.0%} bootstrap CI): {verdict}",
            f"per row: b higher {self.b_better}, a higher {self.a_better}, ties {self.ties}"])


def _results_path(run: str | os.PathLike) -> Path:
    path = Path(run)
    if path.is_dir():
        path = next((path / n for n in ("results.parquet", "results.jsonl") if (path / n).exists()),
                    path / "results.jsonl")
    if not path.exists():
        raise ConfigError(f"no results at {path}: pass an evaluation output folder, its results.parquet "
                          f"or its results.jsonl")
    return path


_NO_VALUE = "rows to compare need a 'grade_value' column (an evaluate_dataset output)"


def _read_run(run: Any) -> tuple[np.ndarray, list[str | None]]:
    """A run's values (NaN where unscored) and labels, in row order (see ``compare``)."""
    if hasattr(run, "summary") and hasattr(run, "dataset"):  # an EvalResult: its results file if it wrote one
        run = run.files["parquet"] if run.output_dir and "parquet" in run.files else run.dataset
    if isinstance(run, (str, os.PathLike)):
        path = _results_path(run)
        if path.suffix == ".parquet":
            return _read_parquet(path)
        with open(path, encoding="utf-8") as f:
            return _read_items(json.loads(line) for line in f if line.strip())
    if hasattr(run, "column_names") and hasattr(run, "to_list"):
        if "grade_value" not in run.column_names:
            raise ConfigError(_NO_VALUE)
        labels = run["grade_label"] if "grade_label" in run.column_names else [None] * len(run)
        return np.asarray([math.nan if v is None else v for v in run["grade_value"]], dtype=float), list(labels)
    return _read_items(run)


def _read_parquet(path: Path) -> tuple[np.ndarray, list[str | None]]:
    import pyarrow.parquet as pq

    names = set(pq.ParquetFile(path).schema_arrow.names)
    if "grade_value" not in names:
        raise ConfigError(f"{path} has no 'grade_value' column (not an evaluate_dataset output)")
    table = pq.read_table(path, columns=[c for c in ("grade_value", "grade_label") if c in names])
    values = table.column("grade_value").to_numpy(zero_copy_only=False).astype(float)
    labels = table.column("grade_label").to_pylist() if "grade_label" in names else [None] * len(values)
    return values, labels


def _read_items(items: Iterable[Any]) -> tuple[np.ndarray, list[str | None]]:
    """Values and labels of Grades, row dicts with grade columns, or plain values (None: unscored)."""
    values, labels = [], []
    for item in items:
        if isinstance(item, Grade):
            value, label = item.value, grade_label(item)
        elif isinstance(item, Mapping):
            if "grade_value" not in item:
                raise ConfigError(_NO_VALUE)
            value, label = item["grade_value"], item.get("grade_label")
        elif item is None or isinstance(item, (int, float)):
            value, label = item, None
        else:
            raise ConfigError(f"cannot read a grade value from {type(item).__name__}")
        values.append(math.nan if value is None else float(value))
        labels.append(label)
    return np.asarray(values, dtype=float), labels


def _run_stats(values: np.ndarray, labels: list[str | None], *, confidence: float, n_boot: int,
               seed: int) -> RunStats:
    # a label-only run: some row has a label and no value (only a label-only verdict does)
    labels_only = any(lab is not None and math.isnan(v) for v, lab in zip(values.tolist(), labels))
    valued = values[~np.isnan(values)] if not labels_only else np.empty(0)
    counts = Counter(lab for lab in labels if lab is not None)
    return RunStats(n_valued=int(valued.size), **_center(valued, confidence=confidence, n_boot=n_boot, seed=seed),
                    **_label_counts(counts), labels_only=labels_only)


def compare(a: Any, b: Any, *, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Comparison:
    """Paired comparison of two runs over the same rows (``b - a``).

    Each run is an ``EvalResult``, an output folder (or its results file), a results Dataset, or a
    list of Grades / values in row order. Rows unscored in either run are excluded (and counted).
    ``a`` and ``b`` on the result describe each run alone; a label-only run pairs no row.
    """
    va, la = _read_run(a)
    vb, lb = _read_run(b)
    if va.size != vb.size:
        raise ConfigError(f"the runs have {va.size} and {vb.size} rows: a paired comparison needs the "
                          f"same rows in the same order")
    kw = dict(confidence=confidence, n_boot=n_boot, seed=seed)
    stats_a, stats_b = _run_stats(va, la, **kw), _run_stats(vb, lb, **kw)
    for stats, v in ((stats_a, va), (stats_b, vb)):
        if stats.labels_only:  # no number to pair: the penalties alone would be a made-up difference
            v[:] = math.nan
    both = ~np.isnan(va) & ~np.isnan(vb)
    excluded = int(va.size - both.sum())
    if not both.any():
        return Comparison(0, excluded, None, None, None, None, confidence, 0, 0, 0, stats_a, stats_b)
    xa, xb = va[both], vb[both]
    d = xb - xa
    return Comparison(n_pairs=int(both.sum()), n_excluded=excluded, mean_a=float(xa.mean()),
                      mean_b=float(xb.mean()), mean_diff=float(d.mean()),
                      ci=bootstrap_ci(d, **kw), confidence=confidence, b_better=int((d > 0).sum()),
                      a_better=int((d < 0).sum()), ties=int((d == 0).sum()), a=stats_a, b=stats_b)
