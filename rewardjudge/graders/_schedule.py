"""Scheduling by prompt group, the same for every door that hands samples to a grader (docs/pipeline.md)."""

from __future__ import annotations

import json
from typing import Callable, Hashable, Sequence, TypeVar

from ..thread import StringThread

__all__ = ["balanced_chunks", "groups", "prompt_key", "prompt_units"]

T = TypeVar("T")


def prompt_key(thread: StringThread) -> str:
    """The prompt ``thread`` answers, its turns before the completion and ``metadata["query"]``, as text."""
    return json.dumps([thread.context_turns(), thread.metadata.get("query")], sort_keys=True,
                      default=str, ensure_ascii=False)


def groups(items: Sequence[T], key: Callable[[T], Hashable]) -> list[list[T]]:
    """``items`` gathered by ``key``, in the order of each group's first item."""
    by_key: dict[Hashable, list[T]] = {}
    for item in items:
        by_key.setdefault(key(item), []).append(item)
    return list(by_key.values())


def balanced_chunks(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` in ceil(n/size) consecutive pieces whose sizes differ by at most one."""
    items = list(items)
    n_chunks = -(-len(items) // max(1, size))
    base, extra = divmod(len(items), max(1, n_chunks))
    cuts = [k * base + min(k, extra) for k in range(n_chunks + 1)]
    return [items[a:b] for a, b in zip(cuts, cuts[1:])]


def prompt_units(items: Sequence[T], thread_of: Callable[[T], StringThread], max_group: int | None) -> list[list[T]]:
    """``items`` by the prompt their thread answers, in balanced pieces of at most ``max_group`` (None: whole)."""
    return [unit for group in groups(items, lambda item: prompt_key(thread_of(item)))
            for unit in balanced_chunks(group, max_group or len(group))]
