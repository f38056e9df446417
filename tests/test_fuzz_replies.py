"""Judge replies fuzzed over loopback HTTP (``bench/bench_fuzz_replies.py`` holds the generator and the
server; ``python -m bench.bench_fuzz_replies --cases N --seed S`` runs it long), and the cases it found.

Found: a usage count that is an integer too large for a float (``1e400`` written out) raised
``OverflowError`` out of the model; a completions ``top_logprobs`` entry that is a list, or a chat
alternative that is no object, raised ``AttributeError``; a logprob over 0 (``1000``) raised
``OverflowError`` in ``exp``; top logprobs whose probabilities add up past 1 were read into a score; a
probability judge's reply without logprobs raised ``GradeDistributionUnsupported`` (a ``ConfigError``)
out of ``grade``; a candidate judge's unscored grades all counted as ``unscored/other`` in
``judge_health`` (an outage, an unreadable body and a reply without its ids alike). Tokens as some vLLM
releases list them, raw pieces with a tokenizer's space marker (``▁4``, ``Ġ4``), were not matched to
their choice."""

from __future__ import annotations

import asyncio
import json
import math

import httpx
import pytest

from bench.bench_fuzz_replies import GROUP, SAMPLE, TEMPLATE, run_fuzz
from rewardjudge.errors import JudgeResponseError
from rewardjudge.graders import CandidateJudgeGrader, ProbabilityJudgeGrader
from rewardjudge.models import OpenAIModel, RetryPolicy
from rewardjudge.rl import judge_health

FAST = RetryPolicy(max_retries=2, base_delay=0.0, max_delay=0.0)
ASK = [{"role": "user", "content": "Grade it 1-5."}]
DIGITS = ["1", "2", "3", "4", "5"]


def test_fuzzed_replies_give_grades_and_never_a_forged_score():
    problems, counts = asyncio.run(run_fuzz(240, seed=20261207))
    assert problems == []
    # the fuzz reached every outcome it looks at: unscored by every kind of failure, and (from the
    # probability replies left intact) scored
    assert counts["scored"] > 0 and counts["unscored/http"] > 0 and counts["unscored/connection"] > 0
    assert counts["unscored/invalid_reply"] > 0 and counts["unscored/no_sealed_verdict"] > 0


def _model(body: dict, seen: list | None = None):
    """An ``OpenAIModel`` (completions logprobs) whose server answers every request with ``body``."""
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(200, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return client, OpenAIModel("http://judge.test/v1", "judge", http_client=client, retry_policy=FAST,
                               chat_template=TEMPLATE, logprobs_endpoint="completions")


def _completions(top, usage=None) -> dict:
    return {"choices": [{"index": 0, "text": "4", "finish_reason": "length",
                         "logprobs": {"tokens": ["4"], "top_logprobs": top}}],
            "usage": usage or {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}}


def _run(body, go):
    async def main():
        client, model = _model(body)
        async with client:
            return await go(model)
    return asyncio.run(main())


def test_a_usage_count_past_a_float_is_left_out():
    huge = 10 ** 400   # JSON's 1 followed by 400 zeros: isfinite() and float() of it raise OverflowError
    dist = _run(_completions([{"4": -0.1}], {"prompt_tokens": huge, "total_tokens": 10}),
                lambda m: m.grade_distribution(ASK, DIGITS))
    assert dist.usage == {"total_tokens": 10}


@pytest.mark.parametrize("top", [
    [[["4", -0.1]]],            # the position's alternatives as a list of pairs: AttributeError (.items)
    [{"4": 10 ** 400}],          # a logprob float() cannot hold: OverflowError
    [{"4": 1000.0}],             # a logprob over 0, a probability over 1: OverflowError in exp
    [{"4": float("nan")}],       # no number
    None,                        # logprobs asked for, none returned (a proxy's provider without them)
])
def test_unusable_top_logprobs_are_a_judge_failure(top):
    with pytest.raises(JudgeResponseError, match="no top logprobs") as caught:
        _run(_completions(top), lambda m: m.grade_distribution(ASK, DIGITS))
    assert caught.value.attempts == 1   # not retried: a server without them answers the same again


@pytest.mark.parametrize("top", [
    {"1": 0, "4": -0.1},           # certain of two grades at once
    {"1": -1, "2": -2.3, "3": -1.6, "4": -0.9, "5": -1.6},   # 1.27 in all
])
def test_top_logprobs_past_a_probability_of_one_are_no_distribution(top):
    # the fuzz's case: one logprob retyped to 0 or -1 left a "distribution" of mass 1.3 to 1.9, read
    # into a score; a server's rounding (a sum of 1.0000001) is read
    with pytest.raises(JudgeResponseError, match="past 1"):
        _run(_completions([top]), lambda m: m.grade_distribution(ASK, DIGITS))
    dist = _run(_completions([{"4": 0.0, "3": -20.0}]), lambda m: m.grade_distribution(ASK, DIGITS))
    assert dist.probs["4"] == 1.0


def test_a_chat_alternative_that_is_no_object_is_left_out():
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop",
                         "logprobs": {"content": [{"token": "4", "logprob": -0.1,
                                                   "top_logprobs": ["4", {"token": "4", "logprob": -0.1},
                                                                    {"token": "3", "logprob": 10 ** 400}]}]}}]}

    async def go(model):
        model.logprobs_endpoint = "chat"
        return await model.grade_distribution(ASK, DIGITS), await model.chat(ASK)

    dist, completion = _run(body, go)
    assert dist.probs["4"] == pytest.approx(math.exp(-0.1)) and dist.probs["3"] == 0.0
    assert completion.top_logprobs == [{"4": -0.1}]


def test_a_probability_grade_without_logprobs_is_unscored_with_its_reason():
    grade = _run(_completions(None), lambda m: ProbabilityJudgeGrader("p", m, scale="graded").grade(SAMPLE))
    assert grade.status == "unscored" and "no top logprobs" in grade.error


def test_raw_pieces_with_a_space_marker_are_matched():
    top = [{"\u25814": -0.5, "\u01203": -1.5, "5": -3.0, "\u010a2": -4.0}]
    dist = _run(_completions(top), lambda m: m.grade_distribution(ASK, DIGITS))
    assert dist.probs["4"] == pytest.approx(math.exp(-0.5)) and dist.probs["3"] == pytest.approx(math.exp(-1.5))
    assert dist.probs["2"] == pytest.approx(math.exp(-4.0))


@pytest.mark.parametrize("reply, kind", [
    ({"error": {"code": 503, "message": "busy"}}, "http"),                    # an outage
    ({"choices": "x"}, "invalid_reply"),                                      # an unreadable body
    ({"choices": [{"index": 0, "message": {"role": "assistant", "content": "5"},
                   "finish_reason": "stop"}]}, "no_sealed_verdict"),         # no block with an id sent
])
def test_a_candidate_judges_unscored_grades_count_by_kind(reply, kind):
    async def go(model):
        return await CandidateJudgeGrader("c", model, scale="graded", max_rounds=2).grade_batch(GROUP)

    grades = _run(reply, go)
    health = judge_health(grades)
    assert health[f"judge/unscored/{kind}"] == len(GROUP) and health["judge/unscored/other"] == 0
