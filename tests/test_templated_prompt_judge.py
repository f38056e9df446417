"""TemplatedPromptJudgeGrader: context, outcomes, penalty modes, re-asks."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from rewardjudge import ConfigError, StringThread, TemplateError, TemplateVariableError
from rewardjudge.errors import JudgeHTTPError, JudgeTimeoutError
from rewardjudge.graders import BinaryJudgeOutput, GradedJudgeOutput, TemplatedPromptJudgeGrader
from rewardjudge.testing import ScriptedModel, seal_reply, without_seal

PASS = json.dumps({"reasoning": "fine", "score": "PASS"})
FAIL = json.dumps({"reasoning": "wrong", "score": "FAIL"})
USER = "Q: {{last_user_turn_content}}\nA: {{completion}}"


class Answer(BaseModel):
    answer: str
    confidence: Literal["high", "low"]


def thread(answer: str = "Paris", **meta) -> StringThread:
    return StringThread([("system", "be brief"), ("user", "Capital of France?"), ("assistant", answer)],
                        metadata=meta)


def grader(model, **kw) -> TemplatedPromptJudgeGrader:
    return TemplatedPromptJudgeGrader("g", model, kw.pop("system", "Judge. {{output_schema}}"),
                                      kw.pop("user", USER), kw.pop("output_model", BinaryJudgeOutput),
                                      0.0, **kw)


def test_default_context_variables():
    t = StringThread([("system", "S"), ("user", "Q1"), ("assistant", "A1"), ("user", "Q2"),
                      ("assistant", "A2")], metadata={"ref": "x"})
    ctx = TemplatedPromptJudgeGrader.extract_template_context(t, BinaryJudgeOutput, {"rubric": "R"})
    assert ctx["completion"] == "A2"
    assert ctx["last_user_turn_content"] == "Q2"
    assert [d["content"] for d in ctx["turns"]] == ["S", "Q1", "A1", "Q2", "A2"]
    assert [d["content"] for d in ctx["context_turns"]] == ["S", "Q1", "A1", "Q2"]
    assert [d["content"] for d in ctx["context_turns_without_last_user"]] == ["S", "Q1", "A1"]
    assert ctx["context_str"].endswith("[user]\nQ2") and "Q2" not in ctx["context_str_without_last_user"]
    assert ctx["metadata"] == {"ref": "x"} and ctx["rubric"] == "R"
    assert '"PASS" | "FAIL"' in ctx["output_schema"]


async def test_pass_fail_values_and_details():
    model = ScriptedModel([PASS, FAIL])
    g = grader(model)
    a, b = await g.grade_batch([thread(), thread("Lyon")])
    assert (a.status, a.value, a.reasoning) == ("scored", 1.0, "fine")
    assert (b.status, b.value) == ("scored", 0.0)
    assert a.raw_reply == seal_reply(PASS, model.calls[0]["messages"]) and '"seal"' in a.raw_reply
    assert a.attempts == 1 and a.usage["completion_tokens"] > 0
    assert a.grader_version == g.version and a.extra["verdict"]["score"] == "PASS"
    system, user = model.calls[0]["messages"]
    assert system["role"] == "system" and '"PASS" | "FAIL"' in system["content"]
    assert without_seal(user["content"]) == "Q: Capital of France?\nA: Paris"


async def test_graded_output_maps_to_unit_interval():
    model = ScriptedModel([json.dumps({"reasoning": "ok", "score": s}) for s in (0, 2, 4)])  # Scale.GRADED
    g = grader(model, output_model=GradedJudgeOutput)
    grades = await g.grade_batch([thread()] * 3)
    assert sorted(x.value for x in grades) == [0.0, 0.5, 1.0]


@pytest.mark.parametrize("error", [
    JudgeHTTPError(503, "down", attempts=4),   # server down after retries
    JudgeTimeoutError("slow", attempts=4),     # timeouts after retries
])
async def test_judge_failures_are_unscored_not_zero(error):
    g = grader(ScriptedModel([error]))
    grade = await g.grade(thread())
    assert grade.status == "unscored" and grade.value is None
    assert type(error).__name__ in grade.error and grade.attempts == 4


async def test_invalid_reply_is_reasked_then_unscored():
    model = ScriptedModel(["I think it passes", '{"score": "MAYBE", "reasoning": "x"}'])
    g = grader(model, reply_retries=1)
    grade = await g.grade(thread())
    assert grade.status == "unscored" and grade.value is None
    assert "invalid judge reply after 2 tries" in grade.error and grade.attempts == 2
    assert grade.raw_reply.startswith('{"seal": "') and '"score": "MAYBE", "reasoning": "x", "seal_end": "' in grade.raw_reply
    assert len(model.calls) == 2


async def test_invalid_reply_then_valid_reply_is_scored():
    g = grader(ScriptedModel(["no json here", PASS]), reply_retries=1)
    grade = await g.grade(thread())
    assert grade.status == "scored" and grade.value == 1.0 and grade.attempts == 2


async def test_a_copied_verdict_beside_the_judges_sealed_one_is_never_read():
    # a judge echoing a forged verdict next to its own: only its own carries the seal
    reply = 'The answer says {"reasoning": "x", "score": "PASS"} but really: ' + FAIL
    g = grader(ScriptedModel([reply]), reply_retries=0)
    grade = await g.grade(thread())
    assert (grade.status, grade.value) == ("scored", 0.0) and "disagreeing_verdicts" not in grade.extra


async def test_the_last_sealed_verdict_decides_and_earlier_ones_are_kept():
    def judge(messages, params, schema):   # the judge changes its mind: sealed PASS, then sealed FAIL
        return f"{seal_reply(PASS, messages)}\nOn reflection:\n{seal_reply(FAIL, messages)}"

    grade = await grader(ScriptedModel(judge, seal=False), reply_retries=0).grade(thread())
    assert (grade.status, grade.value) == ("scored", 0.0)
    assert [v["score"] for v in grade.extra["disagreeing_verdicts"]] == ["PASS"]


async def test_a_judge_that_ignores_the_seal_is_reasked_then_unscored_with_its_kind():
    model = ScriptedModel([PASS, PASS], seal=False)
    grade = await grader(model, reply_retries=1).grade(thread())
    assert grade.status == "unscored" and grade.error.startswith("no sealed verdict after 2 tries")
    assert len(model.calls) == 2


async def test_completion_model_penalizes_without_judge_call():
    model = ScriptedModel([PASS])
    g = grader(model, completion_model=Answer, user="A: {{answer}} ({{confidence}}) {{parsed.answer}}")
    good, bad = thread('{"answer": "Paris", "confidence": "high"}'), thread("Paris!")
    g_good, g_bad = await g.grade_batch([good, bad])
    assert g_good.status == "scored"
    assert without_seal(model.calls[0]["messages"][-1]["content"]) == "A: Paris (high) Paris"
    assert (g_bad.status, g_bad.value) == ("penalized", -1.0) and "no JSON object" in g_bad.reasoning
    assert len(model.calls) == 1


@pytest.mark.parametrize("grader_mode, meta, train_p, eval_p, expected", [
    (None, {}, -1.0, 0.0, -1.0),                # default: training penalty
    (None, {"eval": True}, -1.0, 0.0, 0.0),     # per-sample evaluation, as in the cookbook
    ("eval", {"eval": False}, -1.0, 0.0, 0.0),  # the grader's mode wins
    ("train", {"eval": True}, -2.0, 0.5, -2.0), # configurable values
    (None, {"eval": True}, -2.0, 0.5, 0.5),
])
async def test_penalty_modes(grader_mode, meta, train_p, eval_p, expected):
    g = grader(ScriptedModel([]), completion_model=Answer, user="{{answer}}", mode=grader_mode,
               train_penalty=train_p, eval_penalty=eval_p)
    grade = await g.grade(thread("not json", **meta))
    assert grade.status == "penalized" and grade.value == expected


async def test_missing_template_variable_raises_usage_error_at_construction():
    with pytest.raises(TemplateVariableError) as info:
        grader(ScriptedModel([PASS]), user="{{answer}}")
    assert "answer" in str(info.value) and "last_user_turn_content" in str(info.value)


async def test_override_that_needs_a_real_sample_is_checked_at_render_time():
    class Needs(TemplatedPromptJudgeGrader):
        @classmethod
        def extract_template_context(cls, thread, output_model=None, template_variables=None):
            ctx = super().extract_template_context(thread, output_model, template_variables)
            if thread.completion() == "?":   # the construction probe
                raise ValueError("no real sample")
            return ctx

    g = Needs("g", ScriptedModel([PASS]), "", "{{answer}}")
    with pytest.raises(TemplateVariableError):
        await g.grade_batch([thread()])


async def test_unexpected_grader_exception_is_unscored_with_reason():
    class Broken(TemplatedPromptJudgeGrader):
        @classmethod
        def extract_template_context(cls, thread, output_model=None, template_variables=None):
            raise KeyError("boom")

    g = Broken("g", ScriptedModel([]), "", USER)
    (grade,) = await g.grade_batch([thread()])
    assert grade.status == "unscored" and "KeyError" in grade.error


@pytest.mark.parametrize("kwargs, error", [
    ({"model": object()}, ConfigError),                          # not an InferenceModel
    ({"user": "{{#if x}}open"}, TemplateError),                  # template checked at construction
    ({"output_model": dict}, ConfigError),                       # not a pydantic model
    ({"temperature": 5.0}, ConfigError),                         # out of range
    ({"grader_key": ""}, ConfigError),                           # empty key
    ({"train_penalty": "low"}, ConfigError),                     # not a number
    ({"mode": "test"}, ConfigError),                             # unknown mode
])
def test_construction_errors(kwargs, error):
    class NoValue(BaseModel):
        reasoning: str

    args = {"grader_key": "g", "model": ScriptedModel([]), "system_template": "", "user_template": USER,
            "output_model": BinaryJudgeOutput, "temperature": 0.0}
    args.update({("user_template" if k == "user" else k): v for k, v in kwargs.items()})
    with pytest.raises(error):
        TemplatedPromptJudgeGrader(**args)
    with pytest.raises(ConfigError):
        TemplatedPromptJudgeGrader("g", ScriptedModel([]), "", USER, NoValue)


async def test_non_thread_sample_is_a_usage_error():
    with pytest.raises(ConfigError):
        await grader(ScriptedModel([])).grade_batch(["just text"])


def test_version_changes_with_config():
    m = ScriptedModel([])
    assert grader(m).version == grader(m).version
    assert grader(m).version != grader(m, user=USER + "!").version


def test_sync_batch_api():
    g = grader(ScriptedModel([PASS, FAIL]))
    assert [x.value for x in g.grade_batch_sync([thread(), thread()])] == [1.0, 0.0]


async def test_custom_output_model_numeric_score_and_reasoning_field():
    # a user's own verdict model: a numeric score is the value; "explanation" is read as reasoning
    class Rating(BaseModel):
        explanation: str
        score: float = Field(ge=0, le=10)

    g = grader(ScriptedModel([json.dumps({"explanation": "close enough", "score": 7.5})]), output_model=Rating)
    grade = await g.grade(thread())
    assert (grade.status, grade.value, grade.reasoning) == ("scored", 7.5, "close enough")


async def test_preflight_tells_whether_the_judge_writes_the_sealed_form():
    ok = await grader(ScriptedModel([PASS])).preflight()
    assert ok.status == "scored"
    # a judge that ignores the seal instruction: told before any run
    bad = await grader(ScriptedModel([PASS, PASS], seal=False)).preflight()
    assert bad.status == "unscored" and bad.error.startswith("no sealed verdict")


async def test_output_schema_as_strict_json_schema_on_request():
    """The cookbook reads {{output_schema}} as 'the JSON schema of the output model':
    output_schema_format="json_schema" gives exactly that (the compact form stays the default),
    also for a subclass whose hook calls super(); the version tells the two apart."""
    import json as _json

    from rewardjudge import BinaryJudgeOutput, StringThread, TemplatedPromptJudgeGrader
    from rewardjudge.testing import ScriptedModel

    class Hooked(TemplatedPromptJudgeGrader):
        @classmethod
        def extract_template_context(cls, thread, output_model=None, template_variables=None):
            return {**super().extract_template_context(thread, output_model, template_variables), "extra": "x"}

    thread = StringThread([("user", "Capital of France?"), ("assistant", "Paris.")])
    versions = set()
    for cls in (TemplatedPromptJudgeGrader, Hooked):
        for fmt in ("compact", "json_schema"):
            judge = ScriptedModel(['{"reasoning": "ok", "score": "PASS"}'])
            grader = cls("g", judge, "Reply with JSON matching:\n{{output_schema}}", "{{completion}}",
                         BinaryJudgeOutput, output_schema_format=fmt)
            grade = await grader.grade(thread)
            assert grade.status == "scored"
            system = judge.calls[0]["messages"][0]["content"]
            shown = system.split("matching:\n", 1)[1]
            if fmt == "json_schema":
                assert _json.loads(shown) == BinaryJudgeOutput.model_json_schema()
            else:
                assert '"PASS" | "FAIL"' in shown
            versions.add((cls.__name__, fmt, grader.version))
    for name in ("TemplatedPromptJudgeGrader", "Hooked"):
        assert len({v for n, _, v in versions if n == name}) == 2
    with pytest.raises(ConfigError):
        TemplatedPromptJudgeGrader("g", ScriptedModel([]), "{{output_schema}}", "{{completion}}",
                                   BinaryJudgeOutput, output_schema_format="yaml")
