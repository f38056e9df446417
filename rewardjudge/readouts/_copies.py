"""Verbatim copies of the policy's texts in a judge's reply (``VerdictForm.read`` skips the verdicts inside them)."""

from __future__ import annotations

import bisect
from typing import Sequence

__all__ = ["MAX_POLICY_TEXTS", "inside_copy", "policy_copies"]

#: policy texts looked for per reply, and copies of each one recorded
MAX_POLICY_TEXTS = 64
_MAX_COPIES = 256


def policy_copies(text: str, policy_texts: Sequence[str], min_len: int = 1
                  ) -> "tuple[list[int], list[int]]":
    """Verbatim copies in ``text`` of ``policy_texts`` (``min_len`` characters or
    more), for ``inside_copy``: sorted starts and, for each, the furthest end of a
    copy starting at or before it. Bounded work: a few times the reply's length."""
    spans: list[tuple[int, int]] = []
    budget = 8 * len(text) + 4096
    for p in list(policy_texts)[:MAX_POLICY_TEXTS]:
        if not isinstance(p, str) or len(p) < max(1, min_len) or len(p) > len(text):
            continue
        at, found = text.find(p), 0
        while at >= 0 and found < _MAX_COPIES and budget > 0:
            spans.append((at, at + len(p)))
            found += 1
            budget -= len(p)
            at = text.find(p, at + 1)
        if budget <= 0:
            break
    spans.sort()
    starts, reach, far = [], [], -1
    for a, b in spans:
        far = max(far, b)
        starts.append(a)
        reach.append(far)
    return starts, reach


def inside_copy(copies: "tuple[list[int], list[int]]", start: int, end: int) -> bool:
    """Whether ``[start, end)`` lies inside one of ``copies`` (``policy_copies``):
    a copy starting at or before ``start`` reaches ``end``."""
    starts, reach = copies
    i = bisect.bisect_right(starts, start) - 1
    return i >= 0 and reach[i] >= end
