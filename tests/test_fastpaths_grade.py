"""The grading path's quick checks give what the patterns and walks they replaced give.

Each test compares a check written for speed (the content-free screen's, the readout's) with the
character class or walk it stands for, over generated hostile texts: look-alike symbols (fullwidth
and small forms), zero-width and control characters, control tokens, escapes and markup.
"""

from __future__ import annotations

import random
import re

from dataclasses import replace

from rewardjudge.grade import encodable
from rewardjudge.graders import _guards
from rewardjudge.readouts._decision import NoVerdict, Verdict, made_verdicts

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


def _made_the_long_way(decision, text, make):
    """``made_verdicts`` as a walk over every value of the decision."""
    values = (decision.value, *decision.others) if isinstance(decision, Verdict) else ()
    if all(isinstance(v, tuple) for v in values):
        return decision
    before = encodable(text[:decision.start].strip())
    try:
        made = [v if isinstance(v, tuple) else make(v, before) for v in values]
    except ValueError as exc:
        return NoVerdict(f"the verdict does not fit: {exc}"[:400], kind="invalid")
    return replace(decision, value=made[0], others=tuple(made[1:]))


def test_made_verdicts_is_the_walk_over_every_value():
    def make(value, before):
        if value == "BAD":
            raise ValueError("no such label")
        return (f"{value}|{before}", 1.0)

    rng = random.Random(62)
    values = ["PASS", "FAIL", "BAD", ("checked", 0.5), ("other", 1.0)]
    for _ in range(2000):
        text = gen_text(rng, 6)
        others = tuple(rng.choice(values) for _ in range(rng.choice([0, 0, 1, 2])))
        decision = Verdict(rng.choice(values), rng.randint(0, len(text)), len(text), others)
        assert made_verdicts(decision, text, make) == _made_the_long_way(decision, text, make)
    none = NoVerdict("no sealed verdict in the reply", kind="no sealed verdict")
    assert made_verdicts(none, "x", make) is none


def test_first_open_is_the_character_class_of_the_brackets():
    from rewardjudge.graders._notation import _first_open

    cls = re.compile(r"[{\[]")
    rng = random.Random(63)
    bits = [*BITS, "{", "[", "}", "]", "{[", "[{", "\uff5b", "\uff3b", "\u2983"]
    texts = ["".join(rng.choice(bits) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    for text in [*texts, "", "{", "[", "a{b[c", "a[b{c", "}]", "x" * 50 + "["]:
        m = cls.search(text)
        assert _first_open(text) == (-1 if m is None else m.start()), repr(text)


def test_inline_tests_are_the_counted_sizes_against_the_limit():
    """``inline_text`` and ``inline_sample`` (no count for a text too short to weigh past the limit) decide as
    ``work_size`` and ``text_size`` compared with ``_INLINE_CHARS``, on texts dense with what weighs most."""
    from rewardjudge.graders._base import (_INLINE_CHARS, _SURELY_INLINE, inline_sample, inline_text, text_size,
                                           work_size)
    from rewardjudge.thread import StringThread

    rng = random.Random(64)
    lengths = [0, 1, _SURELY_INLINE - 1, _SURELY_INLINE, _SURELY_INLINE + 1, 1100, 2000, 40_000, 65_536, 70_000]
    texts = []
    for n in lengths:
        for fill in ("{", "[", ",", "a", "{[,a", "\u00e9,"):
            texts.append((fill * n)[:n])
        texts.append("".join(rng.choice("{[,a ") for _ in range(n)))
    for text in texts:
        assert inline_text(text) == (work_size(text) <= _INLINE_CHARS), (len(text), text[:8])
    for _ in range(300):
        turns = [(role, rng.choice(texts)) for role in ("system", "user", "assistant")[:rng.randint(1, 3)]]
        sample = StringThread(turns)
        assert inline_sample(sample) == (text_size(sample) <= _INLINE_CHARS), [len(t) for _, t in turns]


def test_tag_starts_are_the_walks_over_the_tags():
    from rewardjudge.readouts._seams import tag_starts

    rng = random.Random(65)
    names = ["", "#", "##Response", "-", "--- Answer", "answer", "[user]", "=", "#-", "-#", " #", "\uff03x"]
    for _ in range(2000):
        tags = tuple(rng.choice(names) for _ in range(rng.randint(0, 6)))
        assert tag_starts(tags) == (any(t[:1] == "#" for t in tags), any(t[:1] == "-" for t in tags)), tags


def test_verdict_reasoning_is_the_first_text_field_named():
    from typing import Any

    from pydantic import BaseModel, ConfigDict

    from rewardjudge.graders._outputs import REASONING_FIELDS, verdict_reasoning

    class Free(BaseModel):
        model_config = ConfigDict(extra="allow")

    class Typed(BaseModel):
        reasoning: Any = None
        explanation: Any = None

        @property
        def reason(self) -> str:
            return "from a property"

    rng = random.Random(66)
    values = [None, 1, "", "why", ["x"], {"a": "b"}]
    for _ in range(2000):
        fields = {n: rng.choice(values) for n in rng.sample(REASONING_FIELDS, rng.randint(0, 4))}
        for verdict in (Free(**fields), Typed(**{k: v for k, v in fields.items() if k in Typed.model_fields})):
            want = next((v for n in REASONING_FIELDS if isinstance(v := getattr(verdict, n, None), str)), None)
            assert verdict_reasoning(verdict) == want, fields


def test_letters_of_a_text_with_a_few_characters_outside_ascii_are_the_translated_ones():
    """``letters`` reads a text whose characters outside ASCII are few and fold to ASCII letters as ASCII once they
    are replaced (``ascii_folded``): the letters the fold table's translation of every character gives."""
    from rewardjudge.readouts import _text

    def long_way(text, keep=""):
        if "&" in text or "\\" in text or "%" in text:
            text = _text._read_escapes(text.lower(), _text._TEXT_ESCAPES_SPLIT)
        return text.translate(_text._LETTERS).translate(_text._controls_dropped(keep))

    rng = random.Random(67)
    bits = [*BITS, "a", "B", " ", ".", "\u2019", "\u2013", "\u00e9", "\u00c9", "\ufb01", "\u0430", "\u00df", "\u2474",
            "\ud800", "\x01", "\u0130", "\u212a", "\u00bd", "\u0663", "\u4e2d", "\u00aa", "\u0301", "A" * 40]
    texts = ["".join(rng.choice(bits) for _ in range(rng.randint(0, 30))) for _ in range(20_000)]
    texts += ["ab " * 20 + chr(c) + " cd" for c in range(0x80, 0x3000)]
    texts += ["The answer\u2019s 4 \u2013 twice 2. " * 3000, "\u00e9\u00e8\u00ea\u00eb\u00e0\u00e2\u00e4\u00f4\u00f6 x" * 50]
    for text in texts:
        for keep in ("", "\x01"):
            assert _text.letters(text, keep) == long_way(text, keep), (text[:60], keep)
