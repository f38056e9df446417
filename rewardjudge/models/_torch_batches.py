"""TorchModel's units of work (``Job``, a prepared ``Batch``, a launched ``InFlight``) and their results."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import ConfigError, JudgeError
from ._base import Message, TokenDistribution


@dataclass(eq=False)
class Job:
    kind: str  # "dist" | "gen"
    messages: list[Message]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    choice_ids: list[list[int]] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)
    gen_key: tuple = ()
    submitted: float = 0.0
    ids: list[int] = field(default_factory=list)  # set by the preparation thread


@dataclass(eq=False)
class Batch:
    """One forward pass, prepared: the jobs and their padded tensors (on the CPU)."""

    kind: str
    jobs: list[Job]
    ids: Any                     # (batch, width) suffix ids after ``prefix``, left-padded
    mask: Any                    # (batch, width) 1 on real tokens
    prefix: tuple[int, ...] = ()  # the shared prefix whose keys/values come from the cache
    columns: Any = None          # token ids to read the probability of (dist)
    picks: list[list[list[int]]] = field(default_factory=list)  # per job, per choice: columns


@dataclass(eq=False)
class InFlight:
    """A launched distribution batch whose results are not yet read."""

    batch: Batch
    probs: Any          # (batch, columns) probabilities; on the CPU once ``event`` is done
    event: Any          # a CUDA event, or None when the results are ready
    started: float


def chunks(group: list[Job], max_size: int, max_tokens: int) -> Iterator[list[Job]]:
    """``group`` (sorted by length) cut into batches of at most ``max_size`` prompts, ``max_tokens`` padded tokens."""
    chunk: list[Job] = []
    for job in group:
        longest = max([len(j.ids) for j in chunk] + [len(job.ids)])
        if chunk and (len(chunk) >= max_size or longest * (len(chunk) + 1) > max_tokens):
            yield chunk
            chunk = []
        chunk.append(job)
    if chunk:
        yield chunk


def make_batch(kind: str, chunk: list[Job], prefix: tuple[int, ...], pad_id: int, pin: bool) -> Batch:
    """The padded tensors of ``chunk`` after ``prefix`` (pinned for a CUDA device)."""
    import numpy as np
    import torch

    skip = len(prefix)
    width = max(len(j.ids) for j in chunk) - skip
    # left padding: every prompt ends at the last column, where the next token is read;
    # with a shared prefix, the padding sits between the prefix and each suffix.
    # (numpy fills rows from lists ~10x faster than torch.tensor, which holds the GIL)
    ids_np = np.full((len(chunk), width), pad_id, dtype=np.int64)
    mask_np = np.zeros((len(chunk), width), dtype=np.int64)
    for i, job in enumerate(chunk):
        n = len(job.ids) - skip
        ids_np[i, width - n:] = job.ids[skip:]
        mask_np[i, width - n:] = 1
    batch = Batch(kind, chunk, torch.from_numpy(ids_np), torch.from_numpy(mask_np), prefix)
    if kind == "dist":
        columns: dict[int, int] = {}
        for job in chunk:
            batch.picks.append([[columns.setdefault(t, len(columns)) for t in tids]
                                for tids in job.choice_ids])
        batch.columns = torch.tensor(list(columns), dtype=torch.long)
    if pin:  # the copy to the device does not block
        batch.ids, batch.mask = batch.ids.pin_memory(), batch.mask.pin_memory()
    return batch


def _settle(fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if fut.done():  # the caller gave up (cancelled)
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


def reply(job: Job, result: Any, error: BaseException | None) -> None:
    """From a worker thread: settle ``job``'s future on its event loop."""
    with contextlib.suppress(RuntimeError):  # that event loop is closed: nobody is waiting
        job.loop.call_soon_threadsafe(_settle, job.future, result, error)


def fail(jobs: list[Job], exc: BaseException) -> None:
    """Fail ``jobs`` with ``exc`` as a judge-side error (out of memory, a broken model)."""
    if not isinstance(exc, (JudgeError, ConfigError)):
        exc = JudgeError(f"torch judge failed: {type(exc).__name__}: {exc}")
    for job in jobs:
        reply(job, None, exc)


def _settle_distributions(batch: Batch, rows: list[list[float]], which: list[int],
                          forward_s: float) -> None:
    """On a caller's event loop: the distributions of the jobs ``which`` of a finished batch."""
    now = time.perf_counter()
    for i in which:
        job, row, picks = batch.jobs[i], rows[i], batch.picks[i]
        probs = {c: sum(row[k] for k in cols) for c, cols in zip(job.choices, picks)}
        _settle(job.future, TokenDistribution(
            probs, top_k=None, unseen_max=None,
            usage={"prompt_tokens": len(job.ids), "completion_tokens": 0,
                   "total_tokens": len(job.ids)},
            latency_s=now - job.submitted,
            raw={"batch_size": len(batch.jobs), "forward_s": forward_s,
                 "prefix_tokens": len(batch.prefix)}), None)


def settle_distributions(batch: Batch, rows: list[list[float]], forward_s: float) -> None:
    """From the forward thread: a finished batch's results, settled with one callback per caller's loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[int]] = {}
    for i, job in enumerate(batch.jobs):
        by_loop.setdefault(job.loop, []).append(i)
    for loop, which in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that event loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_settle_distributions, batch, rows, which, forward_s)
