"""The content-free screen, case by case (graders/_guards.py, graders/_field_guards.py).

Two tables: plain completions (``content_free_reason``) and structured
completions (``content_free_fields``, then the grader's ``screen``). Every
case says what it stands for; the benign ones must never be penalized.
"""

from __future__ import annotations

import itertools
import random
import json
from datetime import datetime
from enum import Enum
from uuid import UUID
from typing import Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel

from rewardjudge import StringThread
from rewardjudge.graders._base import Grader
from rewardjudge.graders._field_guards import content_free_fields
from rewardjudge.graders import _keys
from rewardjudge.graders._guards import _content_free_flags, content_free_reason
from rewardjudge.graders._keys import MASTER_KEYS

# --------------------------------------------------------------------------
# plain completions
# --------------------------------------------------------------------------
TEXT_CASES = [
    # (completion, penalized)
    # -- benign: short real answers ------------------------------------------------
    ("Paris", False),                              # a one-word answer
    ("42", False),                                 # a bare number
    ("No.", False),                                # a one-word answer with a full stop
    ("B", False),                                  # a multiple-choice letter
    ("The answer is 4.", False),                   # a master key followed by the answer
    ("Thought process: Paris is the capital.", False),  # an opener followed by content
    ("I don't know", False),                       # an answer (a poor one): content, left to the judge
    ("I don't know. I don't know.", False),        # repeated, still words the judge can weigh
    ("巴黎", False),                               # a CJK answer
    ("Final answer: \\boxed{7}", False),           # a boxed answer
    ("```python\nprint(1)\n```", False),           # code inside a fence
    ("<b>Paris</b>", False),                       # markup around an answer
    ("</candidate>", False),                       # a tag: an attack the readouts handle, not content-free
    ("Paris" + " " * 100_000 + "x", False),        # long padding between words
    ("\u00bd", False),                             # a vulgar fraction is a number
    # -- empty ---------------------------------------------------------------------
    ("", True),                                    # nothing
    ("  \n\t ", True),                             # whitespace
    ("\u200b\u200c\u200d\u2060\ufeff\u00ad", True),  # zero-width characters and a soft hyphen
    ("\u3164\u3164", True),                        # Hangul fillers (letters to Unicode, blank on screen)
    ("\u2800" * 5, True),                          # braille blanks
    ("\u115f\u1160\uffa0", True),                  # more Hangul fillers
    ("\u3000\u00a0\u2003", True),                  # ideographic, no-break and em spaces
    # -- punctuation, symbols, markdown -------------------------------------------------
    (":", True),                                   # one punctuation mark
    ("... !!! ---", True),                         # punctuation only
    ("**", True),                                  # markdown bold with nothing inside
    ("# \n---\n> ", True),                         # a heading, a rule, a quote: all empty
    ("```\n```", True),                            # an empty code fence
    ("```python\n```", True),                      # an empty code fence naming its language
    ("~~~json\n~~~", True),                        # the other fence
    ("\u2192 \u2713", True),                       # arrows and check marks
    ("\U0001f600", True),                          # an emoji alone
    ("a\u0301"[1:] * 50, True),                    # combining marks with no base
    # -- master keys and their variants ---------------------------------------------------
    ("Thought process:", True),                    # the master key itself
    ("Thought  process:", True),                   # two spaces
    ("Thought\tprocess:", True),                   # a tab
    ("Thought\u3164process:", True),               # a Hangul filler as the space
    ("Thought\u2800process:", True),               # a braille blank as the space
    ("Tho\u200bught pro\u200dcess:", True),        # zero-width characters inside words
    ("Let\u2019s think step by step.", True),      # a curly apostrophe
    ("Let\u02bcs think step by step.", True),      # a modifier-letter apostrophe
    ("Let\u2032s think step by step.", True),      # a prime
    ("Lets think step-by-step!", True),            # no apostrophe, hyphens
    ("THOUGHT PROCESS\uff1a", True),               # upper case and a full-width colon
    ("\uff34\uff48\uff4f\uff55\uff47\uff48\uff54 process", True),  # full-width letters
    ("Th\u043eught pr\u043ecess:", True),          # Cyrillic o look-alikes
    ("**Solution**", True),                        # a master key in bold
    ("## Solution", True),                         # a master key as a heading
    ("Solution: Answer: Final answer:", True),     # master keys in a row
    ("Thought process: " * 200, True),             # one master key repeated
    ("Thought process:" + "." * 200, True),        # padded past the old 64-character window
    ("Final answer: \\boxed{}", True),             # an empty box
    ("解", True),                                   # the multilingual master keys of the paper
    ("かいせつ", True),
    ("Respuesta:", True),
    ("Soluci\u00f3n", True),
    ("Solucio\u0301n", True),                      # the same with a combining accent
]


