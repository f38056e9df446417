"""A grader builds the content-free screen's patterns and tables for its phrases when it is made, not in its first
grade: compiling the opener's patterns and the turned readings' tables took about 0.6 s, and a short completion is
screened in the event loop's turn. After construction, screening texts alone and in a batch compiles nothing."""

from __future__ import annotations

import pytest

from rewardjudge.graders import _guards, _joined, _keys, _turned
from rewardjudge.graders._field_guards import screen_fields
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.testing import ScriptedModel

CACHES = (_guards._opener_steps, _guards._whole_openers, _guards._opener_pattern, _guards._doubled_units,
          _guards._foreign, _turned._ends, _joined._starts,
          _keys._start_words, _keys._opener_starts, _joined._non_ascii_digits)
TEXTS = ["Paris.", "Thought process:", "Gubhtug cebprff:", ":ssecorp thguohT", "rewsna", "Let me think.",
         "The capital of France is Paris.", "Nafjre: 42"]


def _misses() -> "list[int]":
    return [cache.cache_info().misses for cache in CACHES]


class Phrased(TemplatedPromptJudgeGrader):
    content_free_phrases = ("screen warm check phrase",)   # keys no other test uses: their caches start empty


@pytest.mark.parametrize("reject", [True, False])
def test_construction_builds_what_the_first_grade_screens_with(reject):
    for cache in CACHES:
        cache.cache_clear()
    grader = Phrased("warm", ScriptedModel(lambda *a: "{}"), "Grade.", "{{completion}}", reject_content_free=reject)
    keys = tuple(grader.content_free_phrases)
    built = _misses()
    for text in TEXTS:
        _guards.content_free_reason(text, keys)
    _guards.content_free_reason("I will now think " * 4000, keys)   # past one call's units: read doubled
    screen_fields({f"f{i}": text for i, text in enumerate(TEXTS * 2)}, keys)
    if reject:
        assert _misses() == built   # nothing compiled while grading
    else:   # a grader that never screens builds nothing at construction, and the first screen does
        assert built == [0] * len(CACHES) and _misses() != built


def test_a_control_character_in_a_text_compiles_nothing_more():
    """A text holding the texts' first joiner moves the joiner on; the key patterns over the texts' letters (which
    hold no control character) keep the first, so a policy's control characters compile nothing in a grade."""
    keys = ("screen warm control check",)
    Phrased.content_free_phrases = keys
    try:
        Phrased("warm", ScriptedModel(lambda *a: "{}"), "Grade.", "{{completion}}")
        built = _guards._whole_openers.cache_info().misses
        for k in [*range(0x01, 0x09), *range(0x0e, 0x1c)]:
            flags = _guards._content_free_flags([f"a{chr(k)}b", *["Thought process:"] * 8, "Paris"], keys)
            assert flags == [False, *[True] * 8, False]
        assert _guards._whole_openers.cache_info().misses == built
    finally:
        Phrased.content_free_phrases = ("screen warm check phrase",)
