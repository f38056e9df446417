"""Attacks on the doors between graders and trainers (TRL, verl, the reward server): a judge failure
never becomes a number, no NaN/inf reaches a tensor or a JSON answer, one sample or request never
changes another's result, and a hostile body is an error, not a stall or a reward."""

from __future__ import annotations

import asyncio
import json
import math
import random
import zlib

import aiohttp
import pytest
from pydantic import BaseModel

from rewardjudge import ConfigError, Grade, JudgeTimeoutError, ScorerGrader
from rewardjudge.errors import UnmaskedJudgeFailure
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.rl import rewards_tensor, trl_reward_func, trl_reward_funcs, verl_compute_score
from rewardjudge.serve import RewardServer
from rewardjudge.serve._samples import DEFAULT_EOS, _strip_eos, openrlhf_thread
from rewardjudge.testing import ScriptedModel

PASS = '{"reasoning": "ok", "score": "PASS"}'
FAIL = '{"reasoning": "no", "score": "FAIL"}'
SYSTEM = "Grade the answer. Reply as JSON: {{output_schema}}"
USER = "Reference: {{metadata.reference}}\nAnswer: {{completion}}"


class Answer(BaseModel):
    answer: str


def judge(messages, params, schema):
    """PASS when the answer is the reference; "slow" times out."""
    text = messages[-1]["content"]
    if "Answer: " not in text:
        return PASS
    answer = text.split("Answer: ", 1)[1].strip()
    if "slow" in answer:
        return JudgeTimeoutError("no answer in 60s")
    ref = text.split("Reference: ", 1)[1].split("\n", 1)[0]
    return PASS if ref and ref in answer else FAIL


def grader(model=None, **kw):
    return TemplatedPromptJudgeGrader("hunt3", model or ScriptedModel(judge), SYSTEM, USER, **kw)


def strict_json(text: str):
    """JSON as a strict parser reads it: NaN / Infinity are refused."""
    def refuse(name):
        raise AssertionError(f"non-finite number {name} in a JSON answer")
    return json.loads(text, parse_constant=refuse)


async def post(session, url, body, headers=None):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    async with session.post(url, data=data, headers={"Content-Type": "application/json", **(headers or {})}) as r:
        return r.status, await r.text()


# --------------------------------------------------------------------------
# hole: trailing end-of-sequence markers were stripped with a copy each (quadratic, on the event loop)
# --------------------------------------------------------------------------
def _strip_eos_by_copies(text, eos):
    """The form replaced (a copy of the text per marker stripped: quadratic in the markers)."""
    text = text.rstrip()
    while marker := next((m for m in eos if m and text.endswith(m)), None):
        text = text[: -len(marker)].rstrip()
    return text.strip()


def test_eos_stripping_keeps_the_meaning_of_the_form_it_replaced():
    """``_strip_eos`` reads the markers in one anchored match over the reversed text instead of
    copying (``bench linear`` times it on a body of markers); it strips exactly what the copying form
    stripped, with any list of markers."""
    thread = openrlhf_thread("P" + "ok" + "<|im_end|> " * 300_000, "P", None)
    assert thread.turns[-1] == ("assistant", "ok")
    rng = random.Random(7)
    pieces = ["a", "b", " ", "\n", "\u3000", "\x1c", "</s>", "<eos>", "<|im_end|>", "<|im", "s>", "x</s"]
    # a server's own marker lists too: overlapping markers, an empty one, spaces inside or around them
    lists = [DEFAULT_EOS, ("</s>", "s>", "</s></s>"), ("ab", "b", "bab", ""), ("b ", " a", "a b", " </s>"), ()]
    for _ in range(20000):
        text, eos = "".join(rng.choice(pieces) for _ in range(rng.randrange(12))), rng.choice(lists)
        assert _strip_eos(text, eos) == _strip_eos_by_copies(text, eos), (text, eos)
    for text, expected in [("a </s> <eos>\n", "a"), (" x<|im_end|>", "x"), ("</s></s>", ""), ("ab", "ab"),
                           ("  <eos>  ", ""), ("a\u3000</s>", "a"), ("keep </s> inside", "keep </s> inside")]:
        assert _strip_eos(text, DEFAULT_EOS) == expected


async def test_a_body_of_eos_markers_does_not_stall_the_server():
    async with RewardServer(grader(), estimator="dr_grpo", group_size=2) as server:
        async with aiohttp.ClientSession() as s:
            body = {"query": ["P" + "</s>" * 1_500_000], "prompts": ["P"], "labels": ["4"]}  # 6 MB: minutes before
            status, text = await asyncio.wait_for(post(s, f"{server.url}/get_reward", body), 120)
            # graded as the empty answer it is: the training penalty, not a stall
            assert status == 200 and strict_json(text)["extra_logs"]["penalized"] == [1.0]


