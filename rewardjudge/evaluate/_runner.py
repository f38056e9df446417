"""evaluate_dataset: every row of a dataset graded, resumably, in bounded memory (docs/evaluation.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Awaitable, Callable, Iterator, Literal, Optional

import numpy as np
from pydantic import AfterValidator, ConfigDict, Field, StrictInt

from .._option_types import Options
from .._sync import run_sync
from ..errors import ConfigError, JudgeOutage
from ..grade import STATUSES, Grade
from ..graders._base import Grader
from ..rl._health import OutageGuard
from ._data import ArrowSlices, Columns, detect_columns, load_data, release_mapped_pages, row_groups, row_threads
from ._journal import STATUS_CODES, Journal, JournalIndex, lock_folder
from ._plot import save_histogram
from ._report import GRADE_COLUMNS, Summary, SummaryBuilder, grade_columns

log = logging.getLogger("rewardjudge")

__all__ = ["EvalOptions", "EvalResult", "aevaluate_dataset", "evaluate_dataset", "GRADE_COLUMNS", "grade_columns"]

#: the journal digest of a row whose input could not become a thread
INPUT_ERROR_DIGEST = "0" * 16
MANIFEST_FORMAT = 1
#: what a fresh start (overwrite=True, resume=False) removes from the output folder
_RUN_FILES = ("journal.jsonl", "manifest.json", "summary.json", "results.parquet", "results.jsonl",
              "histogram.png", "seal.key")

_GRADE_TYPES = {"grade_value": "float64", "grade_attempts": "int64", "grade_prompt_tokens": "int64",
                "grade_completion_tokens": "int64", "grade_latency_s": "float64"}


def _folder(path: Any) -> Any:
    if path is not None and Path(path).expanduser().is_file():
        raise ConfigError(f"output_dir (--output) is the folder the run writes its results into; {str(path)!r} "
                          f"is a file")
    return path


class EvalOptions(Options):
    """The keyword arguments of ``evaluate_dataset`` (its docstring says what each does)."""

    model_config = ConfigDict(frozen=True)

    columns: Any = None
    output_dir: Annotated[Optional[str | os.PathLike], AfterValidator(_folder)] = Field(
        None, description="must be a path (or None)")
    mode: Literal["eval", "train"] = Field("eval", description="must be 'eval' or 'train'")
    resume: bool = Field(True, description="must be True or False")
    retry_unscored: bool = Field(False, description="must be True or False")
    overwrite: bool = Field(False, description="must be True or False")
    progress: Any = True
    concurrency: Optional[StrictInt] = Field(None, ge=1, description="must be an int >= 1 (or None)")
    split: Optional[str] = Field(None, description="must be a split name (or None)")
    formats: tuple[Literal["parquet", "jsonl", "arrow"], ...] = Field(
        ("parquet", "jsonl"), description="must name output formats among parquet, jsonl, arrow")
    histogram: bool = Field(True, description="must be True or False")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="must be a number in (0, 1)")
    limit: Optional[StrictInt] = Field(None, ge=0, description="must be an int >= 0 (or None)")
    group_window: StrictInt = Field(1024, ge=1, description="must be an int >= 1")
    max_group: StrictInt = Field(64, ge=1, description="must be an int >= 1")
    outage: Optional[OutageGuard | bool] = Field(True, description="must be True, False, None or an OutageGuard")
    outage_window: StrictInt = Field(64, ge=1, description="must be an int >= 1")

    @property
    def out(self) -> Path | None:
        """The output folder (None: in memory)."""
        return Path(self.output_dir).expanduser() if self.output_dir is not None else None

    def rows(self, available: int) -> int:
        """How many rows this run grades of ``available``."""
        return available if self.limit is None else min(self.limit, available)

    def guard(self) -> OutageGuard | None:
        return OutageGuard() if self.outage is True else (self.outage or None)


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)  # readers never see half a file


@contextlib.contextmanager
def quiet_datasets() -> Iterator[None]:
    """No "Creating parquet from Arrow format" bars under our own output."""
    import datasets
    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


class OrderedOutput:
    """Writes rows in input order as they become ready (rows not in ``todo`` read back from the journal),
    and summarizes them; a ``chunk`` of rows is one Parquet row group and one JSONL append."""

    def __init__(self, ds: Any, n: int, out: Path | None, formats: tuple[str, ...], todo: np.ndarray,
                 index: JournalIndex, journal_path: Path | None, builder: SummaryBuilder, *,
                 chunk: int = 1024, ahead: int = 8192):
        self.ds, self.n, self.out, self.formats = ds, n, out, tuple(formats)
        self.todo, self.index, self.builder = todo, index, builder
        self.chunk, self.ahead = chunk, ahead
        self.frontier = 0
        self._ready: dict[int, dict[str, Any]] = {}
        self._moved = asyncio.Event()
        self._buffer: dict[str, list] = {c: [] for c in GRADE_COLUMNS}
        self._buffer_start = 0
        self._tables: list | None = [] if out is None else None  # with no folder: the results, in memory
        resumed = journal_path is not None and journal_path.exists() and bool((~todo & index.done).any())
        self._reader = open(journal_path, "rb") if resumed else None  # done rows, read back by offset
        self._slices = ArrowSlices(ds, n)
        self._parquet = self._jsonl = self._schema = None
        self._tmp: dict[str, Path] = {}
        if out is not None and {"parquet", "arrow"} & set(self.formats):
            self._tmp["parquet"] = out / "results.parquet.tmp"
        if out is not None and "jsonl" in self.formats:
            self._tmp["jsonl"] = out / "results.jsonl.tmp"
            self._jsonl = open(self._tmp["jsonl"], "w", encoding="utf-8")

    def accept(self, i: int, grade: dict[str, Any]) -> None:
        self._ready[i] = grade
        if i == self.frontier:
            self.advance()

    def advance(self) -> None:
        start = self.frontier
        while self.frontier < self.n:
            i = self.frontier
            if self.todo[i]:
                grade = self._ready.pop(i, None)
                if grade is None:
                    break
            else:
                self._reader.seek(int(self.index.offset[i]))
                grade = json.loads(self._reader.readline())["grade"]
            row = grade_columns(grade)
            self.builder.add(grade, label=row["grade_label"])
            for c in GRADE_COLUMNS:
                self._buffer[c].append(row[c])
            if len(self._buffer["grade_status"]) >= self.chunk:
                self._flush()
            self.frontier += 1
        if self.frontier != start:
            self._moved.set()

    async def admit(self, row: int) -> None:
        """Wait until ``row`` is within ``ahead`` rows of the frontier."""
        while row >= self.frontier + self.ahead:
            self._moved.clear()
            await self._moved.wait()

    def _arrow_schema(self) -> Any:
        if self._schema is None:
            import datasets
            grades = {c: datasets.Value(_GRADE_TYPES.get(c, "string")) for c in GRADE_COLUMNS}
            self._schema = datasets.Features({**self.ds.features, **grades}).arrow_schema
        return self._schema

    def _flush(self) -> None:
        import pyarrow as pa
        rows = len(self._buffer["grade_status"])
        if not rows:
            return
        inputs = self._slices.take(self._buffer_start, self._buffer_start + rows)
        schema = self._arrow_schema()
        grades = [pa.array(self._buffer[c], type=schema.field(c).type) for c in GRADE_COLUMNS]
        table = pa.Table.from_arrays([*inputs.columns, *grades], schema=schema)
        if self._tables is not None:
            self._tables.append(table)
        if "parquet" in self._tmp:
            if self._parquet is None:
                import pyarrow.parquet as pq
                self._parquet = pq.ParquetWriter(self._tmp["parquet"], schema)
            self._parquet.write_table(table)
        if self._jsonl is not None:
            lines = [json.dumps({**row, **{c: self._buffer[c][j] for c in GRADE_COLUMNS}},
                                ensure_ascii=False, default=str)
                     for j, row in enumerate(inputs.to_pylist())]
            self._jsonl.write("\n".join(lines) + "\n")
        self._buffer_start += rows
        for c in GRADE_COLUMNS:
            self._buffer[c].clear()

    def close(self) -> dict[str, Path]:
        """Finish the files (every row written) and move them into place."""
        self._flush()
        if "parquet" in self._tmp and self._parquet is None:  # no rows: an empty file with the columns
            import pyarrow.parquet as pq
            pq.write_table(self._arrow_schema().empty_table(), self._tmp["parquet"])
        self._close_files()
        if self.out is None:
            return {}
        files: dict[str, Path] = {}
        if "arrow" in self.formats:  # a folder datasets.load_from_disk reads
            files["arrow"] = self._save_arrow(self._tmp["parquet"])
        for kind, tmp in self._tmp.items():
            if kind in self.formats:
                files[kind] = self.out / f"results.{kind}"
                os.replace(tmp, files[kind])
            else:   # a parquet file written for the arrow folder only
                tmp.unlink(missing_ok=True)
        return files

    def _close_files(self, quiet: bool = False) -> None:
        files = (self._parquet, self._jsonl, self._reader)
        self._parquet = self._jsonl = self._reader = None
        for f in files:
            if f is not None:
                with contextlib.suppress(Exception) if quiet else contextlib.nullcontext():
                    f.close()

    def _save_arrow(self, parquet: Path) -> Path:
        import datasets
        cache, tmp, final = self.out / ".arrow-cache", self.out / "dataset.tmp", self.out / "dataset"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            with quiet_datasets():
                datasets.Dataset.from_parquet(str(parquet), cache_dir=str(cache)).save_to_disk(str(tmp))
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        return final

    def abort(self) -> None:
        """Drop the unfinished files (the journal keeps every finished row)."""
        self._close_files(quiet=True)
        for path in self._tmp.values():
            path.unlink(missing_ok=True)

    def memory_dataset(self) -> Any:
        """With no output folder: the results (inputs and grade columns) as a Dataset."""
        if self._tables is None:
            return None
        import datasets
        import pyarrow as pa
        from datasets.table import InMemoryTable
        table = pa.concat_tables(self._tables) if self._tables else self._arrow_schema().empty_table()
        return datasets.Dataset(InMemoryTable(table))



@dataclass(repr=False, eq=False)
class EvalResult:
    """A finished run: its summary, files, counts, column mapping and results ``dataset`` (read back on use)."""

    summary: Summary
    output_dir: Path | None
    files: dict[str, Path]
    graded_now: int = 0
    resumed: int = 0
    columns: Columns | None = None
    column_notes: list[str] = field(default_factory=list)
    _dataset: Any = None

    @property
    def dataset(self) -> Any:
        if self._dataset is None:
            kind = next((k for k in ("arrow", "parquet", "jsonl") if k in self.files), None)
            if kind is None:
                raise ConfigError("this run wrote no results file to read back")
            with quiet_datasets():
                self._dataset = load_data(self.files[kind])
        return self._dataset

    def grades(self) -> list[Grade]:
        """The grades back as Grade objects, in row order."""
        rows = self.dataset.select_columns([c for c in GRADE_COLUMNS if c in self.dataset.column_names]).to_list()
        return [Grade(value=r["grade_value"], grader_key=r["grade_key"], reasoning=r["grade_reasoning"],
                      status=r["grade_status"], error=r["grade_error"], raw_reply=r.get("grade_raw_reply"),
                      usage={k: r[f"grade_{k}"] for k in ("prompt_tokens", "completion_tokens")
                             if r.get(f"grade_{k}") is not None},
                      attempts=r["grade_attempts"] or 0, latency_s=r["grade_latency_s"],
                      grader_version=r["grade_version"],
                      extra=json.loads(r["grade_extra"]) if r.get("grade_extra") else {}) for r in rows]

    def __repr__(self) -> str:
        return (f"EvalResult(rows={self.summary.n}, graded_now={self.graded_now}, "
                f"resumed={self.resumed}, output_dir={str(self.output_dir)!r}, mean={self.summary.mean})")


def use_seal_key(grader: Grader, key_hex: str | None) -> str | None:
    """Make a sealing ``grader`` seal under ``key_hex`` (if given); its key (None: it does not seal)."""
    sealer = getattr(grader, "_sealer", None)
    if sealer is not None and key_hex is not None:
        grader._sealer = sealer = type(sealer)(bytes.fromhex(key_hex))
    return None if sealer is None else sealer.key_hex()


async def grade_groups(grader: Grader, groups: Iterator[list[tuple[int, Any, str]]], *, concurrency: int,
                       on_done: Callable[[int, str, Grade], None],
                       admit: Callable[[int], Awaitable[None]]) -> None:
    """One ``grade_batch`` call per group, ``concurrency`` in flight, ``on_done`` per row, ``admit(last_row)``
    before each (back-pressure). A stop (an error, a cancel) waits for the groups in flight: they are journaled."""
    failure: list[BaseException] = []
    slots = asyncio.Semaphore(max(1, concurrency))
    tasks: set[asyncio.Task] = set()

    async def run(group: list[tuple[int, Any, str]]) -> None:
        try:
            grades = await grader.grade_batch([thread for _, thread, _ in group])
            if len(grades) != len(group):
                raise ConfigError(f"{type(grader).__name__}.grade_batch returned {len(grades)} grades "
                                  f"for {len(group)} samples")
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the groups in flight
            failure.append(ConfigError(f"row {group[0][0]}: {type(exc).__name__}: {exc}")
                           if isinstance(exc, ConfigError) else exc)
            return
        finally:
            slots.release()
        try:
            for (i, _, digest), grade in zip(group, grades):
                on_done(i, digest, grade)
        except JudgeOutage as exc:  # every row of the group is journaled first; then the run stops
            failure.append(exc)

    try:
        for group in groups:
            if failure:
                break
            await admit(group[-1][0])
            await slots.acquire()
            if failure:
                slots.release()
                break
            task = asyncio.ensure_future(run(group))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        cancelled = False
        while pending := [t for t in tasks if not t.done()]:
            try:  # asyncio.wait, not gather: a cancel here stops the waiting, never the groups in flight
                await asyncio.wait(pending)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
    if failure:
        raise failure[0]


class _Run:
    """One run's state: rows left to grade, journal, ordered output, per-status counts."""

    def __init__(self, grader: Grader, opts: EvalOptions, ds: Any, cols: Columns, data_desc: str):
        self.grader, self.opts, self.ds, self.cols = grader, opts, ds, cols
        self.n = opts.rows(len(ds))
        self.out = opts.out
        self.eval_mode = opts.mode == "eval"
        self.journal = Journal(self.out / "journal.jsonl" if self.out is not None else None)
        manifest = {"format": MANIFEST_FORMAT, "grader_key": grader.grader_key, "grader_version": grader.version,
                    "mode": opts.mode, "columns": cols.to_dict(), "num_rows": self.n, "data": data_desc}
        self.index = self._open_folder(manifest) if self.out is not None else JournalIndex(self.n)
        done = self.index.done
        self.todo = ~done
        if opts.retry_unscored:
            self.todo |= self.index.status == STATUS_CODES["unscored"]
        self.n_todo, self.resumed = int(self.todo.sum()), int(done.sum())
        self.counts = {s: int(np.count_nonzero(done & ~self.todo & (self.index.status == STATUS_CODES[s])))
                       for s in STATUSES}
        self.guard = opts.guard()
        self.window: list[Grade] = []
        self.bar = None
        self.output: OrderedOutput | None = None

    def _open_folder(self, manifest: dict[str, Any]) -> JournalIndex:
        out, index = self.out, JournalIndex(self.n)
        mpath = out / "manifest.json"
        if self.opts.overwrite or not self.opts.resume:
            for name in _RUN_FILES:
                (out / name).unlink(missing_ok=True)
            shutil.rmtree(out / "dataset", ignore_errors=True)
        elif mpath.exists():
            old = json.loads(mpath.read_text())
            # the row count may change (a --limit trial, then the full run): done rows are checked by digest
            differ = [k for k in ("grader_version", "mode", "columns") if old.get(k) != manifest.get(k)]
            if differ:
                detail = "; ".join(f"{k}: was {old.get(k)!r}, now {manifest.get(k)!r}" for k in differ)
                raise ConfigError(f"{out} holds a run with different settings ({detail}). Resume with the same "
                                  f"grader, data and columns, or choose another output folder, or pass "
                                  f"overwrite=True (--overwrite) to start over.")
            index, beyond = self.journal.scan(self.n)
            if beyond:  # a longer earlier run: its extra rows stay in the journal
                log.warning("%s: %d journaled rows lie beyond this run's %d rows and are left out",
                            out, beyond, self.n)
            changed = []  # rows whose input changed since they were graded: no resume over them
            for i, thread, digest in row_threads(self.ds, self.cols, index.done, self.n, self.eval_mode):
                if np.uint64(int(digest if thread is not None else INPUT_ERROR_DIGEST, 16)) != index.digest[i]:
                    changed.append(i)
                    if len(changed) >= 5:
                        break
            if changed:
                raise ConfigError(f"rows {changed} changed since they were graded in this output folder; "
                                  f"use another output folder or overwrite=True (--overwrite)")
        elif (out / "journal.jsonl").exists():
            raise ConfigError(f"{out} has a journal but no manifest; use another folder or --overwrite")
        write_json(mpath, {**manifest, "updated": time.time()})
        # the seal key beside the journal (owner-only): a resumed run seals as the first did
        key_path = out / "seal.key"
        key = use_seal_key(self.grader, key_path.read_text().strip() if key_path.exists() else None)
        if key is not None and not key_path.exists():
            with os.fdopen(os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(key)
        return index

    def on_done(self, i: int, digest: str, grade: Grade) -> None:
        record = {"row": i, "input": digest, "grade": grade.to_dict()}
        self.journal.append(record)
        self.counts[grade.status] += 1
        self.output.accept(i, record["grade"])
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(self.counts, refresh=False)
        if self.guard is not None and digest != INPUT_ERROR_DIGEST:  # unreadable rows are not the judge's
            self.window.append(grade)
            if len(self.window) >= self.opts.outage_window:
                step, self.window = self.window, []
                self.guard.observe(step)  # JudgeOutage: the judge is down; rerun to resume

    def on_input_error(self, i: int, message: str) -> None:
        self.on_done(i, INPUT_ERROR_DIGEST, Grade(
            value=None, grader_key=self.grader.grader_key, status="unscored", grader_version=self.grader.version,
            error=f"input error: {message}"))

    async def grade(self, runner: Callable | None) -> dict[str, Path]:
        opts = self.opts
        if opts.progress is True:
            from tqdm import tqdm  # plain tqdm: notebook widgets need ipywidgets, text works everywhere
            self.bar = tqdm(total=self.n, initial=self.n - self.n_todo, desc=self.grader.grader_key, unit="row",
                            dynamic_ncols=True, smoothing=0.1, mininterval=0.5)
        else:  # none, or the caller's tqdm-like object
            self.bar = None if opts.progress is False or opts.progress is None else opts.progress
        self.output = output = OrderedOutput(
            self.ds, self.n, self.out, opts.formats, self.todo, self.index, self.journal.path,
            SummaryBuilder(), chunk=min(1024, opts.group_window), ahead=8 * opts.group_window)
        try:
            output.advance()  # rows already done before the first row to grade
            if self.n_todo:
                groups = row_groups(self.ds, self.cols, self.todo, self.n, self.eval_mode,
                                    window=opts.group_window, max_group=opts.max_group,
                                    on_input_error=self.on_input_error)
                if runner is not None:
                    await runner(self.grader, groups, self.on_done)
                else:
                    await grade_groups(self.grader, groups,
                                       concurrency=opts.concurrency or self.grader.batch_concurrency() or 32,
                                       on_done=self.on_done, admit=output.admit)
            if output.frontier < self.n:  # only a runner that skipped rows: never write a partial result
                raise ConfigError(f"row {output.frontier} was not graded; run again to finish it")
            return output.close()
        except BaseException:
            output.abort()
            raise
        finally:
            self.journal.close()
            if self.bar is not None and opts.progress is True:
                self.bar.close()

    def result(self, files: dict[str, Path], column_notes: list[str]) -> "EvalResult":
        builder = self.output.builder
        summary = builder.summary(confidence=self.opts.confidence)
        if self.out is not None:
            files["summary"] = self.out / "summary.json"
            write_json(files["summary"], summary.to_dict())
            if self.opts.histogram:
                try:
                    files["histogram"] = save_histogram(builder, self.out / "histogram.png")
                except ImportError:  # matplotlib is an extra: the results matter more than the picture
                    log.warning("no histogram.png: matplotlib is not installed "
                                "(pip install 'rewardjudge[eval]')")
        return EvalResult(summary=summary, output_dir=self.out, files=files, graded_now=self.n_todo,
                          resumed=self.resumed, columns=self.cols, column_notes=list(column_notes),
                          _dataset=self.output.memory_dataset())


async def aevaluate_dataset(data: Any, grader: Grader, options: EvalOptions | None = None, *,
                            _runner: Callable | None = None, **kwargs: Any) -> EvalResult:
    """The async form of ``evaluate_dataset`` (``await aevaluate_dataset(...)`` in a notebook cell)."""
    if not isinstance(grader, Grader):
        raise ConfigError(f"grader must be a Grader, got {type(grader).__name__} "
                          f"(to name one by spec, use rewardjudge.evaluate.resolve_grader)")
    opts = EvalOptions(**{**dict(options or {}), **kwargs})
    if grader.mode is not None and grader.mode != opts.mode:
        log.warning("grader %s has mode=%r, which wins over the run's mode=%r", grader.grader_key,
                    grader.mode, opts.mode)
    with quiet_datasets():
        ds = load_data(data, split=opts.split)
    release_mapped_pages(ds)
    clash = sorted(set(GRADE_COLUMNS) & set(ds.column_names))
    if clash:
        raise ConfigError(f"the data already has column(s) {clash} (is it an evaluation output?); "
                          f"drop or rename them first")
    cols, column_notes = detect_columns(opts.columns, ds.column_names)
    for note in column_notes:
        log.info("columns: %s", note)
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(opts.out) if opts.out is not None else None
    try:
        data_desc = str(data) if isinstance(data, (str, os.PathLike)) else type(data).__name__
        run = _Run(grader, opts, ds, cols, data_desc)
        files = await run.grade(_runner)
        return run.result(files, column_notes)
    finally:
        if lock is not None:
            os.close(lock)  # closing releases the lock; the kernel does it too if we are killed


def evaluate_dataset(data: Any, grader: Grader, options: EvalOptions | None = None, **kwargs: Any) -> EvalResult:
    """Every row of ``data`` graded by ``grader``, resumably (options: docs/evaluation.md): an ``EvalResult``."""
    return run_sync(aevaluate_dataset(data, grader, options, **kwargs))