@pytest.mark.parametrize("text, penalized", TEXT_CASES)
def test_content_free_reason(text, penalized):
    assert (content_free_reason(text) is not None) is penalized, content_free_reason(text)


def test_reasons_say_empty_or_content_free():
    assert content_free_reason("\u3164 \u200b") == "empty completion"
    assert content_free_reason("Thought  process:") == "content-free completion: 'Thought  process:'"
    assert content_free_reason(3) == "completion is not text"


def test_extra_phrases_match_like_the_master_keys():
    assert content_free_reason("Per my analysis") is None
    for text in ("Per my analysis:", "PER  MY\u3164ANALYSIS", "Per my analysis. Solution:"):
        assert content_free_reason(text, ["per my analysis"]) is not None, text


def test_every_master_key_and_its_variants_are_flagged():
    for key in MASTER_KEYS:
        for text in (key, key.upper() + ":", f"**{key}**", key.replace(" ", "\u3164"),
                     key.replace("'", "\u2019"), f"{key}. {key}."):
            assert content_free_reason(text) is not None, text


# --------------------------------------------------------------------------
# structured completions
# --------------------------------------------------------------------------
class Confidence(str, Enum):
    high = "high"
    low = "low"


class Answer(BaseModel):
    answer: str
    confidence: Literal["high", "low"]


class EnumAnswer(BaseModel):
    answer: Optional[str] = None
    confidence: Confidence
    sure: bool = False
    score: float = 0.0


class Numeric(BaseModel):
    reasoning: str
    value: int


class Choice(BaseModel):
    choice: Literal["A", "B", "C"]
    sure: bool


class Step(BaseModel):
    text: str
    kind: Literal["claim", "check"]


class Steps(BaseModel):
    steps: list[str]
    notes: list[Step] = []
    final: Optional[str] = None


class OpenChoice(BaseModel):
    verdict: Union[Literal["none"], str]


class Stamped(BaseModel):
    answer: str
    at: datetime
    id: UUID


class Anything(BaseModel):
    answer: str
    meta: Any = None


