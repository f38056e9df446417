"""CachedModel: hits, misses, in-flight deduplication, failures, SQLite persistence."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from rewardjudge.errors import JudgeHTTPError, JudgeTimeoutError
from rewardjudge.graders import BinaryJudgeOutput, TemplatedPromptJudgeGrader
from rewardjudge.models import GenerationParams
from rewardjudge.models._cache import CachedModel, SQLiteCache, request_key
from rewardjudge.testing import ScriptedModel
from rewardjudge.thread import StringThread

MSGS = [{"role": "user", "content": "grade this"}]
PARAMS = GenerationParams(temperature=0.0, max_tokens=64)
SCHEMA = {"type": "object", "properties": {"score": {"type": "string"}}}
PASS = '{"reasoning": "fine", "score": "PASS"}'


async def test_second_identical_request_is_a_hit():
    inner = ScriptedModel(default=PASS)
    model = CachedModel(inner)
    first = await model.chat(MSGS, PARAMS, json_schema=SCHEMA)
    second = await model.chat(MSGS, PARAMS, json_schema=SCHEMA)
    assert len(inner.calls) == 1
    assert second.text == first.text == PASS
    assert second.usage == first.usage
    assert first.attempts == 1 and second.attempts == 0  # a hit made no request
    assert model.stats == {"hits": 1, "misses": 1, "deduplicated": 0}


@pytest.mark.parametrize("changed", [
    dict(messages=[{"role": "user", "content": "grade that"}]),      # other prompt text
    dict(messages=[{"role": "system", "content": "grade this"}]),    # same text, other role
    dict(params=GenerationParams(temperature=0.7, max_tokens=64)),    # temperature
    dict(params=GenerationParams(temperature=0.0, max_tokens=65)),    # max_tokens
    dict(params=GenerationParams(temperature=0.0, max_tokens=64, seed=1)),  # seed
    dict(params=GenerationParams(temperature=0.0, max_tokens=64, logprobs=True, top_logprobs=5)),  # logprobs
    dict(params=None),                                                # default params
    dict(json_schema=None),                                           # no schema
    dict(json_schema={"type": "object"}),                             # other schema
])
async def test_changed_request_is_a_miss(changed):
    inner = ScriptedModel(default=PASS)
    model = CachedModel(inner)
    await model.chat(MSGS, PARAMS, json_schema=SCHEMA)
    req = {"messages": MSGS, "params": PARAMS, "json_schema": SCHEMA, **changed}
    await model.chat(req["messages"], req["params"], json_schema=req["json_schema"])
    assert len(inner.calls) == 2
    assert model.stats["misses"] == 2 and model.stats["hits"] == 0


async def test_model_name_is_part_of_the_key():
    assert request_key("a", MSGS, PARAMS, None) != request_key("b", MSGS, PARAMS, None)
    # dict key order does not matter: the JSON is canonical
    assert request_key("a", [{"content": "grade this", "role": "user"}], PARAMS, None) == \
        request_key("a", MSGS, PARAMS, None)


async def test_identical_concurrent_requests_are_sent_once():
    inner = ScriptedModel(default=PASS, delay=0.05)
    model = CachedModel(inner)
    replies = await asyncio.gather(*(model.chat(MSGS, PARAMS) for _ in range(10)))
    assert len(inner.calls) == 1
    assert {r.text for r in replies} == {PASS}
    assert model.stats == {"hits": 0, "misses": 1, "deduplicated": 9}
    # different requests in flight at once are each sent
    await asyncio.gather(*(model.chat([{"role": "user", "content": str(i)}], PARAMS) for i in range(5)))
    assert len(inner.calls) == 6


async def test_failures_are_not_cached():
    inner = ScriptedModel([JudgeTimeoutError("slow"), PASS])
    model = CachedModel(inner)
    with pytest.raises(JudgeTimeoutError):
        await model.chat(MSGS, PARAMS)
    reply = await model.chat(MSGS, PARAMS)  # asked again, not answered with the failure
    assert reply.text == PASS and len(inner.calls) == 2


async def test_waiters_share_an_in_flight_failure_then_the_next_call_asks_again():
    inner = ScriptedModel([JudgeHTTPError(503, "down"), PASS], delay=0.05)
    model = CachedModel(inner)
    results = await asyncio.gather(*(model.chat(MSGS, PARAMS) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, JudgeHTTPError) for r in results)
    assert len(inner.calls) == 1
    assert (await model.chat(MSGS, PARAMS)).text == PASS


async def test_a_cancelled_sender_does_not_cancel_its_waiters():
    inner = ScriptedModel(default=PASS, delay=0.1)
    model = CachedModel(inner)
    leader = asyncio.create_task(model.chat(MSGS, PARAMS))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(model.chat(MSGS, PARAMS))
    await asyncio.sleep(0.01)
    leader.cancel()
    assert (await waiter).text == PASS  # the waiter sent the request itself
    assert len(inner.calls) == 2


async def test_sqlite_cache_persists_across_instances(tmp_path):
    path = tmp_path / "cache.sqlite"
    first = CachedModel(ScriptedModel(default=PASS), cache=path)
    original = await first.chat(MSGS, PARAMS, json_schema=SCHEMA)
    await first.aclose()
    # a model that fails on any call: only the disk can answer
    second = CachedModel(ScriptedModel([JudgeHTTPError(500, "must not be called")]), cache=path)
    reply = await second.chat(MSGS, PARAMS, json_schema=SCHEMA)
    assert reply.text == original.text and reply.usage == original.usage
    assert second.stats["hits"] == 1
    await second.aclose()


def test_sqlite_cache_takes_writes_from_several_processes(tmp_path):
    path = tmp_path / "shared.sqlite"
    SQLiteCache(path).close()  # create it (WAL mode) first
    script = textwrap.dedent(f"""
        import sys
        from rewardjudge.models._base import Completion
        from rewardjudge.models._cache import SQLiteCache
        c = SQLiteCache({str(path)!r})
        for i in range(200):
            c.put(f"{{sys.argv[1]}}-{{i}}", "m", Completion(text=str(i)))
        c.close()
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, tag]) for tag in ("a", "b")]
    assert [p.wait(60) for p in procs] == [0, 0]
    cache = SQLiteCache(path)
    assert len(cache) == 400
    assert cache.get("b-199").text == "199"
    cache.close()


