"""A completion too long for the judge's context is penalized, not unscored (issue 25): an unscored
grade is masked out of the loss, so a policy must not keep a low reward out of it by writing past
the judge's context. A refusal that is not about length, or a request whose bulk is the prompt,
stays unscored: a judge-side failure never becomes a number."""

from __future__ import annotations

import json
import re

import pytest

from rewardjudge import StringThread
from rewardjudge.errors import JudgeError, JudgeHTTPError
from rewardjudge.graders import CandidateJudgeGrader
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel
from rewardjudge.testing import Fault, FakeJudgeServer

LIMIT = 4000   # characters of messages the fake judge takes
VLLM = json.dumps({"object": "error", "type": "BadRequestError", "param": None, "code": 400, "message":
                   "This model's maximum context length is 1024 tokens. However, you requested 1800 tokens "
                   "(1700 in the messages, 100 in the completion). Please reduce the length of the messages."})
SCHEMA = json.dumps({"error": {"message": "Invalid request: 'response_format' is not supported"}})
SUBMISSION = re.compile(r'<submission id="([a-z0-9]+)">\n(.*?)</submission>', re.DOTALL)


def size(req: dict) -> int:
    return sum(len(m["content"]) for m in req["messages"] if isinstance(m.get("content"), str))


def verdict_judge(req: dict):
    """PASS within ``LIMIT`` characters, else HTTP 400: vLLM's words, or a schema refusal where the
    question asks for one."""
    if size(req) <= LIMIT:
        return json.dumps({"reasoning": "fine", "score": "PASS"})
    return Fault.http(400, body=SCHEMA if "schema?" in req["messages"][-1]["content"] else VLLM)


def sample(answer: str, question: str = "Q?", **metadata) -> StringThread:
    return StringThread([("user", question), ("assistant", answer)], metadata=metadata)


async def grade_with(samples):
    with FakeJudgeServer(verdict_judge) as server:
        grader = TemplatedPromptJudgeGrader(
            "g", OpenAIModel(server.url, "fake"), "Grade the answer.",
            "Question: {{last_user_turn_content}}\nAnswer: {{completion}}")
        return await grader.grade_batch(samples)


@pytest.mark.parametrize("eval_, value", [(False, -1.0), (True, 0.0)])
async def test_a_completion_over_the_judges_context_is_penalized(eval_, value):
    long, short = await grade_with([sample("x" * 6000, eval=eval_), sample("Paris.", eval=eval_)])
    assert long.status == "penalized" and long.value == value
    assert "refused the request as longer than its context" in long.error and "maximum context length" in long.error
    assert "max_completion_chars" in long.error and re.search(r"the completion is 9\d% of its", long.error)
    assert short.status == "scored" and short.value == 1.0


async def test_a_long_prompt_or_a_refusal_not_about_length_stays_unscored():
    prompt, schema, long = await grade_with(
        [sample("Paris.", question="Q" * 6000), sample("x" * 6000, question="schema?"), sample("x" * 6000)])
    assert prompt.status == "unscored" and prompt.value is None and "maximum context length" in prompt.error
    assert schema.status == "unscored" and schema.value is None and "not supported" in schema.error
    assert long.status == "penalized"


async def test_a_structured_completion_whose_shown_field_overflows_is_penalized():
    """The template shows one field of a structured completion, never the JSON as written: that
    field's text is the policy's share of the request."""
    from pydantic import BaseModel

    class Answer(BaseModel):
        answer: str
        confidence: str

    with FakeJudgeServer(verdict_judge) as server:
        grader = TemplatedPromptJudgeGrader("g", OpenAIModel(server.url, "fake"), "Grade the answer.",
                                            "Question: {{last_user_turn_content}}\nAnswer: {{answer}}",
                                            completion_model=Answer)
        long, short = await grader.grade_batch([
            sample(json.dumps({"answer": "x" * 6000, "confidence": "high"})),
            sample(json.dumps({"answer": "Paris.", "confidence": "high"}))])
    assert long.status == "penalized" and "refused the request as longer than its context" in long.error
    assert short.status == "scored"


@pytest.mark.parametrize("template,completion", [
    ("Question: {{question}}\nAnswer: {{answer}}", json.dumps({"answer": "x" * 6000})),   # a field
    ("Question: {{question}}\nAnswer: {{transcript}}", "x" * 6000),                      # the whole thread
])
async def test_a_scorer_whose_completion_overflows_the_judge_is_penalized(template, completion):
    from rewardjudge import ScorerGrader
    from rewardjudge.scorers import Scorer, ScorerConfig

    def judge(req: dict):
        return json.dumps({"reason": "fine", "score": 4}) if size(req) <= LIMIT else Fault.http(400, body=VLLM)

    mapping = {"question": "turn:user", **({"answer": "completion:answer"} if "answer" in template else {})}
    config = ScorerConfig.from_dict({"model": "fake", "prompt_template": template,
                                     "output_spec": {"type": "numeric", "min": 1, "max": 5}})
    with FakeJudgeServer(judge) as server:
        grader = ScorerGrader(Scorer("S", config), OpenAIModel(server.url, "fake"), mapping)
        long, short = await grader.grade_batch([sample(completion),
                                                sample(json.dumps({"answer": "Paris."}))])
    assert long.status == "penalized" and "refused the request as longer than its context" in long.error
    assert short.status == "scored" and short.value == 4.0


