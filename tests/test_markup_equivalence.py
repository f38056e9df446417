"""The content-free screen's markup passes (``_markup._unmarked``) decide as they did when each tag was looked at by a
call: ``_paired`` now collects the tags' names by a pattern of the name alone (``_TAG_NAME``) and, where every name is
ASCII and few pair, sets the tags aside by one pattern of the names paired and void and the self-closed form
(``_named_tags``), in C. The earlier pass is kept here; both run on the bench's hostile inputs, the attack corpus and
generated tag soups (names in any case, outside ASCII, folding to ASCII: ``\\u212a``, ``\\u017f``; void and self-closed
tags, attributes of 255 to 258 characters, names of 63 to 65, unclosed tags, many distinct names). Nothing here times
anything (``python -m bench linear``)."""

from __future__ import annotations

import json
import random
from importlib import resources

import pytest

from bench.bench_linear import hostile_texts
from rewardjudge.graders import _markup
from rewardjudge.graders._guards import content_free_reason
from rewardjudge.graders._hidden import _VOID
from rewardjudge.graders._markup import _TAG, _TAG_SPAN


def _old_paired(text: str, declared: bool) -> str:
    """``_paired`` as it was: a call per tag."""
    found: "tuple[set[str], set[str]]" = (set(), set())
    start = 0
    while start < len(text):
        cut = text.find("<", start + _TAG_SPAN)
        end = len(text) if cut < 0 else cut
        for slash, name, _ in set(_TAG.findall(text, start, end)):
            found[bool(slash)].add(name.casefold())
        start = end
    paired = found[0] & found[1]
    if not paired and not declared:
        return text
    return _TAG.sub(lambda m: " " if m.group(3) or m.group(2).casefold() in paired
                    or m.group(2).casefold() in _VOID else m.group(), text)


_NAMES = ["b", "B", "td", "TD", "div", "span", "think", "answer", "br", "hr", "IMG", "k", "\u212a", "s", "\u017f",
          "stra\u00dfe", "STRASSE", "a:b", "a.b", "x-y", "_u", "q" * 63, "q" * 64, "q" * 65, "b\u212a", "bk", "BK",
          "\u00e9t\u00e9", "\u00c9T\u00c9"]
_FILL = ["", "x", "Paris", " ", "\n", "<", ">", "/", "<<", "a < b", "&lt;"]


def _tag(rng: random.Random, name: str) -> str:
    attrs = rng.choice(["", "", " ", " class=x", ' a="1"', " x/", " " + "a" * 254, " " + "a" * 255 + "/",
                        " " + "a" * 256 + "/", " " + "a" * 257 + "/", "\t" + "b" * 300, " y=<"])
    return f"<{rng.choice(['', '', '/'])}{name}{attrs}{rng.choice(['', '', '/'])}>"


def _soup(rng: random.Random, size: int, names: "list[str]") -> str:
    return "".join(_tag(rng, rng.choice(names)) + rng.choice(_FILL) for _ in range(size))


def _texts() -> "list[str]":
    rng = random.Random(5)
    with resources.files("rewardjudge.data").joinpath("attacks.jsonl").open(encoding="utf-8") as lines:
        attacks = [json.loads(line)["text"] for line in lines if line.strip()]
    soups = [_soup(rng, rng.choice([1, 2, 5, 30, 200]), rng.sample(_NAMES, rng.randrange(1, 6))) for _ in range(600)]
    many = [_soup(rng, 400, [f"n{i}" for i in range(k)]) for k in (63, 64, 65, 66, 200)]   # around ``_NAMED_MOST``
    return [*hostile_texts(4096).values(), *attacks, *soups, *many]


@pytest.mark.parametrize("declared", [False, True])
def test_tags_are_set_aside_alike(declared):
    for text in _texts():
        assert _markup._paired(text, declared) == _old_paired(text, declared), text[:120]


def test_the_screen_decides_alike(monkeypatch):
    texts = _texts()
    new = [content_free_reason(t) for t in texts]
    monkeypatch.setattr(_markup, "_paired", _old_paired)
    assert [content_free_reason(t) for t in texts] == new


def test_the_pattern_is_taken_and_folded_names_are_not():
    """Both ways are run: ASCII names take one pattern; a name written outside ASCII that folds to a paired one
    (``<b\\u212a>`` beside ``</bk>``) takes the call per tag, which sets it aside."""
    assert _markup._paired("<b>x</b><br/><i/><u>", False) == " x   <u>"
    assert _markup._paired("<b\u212a>x</bk>", False) == " x "
    assert _markup._paired("<B>x</b><\u017f>", False) == " x <\u017f>"
