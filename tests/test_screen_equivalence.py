"""The content-free screen's long texts, read doubled (``_guards._opener_end``), decide as the master keys' pattern
over the text as it is (``_guards._opener_pattern``, which short texts still use).

A long text's letters are matched with each character written twice, against a pattern that reads a key's first
character by a range, then the character itself (``_markup._trie``'s ``doubled``): the same match, found in fewer
steps. These tests hold the two to the same end on the attack corpus, the bench's hostile inputs, and random mixes
of master keys, filler words, their look-alike digits, numbered steps, keys' prefixes and other letters; and hold
``content_free_reason`` to the same decisions either way. Nothing here times anything (``python -m bench linear``).
"""

from __future__ import annotations

import json
import random
from importlib import resources

import pytest

from bench.bench_linear import hostile_texts
from rewardjudge.graders import _guards
from rewardjudge.graders._guards import _opener_pattern, content_free_reason
from rewardjudge.graders._keys import _FILLER, _LOOKALIKE_DIGITS, _key_forms
from rewardjudge.readouts._text import letters

#: extra keys a caller may give (``extra_keys``): a word of a key's letters, one of a filler's, a one-letter one
EXTRA = ("final verdict", "x", "答案是")


def _old_end(found: str, keys: tuple[str, ...]) -> "int | None":
    """Where the pattern over the text as it is ends (None: no match)."""
    run = _opener_pattern(keys).match(found)
    return None if run is None else run.end()


def _attack_texts() -> "list[str]":
    with resources.files("rewardjudge.data").joinpath("attacks.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


def _tokens(rng: random.Random, keys: tuple[str, ...]) -> "list[str]":
    """Pieces an optimiser mixes: master keys and filler (some with look-alike digits), their prefixes and
    last letters, numbered steps, digits and letters."""
    forms, filler = sorted(_key_forms(keys)), sorted(_FILLER)

    def lookalike(word: str) -> str:
        return "".join(_LOOKALIKE_DIGITS.get(c, c) if rng.random() < 0.3 else c for c in word)

    short = [k for k in forms if len(k) <= 2]
    return [*forms, *short * 4, *filler, *(lookalike(w) for w in forms + filler),
            *(k[:-1] for k in forms if len(k) > 2),
            *(k[-1] for k in forms), *(f"step{rng.randrange(10_000)}" for _ in range(20)), *"0123456789",
            *"abcdefghijklmnopqrstuvwxyz", "\u0663", "\uff11", "ß", "答案", "解答", "正确答案"]


def _mixes(seed: int, count: int, size: int, keys: tuple[str, ...] = ()) -> "list[str]":
    """``count`` random mixes of ``_tokens`` of about ``size`` letters, most made of the keys and filler alone."""
    rng = random.Random(seed)
    pool = _tokens(rng, keys)
    forms = sorted(_key_forms(keys))
    out = []
    for i in range(count):
        words = pool if i % 3 == 0 else forms + sorted(_FILLER) if i % 3 == 1 else [k for k in forms if len(k) <= 3]
        text, n = [], 0
        while n < size:
            text.append(rng.choice(words))
            n += len(text[-1])
        out.append("".join(text))
    return out


@pytest.fixture
def doubled_always(monkeypatch):
    """Every text read doubled after its first unit, however short (a call a unit)."""
    monkeypatch.setattr(_guards, "_DOUBLED_FROM", 0)
    monkeypatch.setattr(_guards, "_UNITS", 1)


def _ends_agree(texts: "list[str]", keys: tuple[str, ...]) -> None:
    for found in texts:
        assert _guards._opener_end(found, keys) == _old_end(found, keys), found[:80]


@pytest.mark.parametrize("keys", [(), EXTRA])
def test_the_attack_corpus_and_hostile_texts_end_alike(doubled_always, keys):
    texts = [*_attack_texts(), *hostile_texts(512).values()]
    founds = [letters(t) for t in texts]
    _ends_agree([f for f in founds if f] + [f[::-1] for f in founds if f], keys)


@pytest.mark.parametrize("seed", range(4))
def test_random_mixes_of_keys_and_filler_end_alike(doubled_always, seed):
    texts = _mixes(seed, 300, 60)
    _ends_agree(texts, ())
    # each with its last piece cut, or a letter after it: where a run stops
    _ends_agree([t[:-1] for t in texts] + [t + "q" for t in texts], ())


def test_random_mixes_with_extra_keys_end_alike(doubled_always):
    _ends_agree(_mixes(7, 300, 60, EXTRA), EXTRA)


def test_each_key_repeated_ends_alike(doubled_always):
    forms = sorted(_key_forms(()))
    _ends_agree([k * 40 for k in forms] + [k + f for k in forms for f in ("", "s", "5", "the", "1")], ())
    _ends_agree([a + b for a in forms for b in forms if len(a) <= 2 or len(b) <= 2], ())


def test_long_mixes_end_alike():
    """Texts past ``_DOUBLED_FROM``, read doubled as the screen reads them, in several calls of ``_UNITS`` units."""
    texts = _mixes(11, 6, 3 * _guards._DOUBLED_FROM)
    assert all(len(t) >= _guards._DOUBLED_FROM for t in texts)
    _ends_agree(texts, ())
    one = "".join(k for k in sorted(_key_forms(())) if len(k) == 1)
    _ends_agree([one * 10_000, ("解答" * 4_000) + "q", "答" * 9_000 + "the" * 9], ())
    # a character no opener holds (the doubled text stops there), a digit of another script, a step's number
    tails = ("q", "\u0663", "step\u0663step\u0664", "step1step2\u0663", "step1234", "ß", "\u00e9")
    _ends_agree([one * 3_000 + tail + one * 3_000 for tail in tails], ())
    _ends_agree(["step1" * 2_000 + "step12", "step" + "\u0661" * 5_000, "解" * 5_000 + "step1step2"], ())


@pytest.mark.parametrize("seed", range(2))
def test_content_free_reason_decides_alike(monkeypatch, seed):
    """The screen's reasons, every text read doubled and none, on whole texts: separators, markup and colons
    between the pieces."""
    rng = random.Random(seed)
    seps = ["", " ", ", ", ": ", "\n", "**", " 1. ", "<b>", "\u202e", "$"]
    texts = [sep.join(t[i:i + rng.randrange(1, 8)] for i in range(0, len(t), 4))
             for t in _mixes(seed, 150, 40) for sep in [rng.choice(seps)]]
    texts += _attack_texts()
    monkeypatch.setattr(_guards, "_DOUBLED_FROM", 10**9)
    before = [content_free_reason(t) for t in texts]
    monkeypatch.setattr(_guards, "_DOUBLED_FROM", 0)
    monkeypatch.setattr(_guards, "_UNITS", 1)
    assert [content_free_reason(t) for t in texts] == before
