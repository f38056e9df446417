"""``rewardjudge plot RUN``: a picture of the judge's health over an evaluation run.

    rewardjudge plot runs/v1                    # writes runs/v1/health.png
    rewardjudge plot runs/v1 -o health.png

Three panels over the rows (in at most 100 equal bins): rows per status, the
judge's latency per row (dots; each bin's median and p95 as lines), and
unscored rows by kind (timeout, http, connection, invalid_reply, ...).

RUN is an evaluation output folder (its ``journal.jsonl``, so a stopped run is
drawn too; ``results.parquet`` when newer), or one of its results/journal
files. Needs matplotlib (the ``eval`` extra).

Exit codes: 0 written; 2 usage error (no such run, no matplotlib).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import ConfigError
from ..grade import STATUSES, Grade
from ._report import SummaryBuilder, _label_counts, _results_path, read_columns

__all__ = ["RunHealth", "health_figure", "read_run_health", "save_health_plot", "save_histogram"]

_STATUS_COLORS = {"scored": "#4C72B0", "penalized": "#DD8452", "unscored": "#C44E52"}
_KIND_COLORS = {"timeout": "#8172B3", "http": "#C44E52", "connection": "#937860", "invalid_reply": "#DA8BC3",
                "no_sealed_verdict": "#8C8C8C", "cut_off": "#CCB974", "other": "#64B5CD"}
MAX_BINS = 100


@dataclass
class RunHealth:
    """Per row: status (index in ``STATUSES``), judge latency (NaN: none), unscored kind (-1: none)."""

    status: np.ndarray
    latency: np.ndarray
    kind: np.ndarray
    source: Path

    @property
    def n(self) -> int:
        return int(self.status.size)


def read_run_health(run: str | os.PathLike) -> RunHealth:
    """Statuses, latencies and unscored kinds of a run's rows (see the module doc)."""
    from ..rl._health import UNSCORED_KINDS, unscored_kind
    source = _results_path(run, journal=True)
    cols = read_columns(source, ("grade_status", "grade_latency_s", "grade_error"), journal=True)
    statuses, errors = cols["grade_status"], cols["grade_error"]
    kinds = [UNSCORED_KINDS.index(unscored_kind(e)) if s == "unscored" else -1
             for s, e in zip(statuses, errors)]
    return RunHealth(status=np.array([STATUSES.index(s) if s in STATUSES else -1 for s in statuses], dtype=np.int8),
                     latency=np.array([np.nan if v is None else v for v in cols["grade_latency_s"]], dtype=float),
                     kind=np.array(kinds, dtype=np.int8), source=source)


def _stacked(ax: Any, edges: np.ndarray, per: int, series: dict[str, np.ndarray], colors: dict[str, str],
             what: str, title: str) -> bool:
    """A panel of stacked bars, one per bin, of per-row masks summed in each bin; whether any bar."""
    left, width = edges[:-1], np.diff(edges)
    bottom = np.zeros(left.size)
    for name, mask in series.items():
        counts = np.add.reduceat(mask.astype(np.int64), left) if mask.size else np.zeros(left.size)
        if counts.any():
            ax.bar(left, counts, width=width, bottom=bottom, align="edge", color=colors[name], label=name,
                   linewidth=0)
            bottom += counts
    if bottom.any():
        ax.legend(loc="upper right", fontsize="small")
    ax.set_ylabel(f"{what} per bin\n({per} rows a bin)" if per > 1 else what)
    ax.set_title(title, fontsize="medium", loc="left")
    return bool(bottom.any())


def _latency_panel(ax: Any, health: RunHealth, edges: np.ndarray, per: int) -> None:
    """Each row's judge latency, a dot coloured by status; each bin's median and p95."""
    rows = np.arange(health.n)
    has = ~np.isnan(health.latency)
    if has.any():
        for i, s in enumerate(STATUSES):
            sel = has & (health.status == i)
            if sel.any():
                ax.scatter(rows[sel], health.latency[sel], s=4, color=_STATUS_COLORS[s], alpha=0.5, label=s)
        if per > 1:  # a bin of one row is its dot
            bins = [((lo + hi) / 2, health.latency[lo:hi][has[lo:hi]]) for lo, hi in zip(edges[:-1], edges[1:])]
            bins = [(mid, vals) for mid, vals in bins if vals.size]
            mids = [mid for mid, _ in bins]
            ax.plot(mids, [float(np.median(v)) for _, v in bins], color="black", linewidth=1.2, label="median")
            ax.plot(mids, [float(np.quantile(v, 0.95)) for _, v in bins], color="black", linewidth=0.8,
                    linestyle="--", label="p95")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no judge latency recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("judge latency (s)")
    ax.set_title("judge latency per row", fontsize="medium", loc="left")


