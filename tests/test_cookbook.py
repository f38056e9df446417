"""The seed cookbook's code, verbatim except ``adaptive_harmony`` -> ``rewardjudge``.

tests/data/seed_cookbook.py.txt holds its code blocks in order; the last one
builds the grader from ``judge_model``, which the test provides.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardjudge.testing import FakeJudgeServer, ScriptedModel

CODE = (Path(__file__).parent / "data" / "seed_cookbook.py.txt").read_text()


def run_cookbook(judge_model) -> dict:
    namespace: dict = {"judge_model": judge_model, "__name__": "cookbook"}
    exec(compile(CODE, "seed_cookbook", "exec", dont_inherit=True), namespace)
    return namespace


def test_cookbook_runs_and_validates(capsys):
    ns = run_cookbook(ScriptedModel([]))
    out = capsys.readouterr().out
    # the cookbook's own checks print these; its asserts ran too
    assert "Correctly caught parse error" in out
    assert "All required template variables extracted" in out
    assert ns["grader"].grader_key == "analysis-grader"


async def test_cookbook_grader_against_scripted_judge():
    judge = ScriptedModel([
        json.dumps({"reasoning": "Correct and complete.", "score": "PASS"}),
        json.dumps({"reasoning": "Too vague.", "score": "FAIL"}),
    ])
    ns = run_cookbook(judge)
    grader = ns["grader"]
    good, poor, bad = ns["good_thread"], ns["poor_thread"], ns["malformed_thread"]
    grades = await grader.grade_batch([good, poor, bad])
    assert [g.value for g in grades] == [1.0, 0.0, -1.0]
    assert grades[0].reasoning == "Correct and complete."
    assert grades[2].reasoning == "Malformed JSON: does not match expected schema"
    # the malformed answer never reached the judge; the others did, with the parsed fields
    assert len(judge.calls) == 2
    user_prompt = judge.calls[0]["messages"][-1]["content"]
    assert "The capital of France is Paris." in user_prompt and "Confidence: high" in user_prompt
    assert "What is the capital of France?" in user_prompt
    # the judge was asked for the BinaryJudgeOutput schema
    assert judge.calls[0]["json_schema"]["properties"]["score"]["enum"] == ["PASS", "FAIL"]


async def test_cookbook_eval_penalty_from_metadata():
    ns = run_cookbook(ScriptedModel([]))
    bad = ns["malformed_thread"].with_metadata(eval=True)
    grade = await ns["grader"].grade(bad)
    assert grade.value == 0.0


async def test_cookbook_grader_over_real_http():
    verdicts = iter(["PASS", "FAIL"])

    def responder(req):
        return json.dumps({"reasoning": "checked", "score": next(verdicts)})

    from rewardjudge.models import OpenAIModel

    with FakeJudgeServer(responder) as server:
        async with OpenAIModel(server.url, "judge") as judge:
            ns = run_cookbook(judge)
            grades = [await ns["grader"].grade(ns["good_thread"]), await ns["grader"].grade(ns["poor_thread"])]
    assert [g.value for g in grades] == [1.0, 0.0]
    assert server.requests[0]["response_format"]["type"] == "json_schema"
    assert server.requests[0]["temperature"] == 0.0


@pytest.mark.judge
async def test_cookbook_grader_on_spawned_embedded_judge():
    from rewardjudge.models import spawn_judge

    async with spawn_judge() as judge:
        ns = run_cookbook(judge)
        grades = await ns["grader"].grade_batch([ns["good_thread"], ns["poor_thread"],
                                                 ns["malformed_thread"]])
    assert len(grades) == 3
    # a 135M judge's verdicts are noise: assert the pipeline, not the verdict
    for g in grades[:2]:
        assert g.status in ("scored", "unscored")
        if g.status == "scored":
            assert g.value in (0.0, 1.0) and g.raw_reply and g.usage.get("prompt_tokens", 0) > 0
        else:
            assert g.value is None and g.error
    assert grades[2].value == -1.0
