"""CandidateJudgeGrader(expected_value=True): each judged candidate scored by
its expected grade, read at the position of that candidate's sealed <grade id>."""

from __future__ import annotations

import math
import re

import pytest

from rewardjudge import Scale, StringThread
from rewardjudge.errors import ConfigError, JudgeHTTPError
from rewardjudge.graders import CandidateJudgeGrader
from rewardjudge.models import OpenAIModel
from rewardjudge.models._base import (Completion, GradeDistributionUnsupported, InferenceModel,
                                     TokenDistribution)
from rewardjudge.testing import Fault, FakeJudgeServer, ScriptedModel

SUBMISSION = re.compile(r'<submission id="([a-z0-9]+)">\n(.*?)</submission>', re.DOTALL)
LAST_ID = re.compile(r'<candidate id="([a-z0-9]+)">')


def submissions(messages) -> list[tuple[str, str]]:
    """(id, text) of every candidate in a rendered default prompt."""
    user = next(m for m in messages if m["role"] == "user")
    return [(cid, text.strip()) for cid, text in SUBMISSION.findall(user["content"])]


def block(cid: str, grade: str, reasoning: str = "fine") -> str:
    return (f'<candidate id="{cid}">\n<reasoning>{reasoning}</reasoning>\n<grade id="{cid}">{grade}</grade>\n'
            f"</candidate>")


def sampled_reply(messages) -> str:
    """Grades each candidate by the last word of its text; the reasoning
    quotes a fake <grade> and one grade is written after a space, so the
    prefix must find the real one."""
    return "\n".join(block(cid, (" " if i == 0 else "") + text.split()[-1],
                           "not <grade>0</grade>, see below")
                     for i, (cid, text) in enumerate(submissions(messages)))


class EVJudge(InferenceModel):
    """Replies like ``sampled_reply``; ``grade_distribution`` answers from
    ``dists[text of the candidate whose block the prefix ends in]``."""

    name = "ev-judge"
    continues_prefix = True

    def __init__(self, dists, reply=sampled_reply):
        self.dists = dists
        self.reply = reply
        self.chats: list[dict] = []
        self.reads: list[dict] = []

    async def chat(self, messages, params=None, *, json_schema=None):
        self.chats.append({"messages": [dict(m) for m in messages]})
        text = self.reply(messages) if callable(self.reply) else self.reply.pop(0)
        return Completion(text=text, usage={"prompt_tokens": 100, "completion_tokens": 10})

    async def grade_distribution(self, messages, choices, params=None):
        texts = dict(submissions(messages))
        cid = LAST_ID.findall(messages[-1]["content"])[-1]
        self.reads.append({"messages": [dict(m) for m in messages], "choices": list(choices),
                           "candidate": texts[cid]})
        out = self.dists[texts[cid]]
        if isinstance(out, BaseException):
            raise out
        return TokenDistribution(dict(out), top_k=None, usage={"prompt_tokens": 7})


def thread(answer: str) -> StringThread:
    return StringThread([("user", "Which is right?"), ("assistant", answer)])


SAMPLES = [thread("alpha 4"), thread("beta 1"), thread("gamma 2")]
DISTS = {
    # .25 on 3, .75 on 4 -> 3.75 -> 0.9375
    "alpha 4": {"3": 0.25, "4": 0.75},
    # .1 outside: renormalised (.5, .3, .1)/.9 -> (0*.5 + 1*.3 + 2*.1)/.9 = 5/9 -> 5/36
    "beta 1": {"0": 0.5, "1": 0.3, "2": 0.1},
    # certain: 2 -> 0.5, confidence 1
    "gamma 2": {"2": 1.0},
}


