"""OpenAIModel against the loopback fake server: retries, faults, usage, limits."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import pytest

from rewardjudge.errors import (ConfigError, JudgeConnectionError, JudgeHTTPError, JudgeResponseError,
                                JudgeTimeoutError)
from rewardjudge.models import GenerationParams, OpenAIModel, RetryPolicy
from rewardjudge.models._http import parse_retry_after
from rewardjudge.models._spawn import free_port
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


SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}}


def refusing(*styles: str, status: int = 500, body: str | None = None):
    """A responder refusing requests whose response_format type is in ``styles``."""
    def responder(req):
        kind = (req.get("response_format") or {}).get("type", "none")
        if kind in styles:
            return Fault.http(status, body=body or json.dumps(
                {"error": f"response_format {kind} is not supported"}))
        return '{"score": 1}'
    return responder


def sent_styles(server: FakeJudgeServer) -> list[str]:
    return [(r.get("response_format") or {}).get("type", "none") for r in server.requests]


@pytest.fixture
def schema_log(caplog):
    caplog.set_level(logging.WARNING, logger="rewardjudge")
    return lambda: [r.getMessage() for r in caplog.records if "refused response_format" in r.getMessage()]


async def test_schema_rejection_falls_back_without_counting_as_outage(fake_server):
    # llama.cpp's server answers json_schema with a 500 naming the response_format
    fake_server.enqueue(Fault.http(500, body='{"error": "response_format json_schema not supported"}'))
    async with model_for(fake_server, retry_policy=RetryPolicy(max_retries=0)) as m:
        c = await m.chat(MSG, json_schema=SCHEMA)
        assert m.structured_output == "json_object"
        m.reset_structured_output()
    assert fake_server.requests[0]["response_format"]["type"] == "json_schema"
    assert fake_server.requests[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert c.structured and c.attempts == 1


# Error replies that are about response_format itself: fall back.
REFUSALS = [
    # OpenAI's error shape names the parameter
    (400, {"error": {"message": "Invalid value: 'json_schema'.", "type": "invalid_request_error",
                     "param": "response_format.type", "code": None}}),
    # FastAPI / pydantic validation (vLLM, llama-cpp-python): the field's location
    (422, {"detail": [{"loc": ["body", "response_format", "type"], "msg": "Input should be "
                       "'text' or 'json_object'", "input": "json_schema"}]}),
    # llama-cpp-python 0.3.36, verbatim: pydantic's error dict inside a 500's message
    (500, {"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                                "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                                "'json_object'\", 'input': 'json_schema', 'ctx': {'expected': "
                                "\"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", "
                                "line 376, in create_chat_completion\n    POST /v1/chat/completions",
                     "type": "internal_server_error", "param": None, "code": None}}),
    # a server that cannot build a grammar from the schema, in plain text
    (500, "Internal error: failed to convert json_schema to grammar"),
    # pydantic's text form: the field path outside the quoted input
    (400, {"message": "1 validation error for ChatCompletionRequest\nresponse_format.type\n  Input "
                      "should be 'text' [type=literal_error, input_value='json_schema']"}),
]


@pytest.mark.parametrize("status,body", REFUSALS)
async def test_refusal_of_response_format_falls_back(status, body):
    text = body if isinstance(body, str) else json.dumps(body)
    with FakeJudgeServer(refusing("json_schema", status=status, body=text)) as server:
        async with model_for(server, retry_policy=RetryPolicy(max_retries=0)) as m:
            c = await m.chat(MSG, json_schema=SCHEMA)
            assert c.structured and m.structured_output == "json_object"
            m.reset_structured_output()
    assert sent_styles(server) == ["json_schema", "json_object"]


# Errors that only mention the schema, or echo the request (which holds a
# response_format whatever went wrong): not a refusal of response_format.
NOT_REFUSALS = [
    # FastAPI's 422 for an unrelated max_tokens error, echoing the whole request body
    (422, {"detail": [{"loc": ["body", "max_tokens"], "msg": "Input should be greater than 0",
                       "input": {"model": "judge", "max_tokens": -1,
                                 "response_format": {"type": "json_schema", "json_schema": {}}}}],
           "body": {"response_format": {"type": "json_schema"}}}),
    # the same in pydantic's text form: the echo sits inside the brackets
    (400, {"message": "1 validation error for ChatCompletionRequest\nmax_tokens\n  Input should be "
                      "greater than 0 [type=greater_than, input_value={'response_format': "
                      "{'type': 'json_schema'}}, input_type=dict]"}),
    # llama-cpp-python's form for another field, the whole request quoted as its input
    (500, {"error": {"message": "1 validation error:\n  {'type': 'missing', 'loc': ('body', "
                                "'messages'), 'msg': 'Field required', 'input': {'model': 'x', "
                                "'response_format': {'type': 'json_schema', 'json_schema': "
                                "{'name': 'r'}}}}\n\n  File \"llama_cpp/server/app.py\"",
                     "type": "internal_server_error", "param": None, "code": None}}),
    # the word "schema" alone
    (400, {"error": {"message": "messages: does not match the chat schema", "param": "messages"}}),
    # a plain 500 that echoes the request it choked on
    (500, "Traceback: KeyError 'content' while handling {\"response_format\": {\"type\": "
          "\"json_schema\"}}"),
]


@pytest.mark.parametrize("status,body", NOT_REFUSALS)
async def test_other_errors_do_not_downgrade(status, body, schema_log):
    text = body if isinstance(body, str) else json.dumps(body)
    with FakeJudgeServer(lambda req: Fault.http(status, body=text)) as server:
        async with model_for(server, retry_policy=RetryPolicy(max_retries=1, base_delay=0.01)) as m:
            with pytest.raises(JudgeHTTPError) as info:
                await m.chat(MSG, json_schema=SCHEMA)
            assert m.structured_output == "json_schema"
    assert info.value.status == status
    # a 4xx is not retried, a 500 is retried as an outage; json_schema every time
    assert sent_styles(server) == ["json_schema"] * (2 if status == 500 else 1)
    assert schema_log() == []


async def test_fallback_goes_down_to_no_response_format():
    with FakeJudgeServer(refusing("json_schema", "json_object", status=400)) as server:
        async with model_for(server, retry_policy=RetryPolicy(max_retries=0)) as m:
            c = await m.chat(MSG, json_schema=SCHEMA)
            c2 = await m.chat(MSG, json_schema=SCHEMA)
            assert m.structured_output == "none"
            m.reset_structured_output()
    assert sent_styles(server) == ["json_schema", "json_object", "none", "none"]
    assert not c.structured and not c2.structured


async def test_learned_per_model_and_logged_once(schema_log):
    with FakeJudgeServer(refusing("json_schema")) as a, FakeJudgeServer() as b:
        async with model_for(a) as m1, model_for(a) as m2, model_for(b) as other:
            await asyncio.gather(*(m1.chat(MSG, json_schema=SCHEMA) for _ in range(6)))
            assert m1.learned_styles == {m1.base_url: "json_object"}
            # what a model learned is its own: a second model on the same server learns for itself
            assert m2.structured_output == "json_schema" and m2.learned_styles == {}
            await m2.chat(MSG, json_schema=SCHEMA)
            assert m2.structured_output == "json_object"
            # another server is not affected
            await other.chat(MSG, json_schema=SCHEMA)
            assert other.structured_output == "json_schema" and other.learned_styles == {}
            m1.reset_structured_output()
            assert m1.learned_styles == {} and m1.structured_output == "json_schema"
            assert m2.learned_styles == {m2.base_url: "json_object"}
    styles = sent_styles(a)
    assert styles.count("json_object") == 7 and styles[-2:] == ["json_schema", "json_object"]
    assert sent_styles(b) == ["json_schema"]
    # logged once per model, however many of its requests were refused
    assert len(schema_log()) == 2 and all(a.url in line for line in schema_log())


async def test_the_stronger_form_is_tried_again():
    accept = {"json_schema": False}

    def responder(req):
        kind = (req.get("response_format") or {}).get("type")
        if kind == "json_schema" and not accept["json_schema"]:
            return Fault.http(400, body='{"error": {"message": "unsupported", "param": "response_format"}}')
        return '{"score": 1}'

    with FakeJudgeServer(responder) as server:
        async with model_for(server, structured_output_reprobe=3) as m:
            for _ in range(4):
                await m.chat(MSG, json_schema=SCHEMA)
            # after 3 requests in json_object, one probes json_schema: refused, silently back down
            assert sent_styles(server) == ["json_schema", "json_object", "json_object",
                                           "json_object", "json_schema", "json_object"]
            accept["json_schema"] = True  # the server is upgraded
            for _ in range(4):
                await m.chat(MSG, json_schema=SCHEMA)
            assert m.structured_output == "json_schema"
    assert sent_styles(server)[6:] == ["json_object", "json_object", "json_schema", "json_schema"]


async def test_reset_structured_output():
    with FakeJudgeServer(refusing("json_schema")) as server:
        async with model_for(server, structured_output_reprobe=None) as m:
            await m.chat(MSG, json_schema=SCHEMA)
            m.reset_structured_output()
            assert m.structured_output == "json_schema"
            await m.chat(MSG, json_schema=SCHEMA)
            m.reset_structured_output()
    assert sent_styles(server) == ["json_schema", "json_object"] * 2


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


def test_options_are_validated_once_and_kept():
    m = OpenAIModel("http://127.0.0.1:1/v1/", "m", max_concurrency=8)
    assert m.options.max_concurrency == 8 == m.max_concurrency and m.options.base_url.endswith("/")
    with pytest.raises(ConfigError, match=r"max_concurrency must be an int >= 1 \(requests in flight\), got 0; "
                                          r"timeout must be a number of seconds > 0, got -1"):
        OpenAIModel("http://127.0.0.1:1/v1", "m", max_concurrency=0, timeout=-1)


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
