"""evaluate_dataset: grade every row of a dataset, resumably, and report.

A run writes into ``output_dir``:

* ``manifest.json``: grader key and version, mode, column mapping, row count
  (a rerun checks grader version, mode and columns match before resuming; the
  row count may grow, e.g. a ``limit`` trial first, then the full run);
* ``journal.jsonl``: one line per finished row, written as it finishes (see
  ``journal.py``): the checkpoint. A rerun with the same arguments grades
  only the rows missing from it, so a run killed at any moment (SIGKILL
  included) loses at most the rows in flight, and no finished row is sent
  to the judge again;
* at the end, ``results.parquet`` and ``results.jsonl`` (the inputs plus the
  ``grade_*`` columns, in input order), ``summary.json`` and
  ``histogram.png``.

Grade columns: ``grade_value`` (None when unscored), ``grade_status``,
``grade_reasoning``, ``grade_error``, ``grade_raw_reply``,
``grade_probabilities`` (JSON, only when some grade carries a distribution),
``grade_extra`` (JSON of the grader's extra fields), ``grade_key``,
``grade_version``, ``grade_attempts``, ``grade_prompt_tokens``,
``grade_completion_tokens``, ``grade_latency_s``.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .._sync import run_sync
from ..errors import ConfigError
from ..grade import STATUSES, Grade
from ..graders.base import Grader
from .data import Columns, iter_rows, load_data, row_to_thread, thread_digest
from .journal import Journal
from .report import Summary, save_histogram, summarize

log = logging.getLogger("rewardjudge")

__all__ = ["EvalResult", "aevaluate_dataset", "evaluate_dataset", "GRADE_COLUMNS"]

MANIFEST_FORMAT = 1
GRADE_COLUMNS = ("grade_value", "grade_status", "grade_reasoning", "grade_error", "grade_raw_reply",
                 "grade_probabilities", "grade_extra", "grade_key", "grade_version", "grade_attempts",
                 "grade_prompt_tokens", "grade_completion_tokens", "grade_latency_s")
_PROBABILITY_KEYS = ("probabilities", "distribution")


@dataclass
class EvalResult:
    """A finished run: the output ``dataset`` (inputs + grade columns), its
    ``summary``, where it was written, and what this call did."""

    dataset: Any
    summary: Summary
    output_dir: Path | None
    files: dict[str, Path] = field(default_factory=dict)
    graded_now: int = 0
    resumed: int = 0

    def grades(self) -> list[Grade]:
        """The grades back as Grade objects, in row order."""
        return [_grade_from_row(r) for r in self.dataset.select_columns(
            [c for c in GRADE_COLUMNS if c in self.dataset.column_names]).to_list()]

    def __repr__(self) -> str:
        return (f"EvalResult(rows={len(self.dataset)}, graded_now={self.graded_now}, "
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


# -- the run ---------------------------------------------------------------
def _record(row: int, digest: str, grade: Grade) -> dict[str, Any]:
    g = grade.to_dict()
    return {"row": row, "input": digest, "grade": g}


def _pending_threads(ds: Any, cols: Columns, todo: list[int], eval_mode: bool
                     ) -> Iterator[tuple[int, Any, str]]:
    for i, row in iter_rows(ds, todo):
        thread = row_to_thread(row, cols, index=i, eval_mode=eval_mode)
        yield i, thread, thread_digest(thread)


def _check_digests(ds: Any, cols: Columns, done: dict[int, dict], eval_mode: bool) -> None:
    """Refuse to resume over rows whose input changed since they were graded."""
    changed = []
    for i, _, digest in _pending_threads(ds, cols, sorted(done), eval_mode):
        if done[i].get("input") != digest:
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


async def _grade_rows(grader: Grader, pending: Iterator[tuple[int, Any, str]], *, concurrency: int,
                      on_done: Callable[[int, str, Grade], None]) -> None:
    """Grade rows ``concurrency`` at a time, calling ``on_done`` as each finishes.

    A usage error (ConfigError) stops the run after the rows in flight and
    is raised naming its row; finished rows stay in the journal.
    """
    failure: list[BaseException] = []

    async def worker() -> None:
        for i, thread, digest in pending:  # shared iterator: each row is taken once
            if failure:
                return
            try:
                (grade,) = await grader.grade_batch([thread])
            except ConfigError as exc:
                failure.append(ConfigError(f"row {i}: {type(exc).__name__}: {exc}"))
                return
            on_done(i, digest, grade)

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    if failure:
        raise failure[0]


def _default_concurrency(grader: Grader) -> int:
    limit = getattr(getattr(grader, "model", None), "max_concurrency", None)
    return limit if isinstance(limit, int) and limit > 0 else 32


async def aevaluate_dataset(data: Any, grader: Grader, *, columns: Any = None,
                            output_dir: str | os.PathLike | None = None, mode: str = "eval",
                            resume: bool = True, retry_unscored: bool = False, overwrite: bool = False,
                            progress: Any = True, concurrency: int | None = None,
                            split: str | None = None, formats: tuple[str, ...] = ("parquet", "jsonl"),
                            histogram: bool = True, confidence: float = 0.95,
                            limit: int | None = None, _runner: Callable | None = None) -> EvalResult:
    """The async form of ``evaluate_dataset`` (use it where a loop runs:
    ``await aevaluate_dataset(...)`` in a notebook cell)."""
    if not isinstance(grader, Grader):
        raise ConfigError(f"grader must be a Grader, got {type(grader).__name__} "
                          f"(to name one by spec, use rewardjudge.evaluate.resolve_grader)")
    if mode not in ("eval", "train"):
        raise ConfigError(f"mode must be 'eval' or 'train', got {mode!r}")
    if grader.mode is not None and grader.mode != mode:
        log.warning("grader %s has mode=%r, which wins over the run's mode=%r", grader.grader_key,
                    grader.mode, mode)
    unknown_formats = set(formats) - {"parquet", "jsonl", "arrow"}
    if unknown_formats:
        raise ConfigError(f"unknown output format(s) {sorted(unknown_formats)}; use parquet, jsonl, arrow")
    with _quiet_datasets():
        ds = load_data(data, split=split)
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    clash = sorted(set(GRADE_COLUMNS) & set(ds.column_names))
    if clash:
        raise ConfigError(f"the data already has column(s) {clash} (is it an evaluation output?); "
                          f"drop or rename them first")
    cols = Columns.parse(columns).resolve(ds.column_names)
    eval_mode = mode == "eval"
    n = len(ds)
    out = Path(output_dir).expanduser() if output_dir is not None else None
    manifest = _manifest(grader, cols, mode, n, str(data) if isinstance(data, (str, os.PathLike))
                         else type(data).__name__)
    lock = contextlib.nullcontext()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        lock = _exclusive(out)
    with lock:
        journal = Journal(out / "journal.jsonl" if out is not None else None)
        done: dict[int, dict] = {}
        if out is not None:
            mpath = out / "manifest.json"
            if overwrite or not resume:
                for name in ("journal.jsonl", "manifest.json", "summary.json", "results.parquet",
                             "results.jsonl", "histogram.png"):
                    (out / name).unlink(missing_ok=True)
                shutil.rmtree(out / "dataset", ignore_errors=True)
            elif mpath.exists():
                _check_manifest(json.loads(mpath.read_text()), manifest, out)
                loaded = journal.load()
                done = {i: rec for i, rec in loaded.items() if 0 <= i < n}
                if len(done) < len(loaded):  # a longer earlier run: its extra rows stay in the journal
                    log.warning("%s: %d journaled rows lie beyond this run's %d rows and are left out",
                                out, len(loaded) - len(done), n)
                _check_digests(ds, cols, done, eval_mode)
            elif (out / "journal.jsonl").exists():
                raise ConfigError(f"{out} has a journal but no manifest; use another folder or --overwrite")
            _write_json(mpath, {**manifest, "updated": time.time()})
        resumed = len(done)
        todo = [i for i in range(n) if i not in done
                or (retry_unscored and done[i]["grade"]["status"] == "unscored")]
        bar = _make_progress(progress, total=n, initial=n - len(todo), desc=grader.grader_key)
        counts = {s: 0 for s in STATUSES}
        for rec in done.values():
            counts[rec["grade"]["status"]] += 1
        if retry_unscored:
            counts["unscored"] -= sum(1 for i in todo if i in done)

        def on_done(i: int, digest: str, grade: Grade) -> None:
            rec = _record(i, digest, grade)
            journal.append(rec)
            done[i] = rec
            counts[grade.status] += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(counts, refresh=False)

        try:
            if todo:
                pending = _pending_threads(ds, cols, todo, eval_mode)
                if _runner is not None:
                    await _runner(grader, pending, on_done)
                else:
                    await _grade_rows(grader, pending,
                                      concurrency=concurrency or _default_concurrency(grader),
                                      on_done=on_done)
        finally:
            journal.close()
            if bar is not None and progress is True:
                bar.close()
        missing = [i for i in range(n) if i not in done]
        if missing:  # cannot happen unless a runner skipped rows: never write a partial result
            raise ConfigError(f"rows {missing[:5]} were not graded; run again to finish them")
        return _finish(ds, done, out, formats=formats, histogram=histogram, confidence=confidence,
                       graded_now=len(todo), resumed=resumed)


def evaluate_dataset(data: Any, grader: Grader, *, columns: Any = None,
                     output_dir: str | os.PathLike | None = None, mode: str = "eval",
                     resume: bool = True, retry_unscored: bool = False, overwrite: bool = False,
                     progress: Any = True, concurrency: int | None = None, split: str | None = None,
                     formats: tuple[str, ...] = ("parquet", "jsonl"), histogram: bool = True,
                     confidence: float = 0.95, limit: int | None = None) -> EvalResult:
    """Grade every row of ``data`` with ``grader``; write and return the results.

    * ``data``: a ``datasets.Dataset``, a list of row dicts, a DataFrame, a
      local JSON/JSONL/Parquet/Arrow/CSV path, a ``save_to_disk`` folder, or
      a hub name (where the network allows); ``split`` picks a split.
    * ``columns``: which columns make each thread (``Columns``, a mapping,
      or ``"prompt=q,completion=a,reference=gold,metadata=id"``); unset
      roles are found by common names.
    * ``output_dir``: where the journal and results go (None: in memory, no
      resume). Rerunning with the same arguments resumes; ``resume=False`` or
      ``overwrite=True`` starts over; ``retry_unscored=True`` grades again
      only the rows whose grade is unscored (judge failures).
    * ``mode``: ``"eval"`` (malformed answers get the evaluation penalty,
      0.0 by default) or ``"train"``; a grader's own ``mode`` wins.
    * ``concurrency``: rows in flight (default: the judge model's
      ``max_concurrency``, else 32). ``progress``: a tqdm bar with rate and
      ETA (True), none (False), or your own tqdm-like object.
    * ``limit``: grade only the first ``limit`` rows (a quick look).

    Works from synchronous code and inside a running loop (a notebook cell);
    in async code ``await aevaluate_dataset(...)`` is the same call.
    """
    return run_sync(aevaluate_dataset(
        data, grader, columns=columns, output_dir=output_dir, mode=mode, resume=resume,
        retry_unscored=retry_unscored, overwrite=overwrite, progress=progress,
        concurrency=concurrency, split=split, formats=formats, histogram=histogram,
        confidence=confidence, limit=limit))


# -- results -----------------------------------------------------------------
def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)  # readers never see half a file


def _grade_columns(done: dict[int, dict], n: int) -> dict[str, list]:
    cols: dict[str, list] = {c: [] for c in GRADE_COLUMNS}
    any_probs = False
    for i in range(n):
        g = done[i]["grade"]
        extra = dict(g.get("extra") or {})
        probs = next((extra[k] for k in _PROBABILITY_KEYS if k in extra), None)
        any_probs = any_probs or probs is not None
        usage = g.get("usage") or {}
        cols["grade_value"].append(g.get("value"))
        cols["grade_status"].append(g["status"])
        cols["grade_reasoning"].append(g.get("reasoning"))
        cols["grade_error"].append(g.get("error"))
        cols["grade_raw_reply"].append(g.get("raw_reply"))
        cols["grade_probabilities"].append(None if probs is None else json.dumps(probs, default=str))
        cols["grade_extra"].append(json.dumps(extra, default=str, ensure_ascii=False) if extra else None)
        cols["grade_key"].append(g.get("grader_key"))
        cols["grade_version"].append(g.get("grader_version"))
        cols["grade_attempts"].append(int(g.get("attempts") or 0))
        cols["grade_prompt_tokens"].append(usage.get("prompt_tokens"))
        cols["grade_completion_tokens"].append(usage.get("completion_tokens"))
        cols["grade_latency_s"].append(g.get("latency_s"))
    if not any_probs:
        del cols["grade_probabilities"]
    return cols


def _finish(ds: Any, done: dict[int, dict], out: Path | None, *, formats, histogram: bool,
            confidence: float, graded_now: int, resumed: int) -> EvalResult:
    import datasets

    n = len(ds)
    grade_cols = _grade_columns(done, n)
    features = {
        "grade_value": datasets.Value("float64"), "grade_status": datasets.Value("string"),
        "grade_reasoning": datasets.Value("string"), "grade_error": datasets.Value("string"),
        "grade_raw_reply": datasets.Value("string"), "grade_probabilities": datasets.Value("string"),
        "grade_extra": datasets.Value("string"), "grade_key": datasets.Value("string"),
        "grade_version": datasets.Value("string"), "grade_attempts": datasets.Value("int64"),
        "grade_prompt_tokens": datasets.Value("int64"), "grade_completion_tokens": datasets.Value("int64"),
        "grade_latency_s": datasets.Value("float64")}
    grades_ds = datasets.Dataset.from_dict(
        grade_cols, features=datasets.Features({k: features[k] for k in grade_cols}))
    result_ds = datasets.concatenate_datasets([ds.flatten_indices() if ds._indices is not None else ds,
                                               grades_ds], axis=1)
    grades = [done[i]["grade"] for i in range(n)]
    summary = summarize(grades, confidence=confidence)
    files: dict[str, Path] = {}
    if out is not None:
        with _quiet_datasets():
            _write_results(result_ds, out, formats, files)
        files["summary"] = out / "summary.json"
        _write_json(files["summary"], summary.to_dict())
        if histogram:
            try:
                files["histogram"] = save_histogram(grades, out / "histogram.png")
            except ImportError:  # matplotlib is an extra: the results matter more than the picture
                log.warning("no histogram.png: matplotlib is not installed "
                            "(pip install 'rewardjudge[eval]')")
    return EvalResult(dataset=result_ds, summary=summary, output_dir=out, files=files,
                      graded_now=graded_now, resumed=resumed)


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


def _write_results(result_ds: Any, out: Path, formats, files: dict[str, Path]) -> None:
    if "parquet" in formats:
        files["parquet"] = out / "results.parquet"
        _atomic(files["parquet"], lambda p: result_ds.to_parquet(str(p)))
    if "jsonl" in formats:
        files["jsonl"] = out / "results.jsonl"
        _atomic(files["jsonl"], lambda p: result_ds.to_json(str(p), lines=True, force_ascii=False))
    if "arrow" in formats:  # a folder datasets.load_from_disk reads
        files["arrow"] = out / "dataset"
        tmp = out / "dataset.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        result_ds.save_to_disk(str(tmp))
        shutil.rmtree(files["arrow"], ignore_errors=True)
        os.replace(tmp, files["arrow"])


def _atomic(path: Path, write: Callable[[Path], Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)
