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
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..grade import STATUSES

__all__ = ["RunHealth", "health_figure", "read_run_health", "save_health_plot"]

_STATUS_COLORS = {"scored": "#4C72B0", "penalized": "#DD8452", "unscored": "#C44E52"}
_KIND_COLORS = {"timeout": "#8172B3", "http": "#C44E52", "connection": "#937860", "invalid_reply": "#DA8BC3",
                "no_sealed_verdict": "#8C8C8C", "cut_off": "#CCB974", "other": "#64B5CD"}
MAX_BINS = 100


class RunHealth:
    """Per row: status code (index in ``STATUSES``; -1 not done), judge latency (NaN: none) and
    unscored kind (index in ``UNSCORED_KINDS``; -1 when not unscored)."""

    def __init__(self, status: np.ndarray, latency: np.ndarray, kind: np.ndarray, source: Path):
        self.status, self.latency, self.kind, self.source = status, latency, kind, source

    @property
    def n(self) -> int:
        return int(self.status.size)


def _kind_code(error: Any) -> int:
    from ..rl._health import UNSCORED_KINDS, unscored_kind

    return UNSCORED_KINDS.index(unscored_kind(SimpleNamespace(error=error)))


def _source(run: str | os.PathLike) -> Path:
    path = Path(run)
    if path.is_file():
        return path
    if not path.is_dir():
        raise ConfigError(f"no evaluation run at {path}: pass an eval output folder (rewardjudge eval ... "
                          f"--output DIR) or its results/journal file")
    journal, parquet, jsonl = path / "journal.jsonl", path / "results.parquet", path / "results.jsonl"
    if parquet.exists() and (not journal.exists() or parquet.stat().st_mtime >= journal.stat().st_mtime):
        return parquet
    for found in (journal, jsonl):
        if found.exists():
            return found
    raise ConfigError(f"{path} holds no journal.jsonl or results file: is it an eval output folder?")


def _from_rows(rows: list[tuple[int, Any, Any, Any]], source: Path) -> RunHealth:
    n = max((r for r, *_ in rows), default=-1) + 1
    status = np.full(n, -1, dtype=np.int8)
    latency = np.full(n, np.nan)
    kind = np.full(n, -1, dtype=np.int8)
    codes = {s: i for i, s in enumerate(STATUSES)}
    for row, st, lat, err in rows:  # a later record of a row wins (a --retry-unscored rerun)
        status[row] = codes.get(st, -1)
        latency[row] = np.nan if lat is None else float(lat)
        kind[row] = _kind_code(err) if st == "unscored" else -1
    return RunHealth(status, latency, kind, source)