FIELD_CASES = [
    # (model, completion JSON, penalized)
    # -- benign ---------------------------------------------------------------------
    (Answer, {"answer": "Paris", "confidence": "high"}, False),       # a short answer with a confidence
    (Answer, {"answer": "42", "confidence": "low"}, False),           # a number as text
    (Answer, {"answer": "No.", "confidence": "high"}, False),         # a one-word answer
    (EnumAnswer, {"answer": "Paris", "confidence": "low"}, False),    # beside an enum, a bool, a number
    (Choice, {"choice": "B", "sure": True}, False),                   # no free-text field: the choice is the answer
    (Numeric, {"reasoning": "6 times 7", "value": 42}, False),        # reasoning and a number
    (Steps, {"steps": [":", "Paris is the capital"]}, False),         # one step with content is enough
    (Steps, {"steps": [], "notes": [{"text": "checked", "kind": "check"}]}, False),  # content in a nested model
    (OpenChoice, {"verdict": "none"}, False),                         # the Literal side of a union: a choice
    (OpenChoice, {"verdict": "It depends on the year"}, False),       # the str side of the union, with content
    (Anything, {"answer": "Paris", "meta": None}, False),             # None in an Any field is no text field
    # -- the bug: content-free free text beside choices --------------------------------
    (Answer, {"answer": "", "confidence": "high"}, True),             # empty answer, a confidence
    (Answer, {"answer": "Thought process:", "confidence": "high"}, True),  # a master key, a confidence
    (Answer, {"answer": "Thought\u3164process:", "confidence": "high"}, True),  # with a filler
    (Answer, {"answer": "\u2800\u2800", "confidence": "low"}, True),  # braille blanks
    (EnumAnswer, {"answer": None, "confidence": "high", "sure": True, "score": 1.0}, True),  # unset answer
    (EnumAnswer, {"answer": ":", "confidence": "high", "sure": True, "score": 0.9}, True),  # punctuation
    (Numeric, {"reasoning": "", "value": 42}, True),                  # a number beside empty free text
    (OpenChoice, {"verdict": ""}, True),                              # the str side of the union, empty
    (Anything, {"answer": "Sure!", "meta": {"x": 1}}, True),          # a master key beside anything
    (Steps, {"steps": []}, True),                                     # no step, no final
    (Steps, {"steps": ["", ":", "Solution"], "final": "..."}, True),  # every step content-free
    (Steps, {"steps": [":"] * 40 + ["**"] * 40}, True),               # many, checked in one pass
    (Steps, {"steps": [], "notes": [{"text": "", "kind": "claim"}]}, True),  # nested free text empty
    (Stamped, {"answer": "", "at": "2025-01-01T00:00:00", "id": "6f1c0b8e-2f3c-4a70-9d3c-1f2e3d4c5b6a"},
     True),                                                           # a date and a UUID are no answer
    (Stamped, {"answer": "Paris", "at": "2025-01-01T00:00:00", "id": "6f1c0b8e-2f3c-4a70-9d3c-1f2e3d4c5b6a"},
     False),                                                          # beside a real answer they do no harm
]


@pytest.mark.parametrize("model, data, penalized", FIELD_CASES)
def test_content_free_fields(model, data, penalized):
    dumped = model.model_validate(data).model_dump(mode="json")
    reason = content_free_fields(dumped, (), model)
    assert (reason is not None) is penalized, reason


def test_without_a_model_every_string_is_free_text():
    # the old contract: penalized when every string is content-free, or nothing is there
    assert content_free_fields({"answer": "", "confidence": "high"}) is None
    assert content_free_fields({"answer": "", "note": ":"}) is not None
    # an empty list and a null are empty texts (hunt 24), as the plain-text screen reads them
    assert content_free_fields({"a": [], "b": None}) == "every text field is empty or content-free (a: empty)"
    assert content_free_fields({"value": 3}) is None


def test_the_reason_names_the_field():
    reason = content_free_fields({"steps": [], "notes": [{"text": "", "kind": "claim"}], "final": None},
                                 (), Steps)
    assert reason == "every free-text field is empty or content-free (steps: empty)"   # an empty list (hunt 24)
    reason = content_free_fields({"steps": ["ok?", ":"], "notes": [], "final": "x"}, (), Steps)
    assert reason is None
    reason = content_free_fields({"steps": ["", ":"], "notes": [], "final": "..."}, (), Steps)
    assert reason.endswith("(steps[0]: empty)")


def test_a_recursive_model_is_walked():
    class Node(BaseModel):
        label: str
        children: list["Node"] = []

    deep: dict = {"label": "", "children": []}
    node = deep
    for _ in range(200):
        child = {"label": ":", "children": []}
        node["children"].append(child)
        node = child
    dumped = Node.model_validate(deep).model_dump(mode="json")
    assert content_free_fields(dumped, (), Node) is not None
    node["label"] = "leaf"
    dumped = Node.model_validate(deep).model_dump(mode="json")
    assert content_free_fields(dumped, (), Node) is None