async def test_expected_values_per_candidate():
    judge = EVJudge(DISTS)
    grader = CandidateJudgeGrader("ev", judge, scale="graded", seed=3, expected_value=True)
    a, b, c = await grader.grade_batch(SAMPLES)
    assert len(judge.chats) == 1 and len(judge.reads) == 3
    assert [g.status for g in (a, b, c)] == ["scored"] * 3
    assert [g.extra["grade"] for g in (a, b, c)] == [4, 1, 2]           # the sampled grades stay
    assert [g.extra["sampled_value"] for g in (a, b, c)] == [1.0, 0.25, 0.5]
    assert math.isclose(a.value, 0.9375) and math.isclose(a.extra["expected_grade"], 3.75)
    assert math.isclose(b.value, 5 / 36) and math.isclose(b.extra["outside_mass"], 0.1)
    assert math.isclose(sum(b.distribution.values()), 1.0)
    assert list(b.distribution) == ["0", "1", "2", "3", "4"]
    assert c.value == 0.5 and c.extra["confidence"] == 1.0 and c.extra["most_likely_grade"] == 2
    assert all(g.extra["expected_value"] == g.value for g in (a, b, c))
    # the read's usage and attempt are added to the candidate's share of the chat request
    assert all(g.attempts == 2 and g.usage["prompt_tokens"] in (40, 41) for g in (a, b, c))


async def test_the_prefix_ends_right_at_that_candidates_grade():
    judge = EVJudge(DISTS)
    await CandidateJudgeGrader("ev", judge, seed=5, expected_value=True).grade_batch(SAMPLES)
    chat_messages = judge.chats[0]["messages"]
    reply = sampled_reply(chat_messages)
    ids = {text: cid for cid, text in submissions(chat_messages)}
    for read in judge.reads:
        assert read["messages"][:-1] == chat_messages and read["choices"] == ["0", "1", "2", "3", "4"]
        prefix = read["messages"][-1]
        assert prefix["role"] == "assistant" and reply.startswith(prefix["content"])
        cid = ids[read["candidate"]]
        # cut after this candidate's sealed <grade id> (and its leading space, where
        # the judge wrote one), never at the one quoted in the reasoning
        grade_tag = reply.index(f'<grade id="{cid}">') + len(f'<grade id="{cid}">')
        digit = grade_tag + (len(reply[grade_tag:]) - len(reply[grade_tag:].lstrip()))
        assert prefix["content"] == reply[:digit]
        assert reply[digit] == read["candidate"][-1]


async def test_a_re_asked_candidate_reads_from_the_reply_that_judged_it():
    first = []

    def reply(messages):
        # round 1 judges only the first candidate; round 2 the rest
        pairs = submissions(messages)
        if not first:
            first.append(1)
            pairs = pairs[:1]
        return "\n".join(block(cid, text[-1]) for cid, text in pairs)

    judge = EVJudge(DISTS, reply=reply)
    grades = await CandidateJudgeGrader("ev", judge, seed=1, batch_size=2,
                                        expected_value=True).grade_batch(SAMPLES[:2])
    assert sorted(g.extra["rounds"] for g in grades) == [1, 2]
    assert len(judge.chats) == 2 and len(judge.reads) == 2
    for read in judge.reads:
        assert read["messages"][:-1] in [c["messages"] for c in judge.chats]
    assert math.isclose(grades[0].value, 0.9375) and math.isclose(grades[1].value, 5 / 36)


async def test_a_judge_that_changed_its_mind_is_read_at_its_last_grade():
    # each candidate graded twice: the distribution is read after the deciding (last) grade's
    # tag, never at the first one, nor at an unbound or guessed grade after it
    def reply(messages):
        pairs = submissions(messages)
        first = "\n".join(block(cid, "0") for cid, _ in pairs)
        last = "\n".join(block(cid, text[-1]) for cid, text in pairs)
        return f'{first}\nOn reflection:\n{last}\n<grade>4</grade><grade id="zzzzzzzzzzzzzz">4</grade>'

    judge = EVJudge(DISTS, reply=reply)
    grades = await CandidateJudgeGrader("ev", judge, seed=6, expected_value=True).grade_batch(SAMPLES)
    assert [g.extra["grade"] for g in grades] == [4, 1, 2]
    assert [g.extra.get("disagreeing_verdicts") for g in grades] == [[0], [0], [0]]
    text = reply(judge.chats[0]["messages"])
    for read in judge.reads:
        prefix = read["messages"][-1]["content"]
        assert prefix.count("On reflection:") == 1 and text[len(prefix)] == read["candidate"][-1]
    assert math.isclose(grades[0].value, 0.9375)