def read_run_health(run: str | os.PathLike) -> RunHealth:
    """Statuses, latencies and unscored kinds of a run's rows (see the module doc)."""
    source = _source(run)
    rows: list[tuple[int, Any, Any, Any]] = []
    if source.suffix == ".parquet":
        import pyarrow.parquet as pq

        names = set(pq.ParquetFile(source).schema_arrow.names)
        if "grade_status" not in names:
            raise ConfigError(f"{source} has no grade_status column (not an eval output)")
        cols = [c for c in ("grade_status", "grade_latency_s", "grade_error") if c in names]
        t = pq.read_table(source, columns=cols).to_pydict()
        none = [None] * len(t["grade_status"])
        return _from_rows([(i, *r) for i, r in enumerate(zip(t["grade_status"], t.get("grade_latency_s", none),
                                                              t.get("grade_error", none)))], source)
    with open(source, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed run's journal
            if "grade" in rec and "row" in rec:  # a journal record
                g = rec["grade"]
                rows.append((int(rec["row"]), g.get("status"), g.get("latency_s"), g.get("error")))
            elif "grade_status" in rec:  # a results row
                rows.append((i, rec["grade_status"], rec.get("grade_latency_s"), rec.get("grade_error")))
            else:
                raise ConfigError(f"{source} line {i + 1} is neither a journal record nor a results row")
    return _from_rows(rows, source)


def _bins(n: int) -> np.ndarray:
    """Bin edges over rows 0..n (at most ``MAX_BINS`` bins of equal size)."""
    return np.unique(np.linspace(0, n, min(MAX_BINS, max(n, 1)) + 1).round().astype(np.int64))


def _stacked(ax: Any, edges: np.ndarray, series: dict[str, np.ndarray], colors: dict[str, str]) -> bool:
    """Stacked bars, one per bin, of per-row masks summed in each bin."""
    left, width = edges[:-1], np.diff(edges)
    bottom = np.zeros(left.size)
    for name, mask in series.items():
        counts = np.add.reduceat(mask.astype(np.int64), left) if mask.size else np.zeros(left.size)
        if counts.any():
            ax.bar(left, counts, width=width, bottom=bottom, align="edge", color=colors[name], label=name,
                   linewidth=0)
            bottom += counts
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
            _latency_lines(ax, edges, health.latency, has)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no judge latency recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("judge latency (s)")
    ax.set_title("judge latency per row", fontsize="medium", loc="left")


def _latency_lines(ax: Any, edges: np.ndarray, latency: np.ndarray, has: np.ndarray) -> None:
    bins = [((lo + hi) / 2, latency[lo:hi][has[lo:hi]]) for lo, hi in zip(edges[:-1], edges[1:])]
    bins = [(mid, vals) for mid, vals in bins if vals.size]
    mids = [mid for mid, _ in bins]
    ax.plot(mids, [float(np.median(v)) for _, v in bins], color="black", linewidth=1.2, label="median")
    ax.plot(mids, [float(np.quantile(v, 0.95)) for _, v in bins], color="black", linewidth=0.8, linestyle="--",
            label="p95")


def health_figure(health: RunHealth, *, title: str | None = None) -> Any:
    """The three-panel matplotlib Figure (see the module doc)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from ..rl._health import UNSCORED_KINDS

    n = health.n
    edges = _bins(n)
    per = int(np.diff(edges).max()) if n else 0
    fig = Figure(figsize=(8, 8), dpi=100)
    ax_status, ax_lat, ax_kind = fig.subplots(3, 1, sharex=True)
    counts = {s: int(np.count_nonzero(health.status == i)) for i, s in enumerate(STATUSES)}
    fig.suptitle(title or f"judge health: {n} rows  " + "  ".join(f"{s} {k}" for s, k in counts.items()))

    if n and _stacked(ax_status, edges, {s: health.status == i for i, s in enumerate(STATUSES)},
                      _STATUS_COLORS):
        ax_status.legend(loc="upper right", fontsize="small")
    ax_status.set_ylabel(f"rows per bin\n({per} rows a bin)" if per > 1 else "rows")
    ax_status.set_title("status", fontsize="medium", loc="left")

    _latency_panel(ax_lat, health, edges, per)

    unscored = health.status == STATUSES.index("unscored")
    if n and unscored.any():
        _stacked(ax_kind, edges, {k: unscored & (health.kind == i) for i, k in enumerate(UNSCORED_KINDS)},
                 _KIND_COLORS)
        ax_kind.legend(loc="upper right", fontsize="small")
    else:
        ax_kind.text(0.5, 0.5, "no unscored rows", ha="center", va="center", transform=ax_kind.transAxes)
    ax_kind.set_ylabel(f"unscored per bin\n({per} rows a bin)" if per > 1 else "unscored")
    ax_kind.set_title("unscored by kind", fontsize="medium", loc="left")
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
        folder = Path(run) if Path(run).is_dir() else Path(run).parent
        path = folder / "health.png"
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    health_figure(health, title=title).savefig(out)  # a bare Figure: no pyplot, no display, no global state
    return out


def add_parser(sub: Any) -> None:
    """Register ``plot``."""
    p = sub.add_parser("plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="an eval output folder (or its results/journal file)")
    p.add_argument("--output", "-o", help="the PNG to write (default: RUN/health.png)")
    p.add_argument("--title", help="the figure's title (default: the row and status counts)")
    p.set_defaults(func=_plot_command)


def _plot_command(args: argparse.Namespace) -> int:
    out = save_health_plot(args.run, args.output, title=args.title)
    print(f"judge health of {_source(args.run)}: {out}")
    return 0
