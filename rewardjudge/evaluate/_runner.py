"""evaluate_dataset: grade every row of a dataset, resumably, in bounded memory.

A run writes into ``output_dir``:

* ``manifest.json``: grader key and version, mode, column mapping, row count
  (a rerun checks grader version, mode and columns match before resuming; the
  row count may grow, e.g. a ``limit`` trial first, then the full run);
* ``journal.jsonl``: one line per finished row, written as it finishes (see
  ``_journal.py``): the checkpoint. A rerun with the same arguments grades
  only the rows missing from it, so a run killed at any moment (SIGKILL
  included) loses at most the rows in flight, and no finished row is sent
  to the judge again;
* ``results.parquet`` and ``results.jsonl`` (the inputs plus the ``grade_*``
  columns, in input order), written while the run goes: each row is
  written as soon as every row before it is finished (Parquet row groups,
  JSONL appends, into ``*.tmp`` files renamed when the last row is in, so a
  results file is always complete); ``summary.json`` and
  ``histogram.png`` at the end, from one pass over the rows as they are
  written.

Memory does not grow with the data: rows are read a chunk at a time,
finished rows wait at most ``8 x group_window`` rows ahead of the writer, a
resumed run indexes its journal (17 bytes a row) instead of loading it, and
the summary keeps 12 bytes a row (``bench/bench_eval_memory.py`` measures
it). ``result.dataset`` is read back from the results when first used (with
no ``output_dir``, everything stays in memory). Rows that share a prompt go
to ``grader.grade_batch`` together (see ``evaluate_dataset``, ``_schedule``).

Grade columns: ``grade_value`` (None when unscored), ``grade_status``,
``grade_label`` (the verdict's label when the verdict is a label, such as
PASS/FAIL or a scorer's category: see ``_report.grade_label``),
``grade_reasoning``, ``grade_error``, ``grade_raw_reply``,
``grade_probabilities`` (JSON, when the grade carries a distribution),
``grade_extra`` (JSON of the grader's extra fields), ``grade_key``,
``grade_version``, ``grade_attempts``, ``grade_prompt_tokens``,
``grade_completion_tokens``, ``grade_latency_s``.

A row whose input cannot become a thread (an image part for a grader that
reads text, a missing prompt) is ``unscored`` with ``grade_error``
``"input error: ..."`` and never sent; the run goes on.

>>> result = evaluate_dataset("answers.jsonl", grader, output_dir="runs/v1")  # doctest: +SKIP
>>> print(result.summary)                                                     # doctest: +SKIP
>>> result.dataset.to_pandas().head()                                         # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from .._sync import run_sync
from .._validate import validated
from ..errors import ConfigError
from ..grade import STATUSES, Grade
from ..graders._base import Grader
from ..rl._health import OutageGuard
from ._arrow import iter_masked_rows, release_mapped_pages
from ._data import Columns, detect_columns, load_data, row_to_thread, thread_digest
from ._journal import STATUS_CODES, Journal, JournalIndex
from ._options import EvalOptions
from ._output import GRADE_COLUMNS, OrderedOutput, grade_columns, quiet_datasets, write_json
from ._report import Summary, SummaryBuilder, save_histogram
from ._schedule import INPUT_ERROR_DIGEST, default_concurrency, grade_groups, row_groups

log = logging.getLogger("rewardjudge")

__all__ = ["EvalResult", "aevaluate_dataset", "evaluate_dataset", "GRADE_COLUMNS", "grade_columns"]

MANIFEST_FORMAT = 1
#: what a fresh start (overwrite=True, resume=False) removes from the output folder
_RUN_FILES = ("journal.jsonl", "manifest.json", "summary.json", "results.parquet", "results.jsonl",
              "histogram.png", "seal.key")


class EvalResult:
    """A finished run: its ``summary``, where it was written (``files``),
    what this call did (``graded_now``, ``resumed``), the column mapping
    used (``columns``, ``column_notes``), and the output ``dataset`` (inputs
    + grade columns), read from the written results when first used."""

    def __init__(self, *, summary: Summary, output_dir: Path | None, files: dict[str, Path],
                 graded_now: int = 0, resumed: int = 0, columns: Columns | None = None,
                 column_notes: list[str] | None = None, dataset: Any = None):
        self.summary = summary
        self.output_dir = output_dir
        self.files = files
        self.graded_now = graded_now
        self.resumed = resumed
        self.columns = columns
        self.column_notes = list(column_notes or [])
        self._dataset = dataset

    @property
    def dataset(self) -> Any:
        """The results as a ``datasets.Dataset`` (memory-mapped from
        ``results.parquet`` / the ``dataset`` folder / ``results.jsonl``)."""
        if self._dataset is None:
            import datasets

            with quiet_datasets():
                if "arrow" in self.files:
                    self._dataset = datasets.load_from_disk(str(self.files["arrow"]))
                elif "parquet" in self.files:
                    self._dataset = datasets.Dataset.from_parquet(str(self.files["parquet"]))
                elif "jsonl" in self.files:
                    self._dataset = datasets.Dataset.from_json(str(self.files["jsonl"]))
                else:
                    raise ConfigError("this run wrote no results file to read back")
        return self._dataset

    def grades(self) -> list[Grade]:
        """The grades back as Grade objects, in row order."""
        return [_grade_from_row(r) for r in self.dataset.select_columns(
            [c for c in GRADE_COLUMNS if c in self.dataset.column_names]).to_list()]

    def __repr__(self) -> str:
        return (f"EvalResult(rows={self.summary.n}, graded_now={self.graded_now}, "
                f"resumed={self.resumed}, output_dir={str(self.output_dir)!r}, mean={self.summary.mean})")


def _grade_from_row(r: dict[str, Any]) -> Grade:
    usage = {k: r[f"grade_{k}"] for k in ("prompt_tokens", "completion_tokens")
             if r.get(f"grade_{k}") is not None}
    extra = json.loads(r["grade_extra"]) if r.get("grade_extra") else {}
    return Grade(value=r["grade_value"], grader_key=r["grade_key"], reasoning=r["grade_reasoning"],
                 status=r["grade_status"], error=r["grade_error"], raw_reply=r.get("grade_raw_reply"),
                 usage=usage, attempts=r["grade_attempts"] or 0, latency_s=r["grade_latency_s"],
                 grader_version=r["grade_version"], extra=extra)


# -- output dir and manifest ------------------------------------------------
def _keep_seal_key(grader: Grader, path: Path) -> None:
    """The grader's seal key, kept beside the journal (readable by its owner
    only): a resumed run seals its requests as the first run did, so its
    requests, cache hits and raw replies are the same."""
    sealer = getattr(grader, "_sealer", None)
    if sealer is None:
        return
    if path.exists():
        grader._sealer = type(sealer)(bytes.fromhex(path.read_text().strip()))
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(sealer.key_hex())


def _manifest(grader: Grader, cols: Columns, mode: str, n_rows: int, data_desc: str) -> dict[str, Any]:
    return {"format": MANIFEST_FORMAT, "grader_key": grader.grader_key, "grader_version": grader.version,
            "mode": mode, "columns": cols.as_dict(), "num_rows": n_rows, "data": data_desc}


def _check_manifest(old: dict[str, Any], new: dict[str, Any], out: Path) -> None:
    # the row count may change (a --limit trial run, then the full run): rows
    # already done are checked one by one against their input digest instead
    differ = [k for k in ("grader_version", "mode", "columns") if old.get(k) != new.get(k)]
    if differ:
        detail = "; ".join(f"{k}: was {old.get(k)!r}, now {new.get(k)!r}" for k in differ)
        raise ConfigError(f"{out} holds a run with different settings ({detail}). Resume with the same "
                          f"grader, data and columns, or choose another output folder, or pass "
                          f"overwrite=True (--overwrite) to start over.")


@contextlib.contextmanager
def _exclusive(out: Path) -> Iterator[None]:
    """One run per output folder at a time (two would interleave journals)."""
    import fcntl

    fd = os.open(out / ".lock", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"another run is writing to {out}; wait for it or use another folder") from None
        yield
    finally:
        os.close(fd)  # closing releases the lock; the kernel does it too if we are killed


def _check_digests(ds: Any, cols: Columns, index: JournalIndex, n: int, eval_mode: bool) -> None:
    """Refuse to resume over rows whose input changed since they were graded."""
    changed = []
    for i, row in iter_masked_rows(ds, index.done, n):
        try:
            digest = thread_digest(row_to_thread(row, cols, index=i, eval_mode=eval_mode))
        except ConfigError:
            digest = INPUT_ERROR_DIGEST
        if np.uint64(int(digest, 16)) != index.digest[i]:
            changed.append(i)
            if len(changed) >= 5:
                break
    if changed:
        raise ConfigError(f"rows {changed} changed since they were graded in this output folder; "
                          f"use another output folder or overwrite=True (--overwrite)")


def _make_progress(progress: bool | Any, total: int, initial: int, desc: str):
    if progress is False or progress is None:
        return None
    if progress is not True:
        return progress  # a tqdm-like object the caller made
    from tqdm import tqdm  # plain tqdm: notebook widgets need ipywidgets, text works everywhere

    return tqdm(total=total, initial=initial, desc=desc, unit="row", dynamic_ncols=True,
                smoothing=0.1, mininterval=0.5)



# -- the run ---------------------------------------------------------------
class _Run:
    """One run's state: the rows left to grade, the journal, the ordered
    output and the per-status counts the progress bar shows."""

    def __init__(self, grader: Grader, opts: EvalOptions, ds: Any, cols: Columns, data_desc: str):
        self.grader, self.opts, self.ds, self.cols = grader, opts, ds, cols
        self.n = opts.rows(len(ds))
        self.out = opts.out
        self.eval_mode = opts.mode == "eval"
        self.journal = Journal(self.out / "journal.jsonl" if self.out is not None else None)
        manifest = _manifest(grader, cols, opts.mode, self.n, data_desc)
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
        """Start over, or check the earlier run's manifest and inputs and index its journal."""
        out, index = self.out, JournalIndex(self.n)
        mpath = out / "manifest.json"
        if self.opts.overwrite or not self.opts.resume:
            for name in _RUN_FILES:
                (out / name).unlink(missing_ok=True)
            shutil.rmtree(out / "dataset", ignore_errors=True)
        elif mpath.exists():
            _check_manifest(json.loads(mpath.read_text()), manifest, out)
            index, beyond = self.journal.scan(self.n)
            if beyond:  # a longer earlier run: its extra rows stay in the journal
                log.warning("%s: %d journaled rows lie beyond this run's %d rows and are left out",
                            out, beyond, self.n)
            _check_digests(self.ds, self.cols, index, self.n, self.eval_mode)
        elif (out / "journal.jsonl").exists():
            raise ConfigError(f"{out} has a journal but no manifest; use another folder or --overwrite")
        write_json(mpath, {**manifest, "updated": time.time()})
        _keep_seal_key(self.grader, out / "seal.key")
        return index

    def on_done(self, i: int, digest: str, grade: Grade) -> None:
        """A row finished: journal it, count it, hand it to the output, watch for an outage."""
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
                step = self.window[:]
                self.window.clear()
                self.guard.observe(step)  # JudgeOutage: the judge is down; rerun to resume

    def on_input_error(self, i: int, message: str) -> None:
        self.on_done(i, INPUT_ERROR_DIGEST, Grade(
            value=None, grader_key=self.grader.grader_key, status="unscored", grader_version=self.grader.version,
            error=f"input error: {message}"))

    async def grade(self, runner: Callable | None) -> dict[str, Path]:
        """Grade the rows left, writing the results as they finish; the files written."""
        opts = self.opts
        self.bar = _make_progress(opts.progress, total=self.n, initial=self.n - self.n_todo,
                                  desc=self.grader.grader_key)
        self.output = output = OrderedOutput(
            self.ds, self.n, self.out, opts.formats, self.todo, self.index, self.journal.path,
            SummaryBuilder(capacity=self.n), chunk=min(1024, opts.group_window), ahead=8 * opts.group_window)
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
                                       concurrency=opts.concurrency or default_concurrency(self.grader),
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
        """The summary (and its files), and the result to return."""
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
                          resumed=self.resumed, columns=self.cols, column_notes=column_notes,
                          dataset=self.output.memory_dataset())