class Unsupported(EVJudge):
    async def grade_distribution(self, messages, choices, params=None):
        raise GradeDistributionUnsupported("the judge server returned no top logprobs")


@pytest.mark.parametrize("make_model, reason", [
    # a model that cannot read after a prefix at all: no read is tried
    (lambda: ScriptedModel(lambda m, p, s: sampled_reply(m)), "continues_prefix is False"),
    # a model that says so when asked (a server without logprobs)
    (lambda: Unsupported(DISTS), "GradeDistributionUnsupported"),
])
async def test_falls_back_to_the_sampled_grade_when_unsupported(make_model, reason, caplog):
    grader = CandidateJudgeGrader("ev", make_model(), seed=2, expected_value=True)
    grades = await grader.grade_batch(SAMPLES)
    assert [g.value for g in grades] == [1.0, 0.25, 0.5]
    for g in grades:
        assert g.status == "scored" and g.extra["expected_value"] is None
        assert reason in g.extra["distribution_error"] and "probabilities" not in g.extra
    assert caplog.text.count("sampled grades are used") == 1   # warned once, not per candidate


@pytest.mark.parametrize("valid, floor, expected", [
    # 30% on the grades under the default 50% floor: the sampled grade stays
    (0.3, 0.5, False),
    # exactly at the floor: expected value
    (0.5, 0.5, True),
    # floor 0 accepts any non-zero mass
    (0.01, 0.0, True),
    # no mass at all keeps the sampled grade even with floor 0
    (0.0, 0.0, False),
])
async def test_valid_mass_floor(valid, floor, expected):
    # 3 and 4 share the valid mass: the expected grade is 3.5 -> 0.875
    judge = EVJudge({"alpha 4": {"3": valid / 2, "4": valid / 2}})
    grade = await CandidateJudgeGrader("ev", judge, expected_value=True,
                                       expected_value_floor=floor).grade(SAMPLES[0])
    assert grade.status == "scored" and math.isclose(grade.extra["outside_mass"], 1 - valid)
    if expected:
        assert grade.value == 0.875 and "distribution_error" not in grade.extra
    else:
        assert grade.value == 1.0 and grade.extra["expected_value"] is None
        assert "expected_value_floor" in grade.extra["distribution_error"]


@pytest.mark.parametrize("failure, reason", [
    # a judge failure after the model's retries
    (JudgeHTTPError(503, "down", attempts=3), "JudgeHTTPError"),
    # a broken model raising something else
    (RuntimeError("boom"), "RuntimeError: boom"),
])
async def test_a_failed_read_keeps_the_sampled_grade(failure, reason):
    judge = EVJudge({**DISTS, "beta 1": failure})
    a, b, c = await CandidateJudgeGrader("ev", judge, seed=4, expected_value=True).grade_batch(SAMPLES)
    assert b.status == "scored" and b.value == 0.25 and b.extra["grade"] == 1
    assert reason in b.extra["distribution_error"] and b.extra["expected_value"] is None
    if isinstance(failure, JudgeHTTPError):
        assert b.attempts == 1 + 3        # the chat attempt and the read's three
    # the other candidates of the request are unaffected
    assert math.isclose(a.value, 0.9375) and c.value == 0.5


async def test_a_usage_error_in_the_read_is_raised():
    judge = EVJudge({**DISTS, "gamma 2": ConfigError("choice '4' is not one token")})
    with pytest.raises(ConfigError, match="not one token"):
        await CandidateJudgeGrader("ev", judge, expected_value=True).grade_batch(SAMPLES)