def test_one_pass_over_many_texts_agrees_with_one_call_each():
    pieces = ["", " ", ":", "Solution", " answer", "x", "4", "\u3164", "\u200b", "```py", "\n", "\x01",
              "\x02", "Let\u2019s", " think step by step", "**", "\u0301", "~~~"]
    texts = sorted({"".join(p) for p in itertools.product(pieces, repeat=2)} - {""})
    for keys in ((), ("x",), ("per my analysis",)):
        for start in range(0, len(texts) - 12, 7):
            chunk = texts[start:start + 12]
            expected = all(content_free_reason(t, keys) is not None for t in chunk)
            assert all(_content_free_flags(chunk, keys)) is expected, (chunk, keys)
    every_free = [t for t in texts if content_free_reason(t) is not None]
    assert len(every_free) > 8 and all(_content_free_flags(every_free, ()))


# --------------------------------------------------------------------------
# through the grader's screen (graders/_base.py passes the completion model)
# --------------------------------------------------------------------------
class _Bare(Grader):
    pass


def _sample(completion: str) -> StringThread:
    return StringThread([("user", "What is the capital of France?"), ("assistant", completion)])


@pytest.mark.parametrize("data, penalized", [
    ({"answer": "", "confidence": "high"}, True),
    ({"answer": "Thought  process:", "confidence": "high"}, True),
    ({"answer": "Let\u2019s think step by step.", "confidence": "low"}, True),
    ({"answer": "Paris", "confidence": "high"}, False),
])
def test_screen_penalizes_content_free_answers_beside_a_confidence(data, penalized):
    grader = _Bare("g")
    parsed, grade = grader.screen(_sample(json.dumps(data)), Answer)
    assert (grade is not None) is penalized
    if penalized:
        assert grade.status == "penalized" and grade.value == -1.0
        assert "malformed completion: every free-text field" in grade.error
    else:
        assert parsed.answer == data["answer"]


# --------------------------------------------------------------------------
# the one-pass screen of many texts reads as each text alone (bench linear's shapes)
# --------------------------------------------------------------------------
def test_look_alike_symbols_read_as_digits_as_a_translation_table_reads_them():
    from rewardjudge.graders._guards import _LEET_DIGITS, _as_digits

    table = str.maketrans(_LEET_DIGITS)
    rnd = random.Random(4)
    pieces = ["$", "@", "!", "\u20ac", "5", "a", "\u00e9", " ", "$$", "\U0001f600"]
    for _ in range(3000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 12)))
        assert _as_digits(text) == text.translate(table), text


#: pieces of texts whose letters start with each kind of character the opener may start with (a
#: key's letter, its look-alike digit, a filler word's, a CJK key) or may not, with colons after
#: a key, right-to-left overrides and look-alike symbols
SCREEN_PIECES = ["Solution", "5olution", "$olution", "4nswer", "@nswer", "answer", "Sure", "5ure", "step", "1",
                 "7hought process", "\u20acxplanation", "the", "let", "解", "答案", "Paris", "x", "9", "\u00e9",
                 ":", "\uff1a", " ", "\u202e", "\u200b", "**", "!", "```", "<b>", "</b>", "per my analysis",
                 "\u3164", "\\text{", "}"]


@pytest.mark.parametrize("keys", [(), ("per my analysis",), ("\u00e9tape",)])
def test_the_flags_of_many_texts_read_as_one_call_each(keys):
    from rewardjudge.graders._guards import _content_free_flags

    rnd = random.Random(len(keys))
    for _ in range(150):
        texts = list(dict.fromkeys("".join(rnd.choice(SCREEN_PIECES) for _ in range(rnd.randint(1, 5)))
                                   for _ in range(rnd.randint(8, 60))))
        assert _content_free_flags(texts, keys) == [content_free_reason(t, keys) is not None for t in texts], texts


