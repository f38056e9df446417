"""evaluate_dataset: grade every row of a dataset, resumably, in bounded memory.

A run writes into ``output_dir``:

* ``manifest.json``: grader key and version, mode, column mapping, row count
  (a rerun checks grader version, mode and columns match before resuming; the
  row count may grow, e.g. a ``limit`` trial first, then the full run);
* ``journal.jsonl``: one line per finished row, written as it finishes (see
  ``journal.py``): the checkpoint. A rerun with the same arguments grades
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

Memory does not grow with the data: rows are read from the dataset a chunk
at a time, finished rows wait only until the rows before them are done (at
most ``8 x group_window`` rows ahead), a resumed run indexes its journal
(17 bytes a row) instead of loading it, and the summary keeps 12 bytes a
row (``report.SummaryBuilder``). ``bench/bench_eval_memory.py`` measures it.
``result.dataset`` is read back from ``results.parquet`` when first used
(with no ``output_dir``, everything stays in memory instead).

Scheduling knows groups: rows whose threads share a context (every turn
before the completion, i.e. the same prompt) within ``group_window``
consecutive rows are handed to ``grader.grade_batch`` together, in balanced
pieces of at most ``max_group`` rows; ``concurrency`` bounds the
``grade_batch`` calls in flight. A grader that judges a prompt's completions
together (``CandidateJudgeGrader(batch_size=8)``) then sends one request for
eight rows that share a prompt; every other grader grades them concurrently
as before. Sort the data by prompt if its groups lie further apart.

Grade columns: ``grade_value`` (None when unscored), ``grade_status``,
``grade_label`` (the verdict's label when the verdict is a label, such as
PASS/FAIL or a scorer's category: see ``report.grade_label``),
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

import asyncio
import contextlib
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

import numpy as np

from .._sync import run_sync
from ..errors import ConfigError, JudgeOutage
from ..grade import STATUSES, Grade
from ..graders._base import Grader
from ..graders._schedule import balanced_chunks, groups as by_prompt_group, prompt_key
from ..rl._health import OutageGuard
from ._data import (ArrowSlices, Columns, detect_columns, iter_masked_rows, load_data, release_mapped_pages,
                   row_to_thread, thread_digest)
from ._journal import STATUS_CODES, Journal, JournalIndex, Reader
from ._report import Summary, SummaryBuilder, grade_label, save_histogram

log = logging.getLogger("rewardjudge")

__all__ = ["EvalResult", "aevaluate_dataset", "evaluate_dataset", "GRADE_COLUMNS"]

MANIFEST_FORMAT = 1
GRADE_COLUMNS = ("grade_value", "grade_status", "grade_label", "grade_reasoning", "grade_error",
                 "grade_raw_reply", "grade_probabilities", "grade_extra", "grade_key", "grade_version",
                 "grade_attempts", "grade_prompt_tokens", "grade_completion_tokens", "grade_latency_s")
_GRADE_TYPES = {"grade_value": "float64", "grade_attempts": "int64", "grade_prompt_tokens": "int64",
                "grade_completion_tokens": "int64", "grade_latency_s": "float64"}
_PROBABILITY_KEYS = ("probabilities", "distribution")


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

            with _quiet_datasets():
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


def _record(row: int, digest: str, grade: Grade) -> dict[str, Any]:
    return {"row": row, "input": digest, "grade": grade.to_dict()}


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


# -- scheduling: groups of rows that share a prompt -------------------------------
INPUT_ERROR_DIGEST = "0" * 16


def _groups(ds: Any, cols: Columns, mask: Any, n: int, eval_mode: bool, *, window: int, max_group: int,
            on_input_error: Callable[[int, str], None]) -> Iterator[list[tuple[int, Any, str]]]:
    """The rows to grade as groups ``[(row, thread, digest), ...]``, in the
    order of each group's first row.

    Rows are read ``window`` at a time; within a window, rows whose threads
    answer the same prompt (``graders._schedule.prompt_key``: every turn
    before the completion, and ``metadata["query"]``) form one group, split
    into balanced pieces of at most ``max_group``. A
    row whose input cannot become a thread (say, an image part for a text
    grader) is reported to ``on_input_error`` and never sent.
    """
    items: list[tuple[int, Any, str]] = []
    window_end = window

    def flush() -> list[list[tuple[int, Any, str]]]:
        out = [piece for members in by_prompt_group(items, lambda item: prompt_key(item[1]))
               for piece in balanced_chunks(members, max_group)]
        out.sort(key=lambda g: g[0][0])
        items.clear()
        return out

    for i, row in iter_masked_rows(ds, mask, n, chunk=min(window, 1024)):
        if i >= window_end:
            yield from flush()
            window_end = (i // window + 1) * window
        try:
            thread = row_to_thread(row, cols, index=i, eval_mode=eval_mode)
        except ConfigError as exc:
            on_input_error(i, str(exc))
            continue
        items.append((i, thread, thread_digest(thread)))
    yield from flush()


async def _grade_groups(grader: Grader, groups: Iterator[list[tuple[int, Any, str]]], *, concurrency: int,
                        on_done: Callable[[int, str, Grade], None],
                        admit: Callable[[int], Awaitable[None]] | None = None) -> None:
    """Hand each group to ``grader.grade_batch`` (one call per group), at
    most ``concurrency`` calls in flight, calling ``on_done`` per row as its
    group finishes. ``admit(last_row)`` is awaited before a group is sent
    (the ordered writer's back-pressure).

    A usage error (ConfigError) stops the run after the groups in flight and
    is raised naming its first row; finished rows stay in the journal.
    """
    failure: list[BaseException] = []
    slots = asyncio.Semaphore(max(1, concurrency))
    tasks: set[asyncio.Task] = set()

    async def run(group: list[tuple[int, Any, str]]) -> None:
        try:
            grades = await grader.grade_batch([thread for _, thread, _ in group])
            if len(grades) != len(group):
                raise ConfigError(f"{type(grader).__name__}.grade_batch returned {len(grades)} grades "
                                  f"for {len(group)} samples")
        except ConfigError as exc:
            failure.append(ConfigError(f"row {group[0][0]}: {type(exc).__name__}: {exc}"))
            return
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the groups in flight
            failure.append(exc)
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
            if admit is not None:
                await admit(group[-1][0])
            await slots.acquire()
            if failure:
                slots.release()
                break
            task = asyncio.ensure_future(run(group))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        if tasks:
            await asyncio.gather(*list(tasks), return_exceptions=True)
    if failure:
        raise failure[0]


def _default_concurrency(grader: Grader) -> int:
    limit = getattr(getattr(grader, "model", None), "max_concurrency", None)
    return limit if isinstance(limit, int) and limit > 0 else 32


# -- the run ---------------------------------------------------------------
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
    if mode not in ("eval", "train"):
        raise ConfigError(f"mode must be 'eval' or 'train', got {mode!r}")
    for name, v in (("group_window", group_window), ("max_group", max_group)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
    if grader.mode is not None and grader.mode != mode:
        log.warning("grader %s has mode=%r, which wins over the run's mode=%r", grader.grader_key,
                    grader.mode, mode)
    unknown_formats = set(formats) - {"parquet", "jsonl", "arrow"}
    if unknown_formats:
        raise ConfigError(f"unknown output format(s) {sorted(unknown_formats)}; use parquet, jsonl, arrow")
    with _quiet_datasets():
        ds = load_data(data, split=split)
    n = len(ds) if limit is None else max(0, min(int(limit), len(ds)))
    release_mapped_pages(ds)  # rows are read from the files, not through the map (see data.py)
    clash = sorted(set(GRADE_COLUMNS) & set(ds.column_names))
    if clash:
        raise ConfigError(f"the data already has column(s) {clash} (is it an evaluation output?); "
                          f"drop or rename them first")
    cols, column_notes = detect_columns(columns, ds.column_names)
    for note in column_notes:
        log.info("columns: %s", note)
    if _on_columns is not None:
        _on_columns(column_notes)
    eval_mode = mode == "eval"
    out = Path(output_dir).expanduser() if output_dir is not None else None
    manifest = _manifest(grader, cols, mode, n, str(data) if isinstance(data, (str, os.PathLike))
                         else type(data).__name__)
    lock = contextlib.nullcontext()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        lock = _exclusive(out)
    with lock:
        journal = Journal(out / "journal.jsonl" if out is not None else None)
        index = JournalIndex(n)
        if out is not None:
            mpath = out / "manifest.json"
            if overwrite or not resume:
                for name in ("journal.jsonl", "manifest.json", "summary.json", "results.parquet",
                             "results.jsonl", "histogram.png", "seal.key"):
                    (out / name).unlink(missing_ok=True)
                shutil.rmtree(out / "dataset", ignore_errors=True)
            elif mpath.exists():
                _check_manifest(json.loads(mpath.read_text()), manifest, out)
                index, beyond = journal.scan(n)
                if beyond:  # a longer earlier run: its extra rows stay in the journal
                    log.warning("%s: %d journaled rows lie beyond this run's %d rows and are left out",
                                out, beyond, n)
                _check_digests(ds, cols, index, n, eval_mode)
            elif (out / "journal.jsonl").exists():
                raise ConfigError(f"{out} has a journal but no manifest; use another folder or --overwrite")
            _write_json(mpath, {**manifest, "updated": time.time()})
            _keep_seal_key(grader, out / "seal.key")
        done = index.done
        todo = ~done
        if retry_unscored:
            todo |= index.status == STATUS_CODES["unscored"]
        n_todo = int(todo.sum())
        resumed = int(done.sum())
        bar = _make_progress(progress, total=n, initial=n - n_todo, desc=grader.grader_key)
        counts = {s: int(np.count_nonzero(done & ~todo & (index.status == STATUS_CODES[s])))
                  for s in STATUSES}
        output = _OrderedOutput(ds, n, out, formats, todo, index, journal.path, SummaryBuilder(capacity=n),
                                chunk=min(1024, group_window), ahead=8 * group_window)

        guard = OutageGuard() if outage is True else (outage or None)
        window: list[Grade] = []

        def on_done(i: int, digest: str, grade: Grade) -> None:
            rec = _record(i, digest, grade)
            journal.append(rec)
            counts[grade.status] += 1
            output.accept(i, rec["grade"])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(counts, refresh=False)
            if guard is not None and digest != INPUT_ERROR_DIGEST:  # unreadable rows are not the judge's
                window.append(grade)
                if len(window) >= outage_window:
                    step = window[:]
                    window.clear()
                    guard.observe(step)  # JudgeOutage: the judge is down; rerun to resume

        def on_input_error(i: int, message: str) -> None:
            on_done(i, INPUT_ERROR_DIGEST, Grade(
                value=None, grader_key=grader.grader_key, status="unscored", grader_version=grader.version,
                error=f"input error: {message}"))

        try:
            output.advance()  # rows already done before the first row to grade
            if n_todo:
                groups = _groups(ds, cols, todo, n, eval_mode, window=group_window, max_group=max_group,
                                 on_input_error=on_input_error)
                if _runner is not None:
                    await _runner(grader, groups, on_done)
                else:
                    await _grade_groups(grader, groups,
                                        concurrency=concurrency or _default_concurrency(grader),
                                        on_done=on_done, admit=output.admit)
            if output.frontier < n:  # cannot happen unless a runner skipped rows: never write a partial result
                raise ConfigError(f"row {output.frontier} was not graded; run again to finish it")
            files = output.close()
        except BaseException:
            output.abort()
            raise
        finally:
            journal.close()
            if bar is not None and progress is True:
                bar.close()
        summary = output.builder.summary(confidence=confidence)
        if out is not None:
            files["summary"] = out / "summary.json"
            _write_json(files["summary"], summary.to_dict())
            if histogram:
                try:
                    files["histogram"] = save_histogram(output.builder, out / "histogram.png")
                except ImportError:  # matplotlib is an extra: the results matter more than the picture
                    log.warning("no histogram.png: matplotlib is not installed "
                                "(pip install 'rewardjudge[eval]')")
        return EvalResult(summary=summary, output_dir=out, files=files, graded_now=n_todo, resumed=resumed,
                          columns=cols, column_notes=column_notes, dataset=output.memory_dataset())


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
    return run_sync(aevaluate_dataset(
        data, grader, columns=columns, output_dir=output_dir, mode=mode, resume=resume,
        retry_unscored=retry_unscored, overwrite=overwrite, progress=progress,
        concurrency=concurrency, split=split, formats=formats, histogram=histogram,
        confidence=confidence, limit=limit, group_window=group_window, max_group=max_group,
        outage=outage, outage_window=outage_window))


# -- results -----------------------------------------------------------------
def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)  # readers never see half a file


def grade_columns(g: dict[str, Any]) -> dict[str, Any]:
    """One grade (``Grade.to_dict()``) as the ``grade_*`` columns of its row."""
    extra = g.get("extra") or {}
    probs = g.get("distribution") or next((extra[k] for k in _PROBABILITY_KEYS if k in extra), None)
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


def _grade_features():
    import datasets

    return {c: datasets.Value(_GRADE_TYPES.get(c, "string")) for c in GRADE_COLUMNS}


class _OrderedOutput:
    """Writes rows in input order as they become ready, and summarizes them.

    ``accept(i, grade)`` takes a row graded now; rows ``todo`` left out were
    finished by an earlier run and are read back from the journal when their
    turn comes. Rows are written ``chunk`` at a time: one Parquet row group
    and one JSONL append per chunk, into ``*.tmp`` files that ``close``
    renames. With no output folder, grade columns are kept in memory and
    ``memory_dataset`` joins them to the inputs.
    """

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
        self._memory: dict[str, list] | None = {c: [] for c in GRADE_COLUMNS} if out is None else None
        self._reader = (Reader(journal_path) if journal_path is not None and journal_path.exists()
                        and bool((~todo & index.done).any()) else None)
        self._slices = ArrowSlices(ds, n) if out is not None else None
        self._parquet = None
        self._jsonl = None
        self._schema = None
        self._tmp: dict[str, Path] = {}
        if out is not None:
            want_parquet = "parquet" in self.formats or "arrow" in self.formats
            if want_parquet:
                self._tmp["parquet"] = out / "results.parquet.tmp"
            if "jsonl" in self.formats:
                self._tmp["jsonl"] = out / "results.jsonl.tmp"
                self._jsonl = open(self._tmp["jsonl"], "w", encoding="utf-8")

    # -- taking rows ----------------------------------------------------------
    def accept(self, i: int, grade: dict[str, Any]) -> None:
        self._ready[i] = grade
        if i == self.frontier:
            self.advance()

    def advance(self) -> None:
        """Write every row from the frontier on that is ready."""
        start = self.frontier
        while self.frontier < self.n:
            i = self.frontier
            if self.todo[i]:
                grade = self._ready.pop(i, None)
                if grade is None:
                    break
            else:
                grade = self._reader.read(int(self.index.offset[i]))["grade"]
            self._emit(grade)
            self.frontier += 1
        if self.frontier != start:
            self._moved.set()

    async def admit(self, row: int) -> None:
        """Wait until ``row`` is within ``ahead`` rows of the frontier."""
        while row >= self.frontier + self.ahead:
            self._moved.clear()
            await self._moved.wait()

    def _emit(self, grade: dict[str, Any]) -> None:
        row = grade_columns(grade)
        self.builder.add(grade, label=row["grade_label"])
        target = self._memory if self._memory is not None else self._buffer
        for c in GRADE_COLUMNS:
            target[c].append(row[c])
        if self._memory is None and len(self._buffer["grade_status"]) >= self.chunk:
            self._flush()

    # -- writing --------------------------------------------------------------
    def _flush(self) -> None:
        import pyarrow as pa

        rows = len(self._buffer["grade_status"])
        if not rows:
            return
        inputs = self._slices.take(self._buffer_start, self._buffer_start + rows)
        if self._schema is None:
            import datasets

            features = datasets.Features({**self.ds.features, **_grade_features()})
            self._schema = features.arrow_schema
        grades = pa.table({c: pa.array(self._buffer[c], type=self._schema.field(c).type)
                           for c in GRADE_COLUMNS})
        table = pa.Table.from_arrays([*inputs.columns, *grades.columns], schema=self._schema)
        if "parquet" in self._tmp:
            if self._parquet is None:
                import pyarrow.parquet as pq

                self._parquet = pq.ParquetWriter(self._tmp["parquet"], self._schema)
            self._parquet.write_table(table)
        if self._jsonl is not None:
            input_rows = inputs.to_pylist()
            lines = []
            for j, row in enumerate(input_rows):
                for c in GRADE_COLUMNS:
                    row[c] = self._buffer[c][j]
                lines.append(json.dumps(row, ensure_ascii=False, default=str))
            self._jsonl.write("\n".join(lines) + "\n")
        self._buffer_start += rows
        for c in GRADE_COLUMNS:
            self._buffer[c].clear()

    def close(self) -> dict[str, Path]:
        """Finish the files (every row written) and move them into place."""
        files: dict[str, Path] = {}
        if self._reader is not None:
            self._reader.close()
        if self.out is None:
            return files
        self._flush()
        if "parquet" in self._tmp:
            if self._parquet is None:  # no rows: an empty file with the columns
                import datasets
                import pyarrow.parquet as pq

                schema = datasets.Features({**self.ds.features, **_grade_features()}).arrow_schema
                pq.write_table(schema.empty_table(), self._tmp["parquet"])
            else:
                self._parquet.close()
                self._parquet = None
        if self._jsonl is not None:
            self._jsonl.close()
            self._jsonl = None
        if "jsonl" in self._tmp:
            files["jsonl"] = self.out / "results.jsonl"
            os.replace(self._tmp["jsonl"], files["jsonl"])
        if "arrow" in self.formats:  # a folder datasets.load_from_disk reads
            files["arrow"] = self._save_arrow(self._tmp["parquet"])
        if "parquet" in self.formats:
            files["parquet"] = self.out / "results.parquet"
            os.replace(self._tmp["parquet"], files["parquet"])
        else:
            self._tmp["parquet"].unlink(missing_ok=True)
        return files

    def _save_arrow(self, parquet: Path) -> Path:
        import datasets

        cache = self.out / ".arrow-cache"
        tmp = self.out / "dataset.tmp"
        final = self.out / "dataset"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            with _quiet_datasets():
                datasets.Dataset.from_parquet(str(parquet), cache_dir=str(cache)).save_to_disk(str(tmp))
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        return final

    def abort(self) -> None:
        """Drop the unfinished files (the journal keeps every finished row)."""
        if self._parquet is not None:
            with contextlib.suppress(Exception):
                self._parquet.close()
        if self._jsonl is not None:
            self._jsonl.close()
        if self._reader is not None:
            self._reader.close()
        for path in self._tmp.values():
            path.unlink(missing_ok=True)

    def memory_dataset(self) -> Any:
        """With no output folder: the inputs joined to the grade columns."""
        if self._memory is None:
            return None
        import datasets

        ds = self.ds.select(range(self.n)) if self.n < len(self.ds) else self.ds
        grades = datasets.Dataset.from_dict(self._memory, features=datasets.Features(_grade_features()))
        return datasets.concatenate_datasets([ds.flatten_indices() if ds._indices is not None else ds,
                                              grades], axis=1)


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """No "Creating parquet from Arrow format" bars under our own output."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()
