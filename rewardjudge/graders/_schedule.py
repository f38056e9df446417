"""Scheduling by prompt group: which samples travel together.

An RL step or a dataset holds several completions of one prompt. Every
door that hands samples to a grader (``grade_batch``, ``evaluate_dataset``,
the Ray runner, the trainer adapters, the reward server) groups them the
same way: ``prompt_key`` says which prompt a sample answers, ``groups``
gathers the samples of each prompt, ``balanced_chunks`` splits a group
that is too large into near-equal pieces (9 at most 8 a piece: 5 + 4, so
no sample is judged alone by accident).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Hashable, Sequence, TypeVar

from ..thread import StringThread

__all__ = ["balanced_chunks", "groups", "prompt_key"]

T = TypeVar("T")


def prompt_key(thread: StringThread) -> str:
    """The prompt ``thread`` answers: its turns before the completion and its
    ``metadata["query"]`` (a structured query), as canonical text.

    >>> a = StringThread([("user", "2+2?"), ("assistant", "4")])
    >>> b = StringThread([("user", "2+2?"), ("assistant", "5")])
    >>> prompt_key(a) == prompt_key(b)
    True
    """
    return json.dumps([thread.context_turns(), thread.metadata.get("query")], sort_keys=True,
                      default=str, ensure_ascii=False)


def groups(items: Sequence[T], key: Callable[[T], Hashable]) -> list[list[T]]:
    """``items`` gathered by ``key``, groups in the order of their first item,
    items in their order."""
    by_key: dict[Hashable, list[T]] = {}
    for item in items:
        by_key.setdefault(key(item), []).append(item)
    return list(by_key.values())


def balanced_chunks(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` in ceil(n/size) consecutive pieces whose sizes differ by at most one.

    >>> balanced_chunks(list(range(9)), 8)
    [[0, 1, 2, 3, 4], [5, 6, 7, 8]]
    """
    items = list(items)
    if not items:
        return []
    n_chunks = -(-len(items) // max(1, size))
    base, extra = divmod(len(items), n_chunks)
    out: list[list[Any]] = []
    start = 0
    for k in range(n_chunks):
        end = start + base + (1 if k < extra else 0)
        out.append(items[start:end])
        start = end
    return out
