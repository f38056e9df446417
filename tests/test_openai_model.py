"""OpenAIModel against the loopback fake server: retries, faults, usage, limits."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from rewardjudge.errors import (ConfigError, JudgeConnectionError, JudgeHTTPError, JudgeResponseError,
                                JudgeTimeoutError)
from rewardjudge.models import GenerationParams, OpenAIModel, RetryPolicy
from rewardjudge.models.openai_compat import parse_retry_after
from rewardjudge.models.spawn import free_port
from rewardjudge.testing import FakeJudgeServer, Fault

MSG = [{"role": "user", "content": "grade this"}]
FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)


def model_for(server: FakeJudgeServer, **kw) -> OpenAIModel:
    kw.setdefault("retry_policy", FAST)
    kw.setdefault("timeout", 2.0)
    return OpenAIModel(server.url, "judge", **kw)


async def test_reply_usage_and_params(fake_server):
    async with model_for(fake_server) as m:
        c = await m.chat(MSG, GenerationParams(temperature=0.0, max_tokens=7, seed=3, stop=("\n\n",)))
    req = fake_server.requests[0]
    assert req["model"] == "judge" and req["messages"] == MSG
    assert (req["temperature"], req["max_tokens"], req["seed"], req["stop"]) == (0.0, 7, 3, ["\n\n"])
    assert "score" in c.text and c.usage["prompt_tokens"] == 2 and c.attempts == 1
    assert c.latency_s > 0


@pytest.mark.parametrize("faults, expected_attempts", [
    ([Fault.http(429, retry_after=0.01)], 2),            # rate limited once, Retry-After honoured
    ([Fault.http(500), Fault.http(503)], 3),             # two 5xx then success
    ([Fault.drop()], 2),                                 # connection dropped
    ([Fault.truncated()], 2),                            # body cut short
    ([Fault.malformed()], 2),                            # 200 with a non-JSON body
    ([Fault.malformed('{"choices": []}')], 2),           # 200 with JSON but no choice
])
async def test_transient_faults_are_retried(fake_server, faults, expected_attempts):
    fake_server.enqueue(*faults)
    async with model_for(fake_server) as m:
        c = await m.chat(MSG)
    assert c.attempts == expected_attempts
    assert fake_server.request_count == expected_attempts


@pytest.mark.parametrize("fault, error", [
    (Fault.http(500), JudgeHTTPError),
    (Fault.http(429, retry_after=0), JudgeHTTPError),
    (Fault.malformed(), JudgeResponseError),
    (Fault.drop(), JudgeConnectionError),
])
async def test_retries_are_bounded(fake_server, fault, error):
    fake_server.enqueue(*[fault] * 5)
    async with model_for(fake_server) as m:
        with pytest.raises(error) as info:
            await m.chat(MSG)
    assert info.value.attempts == 3 and fake_server.request_count == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_client_errors_are_not_retried(fake_server, status):
    fake_server.enqueue(Fault.http(status, body='{"error": "bad key"}'))
    async with model_for(fake_server) as m:
        with pytest.raises(JudgeHTTPError) as info:
            await m.chat(MSG)
    assert info.value.status == status and info.value.attempts == 1 and fake_server.request_count == 1
    assert "bad key" in info.value.body


async def test_timeout_is_retried_then_fails(fake_server):
    fake_server.enqueue(Fault.timeout(30), Fault.timeout(30), Fault.timeout(30))
    async with model_for(fake_server, timeout=0.2) as m:
        with pytest.raises(JudgeTimeoutError) as info:
            await m.chat(MSG)
    assert info.value.attempts == 3


async def test_connection_refused():
    async with OpenAIModel(f"http://127.0.0.1:{free_port()}/v1", "judge", retry_policy=FAST) as m:
        with pytest.raises(JudgeConnectionError) as info:
            await m.chat(MSG)
    assert info.value.attempts == 3


async def test_schema_rejection_falls_back_without_counting_as_outage(fake_server):
    # llama.cpp's server answers json_schema with a 500 naming the response_format
    fake_server.enqueue(Fault.http(500, body='{"error": "response_format json_schema not supported"}'))
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}}
    async with model_for(fake_server, retry_policy=RetryPolicy(max_retries=0)) as m:
        c = await m.chat(MSG, json_schema=schema)
        assert m.structured_output == "json_object"
    assert fake_server.requests[0]["response_format"]["type"] == "json_schema"
    assert fake_server.requests[1]["response_format"] == {"type": "json_object", "schema": schema}
    assert c.structured


def test_retry_after_parsing():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


@pytest.mark.parametrize("kwargs", [
    {"base_url": "localhost:8000"},          # no scheme
    {"model": ""},                           # no model name
    {"max_concurrency": 0},
    {"timeout": 0},
    {"structured_output": "xml"},
])
def test_bad_config(kwargs):
    args = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **kwargs}
    with pytest.raises(ConfigError):
        OpenAIModel(args.pop("base_url"), args.pop("model"), **args)


async def test_concurrency_is_bounded_with_an_httpx_client():
    in_flight = 0
    peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        body = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {}}
        return httpx.Response(200, content=json.dumps(body).encode())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        m = OpenAIModel("http://judge.test/v1", "judge", max_concurrency=3, http_client=client)
        replies = await asyncio.gather(*(m.chat(MSG) for _ in range(12)))
    assert [r.text for r in replies] == ["ok"] * 12
    assert peak == 3


async def test_logprobs_are_read(fake_server):
    fake_server.enqueue(Fault.reply("4", logprobs=[{"4": -0.1, "3": -2.5}]))
    async with model_for(fake_server) as m:
        c = await m.chat(MSG, GenerationParams(logprobs=True, top_logprobs=2, max_tokens=1))
    assert c.tokens == ["4"] and c.top_logprobs == [{"4": -0.1, "3": -2.5}]
    assert fake_server.requests[0]["top_logprobs"] == 2


async def test_404_without_v1_hints_at_the_base_url():
    # real servers serve the API under /v1 only
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, content=b'{"detail": "Not Found"}')

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        m = OpenAIModel("http://judge.test:8000", "judge", http_client=client, retry_policy=FAST)
        with pytest.raises(JudgeHTTPError) as info:
            await m.chat(MSG)
    assert info.value.status == 404 and "ends in /v1" in str(info.value) and info.value.attempts == 1
