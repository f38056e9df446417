"""Reports on a finished evaluation: summary, paired comparison, a run's grade columns read back.
Means and bootstrap intervals are over valued rows; ``unscored`` rows are counted, never averaged."""

from __future__ import annotations

import json
import math
import os
from array import array
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ConfigError
from ..grade import STATUSES, Grade
from ._journal import STATUS_CODES

__all__ = ["GRADE_COLUMNS", "Comparison", "Summary", "SummaryBuilder", "bootstrap_ci", "compare",
           "grade_columns", "grade_label", "read_columns", "summarize"]


#: more distinct values than this are resampled as this many equal-count quantile bins
BOOTSTRAP_SUPPORT = 2048


def _support(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, counts) of ``x``; past ``BOOTSTRAP_SUPPORT``, (means, sizes) of equal-count bins."""
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
    """Percentile bootstrap interval of the mean ((nan, nan) for no values), drawn as a multinomial
    over the distinct values (``_support``): the cost grows with those, not with ``n``."""
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


#: verdict fields read as a label, first match wins (see ``grade_label``)
LABEL_FIELDS = ("label", "verdict", "score", "grade", "decision")


def _as_label(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and v.strip():
        return v.strip()
    return None


def grade_label(grade: Grade | Mapping[str, Any]) -> str | None:
    """The label of a scored grade's label-valued verdict (``extra``'s ``label``, a str/bool ``verdict``,
    or the verdict object's first str/bool ``LABEL_FIELDS``), else None.

    >>> grade_label(Grade(value=1.0, grader_key="g", extra={"verdict": {"reasoning": "ok", "score": "PASS"}}))
    'PASS'
    >>> grade_label(Grade(value=0.6, grader_key="g", extra={"verdict": {"reasoning": "ok", "score": 4}})) is None
    True
    """
    g = grade.to_dict() if isinstance(grade, Grade) else grade
    if g.get("status", "scored" if g.get("value") is not None else "unscored") != "scored":
        return None
    extra = g.get("extra") or {}
    if not isinstance(extra, Mapping):
        return None
    verdict = extra.get("verdict")
    fields = [verdict.get(k) for k in LABEL_FIELDS] if isinstance(verdict, Mapping) else [verdict]
    return next((lab for lab in map(_as_label, [extra.get("label"), *fields]) if lab is not None), None)


GRADE_COLUMNS = ("grade_value", "grade_status", "grade_label", "grade_reasoning", "grade_error",
                 "grade_raw_reply", "grade_probabilities", "grade_extra", "grade_key", "grade_version",
                 "grade_attempts", "grade_prompt_tokens", "grade_completion_tokens", "grade_latency_s")


def grade_columns(g: dict[str, Any]) -> dict[str, Any]:
    """One grade (``Grade.to_dict()``) as the ``grade_*`` columns of its row."""
    extra = g.get("extra") or {}
    probs = g.get("distribution") or None   # Grade.distribution: the one place a grader puts one
    usage = g.get("usage") or {}
    return {
        "grade_value": g.get("value"), "grade_status": g["status"], "grade_label": grade_label(g),
        "grade_reasoning": g.get("reasoning"), "grade_error": g.get("error"),
        "grade_raw_reply": g.get("raw_reply"),
        "grade_probabilities": None if probs is None else json.dumps(probs, default=str),
        "grade_extra": json.dumps(extra, default=str, ensure_ascii=False) if extra else None,
        "grade_key": g.get("grader_key"), "grade_version": g.get("grader_version"),
        "grade_attempts": int(g.get("attempts") or 0), "grade_prompt_tokens": usage.get("prompt_tokens"),
        "grade_completion_tokens": usage.get("completion_tokens"), "grade_latency_s": g.get("latency_s")}


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

    def line(self, name: str) -> str:
        """The run in one line, as ``compare`` shows each side."""
        if self.labels_only:
            text = f"{name}: label-only verdicts (no mean)"
        elif self.mean is None:
            text = f"{name}: no valued rows"
        else:
            text = (f"{name}: mean {self.mean:.4f} [{self.ci[0]:.4f}, {self.ci[1]:.4f}]  p50 {self.p50:.4f}  "
                    f"over {self.n - self.counts.get('unscored', 0)} valued rows")
        if self.labels:
            text += "  labels: " + "  ".join(f"{lab}: {k}" for lab, k in self.labels.items())
        return text

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
    """A ``Summary`` built in one pass (``add`` a grade at a time, then ``summary()``): 13 bytes a row."""

    def __init__(self, grades: Iterable[Grade | Mapping[str, Any]] = ()) -> None:
        self.n = self.attempts = 0
        self.counts = Counter(dict.fromkeys(STATUSES, 0))
        self.labels, self.tokens, self.errors = Counter(), Counter(), Counter()
        self.keys: set[Any] = set()
        self.versions: set[Any] = set()
        self.labels_only = False
        self._values, self._status, self._lat = array("d"), array("b"), array("f")
        for g in grades:
            self.add(g)

    def add(self, grade: Grade | Mapping[str, Any], label: str | None = None) -> None:
        """Count one grade (a Grade or its dict); ``label`` if already read."""
        g = grade.to_dict() if isinstance(grade, Grade) else grade
        self.n += 1
        status = g.get("status")
        self.counts[status] += 1
        if g.get("value") is not None:
            self._values.append(float(g["value"]))
            self._status.append(STATUS_CODES.get(status, 0))
        if g.get("latency_s") is not None:
            self._lat.append(float(g["latency_s"]))
        extra = g.get("extra")
        self.labels_only |= isinstance(extra, Mapping) and extra.get("labels_only") is True
        label = grade_label(g) if label is None else label
        if label is not None:
            self.labels[label] += 1
        if status == "unscored":
            reason = (g.get("error") or "unknown").split(":")[0][:80]
            if reason not in self.errors and len(self.errors) >= _MAX_ERROR_KINDS:
                reason = "other"
            self.errors[reason] += 1
        for k, v in (g.get("usage") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                self.tokens[k] += int(v)
        self.attempts += int(g.get("attempts") or 0)
        for seen, v in ((self.keys, g.get("grader_key")), (self.versions, g.get("grader_version"))):
            if len(seen) < 2:
                seen.add(v)

    @property
    def values(self) -> np.ndarray:
        """Values of valued rows (scored and penalized), in the order added."""
        return np.array(self._values, dtype=np.float64)

    def values_of(self, status: str) -> np.ndarray:
        return self.values[np.array(self._status, dtype=np.int8) == STATUS_CODES[status]]

    def summary(self, *, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Summary:
        values = self.values if not self.labels_only else np.empty(0)
        scored = self.values_of("scored") if not self.labels_only else np.empty(0)
        lat: dict[str, float] = {}
        if self._lat:
            a = np.array(self._lat, dtype=np.float64)
            lat = {"mean": float(a.mean()), "p50": float(np.quantile(a, 0.5)),
                   "p95": float(np.quantile(a, 0.95)), "max": float(a.max())}
        center = ({"mean": float(values.mean()), "p50": float(np.quantile(values, 0.5)),
                   "ci": bootstrap_ci(values, confidence=confidence, n_boot=n_boot, seed=seed)}
                  if values.size else {"mean": None, "p50": None, "ci": None})
        return Summary(
            n=self.n, counts=dict(self.counts), confidence=confidence,
            **center,
            mean_scored=float(scored.mean()) if scored.size else None,
            latency_s=lat, tokens=dict(self.tokens), attempts=self.attempts,
            grader_key=next(iter(self.keys)) if len(self.keys) == 1 else None,
            grader_version=next(iter(self.versions)) if len(self.versions) == 1 else None,
            errors=dict(self.errors), **_label_counts(dict(self.labels)), labels_only=self.labels_only)


def _label_counts(counts: Mapping[str, int]) -> dict[str, dict]:
    """``labels`` (most frequent first) and each one's share of the labelled rows."""
    ordered = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    total = sum(ordered.values())
    return {"labels": ordered, "label_shares": {lab: k / total for lab, k in ordered.items()} if total else {}}


