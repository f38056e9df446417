"""OpenAIModel.grade_distribution over a fake server, and over llama.cpp's server."""

from __future__ import annotations

import math

import pytest

from rewardjudge import StringThread
from rewardjudge.errors import ConfigError, JudgeHTTPError, JudgeResponseError
from rewardjudge.graders import ProbabilityJudgeGrader
from rewardjudge.models import GradeDistributionUnsupported, OpenAIModel
from rewardjudge.models._chat_template import ChatTemplate
from rewardjudge.testing import Fault, FakeJudgeServer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
ASK = [{"role": "user", "content": "Grade it 0-4."}]
ASK_WITH_PREFIX = [*ASK, {"role": "assistant", "content": "Grade: "}]
DIGITS = ["0", "1", "2", "3", "4"]


def lp(p: float) -> float:
    return math.log(p)


def model_for(server: FakeJudgeServer, **kw) -> OpenAIModel:
    return OpenAIModel(server.url, "fake", api_key="k", max_retries=2,
                       retry_policy=None, **kw)


async def test_chat_logprobs_become_a_distribution():
    top = {"3": lp(0.5), " 3": lp(0.1), "2": lp(0.2), "The": lp(0.15)}
    with FakeJudgeServer(lambda req: Fault.reply("3", logprobs=[top])) as server:
        async with model_for(server) as model:
            dist = await model.grade_distribution(ASK, DIGITS)
    # "3" and " 3" both mean grade 3; unseen grades get 0
    assert dist.probs == pytest.approx({"0": 0.0, "1": 0.0, "2": 0.2, "3": 0.6, "4": 0.0})
    assert dist.outside == pytest.approx(0.2) and dist.top_k == 4
    assert dist.unseen_max == pytest.approx(0.1)
    assert dist.usage["prompt_tokens"] > 0 and dist.attempts == 1


async def test_the_request_asks_one_unconstrained_token_with_top_logprobs():
    with FakeJudgeServer(lambda req: Fault.reply("1", logprobs=[{"1": lp(0.9)}])) as server:
        # a response_format in extra_body must not reach a probability request
        async with model_for(server, extra_body={"response_format": {"type": "json_object"}},
                             max_top_logprobs=5) as model:
            await model.grade_distribution(ASK, DIGITS)
        req = server.requests[0]
    assert req["max_tokens"] == 1 and req["logprobs"] is True and req["top_logprobs"] == 5
    assert "response_format" not in req
    # the raw distribution: temperature 1, no nucleus cut
    assert req["temperature"] == 1.0 and req["top_p"] == 1.0


async def test_a_prefix_goes_to_the_completions_endpoint_with_the_chat_template():
    top = {"4": lp(0.7), "3": lp(0.2)}
    with FakeJudgeServer(lambda req: Fault.reply("4", logprobs=[top])) as server:
        async with model_for(server, chat_template=CHATML) as model:
            assert model.continues_prefix
            dist = await model.grade_distribution(ASK_WITH_PREFIX, DIGITS)
        req = server.requests[0]
    assert req["prompt"] == ("<|im_start|>user\nGrade it 0-4.<|im_end|>\n<|im_start|>assistant\n"
                             "Grade: ")
    assert req["logprobs"] == 20 and "messages" not in req
    assert dist.probs["4"] == pytest.approx(0.7) and dist.outside == pytest.approx(0.1)


async def test_the_completions_endpoint_can_be_forced_without_a_prefix():
    with FakeJudgeServer(lambda req: Fault.reply("2", logprobs=[{"2": lp(1.0)}])) as server:
        async with model_for(server, chat_template=ChatTemplate(CHATML),
                             logprobs_endpoint="completions") as model:
            dist = await model.grade_distribution(ASK, DIGITS)
        assert server.requests[0]["prompt"].endswith("<|im_start|>assistant\n")
    assert dist.probs["2"] == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, messages, error, fragment", [
    # a prefix without a chat template: the server's chat endpoint cannot continue it
    ({}, ASK_WITH_PREFIX, GradeDistributionUnsupported, "chat_template="),
    # the chat endpoint forced with a prefix: refused, it would start a new turn
    ({"logprobs_endpoint": "chat", "chat_template": CHATML}, ASK_WITH_PREFIX, ConfigError,
     "does not continue"),
])
async def test_prefix_problems_are_usage_errors(kwargs, messages, error, fragment):
    with FakeJudgeServer() as server:
        async with model_for(server, **kwargs) as model:
            with pytest.raises(error, match=fragment):
                await model.grade_distribution(messages, DIGITS)
        assert server.requests == []


