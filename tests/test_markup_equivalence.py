"""The content-free screen's markup passes (``_markup._unmarked``) decide as they did when each tag was looked at by a
call: ``_hidden.hidden_out`` reads each distinct stylesheet and tag once (``_sheet``, ``_hides``); ``_paired`` now
collects the tags' names by a pattern of the name alone (``_TAG_NAME``) and, where every name is
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
from rewardjudge.graders import _hidden, _markup
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


def _old_sheet(text: str) -> "set[str]":
    """``_hidden._sheet`` as it was: each stylesheet read, repeated or not."""
    hidden: "set[str]" = set()
    for sheet in _hidden._STYLE.findall(text):
        for rule in sheet.split("}"):
            selectors, _, declarations = rule.partition("{")
            if _hidden._HIDING.search(declarations + ";") is not None:
                hidden.update("".join(m.groups()).casefold() for s in selectors.split(",")
                              if (m := _hidden._SUBJECT.search(_hidden._COMBINATOR.split(s.strip())[-1].split(":")[0][-128:])))
    return hidden


def _old_hidden_out(text: str, fenced: bool = False) -> str:
    """``_hidden.hidden_out`` as it was: ``_hides`` of every tag opened."""
    if "<" not in text or not _hidden.may_hide(text):
        return text
    sheet = set() if fenced else _old_sheet(text)
    stack: list = []
    opened: dict = {}
    spans: list = []
    for m in _hidden._ANY_TAG.finditer(text):
        slash, name, attributes, closed = m.groups()
        name = name.casefold()
        if not slash:
            if not closed and name not in _VOID:
                around = bool(stack) and stack[-1][2]
                stack.append((name, m.start(), around or _hidden._hides(name, attributes, sheet, fenced)))
                opened[name] = opened.get(name, 0) + 1
        elif opened.get(name):
            _hidden._close(stack, opened, name, m, spans)
    return _hidden._spaced(text, spans)


_HIDING_PARTS = ["<style>.x{display:none}</style>", "<style>#a, span b{visibility:hidden} .y{color:red}</style>",
                 "<STYLE>.X{DISPLAY:NONE}</STYLE>", "<span class=x>", "<span class='x y'>", '<b id="a">', "<b>",
                 "<div hidden>", "<div>", "</div>", "</span>", "</b>", "<p style=\"display:none\">", "</p>",
                 '<i style="width:0;overflow:hidden">', "</i>", "<template>", "</template>", "Paris", " ",
                 "<span class=z>", '<font color="white">', "</font>", "<br>", "<img/>", "<span class=x/>"]


def _hiding_texts() -> "list[str]":
    rng = random.Random(9)
    texts = ["".join(rng.choice(_HIDING_PARTS) for _ in range(rng.choice([2, 5, 20, 200]))) for _ in range(500)]
    return [*texts, *(t.upper() for t in texts[:50]), *hostile_texts(4096).values()]


@pytest.mark.parametrize("fenced", [False, True])
def test_hidden_elements_are_set_aside_alike(fenced):
    for text in _hiding_texts():
        assert _hidden.hidden_out(text, fenced) == _old_hidden_out(text, fenced), text[:120]


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
    texts = _texts() + _hiding_texts()
    new = [content_free_reason(t) for t in texts]
    monkeypatch.setattr(_markup, "_paired", _old_paired)
    monkeypatch.setattr(_markup, "hidden_out", _old_hidden_out)
    assert [content_free_reason(t) for t in texts] == new


def test_the_pattern_is_taken_and_folded_names_are_not():
    """Both ways are run: ASCII names take one pattern; a name written outside ASCII that folds to a paired one
    (``<b\\u212a>`` beside ``</bk>``) takes the call per tag, which sets it aside."""
    assert _markup._paired("<b>x</b><br/><i/><u>", False) == " x   <u>"
    assert _markup._paired("<b\u212a>x</bk>", False) == " x "
    assert _markup._paired("<B>x</b><\u017f>", False) == " x <\u017f>"