def summarize(grades: Iterable[Grade | Mapping[str, Any]], *, confidence: float = 0.95,
              n_boot: int = 2000, seed: int = 0) -> Summary:
    """Summary of Grades (or their ``to_dict()`` forms), in one pass."""
    return SummaryBuilder(grades).summary(confidence=confidence, n_boot=n_boot, seed=seed)


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
    a: Summary | None = None
    b: Summary | None = None

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


def _results_path(run: str | os.PathLike, *, journal: bool = False) -> Path:
    """A run's results file (a folder: ``results.parquet``, else ``.jsonl``; ``journal``: a newer journal)."""
    path = Path(run)
    if not path.exists():
        raise ConfigError(f"no evaluation run at {path}: pass an eval output folder or its results"
                          f"{'/journal' if journal else ''} file")
    if path.is_dir():
        found = [path / n for n in ("results.parquet", "results.jsonl") if (path / n).exists()]
        log = path / "journal.jsonl"
        if journal and log.exists() and (not found or log.stat().st_mtime > found[0].stat().st_mtime):
            found.insert(0, log)
        if not found and (path / "manifest.json").exists():  # an eval folder whose run stopped early
            done = "wrote its results" if log.exists() else "finished a row"
            raise ConfigError(f"the run in {path} stopped before it {done}: rerun its eval command to finish it")
        if not found:
            raise ConfigError(f"{path} holds no results file{' or journal' if journal else ''}: is it an "
                              f"eval output folder?")
        path = found[0]
    return path


