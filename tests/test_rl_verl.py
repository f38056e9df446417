"""verl_compute_score: the per-sample, async and batch forms verl calls."""

from __future__ import annotations

import asyncio
import inspect
import math

import pytest
from pydantic import BaseModel

from rewardjudge import ConfigError, JudgeTimeoutError
from rewardjudge.errors import UnmaskedJudgeFailure
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.rl import verl_compute_score
from rewardjudge.testing import ScriptedModel

PASS = '{"reasoning": "ok", "score": "PASS"}'
FAIL = '{"reasoning": "no", "score": "FAIL"}'
SYSTEM = "Grade the answer. Reply as JSON: {{output_schema}}"
USER = "Question: {{last_user_turn_content}}\nReference: {{metadata.ground_truth}}\nAnswer: {{answer}}"
KEYS = {"score", "scored", "penalized", "unscored", "forgery", "judge_attempts", "judge_latency_s", "judge_tokens"}


class Answer(BaseModel):
    answer: str


def make_grader():
    """PASS when the parsed answer equals the ground truth; 'slow' answers time out."""

    def judge(messages, params, schema):
        text = messages[-1]["content"]
        if "Answer: slow" in text:
            return JudgeTimeoutError("no answer in 60s")
        ref = text.split("Reference: ", 1)[1].split("\n", 1)[0]
        ans = text.split("Answer: ", 1)[1]
        return PASS if ans == ref else FAIL

    model = ScriptedModel(judge)
    return TemplatedPromptJudgeGrader("verl-judge", model, SYSTEM, USER, completion_model=Answer), model


def test_single_form_outside_a_loop_uses_ground_truth_and_prompt():
    grader, model = make_grader()
    compute_score = verl_compute_score(grader)
    out = compute_score("gsm8k", '{"answer": "4"}', "4", {"question": "2+2?", "split": "train"})
    assert set(out) == KEYS and all(isinstance(v, float) for v in out.values())  # numeric: verl logs them
    assert out["score"] == 1.0 and out["scored"] == 1.0
    sent = model.calls[0]["messages"][-1]["content"]
    assert "Question: 2+2?" in sent and "Reference: 4" in sent  # extra_info prompt + ground_truth reach the template
    assert compute_score("gsm8k", '{"answer": "5"}', "4", {"question": "2+2?"})["score"] == 0.0
    compute_score.close()


@pytest.mark.parametrize("extra_info, mode, expected", [
    ({"split": "train"}, None, -1.0),   # training split: training penalty
    ({"split": "test"}, None, 0.0),     # verl's example datasets mark validation rows by split
    ({"eval": True}, None, 0.0),        # an explicit eval flag
    ({"split": "test"}, "train", -1.0),  # the adapter's mode wins over the data
    (None, None, -1.0),                 # no extra_info at all
])
def test_malformed_solutions_are_penalized_by_phase(extra_info, mode, expected):
    grader, model = make_grader()
    compute_score = verl_compute_score(grader, mode=mode)
    out = compute_score("src", "not json at all", "4", extra_info)
    assert out["score"] == expected and out["penalized"] == 1.0
    assert model.calls == []  # the judge is not asked about malformed output
    compute_score.close()


def test_unscored_raises_outside_our_manager_with_the_config_that_works():
    grader, _ = make_grader()
    compute_score = verl_compute_score(grader)
    with pytest.raises(UnmaskedJudgeFailure) as err:  # verl's naive manager + grpo would drop the step silently
        compute_score("src", '{"answer": "slow"}', "4", {})
    assert not isinstance(err.value, Exception)  # no `except Exception` fallback makes it a reward
    assert "JudgeTimeoutError" in str(err.value)
    assert "reward.reward_manager.name=RewardJudgeManager" in str(err.value)
    assert "algorithm.adv_estimator=rewardjudge_grpo" in str(err.value)
    # under our manager (it passes this keyword): the NaN marker its estimators keep out of training
    out = compute_score("src", '{"answer": "slow"}', "4", {}, rewardjudge_manager=True)
    assert math.isnan(out["score"]) and out["unscored"] == 1.0
    compute_score.close()
    # a caller that handles the marker itself says so
    chosen = verl_compute_score(grader, unscored_value=0.25, return_dict=False, on_unscored="marker")
    assert chosen("src", '{"answer": "slow"}', "4", {}) == 0.25  # a float alone without return_dict
    chosen.close()
    with pytest.raises(ConfigError, match="on_unscored"):
        verl_compute_score(grader, on_unscored="zero")


