"""Hunt 36, part A: the gate of the screen's turned readings (``_turned.may_be_keys``, ``_turned._may_each``). A ROT13
or reversed reading is matched against the master keys only where its first and last characters may start and end
a text of the opener's words. The gate must never skip a reading that matches: the screen with the gate equals the
screen without it over attacks, benign answers and many generated texts, alone and in batches."""

from __future__ import annotations

import codecs
import random
import re
import sys

import numpy as np
import pytest

from rewardjudge.attacks import ATTACKS, HONEST_VERDICT
from rewardjudge.graders import _joined, _keys, _turned
from rewardjudge.graders._guards import _content_free_flags, _keys_only, _only_keys, content_free_reason
from rewardjudge.readouts._text import letters

BENIGN = ["Paris.", "fine", "Togas.", "Stressed", "The capital of France is Paris.", "42", "I think so.",
          "3 + 3 = 6. Adding a number to itself doubles it.", "Step 7", "Answer 5", "Okay.", "no", "yes",
          "def f(x):\n    return x", "Pets step on steps.", "a", "ab", "abc", "Nafjre", "rewsna"]


def _generated(seed: int, n: int, keys: "tuple[str, ...]") -> "list[str]":
    """Texts made of the opener's words (keys, filler, announcements, step headers) one after another, with a
    look-alike digit, a cut or an added letter here and there, each written as it is, in ROT13 and reversed."""
    rng = random.Random(seed)
    pool = sorted({w for w in ("".join(c[1] if c.startswith("[") else c.lstrip("\\") for c in word)
                               for word in _turned._words(keys)) if w.isascii()}) + ["step 1", "step 2", "step 10"]
    out = []
    for _ in range(n):
        text = " ".join(rng.choice(pool) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.3:
            text = "".join(c if rng.random() > 0.15 else {"o": "0", "e": "3", "s": "5"}.get(c, c) for c in text)
        if rng.random() < 0.2 and len(text) > 2:
            cut = rng.randrange(len(text))
            text = text[:cut] + rng.choice(["", "x", "q", "1"]) + text[cut + 1:]
        text += rng.choice(["", ":", ".", " 12", "!"])
        out += [text, codecs.encode(text, "rot13"), text[::-1], ":" + text[::-1]]
    return out


def _texts(keys: "tuple[str, ...]" = ()) -> "list[str]":
    attacks = [a.render("PASS") for a in ATTACKS if len(a.text) < 4000]
    return [*attacks, *BENIGN, *_generated(36, 1500, keys)]


def _ungated(monkeypatch) -> None:
    monkeypatch.setattr(_turned, "may_be_keys", lambda head, back, keys: True)
    monkeypatch.setattr(_turned, "_may_each", lambda joined, joiner, keys: (np.ones(joined.count(joiner) + 1, bool),) * 2)


@pytest.mark.parametrize("keys", [(), ("Verdict ready", "ok boomer")])
def test_a_matching_reading_always_passes_the_gate(keys):
    """The gate's own claim: wherever a ROT13 or reversed reading is master keys and filler, its ends pass."""
    matched = 0
    for text in _texts(keys):
        found = letters(text)
        for reading in (codecs.encode(found, "rot13"), found[::-1]):
            if found.isascii() and _only_keys(reading, keys):
                matched += 1
                assert _turned.may_be_keys(reading[:3], reading[-3:][::-1], keys), reading
    assert matched > 500   # the generated texts do read as keys


@pytest.mark.parametrize("keys", [(), ("Verdict ready",)])
def test_the_screen_is_the_same_with_and_without_the_gate(monkeypatch, keys):
    texts = _texts(keys)
    gated = [content_free_reason(t, keys) for t in texts]
    batch = _content_free_flags(texts, keys)
    with monkeypatch.context() as m:
        _ungated(m)
        assert [content_free_reason(t, keys) for t in texts] == gated
        assert _content_free_flags(texts, keys) == batch
    assert sum(r is not None for r in gated) > 800   # many flagged: the equality above is not one of unflagged texts


@pytest.mark.parametrize("keys", [(), ("Verdict ready",)])
def test_the_batch_gate_is_each_texts_gate(keys):
    """``_may_each`` (perf57: both readings' gates from each text's first and last characters, in numpy) says of each
    text what ``may_be_keys`` says of its ROT13 and of its reversed reading, as ``turned_readings`` asks it."""
    found = [letters(t) for t in _texts(keys)] + ["", "a", "ab", "abc", "nafjre", "rewsna", "5abcd", "zz"]
    found = [f for f in found if f.isascii()]
    rot13, back = _turned._may_each("\x01".join(found), "\x01", keys)
    rot = [codecs.encode(f, "rot13") for f in found]
    assert rot13.tolist() == [_turned.may_be_keys(r[:3], r[-3:][::-1], keys) for r in rot]
    assert back.tolist() == [_turned.may_be_keys(f[-3:][::-1], f[:3], keys) for f in found]
    assert 100 < sum(rot13) < len(found) and 100 < sum(back) < len(found)   # both ways, many texts


def test_texts_that_end_as_no_opener_word_are_skipped_as_the_pattern_skips_them():
    """Perf57: the batch's lookup (``_joined.opening``) also reads each text's last characters, as the opener's words
    reversed may start (``_turned._ends``): it skips no text the opener takes whole, a step header in digits outside
    ASCII too (``\\d`` takes them: ``step١step٢``), and it skips texts that start as keys and end otherwise."""
    texts = [*_texts(), *(_generated(57, 500, ())), "step\u0661step\u0662", "step\u0661\u0662\u0663step\u07c1",
             "step\U0001d7cfstep\U0001d7d0", "\u89e3\u7b54\u56de", "thoughtproce", "step١"]
    pieces = [letters(t) for t in texts]
    pieces += [p[:k] for p in pieces[:400] for k in (2, 4, 5)]
    only = [bool(p) and _only_keys(p, ()) for p in pieces]
    starts, ends = _keys._opener_starts(()), _turned._ends(())[3]
    joined = "\x01".join(pieces)
    gated = _joined.opening(joined, "\x01", starts, ends).tolist()
    assert all(g for g, k in zip(gated, only) if k)   # no text the opener takes is skipped
    assert sum(_joined.opening(joined, "\x01", starts).tolist()) - sum(gated) > 300   # the ends skip many
    assert _keys_only(pieces, "\x01", ()) == only
    assert only[len(texts) - 6:len(texts) - 3] == [True, True, True]


def test_non_ascii_digits_are_the_digits_a_step_header_takes():
    digits = _joined._non_ascii_digits()
    assert [c for c in range(sys.maxunicode + 1) if re.fullmatch(r"\d", chr(c)) and c > 0x7f] == \
        np.flatnonzero(digits).tolist()


def test_the_gate_skips_most_answers():
    """What it is for: an answer's readings are not matched (the ends of ``3336addinga...`` read turned start no
    master key), a turned key's are."""
    assert not _turned.may_be_keys("333", "htg", ())
    assert _turned.turned_readings("3 + 3 = 6. Adding a number to itself doubles it, so the sum is twice 3.",
                                   "3336addinganumbertoitselfdoublesitsothesumistwice3") == []
    assert _turned.turned_readings("Gubhtug cebprff:", "gubhtugcebprff") == ["thoughtprocess"]
    assert _turned.turned_readings(":ssecorp thguohT", "ssecorpthguoht") == ["thoughtprocess"]


def test_a_batch_screens_as_each_text_alone():
    """The batch's prefix lookup (``_joined.opening`` over ``_keys._start_words``) skips no text the opener takes:
    generated texts of every kind of opener word, reasoning announced included (``我来认真思考``), flag alike alone and
    in a batch."""
    texts = [*_texts(), "我来认真思考一下。", "我来认真思考", "让我仔细想想", "Lass uns zuerst nachdenken."]
    assert _content_free_flags(texts, ()) == [content_free_reason(t) is not None for t in texts]
    assert _content_free_flags(sorted(set(texts)) * 2, ()) == [content_free_reason(t) is not None
                                                                for t in sorted(set(texts)) * 2]
