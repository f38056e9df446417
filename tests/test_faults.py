"""Fault suite against the loopback FakeJudgeServer.

Every test checks the same three promises under a different fault:

* every sample ends with a Grade, and ``grade_batch`` never raises for a
  judge failure (nor leaves an exception on the event loop);
* no grade is scored wrongly: the fake judge's verdict is a function of the
  prompt (sample ``i`` -> PASS unless ``i % 3 == 0``, reasoning ``"sample i"``),
  so a scored grade must carry exactly what the judge said for *its* sample;
* retries stay within bounds, counted at the server.

Each fault runs over both ways OpenAIModel can send a request: its own
aiohttp session (the default, for http:// and https://) and a user's
``httpx.AsyncClient`` passed as ``http_client``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading

import httpx
import pytest

from rewardjudge import StringThread
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel, RetryPolicy
from rewardjudge.testing import Fault, FakeJudgeServer

TRANSPORTS = ["aiohttp", "httpx"]
SYSTEM = "Grade the answer. Reply as JSON: {{output_schema}}"
USER = "Question: {{last_user_turn_content}}\nAnswer: {{completion}}"
FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05, max_retry_after=1.0)
_SAMPLE = re.compile(r"answer #(\d+)")


def sample(i: int) -> StringThread:
    return StringThread([("user", f"question {i}"), ("assistant", f"answer #{i}")])


def expected(i: int) -> float:
    return 0.0 if i % 3 == 0 else 1.0


def sample_of(req: dict) -> int:
    """The sample index a request is about, read from its prompt."""
    return int(_SAMPLE.search(req["messages"][-1]["content"]).group(1))


def verdict(i: int) -> str:
    return json.dumps({"reasoning": f"sample {i}", "score": "FAIL" if i % 3 == 0 else "PASS"})


class Judge:
    """A responder whose verdict depends on the prompt, counting requests per
    sample; ``faults(i, n)`` may return a Fault for the n-th request (1-based)
    about sample i."""

    def __init__(self, faults=lambda i, n: None):
        self.faults = faults
        self.counts: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, req: dict):
        i = sample_of(req)
        with self._lock:
            n = self.counts[i] = self.counts.get(i, 0) + 1
        fault = self.faults(i, n)
        return fault if fault is not None else verdict(i)


def make_grader(url: str, *, retry=FAST_RETRY, timeout: float = 5.0, concurrency: int = 8,
                reply_retries: int = 1, **model_kw) -> TemplatedPromptJudgeGrader:
    model = OpenAIModel(url, "fake-judge", api_key="test", max_concurrency=concurrency,
                        timeout=timeout, retry_policy=retry, **model_kw)
    return TemplatedPromptJudgeGrader("faults", model, SYSTEM, USER, reply_retries=reply_retries)


@contextlib.asynccontextmanager
async def client_for(transport: str):
    """The ``http_client`` argument for a transport: None (aiohttp) or a user's httpx client,
    closed here, by its owner."""
    if transport == "aiohttp":
        yield {}
    else:
        async with httpx.AsyncClient() as client:
            yield {"http_client": client}


def check_grades(grades, indexes) -> None:
    """One Grade per sample; every scored grade says what the judge said for it."""
    assert len(grades) == len(indexes)
    for i, g in zip(indexes, grades):
        assert g.status in ("scored", "unscored"), (i, g)
        if g.status == "scored":
            assert g.value == expected(i), (i, g)
            assert g.reasoning == f"sample {i}", (i, g)
        else:
            assert g.value is None and g.error, (i, g)


@pytest.fixture
async def loop_errors():
    """Exceptions the event loop saw that nobody awaited (must stay empty)."""
    loop = asyncio.get_running_loop()
    seen: list[dict] = []
    loop.set_exception_handler(lambda _loop, ctx: seen.append(ctx))
    yield seen
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert not seen, seen


async def run_batch(judge, transport, indexes, *, latency=0.0, **kw):
    async with FakeJudgeServer(judge, latency=latency) as server, client_for(transport) as client:
        grader = make_grader(server.url, **client, **kw)
        async with grader.model:
            grades = await grader.grade_batch([sample(i) for i in indexes])
        return grades, server


# --------------------------------------------------------------------------
# one fault kind at a time: (name, fault on the first request of a faulted sample)
# --------------------------------------------------------------------------
FIRST_TRY_FAULTS = [
    # 429 with a Retry-After in seconds: waited, then retried
    ("429 retry-after", lambda: Fault.http(429, retry_after=0.05)),
    # an overloaded server
    ("503", lambda: Fault.http(503)),
    # a crash page that is not JSON
    ("500 html", lambda: Fault.http(500, body="<html>Internal Server Error</html>")),
    ("502", lambda: Fault.http(502)),
    # the connection is closed without a reply
    ("drop", Fault.drop),
    # 200 with a body that is not JSON
    ("malformed", Fault.malformed),
    # 200 JSON without choices
    ("no choices", lambda: Fault.malformed('{"object": "chat.completion", "choices": []}')),
    # a body shorter than its Content-Length, then close
    ("truncated", Fault.truncated),
    # no answer within the client's timeout
    ("timeout", lambda: Fault.timeout(5.0)),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name,make_fault", FIRST_TRY_FAULTS, ids=[f[0] for f in FIRST_TRY_FAULTS])
async def test_one_fault_then_recovery(name, make_fault, transport, loop_errors):
    faulted = {0, 2, 5}
    judge = Judge(lambda i, n: make_fault() if i in faulted and n == 1 else None)
    # a short client timeout only where the fault is one: under load a 0.5 s one also times out
    # requests the server has not yet read, and the grades count those tries too
    grades, server = await run_batch(judge, transport, range(6), timeout=1.0 if name == "timeout" else 5.0)
    check_grades(grades, range(6))
    assert [g.status for g in grades] == ["scored"] * 6
    # exactly one extra request per faulted sample, and the grade counts it
    assert judge.counts == {i: 2 if i in faulted else 1 for i in range(6)}
    assert server.request_count == 6 + len(faulted)
    assert [g.attempts for g in grades] == [2 if i in faulted else 1 for i in range(6)]


PERSISTENT_FAULTS = [
    # the error class named in the unscored grade
    ("503 forever", lambda: Fault.http(503), "JudgeHTTPError"),
    ("429 forever", lambda: Fault.http(429, retry_after=0), "JudgeHTTPError"),
    ("drop forever", Fault.drop, "JudgeConnectionError"),
    ("malformed forever", Fault.malformed, "JudgeResponseError"),
    ("truncated forever", Fault.truncated, "JudgeConnectionError"),
    ("timeout forever", lambda: Fault.timeout(5.0), "JudgeTimeoutError"),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name,make_fault,error", PERSISTENT_FAULTS,
                         ids=[f[0] for f in PERSISTENT_FAULTS])
async def test_persistent_fault_is_unscored_after_bounded_retries(name, make_fault, error, transport,
                                                                  loop_errors):
    judge = Judge(lambda i, n: make_fault() if i == 1 else None)
    grades, server = await run_batch(judge, transport, range(4), timeout=0.3)
    check_grades(grades, range(4))
    bad = grades[1]
    assert bad.status == "unscored" and bad.value is None and bad.reward != bad.reward  # NaN
    assert error in bad.error
    # max_retries=3: four requests, no more, and the grade says so
    assert judge.counts[1] == FAST_RETRY.max_retries + 1
    assert bad.attempts == FAST_RETRY.max_retries + 1
    assert [g.status for i, g in enumerate(grades) if i != 1] == ["scored"] * 3


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_client_errors_are_not_retried(status, transport, loop_errors):
    judge = Judge(lambda i, n: Fault.http(status) if i == 0 else None)
    grades, _ = await run_batch(judge, transport, range(3))
    check_grades(grades, range(3))
    assert grades[0].status == "unscored" and f"HTTP {status}" in grades[0].error
    assert judge.counts[0] == 1 and grades[0].attempts == 1


async def test_retry_after_is_honoured_over_a_long_backoff(loop_errors):
    # backoff alone would wait up to 60 s; the server's Retry-After says 0.02 s
    slow_backoff = RetryPolicy(max_retries=2, base_delay=60.0, max_delay=60.0)
    judge = Judge(lambda i, n: Fault.http(429, retry_after=0.02) if n == 1 else None)
    grades, _ = await asyncio.wait_for(
        run_batch(judge, "aiohttp", range(4), retry=slow_backoff), timeout=20)
    assert [g.status for g in grades] == ["scored"] * 4
    check_grades(grades, range(4))


async def test_a_429_burst_then_service(loop_errors):
    # the first 12 requests, whatever their sample, are refused with Retry-After
    with FakeJudgeServer(Judge()) as server:
        server.enqueue(*[Fault.http(429, retry_after=0.02) for _ in range(12)])
        grader = make_grader(server.url, retry=RetryPolicy(max_retries=4, base_delay=0.01,
                                                                     max_delay=0.05))
        async with grader.model:
            grades = await grader.grade_batch([sample(i) for i in range(8)])
    check_grades(grades, range(8))
    assert [g.status for g in grades] == ["scored"] * 8
    assert server.request_count == 8 + 12
    assert sum(g.attempts for g in grades) == 8 + 12


async def test_schema_rejection_500_is_a_fallback_not_an_outage(loop_errors):
    # a server that answers response_format json_schema with a 500 naming it
    def responder(req):
        rf = req.get("response_format") or {}
        if rf.get("type") == "json_schema":
            return Fault.http(500, body='{"error": "response_format json_schema is not supported"}')
        return verdict(sample_of(req))

    async with FakeJudgeServer(responder) as server:
        grader = make_grader(server.url, retry=RetryPolicy(max_retries=0))
        async with grader.model:
            grades = await grader.grade_batch([sample(i) for i in range(3)])
    check_grades(grades, range(3))
    assert [g.status for g in grades] == ["scored"] * 3  # no retry budget was needed
    assert grader.model.structured_output == "json_object"
    assert (server.requests[-1].get("response_format") or {}).get("type") == "json_object"
    grader.model.reset_structured_output()  # what it learned is this model's own: forget it
    assert grader.model.structured_output == "json_schema" and grader.model.learned_styles == {}


@pytest.mark.parametrize("reply", [
    "I think it is fine.",                                   # prose, no JSON
    '{"reasoning": "ok", "score": "MAYBE"}',                 # not a valid verdict
    '{"reasoning": "a", "score": "PA',                       # cut short: no object to seal
])
async def test_unreadable_verdict_is_reasked_then_unscored_never_zero(reply, loop_errors):
    async with FakeJudgeServer(lambda req: reply) as server:
        grader = make_grader(server.url, reply_retries=1)
        async with grader.model:
            grades = await grader.grade_batch([sample(i) for i in range(2)])
    assert [g.status for g in grades] == ["unscored"] * 2
    assert all(g.value is None and ("invalid judge reply" in g.error or "no sealed verdict" in g.error)
               for g in grades)
    assert all(reply.strip("{}")[:12] in g.raw_reply for g in grades)   # as written, sealed
    assert server.request_count == 4  # one re-ask per sample


#: enough retries (about 5 s at 0.2 s apiece) to outlast the restart on a loaded 2-core machine
RETRIES = 25


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_server_killed_and_restarted_mid_run(transport, loop_errors):
    judge = Judge()
    first = FakeJudgeServer(judge, latency=0.02).start()
    port = first.port
    second: list[FakeJudgeServer] = []

    async def outage() -> None:
        loop = asyncio.get_running_loop()
        while first.request_count < 10:
            await asyncio.sleep(0.005)
        await loop.run_in_executor(None, first.stop)  # killed: connections reset, port closed
        await asyncio.sleep(0.2)                       # down: connections refused
        second.append(FakeJudgeServer(judge, latency=0.02, port=port).start())

    try:
        async with client_for(transport) as client:
            grader = make_grader(first.url, concurrency=4, **client,
                                 retry=RetryPolicy(max_retries=RETRIES, base_delay=0.05, max_delay=0.2))
            async with grader.model:
                killer = asyncio.create_task(outage())
                grades = await grader.grade_batch([sample(i) for i in range(40)])
                await killer
    finally:
        first.stop()
        for s in second:
            s.stop()
    check_grades(grades, range(40))
    assert [g.status for g in grades] == ["scored"] * 40
    assert second[0].request_count > 0
    # at most max_retries + 1 attempts per sample; refused connections never
    # reach a server, so the servers count at most the grade's attempts
    assert all(judge.counts[i] <= g.attempts <= RETRIES + 1 for i, g in enumerate(grades))
    assert any(g.attempts > 1 for g in grades)  # the outage was felt and retried


async def test_restart_too_late_leaves_unscored_not_zero(loop_errors):
    server = FakeJudgeServer(Judge()).start()
    url = server.url
    server.stop()  # nothing listens any more
    grader = make_grader(url, retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02))
    async with grader.model:
        grades = await grader.grade_batch([sample(i) for i in range(5)])
    assert [g.status for g in grades] == ["unscored"] * 5
    assert all("JudgeConnectionError" in g.error and g.attempts == 3 for g in grades)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_hundred_samples_with_twenty_percent_faults(transport, loop_errors):
    kinds = [lambda: Fault.http(429, retry_after=0.01), lambda: Fault.http(500), Fault.drop,
             Fault.malformed, Fault.truncated, lambda: Fault.timeout(5.0),
             lambda: Fault.http(503), lambda: Fault.http(502)]

    def faults(i: int, n: int):
        if i % 5 == 0 and n == 1:                 # 20% of samples fail once
            return kinds[(i // 5) % len(kinds)]()
        if i in (7, 77):                          # two samples fail every time
            return Fault.http(503)
        return None

    judge = Judge(faults)
    grades, server = await run_batch(judge, transport, range(200), latency=0.005, timeout=2.0,
                                     concurrency=32)
    assert len(grades) == 200
    check_grades(grades, range(200))
    unscored = [i for i, g in enumerate(grades) if g.status == "unscored"]
    assert unscored == [7, 77]
    assert server.request_count == 200 + 40 + 2 * FAST_RETRY.max_retries
    assert all(n <= FAST_RETRY.max_retries + 1 for n in judge.counts.values())


def test_one_model_across_event_loops():
    # a notebook or a trainer's background loop: each asyncio.run is a new loop
    with FakeJudgeServer(Judge()) as server:
        grader = make_grader(server.url)
        first = asyncio.run(grader.grade_batch([sample(i) for i in range(3)]))
        second = asyncio.run(grader.grade_batch([sample(i) for i in range(3, 6)]))
        asyncio.run(grader.model.aclose())
    check_grades(first + second, range(6))
    assert [g.status for g in first + second] == ["scored"] * 6