def test_ground_truth_is_the_reference_the_correctness_grader_reads():
    from rewardjudge import catalog

    def judge(messages, params, schema):
        text = messages[-1]["content"]
        assert "<reference>\n72\n</reference>" in text  # verl's ground_truth, as the reference
        return '{"reasoning": "r", "score": "PASS"}' if "#### 72" in text else '{"reasoning": "r", "score": "FAIL"}'

    compute_score = verl_compute_score(catalog.grader("correctness", ScriptedModel(judge)))
    assert compute_score("openai/gsm8k", "48 + 24 = 72\n#### 72", "72", {"split": "train"})["score"] == 1.0
    assert compute_score("openai/gsm8k", "#### 70", "72", {"split": "train"})["score"] == 0.0
    compute_score.close()


async def test_single_form_works_inside_a_running_loop():
    # a notebook cell or an async driver calling the sync function
    grader, _ = make_grader()
    compute_score = verl_compute_score(grader)
    assert compute_score("src", '{"answer": "4"}', "4", {"question": "q"})["score"] == 1.0
    compute_score.close()


async def test_async_form_is_a_coroutine_function_verl_awaits():
    grader, _ = make_grader()
    compute_score = verl_compute_score(grader, form="async")
    assert inspect.iscoroutinefunction(compute_score)  # verl's reward loop checks exactly this
    outs = await asyncio.gather(*(
        compute_score(data_source="src", solution_str=f'{{"answer": "{a}"}}', ground_truth="4",
                      extra_info={"question": "q"}, reward_router_address=None,  # verl's extra kwargs
                      rewardjudge_manager=True)  # as our manager calls it
        for a in ("4", "5", "slow")))
    assert [o["scored"] for o in outs] == [1.0, 1.0, 0.0]
    assert [o["score"] for o in outs][:2] == [1.0, 0.0] and math.isnan(outs[2]["score"])


def test_batch_forms_keep_order():
    grader, model = make_grader()
    compute_score = verl_compute_score(grader, form="batch", on_unscored="marker")
    sols = ['{"answer": "1"}', "broken", '{"answer": "3"}', '{"answer": "slow"}']
    outs = compute_score(data_sources=["s"] * 4, solution_strs=sols, ground_truths=["1", "2", "0", "4"],
                         extra_infos=[{"prompt": [{"role": "user", "content": "q"}]}] * 4)
    assert [o["score"] for o in outs][:3] == [1.0, -1.0, 0.0] and math.isnan(outs[3]["score"])
    assert [o["penalized"] for o in outs] == [0.0, 1.0, 0.0, 0.0]
    assert "Question: q" in model.calls[0]["messages"][-1]["content"]  # a chat-message prompt
    compute_score.close()

    async_batch = verl_compute_score(grader, form="async_batch", return_dict=False)
    assert inspect.iscoroutinefunction(async_batch)
    outs = asyncio.run(async_batch(["s"] * 2, sols[:2], ["1", "2"]))
    assert outs == [1.0, -1.0]


@pytest.mark.parametrize("call, message", [
    # verl decodes to a str; anything else is a wiring mistake
    (lambda f: f("s", None, "4", {}), "solution_str must be a str"),
    # extra_info must be a mapping
    (lambda f: f("s", "x", "4", ["not", "a", "dict"]), "extra_info must be a mapping"),
])
def test_single_form_usage_errors(call, message):
    grader, _ = make_grader()
    compute_score = verl_compute_score(grader)
    with pytest.raises(ConfigError, match=message):
        call(compute_score)
    compute_score.close()


def test_batch_length_mismatch_and_bad_arguments():
    grader, _ = make_grader()
    batch = verl_compute_score(grader, form="batch")
    with pytest.raises(ConfigError, match="ground_truths has 1 entries for 2"):
        batch(["s", "s"], ["a", "b"], ["x"])
    batch.close()
    with pytest.raises(ConfigError, match="form must be one of"):
        verl_compute_score(grader, form="parallel")
    with pytest.raises(ConfigError, match="needs a Grader"):
        verl_compute_score(lambda s: 1.0)