# --------------------------------------------------------------------------
# hole: one request's bad sample failed every request batched with it
# --------------------------------------------------------------------------
async def test_a_bad_sample_fails_only_its_own_request():
    model = ScriptedModel(judge)
    async with RewardServer(grader(model), batch_window=0.3) as server:
        async with aiohttp.ClientSession() as s:
            url = f"{server.url}/grade"
            good = {"samples": [{"prompt": "q", "completion": "4", "metadata": {"reference": "4"}}]}
            bad = {"samples": [{"prompt": "q2", "completion": "4"}]}  # no reference: the template cannot render
            (gs, gt), (bs, bt) = await asyncio.gather(post(s, url, good), post(s, url, bad))
    assert gs == 200 and strict_json(gt)["grades"][0]["value"] == 1.0
    assert bs == 400 and "metadata.reference" in json.loads(bt)["error"]
    # the batch is graded again sample by sample after the failure: the good one may be judged twice
    assert 1 <= len(model.calls) <= 2 and all("Reference: 4" in c["messages"][-1]["content"] for c in model.calls)


# --------------------------------------------------------------------------
# hole: verl, return_dict=False with a finite unscored_value under the rewardjudge manager
# --------------------------------------------------------------------------
def test_verl_manager_marker_is_nan_whatever_unscored_value():
    compute_score = verl_compute_score(grader(), return_dict=False, unscored_value=0.0)
    try:
        assert math.isnan(compute_score("s", "slow", "4", {"question": "q"}, rewardjudge_manager=True))
        with pytest.raises(UnmaskedJudgeFailure, match="not running under rewardjudge's verl manager"):
            compute_score("s", "slow", "4", {"question": "q"})  # default: raise, not 0.0
        out = compute_score("s", "4", "4", {"question": "q"}, rewardjudge_manager=True)
        assert out == 1.0
        manager = pytest.importorskip("rewardjudge.rl.verl_manager", exc_type=ImportError)
        raw = compute_score("s", "slow", "4", {"question": "q"}, rewardjudge_manager=True)
        score, extra = manager._normalized_extra(raw, raw)
        assert math.isnan(score) and extra["unscored"] == 1.0 and extra["scored"] == 0.0
    finally:
        compute_score.close()
    # marker mode outside the manager keeps the caller's chosen stand-in (they asked for it)
    own = verl_compute_score(grader(), return_dict=False, unscored_value=0.0, on_unscored="marker")
    try:
        assert own("s", "slow", "4", {"question": "q"}) == 0.0
    finally:
        own.close()


# --------------------------------------------------------------------------
# hole: TRL's shared batch was keyed by prompts and completions only
# --------------------------------------------------------------------------
def test_trl_shared_batch_is_keyed_by_columns_and_phase_and_bounded():
    model = ScriptedModel(judge)
    reward, gated = trl_reward_funcs(grader(model), [lambda completions, **k: [0.5] * len(completions)])
    # a set where only the judge is called (the other left out) keeps its batch for the others
    assert reward(prompts=["q"], completions=["4"], reference=["4"]) == [1.0]
    # the same completion with another reference is another batch: graded again, not the stale PASS
    assert reward(prompts=["q"], completions=["4"], reference=["5"]) == [0.0]
    assert gated(prompts=["q"], completions=["4"], reference=["5"]) == [0.5]
    assert len(model.calls) == 2
    # the same batch in evaluation is graded in evaluation
    reward.mode = "eval"
    reward(prompts=["q"], completions=["4"], reference=["4"])
    assert len(model.calls) == 3
    for i in range(200):  # a set never fully read does not grow forever
        reward(prompts=[f"q{i}"], completions=["4"], reference=["4"])
    assert len(reward._shared) <= 64


# --------------------------------------------------------------------------
# hole: Grade took an infinite value; tensors and JSON carried it
# --------------------------------------------------------------------------
def test_an_infinite_grade_is_refused_not_a_reward():
    for bad in (math.inf, -math.inf):
        with pytest.raises(ConfigError, match="finite"):
            Grade(bad, "g")
        with pytest.raises(ConfigError, match="finite"):
            Grade(bad, "g", status="penalized")
    rewards, mask = rewards_tensor([Grade(1.0, "g"), Grade(None, "g", error="JudgeTimeoutError: t")])
    assert rewards[0] == 1.0 and mask.tolist() == [False, True]


