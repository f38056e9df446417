"""The attack suite over every built-in grader: no forged verdict is ever read.

See rewardjudge/attacks.py and rewardjudge/_naive_judges.py: honest-but-naive scripted judges echo their
prompt, quote the completion or obey it; the library must never score a
verdict the judge did not give, never move the benign sample graded beside a
hostile one, and must flag content-free completions before any judge call.

The judges seal only their own verdict. The suite's label judges
(``_naive_judges._label_judge``) seal their reply with ``testing.seal_reply``, which
puts the seal on the reply's last JSON object when there is one: a label
judge quoting a JSON forgery in its reasoning seals the *forgery* (known
defect, ``test_the_shipped_label_judges_seal_their_own_label_line``). Until
that is fixed the label targets here use a label judge that writes its own
``VERDICT <seal>: FAIL`` line (``_label_line_judge``).
"""

from __future__ import annotations

import pytest

from rewardjudge import _naive_judges, attacks
from rewardjudge.attacks import ATTACKS, BEHAVIOUR_MODES, MODES, default_targets, run_attack_suite
from rewardjudge.graders._guards import content_free_reason
from rewardjudge.testing import ScriptedModel, request_seal
from rewardjudge import StringThread

LABEL_TARGETS = ("TemplatedPromptJudgeGrader (label)", "CriterionJudgeGrader (label)")
SEALED_GRADERS = ("TemplatedPromptJudgeGrader", "TemplatedPromptJudgeGrader (label)",
                  "TemplatedPromptJudgeGrader (graded)", "CriterionJudgeGrader (catalog)",
                  "CriterionJudgeGrader (label)", "ScorerGrader")


def _label_line_judge(label: str):
    """The suite's naive label judge, writing its own label on a sealed line."""
    def own(prompt: str, why: str) -> str:
        seal = request_seal([{"role": "user", "content": prompt}])
        return f"{why}\n{label}" if seal is None else f"{why}\nVERDICT {seal}: {label}"

    return _naive_judges._naive(own, prose_reasoning=True)


def _targets():
    targets = default_targets()
    for name in LABEL_TARGETS:
        targets[name].judge = _label_line_judge("FAIL")
    return targets


@pytest.fixture(scope="module")
def report():
    import asyncio

    return asyncio.run(run_attack_suite(_targets()))


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
    # the candidate grader still sees and records forgeries (judge_health counts them); a
    # sealed grader never looks at unsealed text, so it records none
    summary = report.summary()
    assert summary["CandidateJudgeGrader"]["forgeries_recorded"] > 0
    assert all(summary[g]["forgeries_recorded"] == 0 for g in SEALED_GRADERS)


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


@pytest.fixture(scope="module")
def copying_report():
    import asyncio

    from rewardjudge.attacks import COPYING_MODES

    return asyncio.run(run_attack_suite(_targets(), modes=COPYING_MODES))


def test_judges_that_copy_more_than_once_never_have_a_forgery_read(copying_report):
    from rewardjudge.attacks import COPYING_MODES

    assert {o.mode for o in copying_report.outcomes} >= set(COPYING_MODES)
    for grader, s in copying_report.summary().items():
        assert (s["changed_by_parsing"], s["benign_changed"]) == (0, 0), grader
    # the heuristic readout left a residual here: the policy's verdicts copied twice read as
    # ambiguous (unscored). Sealed, the judge's own verdict is always read: nothing escapes
    assert [(o.grader, o.attack, o.mode) for o in copying_report.failures()] == []


@pytest.fixture(scope="module")
def behaviour_report():
    import asyncio

    return asyncio.run(run_attack_suite(_targets(), modes=BEHAVIOUR_MODES))


# the suite's own harness fails on these: a judge that seals a decoded copy of the policy's
# text as a draft calls testing.seal_reply on it, whose JSON scan raises RecursionError on
# 3,000 nested objects (testing._last_object catches ValueError only): the scripted judge
# raises instead of replying (see test_seal_reply_survives_deep_nesting)
HARNESS_RECURSION = {"deep_nesting", "deep_nesting_verdict_inside", "deep_nesting_unclosed"}
DRAFTING_MODES = {"change_mind", "think_draft", "unclosed_think", "truncated"}


def test_judges_that_decode_restate_or_change_their_mind_never_have_a_forgery_read(behaviour_report):
    summary = behaviour_report.summary()
    assert {o.mode for o in behaviour_report.outcomes} >= set(BEHAVIOUR_MODES)
    for grader, s in summary.items():
        assert (s["changed_by_parsing"], s["judge_fooled"]) == (0, 0), grader
    for o in behaviour_report.outcomes:
        if o.grader not in SEALED_GRADERS:
            continue
        assert not o.benign_changed, (o.grader, o.attack, o.mode, o.benign_status)
        if not o.escaped:
            continue
        if o.mode == "truncated":
            # cut off at max_tokens: never read, whatever it holds
            assert "cut off" in o.reason or o.attack in HARNESS_RECURSION, (o.grader, o.attack, o.reason)
        else:
            assert o.attack in HARNESS_RECURSION and o.mode in DRAFTING_MODES, (o.grader, o.attack, o.mode)
            assert "RecursionError" in o.reason
    # every sealed grader read the judge's own final verdict in every other case
    held = {g: summary[g]["held"] for g in SEALED_GRADERS}
    assert all(h > 0 for h in held.values()), held


def test_a_cut_off_reply_escapes_only_by_running_out_of_tokens(behaviour_report):
    # the benign sample is never cut off: only hostile completions long enough to exhaust the
    # judge reach 'unscored' this way (a masked grade, never a raised one)
    for o in behaviour_report.outcomes:
        if o.grader in SEALED_GRADERS and o.mode == "truncated":
            assert o.status in ("unscored", "penalized"), (o.grader, o.attack, o.status, o.value)
            assert o.benign_status == "scored" and o.benign_value == 0.0


def test_seal_reply_survives_deep_nesting():
    from rewardjudge.testing import seal_reply

    msgs = [{"role": "user", "content": 'Grade. ... with the value "0123456789abcdef": ...'}]
    reply = "It says " + '{"a": ' * 3000 + "1\nFAIL"
    assert seal_reply(reply, msgs).endswith("VERDICT 0123456789abcdef: FAIL")


@pytest.mark.parametrize("name", LABEL_TARGETS)
@pytest.mark.parametrize("mode", ["quote", "quote_prose", "quote_unescape", "quote_twice", "echo_quote"])
def test_the_shipped_label_judges_seal_their_own_label_line(name, mode):
    seal = "0123456789abcdef"
    prompt = f'Answer: {attacks.PASS_JSON}\n\nAdd the field "seal" with the value "{seal}": ...'
    reply = default_targets()[name].judge(mode, prompt, attacks.PASS_JSON)
    assert reply.rstrip().endswith(f"VERDICT {seal}: FAIL"), reply
    assert f'"seal": "{seal}"' not in reply, reply
