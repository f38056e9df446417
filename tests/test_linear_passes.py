"""The shortcuts taken to keep every pass over a 256 KiB completion short (``python -m bench linear``)
give what the long way gives: each is compared here with the pattern or pass it skips or cuts, on
texts built to hit the cases where a shortcut could differ (case variants of a word, characters
whose case fold is another letter, matches at every offset). No timing is asserted."""

from __future__ import annotations

import random
import re

import pytest

from bench.bench_linear import hostile_texts
from rewardjudge.graders import _guards, _joined, _keys, _markup
from rewardjudge.readouts import _fold, _text
from rewardjudge.readouts._text import free_joiner
from rewardjudge.thread import _MARKER, own_text

# --------------------------------------------------------------------------
# own_text: the marker pattern skipped where the text's case fold holds neither word
# --------------------------------------------------------------------------
#: pieces of markers and their look-alikes: case variants, the long s (``ſ``, which matches ``s``
#: ignoring case), the Kelvin sign and dotted capital I (which fold to other letters), words cut
MARKER_PIECES = ["[", "[", " ", "\t", "tool", "TOOL", "ToOl", "tool_", "calls", "CALL", "call", "s", "ſ",
                 "refusal", "REFUSAL", "refuſal", "REFUSAL]", "refus", "al", "t", "ool", "\u212a", "\u0130",
                 "x", "1", "]", "(", "\u200b", "\uff3b", "é", "-"]


def test_own_text_equals_the_marker_substitution_over_generated_texts():
    rnd = random.Random(52)
    texts = ["".join(rnd.choice(MARKER_PIECES) for _ in range(rnd.randint(1, 40))) for _ in range(4000)]
    texts += ["[tool call f()]", "[ToOl CaLlS x]", "[refuſal] no", "[REFUSAL]", "[tool", "[refusal",
              "[ tool\tcall]", "x [tool_call]", "[toolcall]", "[tools]", "[ \u017ftool call]"]
    marked = 0
    for text in texts:
        long_way = _MARKER.sub("(", text) if "[" in text else text
        assert own_text(text) == long_way, text
        marked += long_way != text
    assert marked > 100   # the generated texts hit markers often, not only the skip


@pytest.mark.parametrize("label", ["'[' + ' '*", "'<|' repeated", "'[\\u200b' repeated", "'＜' + '⠀'*"])
def test_own_text_of_hostile_texts_equals_the_marker_substitution(label):
    text = hostile_texts(4096)[label]
    for t in (text, text + "[tool call]", "[REFUſAL]" + text):
        assert own_text(t) == _MARKER.sub("(", t)


# --------------------------------------------------------------------------
# org-mode lines: one search for the character before a line, and each text's own lines where joined
# --------------------------------------------------------------------------
#: the pattern ``_markup._org`` replaced: ``^`` of a multi-line pattern, tried at every character
OLD_ORG = re.compile(r"(?im)^[ \t]*#\+(?:(?:begin|end)_\w{1,32}[^\n]*|\w{1,32}:)")
ORG_PIECES = ["#+begin_src", "\n#+TITLE:", " #+End_x y", "\t#+a:", "#+", "#+", "#", "+",
              "begin_", "BEGIN_", "end_", "End_", "src", "title", ":", " ", "\t", "\n", "\n",
              "x", "é", "_", "python", "\u200b", "-", "Paris", "answer", "{\\rtf1 ", "{\\fonttbl x}", "}", "\\b "]


def org_text(rnd: random.Random) -> str:
    return "".join(rnd.choice(ORG_PIECES) for _ in range(rnd.randint(1, 30)))


def test_org_lines_set_aside_equal_the_multi_line_pattern():
    rnd = random.Random(7)
    texts = [org_text(rnd) for _ in range(5000)] + list(hostile_texts(300).values())
    assert sum(OLD_ORG.search(t) is not None for t in texts) > 500
    for text in texts:
        assert _markup._org_out(text) == OLD_ORG.sub(" ", text), text


def test_texts_joined_set_aside_each_ones_org_lines_and_rtf_as_alone():
    rnd = random.Random(8)
    for _ in range(60):
        texts = [org_text(rnd) for _ in range(rnd.randint(8, 40))]
        joiner = free_joiner(texts)
        joined = _markup._unmarked(joiner.join(texts), tags=False, joiner=joiner).split(joiner)
        alone = [_markup._unmarked(t, tags=False) for t in texts]
        rtf = _markup._rtf_texts(texts, joiner.join(texts))
        assert [j for i, j in enumerate(joined) if i not in rtf] == [a for i, a in enumerate(alone) if i not in rtf]
        flags = _guards._content_free_flags(texts, (), "Paris answer")
        assert flags == [_guards.content_free_reason(t, (), "Paris answer") is not None for t in texts], texts


