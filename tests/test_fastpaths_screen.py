"""The content-free screen's quick tests give what the patterns they replaced give.

Each test compares a check written for speed with the character class or walk it stands
for, over generated hostile texts: look-alike symbols (fullwidth and small forms), zero-width
and control characters, control tokens, escapes and markup.
"""

from __future__ import annotations

import random
import re

from rewardjudge.graders import _guards

#: pieces of hostile text: the symbols read as digits and their look-alikes, zero-width and
#: control characters, a chat template's control tokens, escapes, markup, master keys
BITS = ["$", "@", "!", "\u20ac", "\uff04", "\ufe69", "\uff20", "\ufe6b", "\uff01", "\ufe57", "\u01c3",
        "\u2757", "\u00a2", "\u20a4", "S", "5", "4", "1", "3", "a", "\u0430", "\u200b", "\u200d", "\u2060",
        "\ufeff", "\u202e", "\x00", "\x1b[1m", "\n", " ", "<|im_end|>", "</s>", "&#36;", "&#64;", "\\u0024",
        "%24", "`", "```", "<b>", "Answer:", "pr0c3", "\U0001f600", "x" * 30]


def gen_text(rng: random.Random, n: int = 12) -> str:
    return "".join(rng.choice(BITS) for _ in range(rng.randint(0, n)))


def test_leet_is_the_character_class_of_the_symbols_read_as_digits():
    cls = re.compile("[" + re.escape("".join(_guards._LEET_DIGITS)) + "]")
    rng = random.Random(61)
    texts = [gen_text(rng) for _ in range(20_000)] + ["", "$", "\u20ac" * 3, "\uff04\ufe69\uff20\uff01"]
    for text in texts:
        assert _guards._leet(text) == (cls.search(text) is not None), repr(text)
    assert all(_guards._leet(f"ab{s}cd") for s in _guards._LEET_DIGITS)