# --------------------------------------------------------------------------
# held: the answers of the server are strict JSON, finite, in order; unscored never a number of its own
# --------------------------------------------------------------------------
async def test_get_reward_interleaved_prompts_in_order_finite_and_grouped_by_prompt():
    async with RewardServer(grader(completion_model=Answer), estimator="dr_grpo", group_size=3,
                            group_timeout=30) as server:
        async with aiohttp.ClientSession() as s:
            body = {"query": ['A{"answer": "4"}', 'B{"answer": "9"}', 'A{"answer": "5"}', 'B{"answer": "slow"}',
                              'Anot json', 'B{"answer": "9"}'],
                    "prompts": ["A", "B", "A", "B", "A", "B"], "labels": ["4", "9", "4", "9", "4", "9"]}
            status, text = await asyncio.wait_for(post(s, f"{server.url}/get_reward", body), 30)
    out = strict_json(text)
    assert status == 200
    # A: PASS, FAIL, penalized (-1: training, no eval flag); B: PASS, unscored -> B's usable mean (1.0), PASS
    assert out["rewards"] == [1.0, 1.0, 0.0, 1.0, -1.0, 1.0]
    assert out["extra_logs"]["unscored"] == [0, 0, 0, 1, 0, 0]
    assert out["extra_logs"]["penalized"] == [0, 0, 0, 0, 1, 0]
    assert out["extra_logs"]["group_partial"] == [0] * 6


async def test_grade_endpoint_answers_are_strict_json_for_every_status():
    async with RewardServer(grader(completion_model=Answer)) as server:
        async with aiohttp.ClientSession() as s:
            body = {"samples": [{"prompt": "q", "completion": '{"answer": "4"}', "metadata": {"reference": "4"}},
                                {"prompt": "q", "completion": '{"answer": "slow"}', "metadata": {"reference": "4"}},
                                {"prompt": "r", "completion": '{"answer": "slow"}', "metadata": {"reference": "4"}},
                                {"prompt": "q", "completion": "garbage", "metadata": {"reference": "4", "eval": True}}]}
            status, text = await post(s, f"{server.url}/grade", body)
    grades = strict_json(text)["grades"]
    assert status == 200
    assert [g["status"] for g in grades] == ["scored", "unscored", "unscored", "penalized"]
    assert grades[1]["value"] is None and grades[2]["value"] is None  # the grade itself never a number
    assert grades[3]["reward"] == 0.0  # evaluation penalty
    assert all(isinstance(g["reward"], float) and math.isfinite(g["reward"]) for g in grades)


# --------------------------------------------------------------------------
# held: hostile bodies are errors, quickly
# --------------------------------------------------------------------------
async def test_hostile_bodies_are_errors_not_rewards():
    async with RewardServer(grader(), estimator="dr_grpo", group_size=2, max_body=1 << 20) as server:
        async with aiohttp.ClientSession() as s:
            url = f"{server.url}/get_reward"
            comp = zlib.compressobj(9, zlib.DEFLATED, 31)
            bomb = comp.compress(b'{"query": ["' + b"a" * (64 << 20)) + comp.flush()  # 64 MB behind ~64 KB
            status, _ = await post(s, url, bomb, {"Content-Encoding": "gzip"})
            assert status == 413
            cases = [
                '{"query": ["Pa"], "query": 5, "prompts": ["P"], "labels": [null]}',  # duplicate key, last wins
                '{"query": "Pa", "prompts": "P", "labels": null}',
                '{"query": ["Pa", 7], "prompts": ["P", "P"], "labels": [null, null]}',
                '{"query": ["Pa"], "prompts": [["P"]], "labels": [null]}',
                '{"query": ["Pa"], "prompts": ["P", "P"], "labels": [null]}',
                '{"query": [' + "1" * 5000 + ']}',  # past Python's int digit limit
                "[" * 100_000 + "]" * 100_000,
                b"\xff\xfe{}",
            ]
            for body in cases:
                status, text = await post(s, url, body)
                assert status == 400, (body[:60], status, text[:200])
                assert "rewards" not in json.loads(text)
            async with s.get(f"{server.url}/health") as r:
                assert r.status == 200


# --------------------------------------------------------------------------
# held: a labels-only scorer is refused at every door
# --------------------------------------------------------------------------
def test_a_labels_only_scorer_is_refused_by_every_adapter():
    from rewardjudge.scorers import Scorer

    scorer = Scorer.from_dict({
        "name": "Labels", "description": "good or bad.", "kind": "llm_judge",
        "config": {"model": "m", "prompt_template": "Is the answer good?\n{{transcript}}",
                   "output_spec": {"type": "categorical", "labels": ["good", "bad"]}}})
    labels = ScorerGrader(scorer, ScriptedModel(default='{"reason": "r", "label": "good"}', name="m"))
    for build in (lambda: trl_reward_func(labels), lambda: trl_reward_funcs(labels, []),
                  lambda: verl_compute_score(labels), lambda: RewardServer(labels, estimator="dr_grpo")):
        with pytest.raises(ConfigError, match="label"):
            build()
    with pytest.raises(ConfigError, match="label"):
        rewards_tensor([Grade(None, "g", extra={"labels_only": True, "label": "good"})])
