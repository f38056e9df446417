"""The attack suite over every built-in grader: no forged verdict is ever read.

See rewardjudge/attacks.py: honest-but-naive scripted judges echo their
prompt, quote the completion or obey it; the library must never score a
verdict the judge did not give, never move the benign sample graded beside a
hostile one, and must flag content-free completions before any judge call.
"""

from __future__ import annotations

import pytest

from rewardjudge.attacks import ATTACKS, MODES, default_targets, run_attack_suite
from rewardjudge.graders._guards import content_free_reason
from rewardjudge.testing import ScriptedModel
from rewardjudge import StringThread


@pytest.fixture(scope="module")
def report():
    import asyncio

    return asyncio.run(run_attack_suite())


# Known defect: CandidateJudgeGrader with a judge that quotes a candidate's
# text raw inside its reasoning, where that text pre-writes whole candidate
# blocks (the judge's own structure) -> the copy detection in
# readouts._candidate_blocks.unquote_reply blanks the judge's own tags -> unscored.
KNOWN: set[tuple[str, str]] = set()   # (grader, attack kind) pairs allowed to fail: none


def test_no_attack_changes_a_grade_through_parsing_or_escapes(report):
    summary = report.summary()
    assert set(summary) == set(default_targets())
    for grader, s in summary.items():
        assert s["changed_by_parsing"] == 0, grader
    bad = [(o.grader, o.attack, o.mode) for o in report.failures() if (o.grader, o.kind) not in KNOWN]
    assert bad == []


def test_candidate_grader_has_no_escape(report):
    # a policy that pre-writes the judge's exact block (once, twice, with forgeries) and a judge
    # that quotes it: the judge's own structure is told apart by the fresh ids and by counts
    assert report.summary()["CandidateJudgeGrader"]["escaped_to_unscored"] == 0


def test_every_mode_and_class_ran(report):
    assert {o.mode for o in report.outcomes} >= set(MODES)
    assert {a.kind for a in ATTACKS} >= {"desync", "escape", "plain-label", "control-token", "numbers",
                                          "size", "forgery", "obfuscation", "content-free"}
    # forgeries are seen and recorded (judge_health counts them)
    assert all(s["forgeries_recorded"] > 0 for g, s in report.summary().items()
               if g != "ProbabilityJudgeGrader")


def test_an_obeying_judge_never_raises_a_reward(report):
    # a judge that replies with the completion's own forged verdict wrote no verdict of its own:
    # a copy of policy text is read only when it cannot raise the reward, so nothing is fooled
    obey = [o for o in report.outcomes if o.mode == "obey"]
    assert obey and not any(o.fooled for o in report.outcomes)
    assert {o.status for o in obey} <= {"penalized", "unscored", "scored"}


def test_content_free_attacks_are_flagged_before_the_judge(report):
    content_free = {a.name for a in ATTACKS if a.kind == "content-free"}
    for o in report.outcomes:
        if o.attack in content_free:
            assert o.status == "penalized", (o.grader, o.attack, o.mode)
            assert "malformed completion" in (o.reason or "")
    for o in report.outcomes:
        if o.attack == "one_megabyte" and o.mode != "distribution":
            assert o.status == "penalized" and "max_completion_chars" in (o.reason or ""), o.grader


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


# the attacks a judge that copies the completion twice can make ambiguous: every verdict
# written by the policy (or the judge's own pre-written beside a forgery) appears more
# often in the reply than in the prompt, on both sides
AMBIGUOUS_UNDER_DOUBLE_COPIES = {"every_verdict", "label_both", "prewrite_own_verdict_and_forgery",
                                 "prewrite_then_every_verdict"}
DOUBLE_COPIES = {"echo_quote", "quote_twice", "repair_twice"}


@pytest.fixture(scope="module")
def copying_report():
    import asyncio

    from rewardjudge.attacks import COPYING_MODES

    return asyncio.run(run_attack_suite(modes=COPYING_MODES))


def test_judges_that_copy_more_than_once_never_have_a_forgery_read(copying_report):
    from rewardjudge.attacks import COPYING_MODES

    assert {o.mode for o in copying_report.outcomes} >= set(COPYING_MODES)
    for grader, s in copying_report.summary().items():
        assert (s["changed_by_parsing"], s["benign_changed"]) == (0, 0), grader
    # the one residual: those attacks against a judge that copies them twice read as
    # ambiguous (unscored, never raised); nothing else escapes
    escapes = {(o.attack, o.mode) for o in copying_report.failures() if o.escaped}
    assert escapes and {a for a, _ in escapes} <= AMBIGUOUS_UNDER_DOUBLE_COPIES
    assert {m for _, m in escapes} <= DOUBLE_COPIES
    assert copying_report.summary()["CandidateJudgeGrader"]["escaped_to_unscored"] == 0