def health_figure(health: RunHealth, *, title: str | None = None) -> Any:
    """The three-panel matplotlib Figure (see the module doc)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    from ..rl._health import UNSCORED_KINDS
    n = health.n
    edges = np.unique(np.linspace(0, n, min(MAX_BINS, max(n, 1)) + 1).round().astype(np.int64))  # equal bins
    per = int(np.diff(edges).max()) if n else 0
    fig = Figure(figsize=(8, 8), dpi=100)
    ax_status, ax_lat, ax_kind = fig.subplots(3, 1, sharex=True)
    counts = {s: int(np.count_nonzero(health.status == i)) for i, s in enumerate(STATUSES)}
    fig.suptitle(title or f"judge health: {n} rows  " + "  ".join(f"{s} {k}" for s, k in counts.items()))

    _stacked(ax_status, edges, per, {s: health.status == i for i, s in enumerate(STATUSES)}, _STATUS_COLORS,
             "rows", "status")
    _latency_panel(ax_lat, health, edges, per)
    unscored = health.status == STATUSES.index("unscored")
    if not _stacked(ax_kind, edges, per, {k: unscored & (health.kind == i) for i, k in enumerate(UNSCORED_KINDS)},
                    _KIND_COLORS, "unscored", "unscored by kind"):
        ax_kind.text(0.5, 0.5, "no unscored rows", ha="center", va="center", transform=ax_kind.transAxes)
    ax_kind.set_xlabel("row")

    for ax in (ax_status, ax_kind):
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(bottom=0)
    ax_kind.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_kind.set_xlim(0, max(n, 1))
    fig.tight_layout()
    return fig


def save_health_plot(run: str | os.PathLike, path: str | os.PathLike | None = None, *,
                     title: str | None = None) -> Path:
    """Draw a run's judge health (see the module doc) to a PNG; default ``RUN/health.png``."""
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        raise ConfigError("rewardjudge plot needs matplotlib: pip install 'rewardjudge[eval]' (or pip install "
                          "matplotlib)") from None
    health = read_run_health(run)
    if path is None:
        path = (Path(run) if Path(run).is_dir() else Path(run).parent) / "health.png"
    return _save(health_figure(health, title=title), path)


def _save(fig: Any, path: str | os.PathLike) -> Path:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)  # a bare Figure: no pyplot, no display, no global state
    return Path(path)


def save_histogram(grades: "Iterable[Grade | Mapping[str, Any]] | SummaryBuilder", path: str | os.PathLike, *,
                   title: str | None = None) -> Path:
    """A PNG histogram of values (Grades, their dicts, or a ``SummaryBuilder``); label-only: per label."""
    builder = grades if isinstance(grades, SummaryBuilder) else SummaryBuilder(grades)
    return _save(_histogram_figure(builder, title), path)


def _histogram_figure(builder: SummaryBuilder, title: str | None) -> Any:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    fig = Figure(figsize=(6, 3.5), dpi=100)
    ax = fig.subplots()
    if builder.labels_only:
        labels = _label_counts(builder.labels)["labels"]
        if labels:
            ax.bar(list(labels), list(labels.values()), color=_STATUS_COLORS["scored"])
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
    distinct = np.unique(np.concatenate(list(by.values()))).tolist()
    if not distinct:
        return False
    if len(distinct) <= 12:
        width = 0.8 * (min(np.diff(distinct)) if len(distinct) > 1 else 1.0)
        bottom = np.zeros(len(distinct))
        for status, values in by.items():
            heights = np.array([np.count_nonzero(values == v) for v in distinct], dtype=float)
            if heights.any():
                ax.bar(distinct, heights, width=width, bottom=bottom, color=_STATUS_COLORS[status], label=status)
                bottom += heights
        ax.set_xticks(distinct)
    else:
        ax.hist(list(by.values()), bins=20, stacked=True, color=[_STATUS_COLORS[s] for s in by], label=list(by))
    ax.legend()
    return True


def add_parser(sub: Any) -> None:
    p = sub.add_parser("plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="an eval output folder (or its results/journal file)")
    p.add_argument("--output", "-o", help="the PNG to write (default: RUN/health.png)")
    p.add_argument("--title", help="the figure's title (default: the row and status counts)")
    p.set_defaults(func=_plot_command)


def _plot_command(args: argparse.Namespace) -> int:
    out = save_health_plot(args.run, args.output, title=args.title)
    print(f"judge health of {_results_path(args.run, journal=True)}: {out}")
    return 0
