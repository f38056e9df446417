"""Reports on a finished evaluation: summary, histogram, paired comparison.

The mean is taken over rows with a value (``scored`` and ``penalized``: an
evaluation penalty is part of the metric); ``unscored`` rows (judge failures)
are counted, never averaged in. Intervals are percentile bootstrap intervals
(``n_boot`` resamples, fixed seed, so a report is reproducible).

>>> summary = summarize(grades)                       # doctest: +SKIP
>>> print(summary)                                    # doctest: +SKIP
>>> compare("runs/before", "runs/after")              # doctest: +SKIP
Comparison(n_pairs=1000, mean_diff=+0.042, ci=[+0.013, +0.071], ...)
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ConfigError
from ..grade import STATUSES, Grade

__all__ = ["Comparison", "Summary", "bootstrap_ci", "compare", "save_histogram", "summarize"]


def bootstrap_ci(values: Sequence[float], *, confidence: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; (nan, nan) for no values."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    # resample in blocks to bound memory on large runs
    block = max(1, min(n_boot, 2_000_000 // x.size))
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def _grade_dict(g: Grade | Mapping[str, Any]) -> Mapping[str, Any]:
    return g.to_dict() if isinstance(g, Grade) else g


@dataclass
class Summary:
    """What a run produced. ``mean`` is over valued rows (scored + penalized)."""

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        lines = [f"rows: {self.n}  " + "  ".join(f"{s}: {self.counts.get(s, 0)}" for s in STATUSES)]
        if self.mean is not None:
            ci = f" [{self.ci[0]:.4f}, {self.ci[1]:.4f}] ({self.confidence:.0%} bootstrap CI)" if self.ci else ""
            lines.append(f"mean value: {self.mean:.4f}{ci} over {self.n - self.counts.get('unscored', 0)} valued rows")
        else:
            lines.append("mean value: n/a (no valued rows)")
        if self.mean_scored is not None:
            lines.append(f"mean of scored rows only: {self.mean_scored:.4f}")
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


def summarize(grades: Iterable[Grade | Mapping[str, Any]], *, confidence: float = 0.95,
              n_boot: int = 2000, seed: int = 0) -> Summary:
    """Summary of Grades (or their ``to_dict()`` forms)."""
    rows = [_grade_dict(g) for g in grades]
    counts = {s: 0 for s in STATUSES}
    values, scored, latencies = [], [], []
    tokens: dict[str, int] = {}
    attempts = 0
    errors: dict[str, int] = {}
    keys, versions = set(), set()
    for g in rows:
        status = g.get("status")
        counts[status] = counts.get(status, 0) + 1
        if g.get("value") is not None:
            values.append(float(g["value"]))
            if status == "scored":
                scored.append(float(g["value"]))
        if status == "unscored":
            reason = (g.get("error") or "unknown").split(":")[0][:80]
            errors[reason] = errors.get(reason, 0) + 1
        if g.get("latency_s") is not None:
            latencies.append(float(g["latency_s"]))
        for k, v in (g.get("usage") or {}).items():
            if isinstance(v, (int, float)):
                tokens[k] = tokens.get(k, 0) + int(v)
        attempts += int(g.get("attempts") or 0)
        keys.add(g.get("grader_key"))
        versions.add(g.get("grader_version"))
    lat: dict[str, float] = {}
    if latencies:
        a = np.asarray(latencies)
        lat = {"mean": float(a.mean()), "p50": float(np.quantile(a, 0.5)),
               "p95": float(np.quantile(a, 0.95)), "max": float(a.max())}
    return Summary(
        n=len(rows), counts=counts, mean=float(np.mean(values)) if values else None,
        ci=bootstrap_ci(values, confidence=confidence, n_boot=n_boot, seed=seed) if values else None,
        confidence=confidence, mean_scored=float(np.mean(scored)) if scored else None,
        latency_s=lat, tokens=tokens, attempts=attempts,
        grader_key=next(iter(keys)) if len(keys) == 1 else None,
        grader_version=next(iter(versions)) if len(versions) == 1 else None, errors=errors)


def save_histogram(grades: Iterable[Grade | Mapping[str, Any]], path: str | os.PathLike, *,
                   title: str | None = None) -> Path:
    """A PNG histogram of values, scored and penalized rows stacked apart.

    Few distinct values (binary or 1-5 verdicts) get one bar each; otherwise
    20 bins. Uses matplotlib's Agg backend (no display needed).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rows = [_grade_dict(g) for g in grades]
    by = {s: [float(g["value"]) for g in rows if g.get("status") == s and g.get("value") is not None]
          for s in ("scored", "penalized")}
    unscored = sum(1 for g in rows if g.get("status") == "unscored")
    distinct = sorted(set(by["scored"]) | set(by["penalized"]))
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    try:
        if distinct and len(distinct) <= 12:
            width = 0.8 * (min(np.diff(distinct)) if len(distinct) > 1 else 1.0)
            bottom = np.zeros(len(distinct))
            for status, color in (("scored", "#4C72B0"), ("penalized", "#DD8452")):
                heights = np.array([by[status].count(v) for v in distinct], dtype=float)
                if heights.any():
                    ax.bar(distinct, heights, width=width, bottom=bottom, color=color, label=status)
                    bottom += heights
            ax.set_xticks(distinct)
        elif distinct:
            ax.hist([by["scored"], by["penalized"]], bins=20, stacked=True,
                    color=["#4C72B0", "#DD8452"], label=["scored", "penalized"])
        ax.set_xlabel("grade value")
        ax.set_ylabel("rows")
        ax.set_title(title or f"grades (n={len(rows)}, unscored={unscored})")
        if distinct:
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no valued rows", ha="center", va="center", transform=ax.transAxes)
        fig.tight_layout()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out)
    finally:
        plt.close(fig)
    return out


