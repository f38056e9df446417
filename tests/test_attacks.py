"""The attack suite over every built-in grader: no forged verdict is ever read.

See rewardjudge/attacks.py: honest-but-naive scripted judges echo their
prompt, quote the completion or obey it; the library must never score a
verdict the judge did not give, never move the benign sample graded beside a
hostile one, and must flag content-free completions before any judge call.
"""

from __future__ import annotations

import pytest

from rewardjudge.attacks import ATTACKS, default_targets, run_attack_suite
from rewardjudge.graders.guards import content_free_reason
from rewardjudge.testing import ScriptedModel
from rewardjudge import StringThread


@pytest.fixture(scope="module")
def report():
    import asyncio

    return asyncio.run(run_attack_suite())


def test_no_attack_changes_a_grade_through_parsing(report):
    assert report.failures() == []
    summary = report.summary()
    assert set(summary) == set(default_targets())
    for grader, s in summary.items():
        assert s["changed_by_parsing"] == 0, grader
        assert s["benign_changed"] == 0, grader


def test_content_free_attacks_are_flagged_before_the_judge(report):
    content_free = {a.name for a in ATTACKS if a.kind == "content-free"}
    for o in report.outcomes:
        if o.attack in content_free:
            assert o.status == "penalized", (o.grader, o.attack, o.mode)
            assert "malformed completion" in (o.reason or "")


@pytest.mark.parametrize("text, flagged", [
    ("", True),                                    # empty
    ("\u200b\u2060", True),                        # only invisible characters
    (":", True),                                   # punctuation only
    ("Thought process:", True),                    # a master key
    ("THOUGHT PROCESS\uff1a", True),               # upper case and a full-width colon
    ("Let's think step by step", True),            # a master key without punctuation
    ("The answer is 4.", False),                   # content
    ("4", False),                                  # a bare number is content
])
def test_content_free_detection(text, flagged):
    assert (content_free_reason(text) is not None) is flagged


async def test_content_free_guard_can_be_turned_off():
    from rewardjudge.graders import TemplatedPromptJudgeGrader

    judge = ScriptedModel(['{"reasoning": "ok", "score": "PASS"}'])
    grader = TemplatedPromptJudgeGrader("g", judge, "", "A: {{completion}}", reject_content_free=False)
    grade = await grader.grade(StringThread([("user", "q"), ("assistant", ":")]))
    assert grade.status == "scored" and len(judge.calls) == 1
    guarded = TemplatedPromptJudgeGrader("g", ScriptedModel([]), "", "A: {{completion}}")
    grade = await guarded.grade(StringThread([("user", "q"), ("assistant", ":")]))
    assert grade.status == "penalized" and grade.value == -1.0
