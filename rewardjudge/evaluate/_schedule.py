"""Scheduling: rows as groups sharing a prompt, to ``grader.grade_batch`` with bounded calls in flight."""

from __future__ import annotations

import itertools
from typing import Any, Awaitable, Callable, Iterator

from ..errors import ConfigError, JudgeOutage
from ..grade import Grade
from ..graders._base import Grader
from ..graders._schedule import in_turn, prompt_units
from ..thread import StringThread
from ._arrow import iter_masked_rows
from ._data import Columns, row_to_thread, thread_digest

__all__ = ["INPUT_ERROR_DIGEST", "grade_groups", "row_groups", "row_threads"]

#: the journal digest of a row whose input could not become a thread
INPUT_ERROR_DIGEST = "0" * 16


def row_threads(ds: Any, cols: Columns, mask: Any, n: int, eval_mode: bool,
                chunk: int = 1024) -> Iterator[tuple[int, StringThread | None, str]]:
    """``(row, thread, digest)`` for the rows in ``mask``; for a row that cannot become a thread,
    ``(row, None, why)``."""
    for i, row in iter_masked_rows(ds, mask, n, chunk=chunk):
        try:
            thread = row_to_thread(row, cols, index=i, eval_mode=eval_mode)
        except ConfigError as exc:
            yield i, None, str(exc)
            continue
        yield i, thread, thread_digest(thread)


def row_groups(ds: Any, cols: Columns, mask: Any, n: int, eval_mode: bool, *, window: int, max_group: int,
               on_input_error: Callable[[int, str], None]) -> Iterator[list[tuple[int, Any, str]]]:
    """The rows to grade as groups ``[(row, thread, digest), ...]``, in order of first row.

    Within each ``window`` of rows, rows with the same ``prompt_key`` form one group, in balanced
    pieces of at most ``max_group``. A row that cannot become a thread goes to ``on_input_error``.
    """
    items: list[tuple[int, Any, str]] = []
    window_end = window

    def flush() -> list[list[tuple[int, Any, str]]]:
        out = prompt_units(items, lambda item: item[1], max_group)
        out.sort(key=lambda g: g[0][0])
        items.clear()
        return out

    for i, thread, digest in row_threads(ds, cols, mask, n, eval_mode, chunk=min(window, 1024)):
        if i >= window_end:
            yield from flush()
            window_end = (i // window + 1) * window
        if thread is None:
            on_input_error(i, digest)
        else:
            items.append((i, thread, digest))
    yield from flush()


async def grade_groups(grader: Grader, groups: Iterator[list[tuple[int, Any, str]]], *, concurrency: int,
                       on_done: Callable[[int, str, Grade], None],
                       admit: Callable[[int], Awaitable[None]] | None = None) -> None:
    """One ``grader.grade_batch`` call per group, at most ``concurrency`` in flight (``in_turn``, as
    ``grade_batch`` works through its own units), ``on_done`` per row; ``admit(last_row)`` is awaited
    before a group is sent (back-pressure). A ConfigError stops the run after the groups in flight,
    raised naming its first row.
    """
    failure: list[BaseException] = []

    async def run(group: list[tuple[int, Any, str]]) -> None:
        if admit is not None:
            await admit(group[-1][0])
        if failure:   # it failed while this group waited
            return
        try:
            grades = await grader.grade_batch([thread for _, thread, _ in group])
            if len(grades) != len(group):
                raise ConfigError(f"{type(grader).__name__}.grade_batch returned {len(grades)} grades "
                                  f"for {len(group)} samples")
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the groups in flight
            failure.append(ConfigError(f"row {group[0][0]}: {type(exc).__name__}: {exc}")
                           if isinstance(exc, ConfigError) else exc)
            return
        try:
            for (i, _, digest), grade in zip(group, grades):
                on_done(i, digest, grade)
        except JudgeOutage as exc:  # every row of the group is journaled first; then the run stops
            failure.append(exc)

    await in_turn(run, itertools.takewhile(lambda _: not failure, groups), concurrency)
    if failure:
        raise failure[0]
