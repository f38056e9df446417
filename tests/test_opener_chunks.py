"""The master-key opener matched a few units a call (``_guards._opener_end``) ends where the one-call
match of ``_opener_pattern`` ends, on random texts of keys, filler words, step headers, digits and
other letters, with a chunk of a few units (nothing here asserts a time)."""

from __future__ import annotations

import random

import pytest

from rewardjudge.graders import _guards
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


def _one_call(found: str, keys: tuple[str, ...]) -> "int | None":
    run = _guards._opener_pattern(keys).match(found)
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
        assert _guards._only_keys(found, keys) == (want == len(found)), found
        assert (_guards._opener_steps(keys, units)[0].match(found) is None) == (want is None), found
        ends.add(None if want is None else want == len(found))
    assert ends == {None, True, False}   # texts of each kind were tried


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
