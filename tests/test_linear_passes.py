"""The shortcuts taken to keep every pass over a 256 KiB completion short (``python -m bench linear``)
give what the long way gives: each is compared here with the pattern or pass it skips or cuts, on
texts built to hit the cases where a shortcut could differ (case variants of a word, characters
whose case fold is another letter, matches at every offset). No timing is asserted."""

from __future__ import annotations

import random

import pytest

from bench.bench_linear import hostile_texts
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