def test_the_strings_of_a_list_are_taken_as_one_at_a_time():
    """``_Texts.take_all`` (a list's distinct strings at once) finds what ``take`` of each finds."""
    from rewardjudge.graders._field_guards import _Field, _Texts

    nodes = [{"type": "string"}, {"enum": ["high", "low"]}, {"type": "string", "format": "date"},
             {"anyOf": [{"const": "none"}, {"type": "string"}]}, {"anyOf": [{"const": "none"},
                                                                               {"type": "string", "format": "uuid"}]},
             {}, {"type": "integer"}]
    rnd = random.Random(8)
    words = ["", "high", "low", "none", "Paris", "2025-01-01", ":"]
    for _ in range(500):
        f = _Field(rnd.choice(nodes), {})
        texts = list(dict.fromkeys(rnd.choice(words) for _ in range(rnd.randint(1, 6))))
        one, each = _Texts(), _Texts()
        one.take_all(f, dict.fromkeys(texts), lambda t: ("steps", texts.index(t)))
        for t in texts:
            each.take(f, t, lambda t=t: ("steps", texts.index(t)))
        assert (one.first, list(one.texts), one.other, one.blank) == \
            (each.first, list(each.texts), each.other, each.blank), (f.node, texts)
        assert f.free_texts(texts) == [t for t in texts if f.kind(t) == "free"]


def test_a_list_blanked_at_once_reads_as_item_by_item(monkeypatch):
    """``_blanked`` blanks the strings of a list with one schema for every item at once: the same
    copy as item by item (the walk of a list whose items' schemas differ)."""
    from rewardjudge.graders import _field_guards

    class Nested(BaseModel):
        steps: list[str]
        notes: list[Step] = []
        table: list[list[str]] = []
        pair: tuple[str, Literal["A", "B"]] = ("", "A")
        picks: list[Literal["high", "low"]] = []
        any_list: list[Any] = []

    rnd = random.Random(9)
    words = ["Paris", "", ":", "high", "A", "Solution", "x"]
    for _ in range(300):
        def some() -> list[str]:
            return [rnd.choice(words) for _ in range(rnd.randint(0, 5))]
        value = Nested(steps=some(), notes=[Step(text=rnd.choice(words), kind="claim") for _ in range(2)],
                       table=[some() for _ in range(2)], pair=(rnd.choice(words), "B"),
                       picks=[rnd.choice(["high", "low"]) for _ in range(2)],
                       any_list=[*some(), {"k": rnd.choice(words)}, [rnd.choice(words)], 1, None]
                       ).model_dump(mode="json")
        rich = {w for w in words if rnd.random() < 0.5}
        # the schema's fields made afresh each time (``_schema_of`` keeps them per model)
        at_once = [_field_guards._blanked(value, schema, rich)
                   for schema in (_field_guards._schema_of.__wrapped__(Nested), None)]
        with monkeypatch.context() as m:
            class ItemByItem(_field_guards._Field):
                def __init__(self, node: Any, defs: dict):
                    super().__init__(node, defs)
                    self.uniform = False

            m.setattr(_field_guards, "_Field", ItemByItem)
            m.setattr(_field_guards, "_NO_SCHEMA", (_field_guards._ANY, {}, {}))   # its fields made item by item too
            one_by_one = [_field_guards._blanked(value, schema, rich)
                          for schema in (_field_guards._schema_of.__wrapped__(Nested), None)]
        assert one_by_one == at_once, (value, rich)
        # every text carrying content (``_EVERY``, no set made) blanks as the set of every free text
        for schema in (_field_guards._schema_of.__wrapped__(Nested), None):
            texts = _field_guards._free_texts(value, schema)[1]
            assert _field_guards._blanked(value, schema, _field_guards._EVERY) == \
                _field_guards._blanked(value, schema, set(texts)), value


