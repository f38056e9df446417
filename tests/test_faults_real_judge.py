"""Fault suite against the spawned real judge (llama.cpp serving SmolLM2-135M).

The model's verdicts are noise; what is checked is the pipeline: every sample
ends with a Grade, a scored grade's value is exactly what the judge's own
reply says, retries stay within bounds, and ``grade_batch`` never raises for
judge failures: with the server killed and restarted mid-run, with timeouts
shorter than the judge needs, and with a wrong endpoint.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from rewardjudge import StringThread
from rewardjudge.graders._outputs import BinaryJudgeOutput, output_value
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel, RetryPolicy
from rewardjudge.models._spawn import JudgeServer

pytestmark = pytest.mark.judge

SYSTEM = "You grade answers. Reply with JSON only: {{output_schema}}"
USER = "Question: {{last_user_turn_content}}\nAnswer: {{completion}}"


def samples(n: int) -> list[StringThread]:
    return [StringThread([("user", f"What is {i} + {i}?"), ("assistant", str(2 * i + i % 2))])
            for i in range(n)]


def grader_for(model, *, max_tokens: int = 64) -> TemplatedPromptJudgeGrader:
    return TemplatedPromptJudgeGrader("real-faults", model, SYSTEM, USER, max_tokens=max_tokens,
                                      reply_retries=1)


def check_consistent(grades, n: int, max_requests: int) -> None:
    """One Grade per sample; scored values are what the judge's reply says."""
    assert len(grades) == n
    for g in grades:
        assert g.status in ("scored", "unscored"), g
        assert g.attempts <= max_requests, g
        if g.status == "scored":
            verdict = g.extra["verdict"]
            assert g.value == output_value(BinaryJudgeOutput.model_validate(verdict))
            assert f'"{verdict["score"]}"' in g.raw_reply and '"seal"' in g.raw_reply
        else:
            assert g.value is None and g.error


def start_server(**kwargs) -> JudgeServer:
    server = JudgeServer(n_threads=2, **kwargs)
    server.start()
    server.wait_ready()
    return server


@pytest.fixture(scope="module")
def judge_server():
    server = start_server()
    yield server
    server.stop()


async def test_grades_match_the_judges_own_replies(judge_server):
    model = judge_server.model()
    grader = grader_for(model)
    async with model:
        grades = await grader.grade_batch(samples(3))
    check_consistent(grades, 3, max_requests=(3 + 1) * 2)
    assert any(g.status == "scored" for g in grades)


async def test_timeouts_shorter_than_the_judge_are_unscored_within_bounds(judge_server):
    model = OpenAIModel(judge_server.base_url, judge_server.served_name, api_key="local",
                        structured_output="json_object", timeout=0.01,
                        retry_policy=RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02))
    grader = grader_for(model, max_tokens=4)
    async with model:
        grades = await grader.grade_batch(samples(2))
    assert [g.status for g in grades] == ["unscored"] * 2
    assert all("JudgeTimeoutError" in g.error and g.attempts == 2 for g in grades)


async def test_wrong_endpoint_is_not_retried(judge_server):
    model = OpenAIModel(f"http://{judge_server.host}:{judge_server.port}/v9", judge_server.served_name,
                        api_key="local", retry_policy=RetryPolicy(max_retries=3, base_delay=0.01))
    grader = grader_for(model)
    async with model:
        grades = await grader.grade_batch(samples(2))
    assert all(g.status == "unscored" and "HTTP 404" in g.error and g.attempts == 1 for g in grades)


async def test_judge_killed_and_restarted_mid_run():
    retry = RetryPolicy(max_retries=12, base_delay=0.2, max_delay=0.5)
    first = start_server(model_kwargs={"retry_policy": retry, "max_concurrency": 2})
    restarted: list[JudgeServer] = []
    model = first.model()
    grader = grader_for(model)
    loop = asyncio.get_running_loop()

    async def kill_and_restart() -> None:
        await asyncio.sleep(0.4)  # requests are in flight
        os.killpg(first.process.pid, signal.SIGKILL)
        await loop.run_in_executor(None, first.process.wait)
        restarted.append(await loop.run_in_executor(None, lambda: start_server(port=first.port)))

    try:
        async with model:
            chaos = asyncio.create_task(kill_and_restart())
            grades = await grader.grade_batch(samples(4))
            await chaos
    finally:
        first.stop()
        for s in restarted:
            s.stop()
    check_consistent(grades, 4, max_requests=(12 + 1) * 2)
    # the batch went on after the restart, and the outage was retried, not scored
    assert any(g.status == "scored" for g in grades)
    assert any(g.attempts > 1 for g in grades)
    for g in grades:
        if g.status == "unscored":
            assert "Judge" in g.error or g.error.startswith(("invalid judge reply", "cut off", "no sealed verdict"))