async def test_other_attributes_and_methods_are_the_inner_models():
    class WithDistribution(ScriptedModel):
        max_concurrency = 7

        async def grade_distribution(self, messages, choices, params=None):
            return {"inner": list(choices)}

    inner = WithDistribution(default=PASS)
    model = CachedModel(inner)
    assert model.max_concurrency == 7 and model.calls is inner.calls
    assert await model.grade_distribution(MSGS, ["1", "2"]) == {"inner": ["1", "2"]}
    assert model.name == inner.name


async def test_grader_over_a_cached_model_asks_once_per_distinct_prompt():
    inner = ScriptedModel(default=PASS)
    grader = TemplatedPromptJudgeGrader("g", CachedModel(inner), "Judge. {{output_schema}}",
                                        "Q: {{last_user_turn_content}} A: {{completion}}",
                                        output_model=BinaryJudgeOutput)
    t1 = StringThread([("user", "2+2?"), ("assistant", "4")])
    t2 = StringThread([("user", "3+3?"), ("assistant", "6")])
    grades = await grader.grade_batch([t1, t2, t1, t1])
    assert [g.value for g in grades] == [1.0] * 4
    assert len(inner.calls) == 2


async def test_cached_model_forwards_grade_distribution_and_prefix_support():
    """A cached judge must still serve probability grading (base defaults would refuse it)."""
    from rewardjudge.models import CachedModel, InferenceModel, TokenDistribution

    class Prob(InferenceModel):
        continues_prefix = True

        async def chat(self, messages, params=None, *, json_schema=None):
            raise AssertionError("not used")

        async def grade_distribution(self, messages, choices, params=None, **kw):
            return "inner-distribution"

    cached = CachedModel(Prob())
    assert cached.continues_prefix is True
    assert await cached.grade_distribution([], ["0", "1"]) == "inner-distribution"
    assert TokenDistribution  # the public name exists