def _load(data: Any, opts: EvalOptions) -> Any:
    """The dataset, its mapped pages released (rows are read from the files: see ``_arrow``)."""
    with quiet_datasets():
        ds = load_data(data, split=opts.split)
    release_mapped_pages(ds)
    clash = sorted(set(GRADE_COLUMNS) & set(ds.column_names))
    if clash:
        raise ConfigError(f"the data already has column(s) {clash} (is it an evaluation output?); "
                          f"drop or rename them first")
    return ds


async def aevaluate_dataset(data: Any, grader: Grader, *, columns: Any = None,
                            output_dir: str | os.PathLike | None = None, mode: str = "eval",
                            resume: bool = True, retry_unscored: bool = False, overwrite: bool = False,
                            progress: Any = True, concurrency: int | None = None,
                            split: str | None = None, formats: tuple[str, ...] = ("parquet", "jsonl"),
                            histogram: bool = True, confidence: float = 0.95,
                            limit: int | None = None, group_window: int = 1024, max_group: int = 64,
                            outage: OutageGuard | None | bool = True, outage_window: int = 64,
                            _runner: Callable | None = None,
                            _on_columns: Callable[[list[str]], None] | None = None) -> EvalResult:
    """The async form of ``evaluate_dataset`` (use it where a loop runs:
    ``await aevaluate_dataset(...)`` in a notebook cell)."""
    if not isinstance(grader, Grader):
        raise ConfigError(f"grader must be a Grader, got {type(grader).__name__} "
                          f"(to name one by spec, use rewardjudge.evaluate.resolve_grader)")
    given = locals()  # the keyword arguments, validated as one model
    opts = validated(EvalOptions, **{name: given[name] for name in EvalOptions.model_fields})
    if grader.mode is not None and grader.mode != opts.mode:
        log.warning("grader %s has mode=%r, which wins over the run's mode=%r", grader.grader_key,
                    grader.mode, opts.mode)
    ds = _load(data, opts)
    cols, column_notes = detect_columns(opts.columns, ds.column_names)
    for note in column_notes:
        log.info("columns: %s", note)
    if _on_columns is not None:
        _on_columns(column_notes)
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    with _exclusive(opts.out) if opts.out is not None else contextlib.nullcontext():
        data_desc = str(data) if isinstance(data, (str, os.PathLike)) else type(data).__name__
        run = _Run(grader, opts, ds, cols, data_desc)
        files = await run.grade(_runner)
        return run.result(files, column_notes)