def _old_opener(keys: tuple[str, ...]):
    """The opener before its atomic groups: each word a lookahead and its copy, runs that backtrack."""
    import re

    from rewardjudge.graders import _guards

    k = _guards._trie(map(_guards._chars, _keys._key_forms(keys)))
    f = _guards._trie((list(w) for w in _guards._FILLER), _guards._key_chars(keys))   # hunt 30: no key's letter taken
    k = f"(?:{_guards._STEP}|{_guards._announce()}|{k})"   # step headers, then reasoning announced (hunt 33), first
    n = _guards._FILLER_RUN
    return re.compile(f"(?:(?!{k})(?=({f}))\\1){{0,{n}}}(?:(?=({k}))\\2(?:(?!{k})(?=({f}))\\3){{0,{n}}})+")


@pytest.mark.parametrize("keys", [(), ("per my analysis",)])
def test_the_atomic_opener_matches_as_the_one_it_replaced(keys):
    """The opener's words and runs are atomic groups now: the same match (its end) or none, over
    random runs of master keys, filler words (nine in a row too), look-alike digits and other letters."""
    from rewardjudge.graders._guards import _opener_pattern
    from rewardjudge.graders._keys import _FILLER, _key_forms

    words = sorted(_key_forms(keys)) + sorted(_FILLER) * 2 + ["x", "pari", "5olution", "an", "ste", "1"]
    old, new = _old_opener(keys), _opener_pattern(keys)
    rnd = random.Random(len(keys) + 5)
    for _ in range(20000):
        text = "".join(rnd.choice(words) for _ in range(rnd.randint(0, 14)))
        a, b = old.match(text), new.match(text)
        assert (a and a.end()) == (b and b.end()), text


#: markup that is a text's own (a declaration, a bracket tag closing, a terminal code, empty list items)
OWN_MARKUP_PIECES = ["<?xml version='1.0'?>", "<!doctype html>", "<![CDATA[", "]]>", "[b]", "[/b]", "[/", "\x1b[1m",
                     "\x1b", "\n1.\n2.", "\n- \n-", "\n", "<b>", "</b>", "Solution:", "Paris", "解", " ", "<!", "<?"]


@pytest.mark.parametrize("all_joiners_taken", [False, True])
def test_own_markup_of_many_texts_reads_as_one_call_each(all_joiners_taken):
    """The texts whose markup is their own are found in the texts joined, also where every joiner but
    the terminal's escape is taken (so the escape joins them)."""
    from rewardjudge.graders._guards import _content_free_flags

    rnd = random.Random(7 + all_joiners_taken)
    taken = "".join(map(chr, [*range(0x01, 0x09), *range(0x0e, 0x1b)])) if all_joiners_taken else ""
    for _ in range(150):
        texts = list(dict.fromkeys("".join(rnd.choice(OWN_MARKUP_PIECES + SCREEN_PIECES) for _ in range(rnd.randint(1, 4)))
                                   for _ in range(rnd.randint(8, 40))))
        if taken:
            texts = [t.replace("\x1b", "") for t in texts] + [taken]
        assert _content_free_flags(texts, ()) == [content_free_reason(t, ()) is not None for t in texts], texts


def test_a_text_of_no_markups_characters_is_left_as_it_is():
    """``_may_mark`` False: ``_unmarked`` keeps the text, with or without its own markup (the fields
    screen then keeps it without a call); each kind of markup is caught."""
    from rewardjudge.graders._markup import _may_mark, _unmarked

    rnd = random.Random(11)
    pieces = OWN_MARKUP_PIECES + SCREEN_PIECES + ["<", "/", "[", "!", "?", "{", "\\", "```", "~~~", "#+title:", "{\\rtf1",
                                                   "\\textbf{x}", "<b>x</b>", "[b]x[/b]", "\x1b[1m", "\n1.\n2."]
    kept = 0
    for _ in range(3000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 6)))
        if not _may_mark(text):
            kept += 1
            assert _unmarked(text) == text and _unmarked(text, tags=False) == text, text
    assert kept > 100
    assert all(_unmarked(t) != t for t in ["```py", "#+title:", "\\textbf{x}", "<b>x</b>", "[b]x[/b]", "\x1b[1m",
                                           "\n1.\n2.", "<!doctype html>"])