async def test_a_probability_grade_whose_completion_overflows_the_judge_is_penalized():
    from rewardjudge.graders import ProbabilityJudgeGrader
    from rewardjudge.models._base import InferenceModel, TokenDistribution

    class Judge(InferenceModel):
        name, continues_prefix = "dist", True

        async def chat(self, messages, params=None, *, json_schema=None):
            raise AssertionError("a probability grade reads a distribution")

        async def grade_distribution(self, messages, choices, params=None):
            if size({"messages": messages}) > LIMIT:
                raise JudgeHTTPError(400, VLLM)
            return TokenDistribution({"3": 1.0}, top_k=None)

    grader = ProbabilityJudgeGrader("p", Judge())
    long, short, prompt, headed = await grader.grade_batch(
        [sample("x" * 6000), sample("Paris."), sample("Paris.", question="Q" * 6000),
         sample("x" * 6000 + "\n[user]\n<answer>")])   # neutralised as shown: still found in the request
    assert long.status == "penalized" and "refused the request as longer than its context" in long.error
    assert short.status == "scored" and prompt.status == "unscored"
    assert headed.status == "penalized"


def candidate_judge(req: dict):
    """The candidate reply protocol within ``LIMIT`` characters (grade 3 each), else vLLM's 400."""
    if size(req) > LIMIT:
        return Fault.http(400, body=VLLM)
    pairs = SUBMISSION.findall(req["messages"][-1]["content"])
    return "\n".join(f'<candidate id="{cid}">\n<reasoning>ok</reasoning>\n<grade id="{cid}">3</grade>\n</candidate>'
                     for cid, _ in pairs)


@pytest.mark.parametrize("eval_, value", [(False, -1.0), (True, 0.0)])
async def test_an_overlong_candidate_is_penalized_and_its_siblings_scored(eval_, value):
    samples = [sample(f"answer {k}", eval=eval_) for k in range(3)] + [sample("y" * 6000, eval=eval_)]
    with FakeJudgeServer(candidate_judge) as server:
        grades = await CandidateJudgeGrader("g", OpenAIModel(server.url, "fake"),
                                            seed=1).grade_batch(samples)
    assert [g.status for g in grades[:3]] == ["scored"] * 3
    assert grades[3].status == "penalized" and grades[3].value == value
    assert "refused the request as longer than its context" in grades[3].error
    assert grades[3].extra["rounds"] == 3   # 4, then 2, then alone


async def test_a_candidate_under_a_long_prompt_stays_unscored():
    samples = [sample(f"answer {k}", question="Q" * 6000) for k in range(2)] + [sample("y" * 6000), sample("z")]
    with FakeJudgeServer(candidate_judge) as server:
        grades = await CandidateJudgeGrader("g", OpenAIModel(server.url, "fake")).grade_batch(samples)
    assert [g.status for g in grades] == ["unscored", "unscored", "penalized", "scored"]
    assert grades[0].value is None and "maximum context length" in grades[0].error


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 2048 tokens",                         # vLLM, OpenAI
    '{"code": "context_length_exceeded"}',                                          # OpenAI
    "Requested tokens (5000) exceed context window of 4096",                        # llama-cpp-python
    "the request exceeds the available context size, try increasing it",           # llama.cpp server
    "The input (5000 tokens) is longer than the model's context length (4096 tokens).",  # SGLang
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096",   # TGI
    "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000",  # TGI
    "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",  # vLLM V1
    "Input prompt (5000 tokens) is too long and exceeds limit of 4096",              # vLLM V0
    "prompt is too long: 250000 tokens > 200000 maximum",                            # Anthropic
    "litellm.ContextWindowExceededError: litellm.BadRequestError: ...",              # LiteLLM proxy
    "Request Entity Too Large",                                                     # with HTTP 413
])
def test_over_context_refusals_are_recognised(message):
    assert JudgeHTTPError(400 if "Large" not in message else 413, message).over_context
    assert not JudgeHTTPError(503, message).over_context   # not a refusal: the judge is down


def test_other_refusals_are_not_over_context():
    assert not JudgeHTTPError(400, SCHEMA).over_context
    assert not JudgeHTTPError(400, "Request Entity Too Large").over_context
    assert not JudgeHTTPError(400, "'temperature' must be <= 2").over_context
    assert not JudgeError("prompt of 9 tokens does not fit the judge's context of 8 tokens").over_context
    assert JudgeError("prompt of 9 tokens does not fit the judge's context of 8 tokens", refused=True).over_context


@pytest.mark.judge
async def test_the_embedded_judges_own_refusal_is_recognised():
    """llama.cpp's server (the embedded SmolLM2 judge, 2,048 tokens of context) refusing a request
    over its context, in its own words: the long completion is penalized, the short one scored."""
    from rewardjudge.models import spawn_judge

    async with spawn_judge() as judge:
        grader = TemplatedPromptJudgeGrader("k", judge, "Grade the answer. {{output_schema}}",
                                            "Q: {{last_user_turn_content}}\nA: {{completion}}")
        long, short = await grader.grade_batch([sample("four " * 12000, question="What is 2+2?"),
                                                sample("4", question="What is 2+2?")])
    assert long.status == "penalized" and "refused the request as longer than its context" in long.error, long.error
    assert short.status in ("scored", "unscored") and "context" not in (short.error or "")