@pytest.mark.parametrize("kwargs, fragment", [
    # an unknown endpoint
    ({"logprobs_endpoint": "legacy"}, "logprobs_endpoint"),
    # a top-k cap below 1
    ({"max_top_logprobs": 0}, "max_top_logprobs"),
    # a chat template that is neither text nor callable
    ({"chat_template": 42}, "chat_template"),
])
def test_bad_logprob_settings(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        OpenAIModel("http://127.0.0.1:1/v1", "m", **kwargs)


@pytest.mark.parametrize("choices", [
    [],                 # nothing to ask for
    ["1", "1"],         # duplicates
    ["1", " 2"],        # surrounding whitespace: matching strips it, so it is ambiguous
])
async def test_bad_choices(choices):
    model = OpenAIModel("http://127.0.0.1:1/v1", "m")
    with pytest.raises(ConfigError, match="choice"):
        await model.grade_distribution(ASK, choices)


async def test_a_server_without_logprobs_is_reported_not_retried():
    with FakeJudgeServer(lambda req: Fault.reply("3")) as server:
        async with model_for(server) as model:
            with pytest.raises(JudgeResponseError, match="no top logprobs"):   # a judge failure, one request
                await model.grade_distribution(ASK, DIGITS)
        assert server.request_count == 1


async def test_server_errors_are_retried_then_reported():
    with FakeJudgeServer(lambda req: Fault.reply("1", logprobs=[{"1": lp(0.5)}])) as server:
        server.enqueue(Fault.http(503))
        async with OpenAIModel(server.url, "fake", max_retries=2) as model:
            model.retry_policy = type(model.retry_policy)(max_retries=2, base_delay=0.0)
            dist = await model.grade_distribution(ASK, DIGITS)
            assert dist.attempts == 2
            server.enqueue(Fault.http(400, body='{"error": "bad"}'))
            with pytest.raises(JudgeHTTPError) as err:
                await model.grade_distribution(ASK, DIGITS)
            assert err.value.status == 400 and err.value.attempts == 1


async def test_probability_grader_over_http():
    def responder(req):
        return Fault.reply("3", logprobs=[{"3": lp(0.6), "4": lp(0.2), "Sure": lp(0.2)}])

    with FakeJudgeServer(responder) as server:
        async with model_for(server) as plain:   # no chat template: it cannot continue a prefix
            with pytest.raises(ConfigError, match="cannot continue one"):
                ProbabilityJudgeGrader("p", plain)
        async with model_for(server, chat_template=CHATML) as model:
            grader = ProbabilityJudgeGrader("p", model)
            grades = await grader.grade_batch([
                StringThread([("user", "2+2?"), ("assistant", "4")]),
                StringThread([("user", "2+2?"), ("assistant", "5")])])
    assert [g.status for g in grades] == ["scored", "scored"]
    assert grades[0].distribution == pytest.approx({"0": 0, "1": 0, "2": 0, "3": 0.75, "4": 0.25})
    assert grades[0].value == pytest.approx((3 * 0.75 + 4 * 0.25) / 4)
    assert grades[0].extra["top_k"] == 3
    # the grade is read right after the answer prefix the library wrote
    assert server.requests[0]["prompt"].endswith("Grade: ")


# --------------------------------------------------------------------------
# the real thing: llama-cpp-python's server with the embedded model
# --------------------------------------------------------------------------
@pytest.mark.judge
async def test_llama_cpp_chat_and_completions_agree():
    from rewardjudge.models import spawn_judge

    async with spawn_judge() as judge:
        assert judge.continues_prefix  # spawn_judge gave it the GGUF's chat template
        messages = [{"role": "user", "content": "Rate the answer 'Paris' to 'Capital of France?' "
                                                "from 0 to 4. Reply with one digit."}]
        via_chat = await judge.grade_distribution(messages, DIGITS)
        judge.logprobs_endpoint = "completions"
        via_completions = await judge.grade_distribution(messages, DIGITS)
        judge.logprobs_endpoint = "auto"
        after_prefix = await judge.grade_distribution([*messages, {"role": "assistant",
                                                                   "content": "Grade: "}], DIGITS)
    # the same prompt through both endpoints: the template rendered here matches the server's
    assert via_chat.usage["prompt_tokens"] == via_completions.usage["prompt_tokens"]
    for d in DIGITS:
        assert via_chat.probs[d] == pytest.approx(via_completions.probs[d], abs=1e-4)
    assert via_chat.top_k == 20 and 0.0 <= via_chat.valid_mass <= 1.0
    # after "Grade: " most of the mass is on the digits (measured ~0.8 for this model)
    assert after_prefix.valid_mass > 0.5


# -- named answer tokens (AlpacaEval-style preference tokens) ------------------------------------
PREFERENCE = {"m": 1.0, "M": 0.0}


def _preference_grader(model, **kw) -> ProbabilityJudgeGrader:
    return ProbabilityJudgeGrader(
        "preference", model, tokens=PREFERENCE, answer_prefix="Preferred output: ",
        system_template="Which output is better, m or M? Answer with the letter only.",
        user_template="Output (m): {{completion}}\nOutput (M): {{metadata.reference}}", **kw)


def _preference_sample() -> StringThread:
    return StringThread([("user", "Capital of France?"), ("assistant", "Paris.")],
                        metadata={"reference": "Lyon."})


async def test_named_tokens_are_read_after_the_prefix_as_a_reward():
    top = {"m": lp(0.6), " M": lp(0.3), "The": lp(0.1)}
    with FakeJudgeServer(lambda req: Fault.reply("m", logprobs=[top])) as server:
        async with model_for(server, chat_template=CHATML) as model:
            grade = await _preference_grader(model).grade(_preference_sample())
            most_likely = await _preference_grader(model, value="most_likely").grade(_preference_sample())
        prompt = server.requests[0]["prompt"]
    assert prompt.endswith("<|im_start|>assistant\nPreferred output: ")
    assert (grade.status, most_likely.value) == ("scored", 1.0)
    assert grade.value == pytest.approx(0.6 / 0.9) and grade.distribution == pytest.approx({"m": 2 / 3, "M": 1 / 3})
    assert grade.extra["most_likely_token"] == "m" and grade.extra["outside_mass"] == pytest.approx(0.1)


async def test_named_tokens_the_judge_did_not_write_are_unscored_never_zero():
    with FakeJudgeServer(lambda req: Fault.reply("4", logprobs=[{"4": lp(0.9), "m": lp(0.05)}])) as server:
        async with model_for(server, chat_template=CHATML) as model:
            grade = await _preference_grader(model).grade(_preference_sample())
    assert (grade.status, grade.value) == ("unscored", None)
    assert "the tokens 'm', 'M'" in grade.error


@pytest.mark.parametrize("kwargs, fragment", [
    ({"tokens": {"m": 1.0}}, "at least two"),
    ({"tokens": {"m ": 1.0, "M": 0.0}}, "surrounding whitespace"),
    ({"tokens": {"m": float("inf"), "M": 0.0}}, "finite"),
    ({"tokens": {"m": 1.0, "M": 0.0}, "system_template": None}, "system_template"),
])
def test_named_tokens_are_checked_at_construction(kwargs, fragment):
    model = OpenAIModel("http://127.0.0.1:9/v1", "fake", api_key="k", chat_template=CHATML)
    kw = {"system_template": "Answer m or M.", "user_template": "{{completion}}", **kwargs}
    with pytest.raises(ConfigError, match=fragment):
        ProbabilityJudgeGrader("p", model, **kw)
