"""The content-free screen's passes taken a piece a call (so that no regex call holds the GIL for
long) find what one call over the whole text finds: the master-key opener matched a few units a
call (``_guards._opener_end``) ends where one call of the pattern as first written (``_reference``)
ends, on random texts of keys, filler words, step headers, digits and other letters; tags found a
few characters a call pair as those found in one call; texts joined a few characters a substitution
are screened as one by one. Chunks forced small; nothing here asserts a time."""

from __future__ import annotations

import functools
import random
import re

import pytest

from rewardjudge.graders import _guards, _markup
from rewardjudge.readouts._text import letters

EXTRA = ("abracadabra", "open sesame")
#: pieces in ``letters`` form: keys (look-alike digits too), filler, step headers, digits, other letters
PIECES = ("解", "答案", "answer", "4nsw3r", "thoughtprocess", "thought", "th0ughtpr0cess", "sure", "step1",
          "stepbystep", "abracadabra", "opensesame", "let", "the", "step", "steps", "here", "is", "heres",
          "step12", "5t3p7", "step999", "step1234", "step", "1", "42", "0", "9999", "x", "q", "an", "sol",
          "ution", "ответ", "a", "e")

#: weights: keys mostly, or filler words mostly (runs past ``_FILLER_RUN``)
KEYS_FIRST = [8 if i < 12 else 1 for i in range(len(PIECES))]
FILLER_FIRST = [4 if i < 12 else 12 if i < 19 else 1 for i in range(len(PIECES))]


def _first_trie(words, beside=()) -> str:
    """``_guards._trie`` as first written: each class one alternative, an optional group where a word
    may end; a longer word not taken where a whole word begins at its next character (hunt 21), a word of
    ``beside`` too (hunt 30: a filler word not taken longer over a master key's first letter)."""
    roots: "list[dict]" = [{}, {}]
    for root, some in zip(roots, (words, beside)):
        for word in some:
            node = root
            for c in word:
                node = node.setdefault(c, {})
            node[""] = {}
    root = roots[0]

    begun: dict = {}
    for tree in roots:
        for c, child in tree.items():
            for at in ({c, c[1]} if len(c) == 4 and c[0] == "[" else {c} if c else ()):
                begun.setdefault(at, []).append((c, child))

    def emit(node: dict, guard: bool = True) -> str:
        alts = [("".join(f"(?!{p}{emit(after, False)})" for p, after in begun[c]) if guard and "" in node and c in begun
                 else "") + c + emit(child, guard)
                for c, child in sorted(node.items()) if c]
        body = alts[0] if len(alts) == 1 and "" not in node else "(?:" + "|".join(alts) + ")"
        return "" if not alts else body + "?" if "" in node else body

    return emit(root)


#: step headers, two or more, as first written
_FIRST_STEP = "(?:" + "".join(_guards._chars("step")) + r"\d{1,3}(?!\d)){2,}"


@functools.lru_cache(maxsize=None)
def _reference(keys: tuple[str, ...]) -> "re.Pattern[str]":
    """The opener as one pattern matched in one call, as it was first written (its tries too)."""
    key = f"(?:{_FIRST_STEP}|{_guards._announce()}|{_first_trie(_guards._key_chars(keys))})"   # hunt 33: announced
    filler = _first_trie((list(w) for w in _guards._FILLER), _guards._key_chars(keys))
    fillers = f"(?>(?:(?!{key})(?>{filler})){{0,{_guards._FILLER_RUN}}})"
    return re.compile(f"{fillers}(?:(?>{key}){fillers})++")


def _one_call(found: str, keys: tuple[str, ...]) -> "int | None":
    run = _reference(keys).match(found)
    return run.end() if run is not None else None


@pytest.mark.parametrize("units", [1, 2, 3, 5])
@pytest.mark.parametrize("keys", [(), EXTRA])
def test_chunked_opener_ends_where_the_one_call_match_ends(monkeypatch, units, keys):
    monkeypatch.setattr(_guards, "_UNITS", units)
    rng = random.Random(units * 7 + len(keys))
    ends = set()
    for _ in range(3000):
        weights = rng.choice([None, KEYS_FIRST, FILLER_FIRST])
        found = "".join(rng.choices(PIECES, weights=weights, k=rng.randint(0, 4 * units + 6)))
        want = _one_call(found, keys)
        assert _guards._opener_end(found, keys) == want, found
        run = _guards._opener_pattern(keys).match(found)   # the one-call form the joined texts are read with
        assert (run.end() if run else None) == want, found
        assert _guards._only_keys(found, keys) == (want == len(found)), found
        assert (_guards._opener_steps(keys, units)[0].match(found) is None) == (want is None), found
        ends.add(None if want is None else want == len(found))
    assert ends == {None, True, False}   # texts of each kind were tried


@pytest.mark.parametrize("seed", range(4))
def test_a_trie_with_its_classes_split_matches_as_first_written(seed):
    """``_trie`` splits a class (``[o0]``) of a node with many children in one alternative per character
    and writes an optional ending as an empty alternative: the same match (its end) as the trie first
    written, over random words of letters, classes and digits and random texts of their pieces."""
    rng = random.Random(seed)
    alphabet = ["a", "b", "[o0]", "[s5]", "[e3]", "c", "0", "5", "\u89e3", "d", "[i1]", "x"]
    for _ in range(200):
        words = [[rng.choice(alphabet) for _ in range(rng.randint(1, 4))] for _ in range(rng.randint(1, 12))]
        new, old = re.compile(_guards._trie(words)), re.compile(_first_trie(words))
        for _ in range(40):
            text = "".join(rng.choice("abose53c0di1x\u89e3") for _ in range(rng.randint(0, 6)))
            got, want = new.match(text), old.match(text)
            assert (got and got.end()) == (want and want.end()), (words, text)
    assert _guards._STEP != _FIRST_STEP