def _read_lines(path: Path, names: Sequence[str]) -> dict[str, list]:
    """Columns from a results JSONL (a row a line) or a journal (a row's last record wins)."""
    out: dict[str, list] = {c: [] for c in names}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            try:
                rec = json.loads(line) if line.strip() else None
            except ValueError:
                continue  # a torn last line of a killed run's journal
            if rec is None:
                continue
            if "grade" in rec and "row" in rec:
                i, rec = int(rec["row"]), grade_columns(rec["grade"])
            elif names[0] not in rec:
                raise ConfigError(f"{path} line {i + 1} is neither a journal record nor a results row "
                                  f"(no {names[0]!r}: not an evaluate_dataset output)")
            for c in names:  # a journal's rows may come in any order
                out[c].extend([None] * (i + 1 - len(out[c])))
                out[c][i] = rec.get(c)
    return out


def _read_parquet(path: Path, names: Sequence[str]) -> dict[str, list]:
    import pyarrow.parquet as pq
    have = set(pq.ParquetFile(path).schema_arrow.names)
    return pq.read_table(path, columns=[c for c in names if c in have]).to_pydict()


def _item_columns(item: Any) -> Mapping[str, Any]:
    if isinstance(item, Grade):
        return grade_columns(item.to_dict())
    if isinstance(item, Mapping):
        return item
    if item is None or isinstance(item, (int, float)):
        return {"grade_value": item, "grade_status": "unscored" if item is None else "scored"}
    raise ConfigError(f"cannot read a grade from {type(item).__name__}")


def read_columns(run: Any, names: Sequence[str], *, journal: bool = False) -> dict[str, list]:
    """The ``names`` grade columns of a run (see ``compare``), in row order; a missing one: None per row."""
    if hasattr(run, "summary") and hasattr(run, "dataset"):  # an EvalResult: its results file if it wrote one
        run = run.files["parquet"] if run.output_dir and "parquet" in run.files else run.dataset
    where = "the rows"
    if isinstance(run, (str, os.PathLike)):
        where = _results_path(run, journal=journal)
        table = _read_parquet(where, names) if where.suffix == ".parquet" else _read_lines(where, names)
    elif hasattr(run, "column_names") and hasattr(run, "to_list"):
        table = run.select_columns([c for c in names if c in run.column_names]).to_dict()
    else:
        rows = [_item_columns(item) for item in run]
        table = {c: [r.get(c) for r in rows] for c in names if all(c in r for r in rows)}
    if names[0] not in table:
        raise ConfigError(f"{where}: no {names[0]!r} column (not an evaluate_dataset output)")
    n = len(table[names[0]])
    return {c: table.get(c) or [None] * n for c in names}


def _read_run(run: Any, **boot: Any) -> tuple[np.ndarray, Summary]:
    """A run's values (NaN where unscored), in row order, and its summary (see ``compare``)."""
    cols = read_columns(run, ("grade_value", "grade_status", "grade_label", "grade_error"))
    builder = SummaryBuilder()
    for v, status, label, error in zip(*cols.values()):
        builder.add({"value": v, "status": status or ("unscored" if v is None else "scored"), "error": error},
                    label=label)
        builder.labels_only |= label is not None and v is None  # only a label-only verdict has no value
    values = np.array([math.nan if v is None else v for v in cols["grade_value"]], dtype=float)
    return values, builder.summary(**boot)


def compare(a: Any, b: Any, *, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Comparison:
    """Paired comparison ``b - a`` of two runs over the same rows (docs/evaluation.md); a run is an
    ``EvalResult``, an output folder or results file, a results Dataset, or Grades / values in row order."""
    kw = dict(confidence=confidence, n_boot=n_boot, seed=seed)
    (va, stats_a), (vb, stats_b) = _read_run(a, **kw), _read_run(b, **kw)
    if va.size != vb.size:
        raise ConfigError(f"the runs have {va.size} and {vb.size} rows: a paired comparison needs the "
                          f"same rows in the same order")
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
