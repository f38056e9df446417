"""readouts/_blocks.py: a long text split a block at a time gives the pieces of one split of the
whole, on hostile texts whose matches straddle every block boundary (blocks of 1 to 64 characters
here, so each boundary falls inside matches at every offset), where a look-behind sees across a
block's start, and through the neutraliser, the letters and the markup screen end to end."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from bench.bench_linear import hostile_texts
from rewardjudge.graders import _markup
from rewardjudge.readouts import _blocks, _fold, _text
from rewardjudge.readouts._blocks import split_chunks, splitter, sub_blocks
from rewardjudge.readouts._text import contains_tag, letters, neutralize

TAGS = ("response", "answer", "submission", "[the end of assistant's answer", "#feedback", "#score")
CONTROL = ("<|im_end|>", "</s>", "[EOT]", "aa", "]]")

SPLITTERS = {
    "tags": splitter(_text._pattern((), ())),
    "tags, labels, headings, control tokens": splitter(_text._pattern(TAGS, CONTROL)),
    "control tokens only": splitter(_text._pattern((), CONTROL, False)),
    "escapes": _text._ESCAPES,
    "escapes of letters": _text._TEXT_ESCAPES_SPLIT,
    "latex": splitter(_markup._latex()),
}

PIECES = ["<", "<", "[", "]", ">", "/", "|", "\x00", "\x00", " ", "\n", "\\", "\\", "u003c", "x3c", "&", "amp;",
          "lt;", "lt", "#60;", "#x3c", "#", "#", "# feedback", "#score", "%", "25", "3c", "=3d", "=3c", "s", "sys",
          "inst", "y", "bos", "start_of_turn", "candidate", "grade", "think", "response", "answer", "the end of",
          " assistant's answer", "\u2019s", "-", "\\n", "&#10;", "%0A", "a", "aa", "im_end", "]]", "\\text{", "}",
          "\\quad", "\\textbf{}", "{}", "x", "\u200b"]


def random_text(rnd: random.Random) -> str:
    return "".join(rnd.choice(PIECES) for _ in range(rnd.randint(20, 400)))


def chunked(split: "re.Pattern[str]", text: str, block: int) -> "list[str]":
    return [piece for parts in split_chunks(split, text, block) for piece in parts]


@pytest.mark.parametrize("name", SPLITTERS)
def test_every_split_of_hostile_texts_a_block_at_a_time_is_the_split_of_the_whole(name):
    split = SPLITTERS[name]
    assert _blocks._plan(split) is not None   # each is cut in blocks, none split whole
    texts = [_text._skeleton(t) for t in hostile_texts(700).values()]
    rnd = random.Random(name)
    texts += [_text._skeleton(random_text(rnd)) for _ in range(150)]
    for text in texts:
        whole = split.split(text)
        for block in (1, 2, 3, 5, 8, 13, 64):
            assert chunked(split, text, block) == whole, (text[:80], block)


@pytest.mark.parametrize("name", SPLITTERS)
def test_a_boundary_at_every_offset_of_every_match_gives_the_whole_split(name):
    """Units repeated after a prefix of each length: each match of the whole text has a block boundary
    at each of its offsets in one of the runs."""
    split = SPLITTERS[name]
    for unit in ("<|im_end|>", "<s>", "</candidate>", "[the end of assistant's answer]", " #feedback ", "aaa",
                 "&amp;lt;", "\\\\u003c", "%253c", "=3d3c", "\\textbf{}", "<\x00/\x00s>", "[/inst]"):
        for shift in range(len(unit) + 1):
            text = "x" * shift + unit * 40
            whole = split.split(text)
            for block in range(1, len(unit) + 3):
                assert chunked(split, text, block) == whole, (unit, shift, block)


def test_a_look_behind_across_a_block_start_is_read_in_the_whole_text():
    """A heading (``#feedback``) counts only after a space; at a block's start the split of the block
    alone sees nothing before it and finds one: the whole text's reading is kept."""
    split = SPLITTERS["tags, labels, headings, control tokens"]
    text = "x#feedback " * 40
    assert split.split(text) == [text]   # no heading: each '#' follows an 'x'
    assert len(split.split(text[1:])) == 3   # cut after an 'x': the block alone sees one
    for block in range(1, 13):
        assert chunked(split, text, block) == [text]
    escapes = _text._ESCAPES
    text = "\\\\u003c" * 50   # an escaped backslash, then "u003c": no escape (the look-behind)
    for block in range(1, 9):
        assert chunked(escapes, text, block) == escapes.split(text)


@pytest.mark.parametrize("pattern, flags", [(r"^<a>", 0), (r"<a>", re.I), (r"^a", re.M), (r"<.*>", 0), (r"<[^>]*>", 0),
                                            (r"(a)\1", 0), (r"a*", 0)])
def test_a_pattern_the_plan_cannot_bound_is_split_in_one_call(pattern, flags):
    split = splitter(re.compile(pattern, flags)) or re.compile(pattern, flags)
    assert _blocks._plan(split) is None
    text = "<a><ab>aa" * 30
    assert list(split_chunks(split, text, 4)) == [split.split(text)]


def test_a_run_of_characters_the_repeats_take_extends_the_block_past_it():
    """``<`` then 5,000 zero-width gaps then ``|``: one attempt examines the whole run; the margin
    takes it all, so the match found is the whole text's."""
    split = SPLITTERS["tags"]
    text = "a" * 100 + "<" + "\x00" * 5000 + "|" + "b" * 100
    assert chunked(split, text, 16) == split.split(text) == ["a" * 100, text[100:5102], "b" * 100]


@pytest.mark.parametrize("block", [7, 64])
def test_the_neutraliser_letters_and_markup_a_block_at_a_time_are_those_of_the_whole(monkeypatch, block):
    rnd = random.Random(block)
    texts = list(hostile_texts(1500).values()) + [random_text(rnd) for _ in range(150)]
    whole = [(neutralize(t), neutralize(t, TAGS, CONTROL), contains_tag(t, TAGS), letters(t),
              _markup._unmarked(t)) for t in texts]
    monkeypatch.setattr(_blocks, "BLOCK", block)
    for t, expected in zip(texts, whole):
        assert (neutralize(t), neutralize(t, TAGS, CONTROL), contains_tag(t, TAGS), letters(t),
                _markup._unmarked(t)) == expected, t[:80]


def test_sub_a_block_at_a_time_is_sub_of_the_whole(monkeypatch):
    monkeypatch.setattr(_blocks, "BLOCK", 5)
    latex = _markup._latex()
    rnd = random.Random(3)
    for text in [random_text(rnd) for _ in range(200)]:
        assert sub_blocks(latex, " ", text) == latex.sub(" ", text)


def test_distinct_code_points_by_a_sort_are_numpys_unique():
    rnd = np.random.default_rng(1)
    for codes in (np.zeros(0, dtype=np.uint32), rnd.integers(0, 0x110000, 5000, dtype=np.uint32),
                  rnd.integers(0, 40, 5000, dtype=np.uint32)):
        assert np.array_equal(_fold._distinct(codes), np.unique(codes))