def test_option_checks_and_config():
    model = ScriptedModel([])
    plain = CandidateJudgeGrader("g", model)
    assert plain.expected_value is False and "expected_value" not in plain.config()
    on = CandidateJudgeGrader("g", model, expected_value=True, expected_value_floor=0.25)
    assert on.config()["expected_value"] is True and on.config()["expected_value_floor"] == 0.25
    assert on.version != plain.version
    # grades that are not single digits cannot be read as one token
    with pytest.raises(ConfigError, match="within 0-9"):
        CandidateJudgeGrader("g", model, scale=Scale("ten", 1, 10, tuple((g, str(g)) for g in range(1, 11))),
                             expected_value=True)
    with pytest.raises(ConfigError, match="expected_value_floor"):
        CandidateJudgeGrader("g", model, expected_value=True, expected_value_floor=1.5)


# --------------------------------------------------------------------------
# over HTTP: chat for the reply, /v1/completions logprobs for each grade
# --------------------------------------------------------------------------
async def test_over_http_through_the_completions_endpoint():
    def respond(req):
        if "prompt" not in req:
            return sampled_reply(req["messages"])
        # the prompt is the chat template applied to messages + the prefix
        cid = LAST_ID.findall(req["prompt"])[-1]
        text = dict(SUBMISSION.findall(req["prompt"]))[cid].strip()
        top = {"alpha 4": {"4": -0.2231, " 3": -1.6094},      # .8 and .2
               "beta 1": {"1": -0.6931, "x": -0.6931}}[text]   # .5 on 1, .5 outside
        return Fault.reply("", logprobs=[top])

    def template(messages):
        return "".join(f"<|{m['role']}|>\n{m['content']}" for m in messages[:-1]) \
            + f"<|assistant|>\n{messages[-1]['content']}"

    with FakeJudgeServer(respond) as server:
        async with OpenAIModel(server.url, "fake", chat_template=template,
                               max_concurrency=2) as judge:
            grader = CandidateJudgeGrader("http", judge, seed=0, expected_value=True)
            a, b = await grader.grade_batch(SAMPLES[:2])
        reads = [r for r in server.requests if "prompt" in r]
    assert len(server.requests) == 3 and len(reads) == 2
    assert all(r["max_tokens"] == 1 and r["logprobs"] == 20 and "response_format" not in r
               for r in reads)
    assert all(re.search(r'<grade id="[a-z0-9]{14}"> ?\Z', r["prompt"]) for r in reads)
    # alpha: (3*.2 + 4*.8) -> 3.8 -> 0.95; beta: all valid mass on 1 -> 0.25, half outside
    assert math.isclose(a.value, 0.95, abs_tol=1e-4) and a.extra["top_k"] == 2
    assert b.value == 0.25 and math.isclose(b.extra["outside_mass"], 0.5, abs_tol=1e-4)
    assert b.extra["confidence"] == 1.0


# --------------------------------------------------------------------------
# the real model's probabilities after a fixed reply
# --------------------------------------------------------------------------
class FixedReplyOver(InferenceModel):
    """A spawned judge whose chat replies are fixed (the embedded model rarely
    writes the protocol); probabilities still come from the real model."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.continues_prefix = inner.continues_prefix

    async def chat(self, messages, params=None, *, json_schema=None):
        return Completion(text=sampled_reply(messages))

    async def grade_distribution(self, messages, choices, params=None):
        return await self.inner.grade_distribution(messages, choices, params)


@pytest.mark.judge
async def test_embedded_judge_reads_a_distribution_at_each_grade():
    from rewardjudge.models import spawn_judge

    async with spawn_judge() as judge:
        grader = CandidateJudgeGrader("real", FixedReplyOver(judge), seed=0, expected_value=True,
                                      expected_value_floor=0.0)
        grades = await grader.grade_batch(SAMPLES[:2])
    for g in grades:
        assert g.status == "scored" and g.extra["top_k"] == 20
        assert 0.0 <= g.extra["outside_mass"] <= 1.0 and g.usage["prompt_tokens"] > 0
        if g.extra["valid_mass"] > 0:   # the model's own numbers: noise, but a distribution
            assert math.isclose(sum(g.distribution.values()), 1.0)
            assert 0.0 <= g.value <= 1.0 and g.value == g.extra["expected_grade"] / 4