@dataclass
class Comparison:
    """Paired difference ``b - a`` over rows valued in both runs."""

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        if self.mean_diff is None:
            return f"no row is valued in both runs ({self.n_excluded} rows excluded)"
        lo, hi = self.ci
        verdict = ("b is higher" if lo > 0 else "a is higher" if hi < 0 else "no clear difference")
        return (f"paired rows: {self.n_pairs} (excluded {self.n_excluded}: unscored or missing in one run)\n"
                f"mean a: {self.mean_a:.4f}  mean b: {self.mean_b:.4f}\n"
                f"b - a: {self.mean_diff:+.4f} [{lo:+.4f}, {hi:+.4f}] ({self.confidence:.0%} bootstrap CI): "
                f"{verdict}\n"
                f"per row: b higher {self.b_better}, a higher {self.a_better}, ties {self.ties}")


def _values_by_row(run: Any) -> dict[int, float | None]:
    """Row key -> value of a run: an EvalResult, a Dataset / list of row
    dicts with grade columns, an output folder, or a list of Grades/values."""
    if hasattr(run, "dataset") and hasattr(run, "summary"):
        run = run.dataset
    if isinstance(run, (str, os.PathLike)):
        path = Path(run)
        if path.is_dir():
            path = path / "results.jsonl"
        if not path.exists():
            raise ConfigError(f"no results at {path}: pass an evaluation output folder or its results.jsonl")
        with open(path, encoding="utf-8") as f:
            run = [json.loads(line) for line in f if line.strip()]
    if hasattr(run, "column_names") and hasattr(run, "to_list"):
        run = run.to_list()
    out: dict[int, float | None] = {}
    for i, item in enumerate(run):
        if isinstance(item, Grade):
            out[i] = item.value
        elif isinstance(item, Mapping):
            if "grade_value" not in item:
                raise ConfigError("rows to compare need a 'grade_value' column (an evaluate_dataset output)")
            out[i] = item["grade_value"]
        elif item is None or isinstance(item, (int, float)):
            out[i] = None if item is None or (isinstance(item, float) and math.isnan(item)) else float(item)
        else:
            raise ConfigError(f"cannot read a grade value from {type(item).__name__}")
    return out


def compare(a: Any, b: Any, *, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0) -> Comparison:
    """Paired comparison of two runs over the same rows (``b - a``).

    Each run is an ``EvalResult``, an output folder, a results Dataset, or a
    list of Grades / values in row order. Rows unscored in either run are
    excluded (and counted).
    """
    va, vb = _values_by_row(a), _values_by_row(b)
    if len(va) != len(vb):
        raise ConfigError(f"the runs have {len(va)} and {len(vb)} rows: a paired comparison needs the "
                          f"same rows in the same order")
    keys = sorted(va)
    pairs = [(va[k], vb[k]) for k in keys
             if va.get(k) is not None and vb.get(k) is not None]
    excluded = len(keys) - len(pairs)
    if not pairs:
        return Comparison(0, excluded, None, None, None, None, confidence, 0, 0, 0)
    xa = np.array([p[0] for p in pairs])
    xb = np.array([p[1] for p in pairs])
    d = xb - xa
    return Comparison(n_pairs=len(pairs), n_excluded=excluded, mean_a=float(xa.mean()),
                      mean_b=float(xb.mean()), mean_diff=float(d.mean()),
                      ci=bootstrap_ci(d, confidence=confidence, n_boot=n_boot, seed=seed),
                      confidence=confidence, b_better=int((d > 0).sum()), a_better=int((d < 0).sum()),
                      ties=int((d == 0).sum()))