def test_long_runs_of_keys_and_step_headers_end_as_one_call(monkeypatch):
    monkeypatch.setattr(_guards, "_UNITS", 4)
    for text in ("解" * 1000, "解" * 999 + "x", "Step 1: Step 2: " * 300 + "Step 12345", "Sure, here is the answer " * 200
                 + "Paris", "let the " * 500,
                 "answer " + "the " * 9 + ("answer " + "the " * 8) * 40 + "the " * 3 + "answer"):
        found = letters(text)
        assert _guards._opener_end(found, ()) == _one_call(found, ()), text[-20:]
        assert _guards._only_keys(found, ()) == (_one_call(found, ()) == len(found))


def test_a_text_of_one_character_keys_is_content_free_and_one_more_letter_is_not(monkeypatch):
    monkeypatch.setattr(_guards, "_UNITS", 16)
    assert _guards.content_free_reason("解" * 5000) is not None
    assert _guards.content_free_reason("解" * 5000 + "x") is None
    assert _guards.content_free_reason("解" * 2500 + "x" + "解" * 2500) is None


TAG_PIECES = ("<b>", "</b>", "<p>", "</p>", "<br/>", "<br>", "<hr>", "<think>", "</think>", "<", ">", "/", "b",
              " ", "x", "<b ", "class='a'", "</x>", "<x>", "\u200b")


def _unmarked_one_call(text: str) -> str:
    found: "tuple[set[str], set[str]]" = (set(), set())
    for slash, name, _ in _markup._TAG.findall(text):
        found[bool(slash)].add(name.casefold())
    paired = found[0] & found[1]
    return _markup._TAG.sub(lambda m: " " if m.group(3) or m.group(2).casefold() in paired
                            or m.group(2).casefold() in _markup._VOID else m.group(), text) if paired else text


@pytest.mark.parametrize("span", [1, 3, 8])
def test_tags_found_a_few_characters_a_call_pair_as_in_one_call(monkeypatch, span):
    monkeypatch.setattr(_markup, "_TAG_SPAN", span)
    rng = random.Random(span)
    for _ in range(3000):
        text = "".join(rng.choices(TAG_PIECES, k=rng.randint(0, 12)))
        assert _guards._unmarked(text) == _unmarked_one_call(text), text


TEXT_PIECES = ("Answer", "答案", "解", ": ", "：", "Paris", "the", "let me think", "Step 1", "Step 2", "x",
               "\u202e", "rewsna", " ", "Thought process", "sure", "42", "$", "<b>", "</b>", "é", "```", "~~~x", "<_>",
               "\\\\text{", "</_>")


@pytest.mark.parametrize("span", [1, 4, 30])
def test_texts_screened_a_few_characters_a_substitution_as_one_by_one(monkeypatch, span):
    monkeypatch.setattr(_guards, "_JOINED_SPAN", span)
    monkeypatch.setattr(_guards, "_UNITS", 2)
    rng = random.Random(span)
    joined = 0
    for _ in range(300):
        texts = ["".join(rng.choices(TEXT_PIECES, k=rng.randint(0, 6))) for _ in range(rng.randint(1, 12))]
        texts += rng.choices(texts, k=rng.randint(0, 12))   # alike texts: the table of distinct ones
        flags = _guards._free_flags(texts, ())   # None: not joined (its caller reads them one by one)
        joined += flags is not None
        assert flags in (None, [_guards._free(t, ()) is not None for t in texts]), texts
    assert joined > 200


LEET_PIECES = ("$", "@", "!", "\u20ac", "\u202e", ":", "\uff1a", "Answer", "answer", "5olution", "$olution", "sure",
               "rewsna", "Paris", "the", "x", " ", "\x00", "<b>", "</b>", "\u89e3", "Step 1", '"', "{", "}")


@pytest.mark.parametrize("span", [1, 5, 40])
def test_texts_with_symbols_overrides_and_colons_are_flagged_as_one_by_one(monkeypatch, span):
    """``_content_free_flags`` over many texts (the texts holding a look-alike symbol or a right-to-left
    override found in the texts joined, read again joined) flags what ``content_free_reason`` finds
    text by text."""
    monkeypatch.setattr(_guards, "_JOINED_SPAN", span)
    rng = random.Random(span + 100)
    for _ in range(300):
        texts = list(dict.fromkeys("".join(rng.choices(LEET_PIECES, k=rng.randint(0, 5)))
                                   for _ in range(rng.randint(1, 30))))
        want = [_guards.content_free_reason(t) is not None for t in texts]
        assert _guards._content_free_flags(texts, ()) == want, texts


@pytest.mark.parametrize("span", [1, 4, 16])
def test_spans_cut_texts_joined_at_joiners_a_long_text_alone(monkeypatch, span):
    monkeypatch.setattr(_guards, "_JOINED_SPAN", span)
    rng = random.Random(span)
    for _ in range(500):
        texts = ["x" * rng.choice([0, 1, 2, span - 1, span, span + 3]) for _ in range(rng.randint(1, 10))]
        joined = "\x01".join(texts)
        parts = list(_guards._spans(joined, "\x01"))
        assert "\x01".join(parts) == joined
        assert sum(p.count("\x01") + 1 for p in parts) == len(texts)
        for p in parts:
            *rest, last = p.split("\x01")
            assert not rest or len(last) < span   # a text that long after others is alone
            assert sum(len(t) + 1 for t in rest) <= span   # a run ends with the text that reaches the span
