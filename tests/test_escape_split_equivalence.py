"""The neutraliser's and ``letters``' escape splitters (``readouts._text._splitter``) split as they did before their
repeats of a group were written as branches: the same pieces, on the bench's hostile inputs, the attack corpus and
random runs of escapes, their chains and parts (``%25``, ``amp;``, ``=3d``, bytes of UTF-8 after a ``%``). Nothing here
times anything (``python -m bench linear``)."""

from __future__ import annotations

import json
import random
import re
from importlib import resources

import pytest

from bench.bench_linear import hostile_texts
from rewardjudge.readouts import _text

_PARTS = ["%", "25", "3c", "%3c", "%e2", "%80", "%8b", "%9", "%a", "%b0", "=", "3d", "=3c", "=e2", "=80", "&", "amp;",
          "&lt;", "&lt", "&#", "&#x", "0", "60", "3c;", "x3c", "&gt;", "\\", "u003c", "\\u{3c}", "\\x3c", "\\074",
          "\\n{less-than sign}", "#", ";", " ", "a", "9", "f", "8", "ab", "\\\\", "%%", "&amp;amp;", "%2525"]


def _old(pattern: str) -> "re.Pattern[str]":
    """The splitter as it was: ``pattern``'s named groups unnamed, as one capturing group."""
    return re.compile("(" + re.sub(r"\(\?P<\w+>", "(?:", pattern) + ")")


def _texts() -> "list[str]":
    rng = random.Random(13)
    with resources.files("rewardjudge.data").joinpath("attacks.jsonl").open(encoding="utf-8") as lines:
        attacks = [json.loads(line)["text"] for line in lines if line.strip()]
    runs = ["".join(rng.choice(_PARTS) for _ in range(rng.choice([1, 3, 10, 100, 1000]))) for _ in range(2000)]
    return [*hostile_texts(4096).values(), *attacks, *runs]


@pytest.mark.parametrize("source", ["escape", "text"])
def test_escapes_split_alike(source):
    pattern = _text._ESCAPE.pattern if source == "escape" else _text._TEXT_ESCAPES
    new = _text._ESCAPES if source == "escape" else _text._TEXT_ESCAPES_SPLIT
    old = _old(pattern)
    assert new.pattern != old.pattern   # the branches are written
    for text in _texts():
        for form in (text, text.lower()):
            assert new.split(form) == old.split(form), form[:120]
