"""Attack hunt 34: a review of hunts 30-33's screen on the merged tree.

1. A decimal character reference of more than 4,300 digits (``&#111...``) made ``html.unescape`` raise (Python's
   limit on ``int`` of a long decimal string, leading zeros counted): the screen's decoding of an escaped data
   document (hunt 30) and of XML text (hunt 33) ended in a ``ValueError`` instead of a decision, so a policy's text
   failed its own grade. ``_encoded.html_unescaped`` reads such a reference as ``html.unescape`` reads any that stands
   for no character (U+FFFD), and every other text as ``html.unescape`` does.
2. Hunt 33's ROT13 shape (``\\S+\\s+\\S``, searched) tried ``\\S+`` from every place of a long word: 32 KiB of
   ``<div>`` took 4.6 s. The shape is now one character each side of a possessive run of spaces: the same texts."""

from __future__ import annotations

import html
import random
import re

import pytest

from rewardjudge import StringThread
from rewardjudge.graders._encoded import html_unescaped
from rewardjudge.graders._guards import _content_free_flags, content_free_reason
from rewardjudge.graders._turned import _ROT13_SHAPE
from rewardjudge.testing import ScriptedModel

from test_attacks_hunt5 import _label_grader

LONG = "1" * 5000
ZEROS = "0" * 6000


@pytest.mark.parametrize("text, free", [
    ("&#" + LONG, False),                                          # plain text is not decoded: digits
    ('{"answer": "&#' + LONG + ';"}', True),
    ("<answer>&#" + LONG + ";</answer>", True),
    ("&#" + ZEROS + "65;", False),                                 # leading zeros: 'A'
    ("<answer>&#" + ZEROS + "80;aris</answer>", False),            # 'Paris'
    ('{"answer": "&#' + ZEROS + '80;aris"}', False),
])
def test_a_long_decimal_reference_is_decided_not_raised(text, free):
    assert (content_free_reason(text) is not None) is free
    assert _content_free_flags([text, "Paris."] * 3, ()) == [free, False] * 3


async def test_a_long_decimal_reference_grades_through_a_grader():
    model = ScriptedModel(["Looks right.\nPASS"] * 2)
    grader = _label_grader(model)
    penalized = await grader.grade(StringThread([("user", "Capital of France?"), ("assistant", '{"answer": "&#' + LONG + ';"}')]))
    assert penalized.status == "penalized" and model.calls == []
    graded = await grader.grade(StringThread([("user", "Capital of France?"),
                                              ("assistant", "<answer>&#" + ZEROS + "80;aris</answer>")]))
    assert graded.status == "scored" and len(model.calls) == 1


REFS = ["&#", "&#x", "&#X", "0", "00", "6", "5", "65", "1114111", "1114112", "99999999", "12345678", ";", "a", "&amp;",
        "&lt", "x", "41", " ", "&", "#"]


def test_html_unescaped_is_html_unescape_wherever_that_returns():
    rnd = random.Random(34)
    texts = ["".join(rnd.choice(REFS) for _ in range(rnd.randint(1, 12))) for _ in range(20000)]
    texts += ["&#" + "0" * 50 + "65;", "&#" + "9" * 30 + ";", "&#0;", "&#000x", "&#x" + "0" * 6000 + "41;"]
    compared = 0
    for text in texts:
        try:
            expected = html.unescape(text)
        except ValueError:
            continue
        assert html_unescaped(text) == expected, text
        compared += 1
    assert compared > 19000
    assert html_unescaped("&#" + LONG) == "\ufffd" and html_unescaped("&#" + ZEROS + "65;") == "A"


OLD_ROT13_SHAPE = re.compile(r"\S+\s+\S|[:\uff1a]")


def test_the_rot13_shape_finds_what_the_long_way_finds():
    rnd = random.Random(33)
    pieces = ["a", "b", " ", "  ", "\t", "\n", ":", "\uff1a", "<div>", "\u00a0", "\u3000", "x y", ""]
    texts = ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 14))) for _ in range(20000)]
    found = 0
    for text in texts:
        expected = OLD_ROT13_SHAPE.search(text) is not None
        assert (_ROT13_SHAPE.search(text) is not None) is expected, repr(text)
        found += expected
    assert 2000 < found < 19000   # both answers are met often