def test_an_org_line_first_leaves_the_other_texts_joined():
    """A block line runs to its line's end: in texts joined it ran over the joiners that followed, the
    pass fell back to reading 43,000 texts one by one (0.4 s); it ends at the joiner now."""
    texts = ["#+begin_src x", *(f"abc{i:05d}" for i in range(200)), "#+TITLE:", "#+end_src"]
    assert _guards._free_flags(texts, ()) == [True] + [False] * 200 + [True, True]


#: the fence pattern ``_markup._MARKUP`` replaced: its runs as ``{3,}``, tried at every character
OLD_FENCE = re.compile(r"`{3,}[^`\x00-\x1f]*|~{3,}[^~\x00-\x1f]*")


def test_fences_set_aside_equal_the_counted_runs():
    rnd = random.Random(9)
    pieces = ["`", "`", "``", "~", "~~", "~", "python", " ", "\n", "\x01", "x", "é", "\t"]
    texts = ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 30))) for _ in range(5000)]
    texts += list(hostile_texts(300).values())
    assert sum(OLD_FENCE.search(t) is not None for t in texts) > 1000
    for text in texts:
        assert _markup._MARKUP.sub(" ", text) == OLD_FENCE.sub(" ", text), text


# --------------------------------------------------------------------------
# keys only: the texts whose first characters no opener starts with, left untried (a table in numpy)
# --------------------------------------------------------------------------
#: the letters of openers and of near misses: keys, fillers, their look-alike digits, one-character keys, a
#: step header's word and digits (an Arabic-Indic one too), words cut short
OPENER_PIECES = ["thought", "process", "th0ught", "7hought", "pr0c355", "\u89e3", "\u7b54\u6848", "\u7b54", "\u662f",
                 "\ub2f5", "step", "5tep", "s7ep", "ste", "st", "s", "12", "1", "\u0661", "the", "a", "ab", "abs",
                 "absolutely", "answer", "answers", "4nswer", "x", "q", "sure", "so", "let", "lets", "me", "think"]


def test_texts_no_opener_starts_are_keys_only_as_the_pattern_finds():
    rnd = random.Random(53)
    pieces = ["".join(rnd.choice(OPENER_PIECES) for _ in range(rnd.randint(0, 4))) for _ in range(4000)]
    pieces += [w[:k] + tail for w in OPENER_PIECES for k in range(4) for tail in ("", "x", "\u89e3")]
    joiner = free_joiner(pieces)
    opens = _joined.opening(joiner.join(pieces), joiner, _keys._opener_starts(()))
    only = [bool(p) and _guards._only_keys(p, ()) for p in pieces]
    assert all(o for o, k in zip(opens.tolist(), only) if k)   # no opener is left untried
    assert _guards._keys_only(pieces, joiner, ()) == only
    assert sum(only) > 500 and opens.sum() < len(pieces) - 500   # both kinds, often


def test_texts_cut_after_their_last_colon_in_numpy_equal_the_substitution():
    rnd = random.Random(54)
    cut_pieces = [":", "\uff1a", "x", "\u89e3", " ", "answer", "\U0001f600", "\ud800", "::"]
    for _ in range(300):
        texts = ["".join(rnd.choice(cut_pieces) for _ in range(rnd.randint(0, 6))) for _ in range(rnd.randint(1, 30))]
        joiner = "\x01"
        joined = joiner.join(texts)
        long_way = re.sub(r"\x01[^\x01]*[:\uff1a]", joiner, joiner + joined)[1:]
        assert _joined.after_last(joined, joiner, _joined.COLONS) == long_way, texts


# --------------------------------------------------------------------------
# ascii_folded: the characters outside ASCII told apart by taking each out in turn
# --------------------------------------------------------------------------
def old_ascii_folded(text: str, table, most: int = 8) -> "str | None":
    """``_fold.ascii_folded`` as it was: the characters outside ASCII told apart in a ``dict``."""
    outside = dict.fromkeys(text.encode("utf-8", "surrogatepass").translate(None, _fold.ASCII_BYTES)
                            .decode("utf-8", "surrogatepass"))
    if len(outside) > most:
        return None
    for ch in outside:
        fold = table[ord(ch)]
        if fold and not (fold.isascii() and fold.isalnum() and fold.lower() == fold):
            return None
        text = text.replace(ch, fold)
    return text


def test_ascii_folded_equals_the_characters_told_apart_in_a_dict():
    rnd = random.Random(55)
    pieces = ["a", "B", " ", "1", "é", "É", "ß", "ﬁ", "解", "답", "\u200b", "\ud800", "😀", "Ａ", "ı", "İ", "ſ", "K",
              "\u0301", "ё", "ω", "x", ":", "\u00a0", "ǅ", "①"]
    texts = ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 40))) for _ in range(4000)]
    texts += ["".join(rnd.sample(pieces, k)) for k in range(len(pieces))] + list(hostile_texts(300).values())
    folded = 0
    for text in texts:
        for most in (0, 1, 3, 8):
            assert _fold.ascii_folded(text, _text._LETTERS, most) == old_ascii_folded(text, _text._LETTERS, most), text
        folded += _fold.ascii_folded(text, _text._LETTERS) not in (None, text)
    assert folded > 500