def evaluate_dataset(data: Any, grader: Grader, *, columns: Any = None,
                     output_dir: str | os.PathLike | None = None, mode: str = "eval",
                     resume: bool = True, retry_unscored: bool = False, overwrite: bool = False,
                     progress: Any = True, concurrency: int | None = None, split: str | None = None,
                     formats: tuple[str, ...] = ("parquet", "jsonl"), histogram: bool = True,
                     confidence: float = 0.95, limit: int | None = None, group_window: int = 1024,
                     max_group: int = 64, outage: OutageGuard | None | bool = True,
                     outage_window: int = 64) -> EvalResult:
    """Grade every row of ``data`` with ``grader``; write and return the results.

    * ``data``: a ``datasets.Dataset``, a list of row dicts, a DataFrame, a
      local JSON/JSONL/Parquet/Arrow/CSV path, a ``save_to_disk`` folder, or
      a hub name (where the network allows); ``split`` picks a split.
    * ``columns``: which columns make each thread (``Columns``, a mapping,
      or ``"prompt=q,completion=a,reference=gold,metadata=id"``); unset
      roles are mapped only from unambiguous names (``prompt``/``question``,
      ``completion``/``response``, ``messages``, ``reference``/
      ``ground_truth``); ``result.column_notes`` says what was mapped.
    * ``output_dir``: where the journal and results go (None: in memory, no
      resume). Rerunning with the same arguments resumes; ``resume=False`` or
      ``overwrite=True`` starts over; ``retry_unscored=True`` grades again
      only the rows whose grade is unscored (judge failures).
    * ``mode``: ``"eval"`` (malformed answers get the evaluation penalty,
      0.0 by default) or ``"train"``; a grader's own ``mode`` wins.
    * Groups: rows that share a prompt (the same turns before the
      completion) within ``group_window`` consecutive rows go to
      ``grader.grade_batch`` in one call, in balanced pieces of at most
      ``max_group`` rows, so ``CandidateJudgeGrader(batch_size=8)`` judges
      eight such rows in one request. Output order is input order.
    * ``concurrency``: ``grade_batch`` calls (groups) in flight (default:
      the judge model's ``max_concurrency``, else 32); the judge model
      still bounds its own requests. ``progress``: a tqdm bar with rate and
      ETA (True), none (False), or your own tqdm-like object.
    * ``limit``: grade only the first ``limit`` rows (a quick look).
    * ``outage``: the run stops with ``JudgeOutage`` (finished rows kept in
      the journal: rerun to resume) when more than half of the rows are
      unscored in 3 consecutive windows of ``outage_window`` rows (True, the
      default), per an ``OutageGuard`` given, or never (None / False).

    Results are written as rows finish and the summary is built in the same
    pass, so memory stays flat however many rows there are (see the module
    doc).

    Works from synchronous code and inside a running loop (a notebook cell);
    in async code ``await aevaluate_dataset(...)`` is the same call.
    """
    options = dict(locals())
    return run_sync(aevaluate_dataset(options.pop("data"), options.pop("grader"), **options))
