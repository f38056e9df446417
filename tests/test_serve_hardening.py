"""rewardjudge serve under a hostile or careless client, over loopback: a
client that disconnects cancels its grading, the per-request sample cap,
slow bodies and slow headers, malformed bodies (400, never 500), a bad
Authorization header (401), and ``--workers N`` (a group on one worker,
``/metrics`` summed, SIGTERM drains)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import aiohttp
import pytest

from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel
from rewardjudge.serve import RewardServer
from rewardjudge.serve._http import _Metrics
from rewardjudge.serve._workers import route
from rewardjudge.testing import Fault, FakeJudgeServer

PASS = '{"reasoning": "ok", "score": "PASS"}'
FAIL = '{"reasoning": "no", "score": "FAIL"}'
SYSTEM = "Grade the answer. Reply as JSON: {{output_schema}}"
USER = "Question: {{last_user_turn_content}}\nReference: {{metadata.reference}}\nAnswer: {{completion}}"


def responder(req):
    """The judge: PASS when the answer is the reference, a 503 for "boom"."""
    text = req["messages"][-1]["content"]
    if "Answer: " not in text:  # serve's start-up probe
        return PASS
    answer = text.split("Answer: ", 1)[1].strip()
    if answer == "boom":
        return Fault.http(503)
    ref = text.split("Reference: ", 1)[1].split("\n", 1)[0]
    return PASS if answer == ref else FAIL


def make_grader(model):
    return TemplatedPromptJudgeGrader("hardening-judge", model, SYSTEM, USER)


def question_of(req) -> str:
    return req["messages"][-1]["content"].split("Question: ", 1)[1].split("\n", 1)[0]


# --------------------------------------------------------------------------
# a client that disconnects
# --------------------------------------------------------------------------
async def test_a_disconnected_clients_samples_stop_being_graded():
    big = [{"prompt": f"big {i}?", "completion": "4", "metadata": {"reference": "4"}} for i in range(3000)]
    async with FakeJudgeServer(responder, latency=0.2) as judge:
        async with OpenAIModel(judge.url, "fake-judge", max_concurrency=4, max_retries=0) as model:
            async with RewardServer(make_grader(model), max_batch=64) as server:
                async with aiohttp.ClientSession() as s:
                    big_request = asyncio.ensure_future(s.post(f"{server.url}/grade", json={"samples": big}))
                    while judge.request_count < 4:  # the big request is being graded
                        await asyncio.sleep(0.02)
                    big_request.cancel()  # the client gives up: its connection closes
                    await asyncio.gather(big_request, return_exceptions=True)
                while server.metrics.requests[("/grade", 499)] == 0:
                    await asyncio.sleep(0.02)
                async with aiohttp.ClientSession() as s:
                    answers = []
                    for q in ("small 1?", "small 2?"):
                        sample = {"prompt": q, "completion": "4", "metadata": {"reference": "4"}}
                        async with s.post(f"{server.url}/grade", json={"samples": [sample]},
                                          timeout=aiohttp.ClientTimeout(total=120)) as r:
                            assert r.status == 200
                            answers.append((await r.json())["grades"][0]["status"])
                            # nothing of the big request was sent after this sample: it is the judge's last
                            assert question_of(judge.requests[-1]) == q
                    seen = [question_of(req) for req in judge.requests]
    assert answers == ["scored", "scored"]
    assert seen[-2:] == ["small 1?", "small 2?"]
    big_seen = [q for q in seen if q.startswith("big")]
    assert len(big_seen) < 100  # of 3,000: the rest were never sent to the judge
    assert server.metrics.batched_samples < 3000


# --------------------------------------------------------------------------
# limits and timeouts
# --------------------------------------------------------------------------
async def test_samples_per_request_cap_is_413():
    async with FakeJudgeServer(responder) as judge, OpenAIModel(judge.url, "fake-judge") as model:
        async with RewardServer(make_grader(model), max_samples=3, estimator="dr_grpo") as server:
            async with aiohttp.ClientSession() as s:
                sample = {"prompt": "2+2?", "completion": "4", "metadata": {"reference": "4"}}
                async with s.post(f"{server.url}/grade", json={"samples": [sample] * 4}) as r:
                    assert r.status == 413
                    error = (await r.json())["error"]
                async with s.post(f"{server.url}/get_reward", json={"query": ["q 4"] * 4}) as r:
                    assert r.status == 413
                async with s.post(f"{server.url}/grade", json={"samples": [sample] * 3}) as r:
                    assert r.status == 200 and len((await r.json())["grades"]) == 3
    assert "4 samples" in error and "limit of 3" in error and "--max-samples-per-request" in error
    assert judge.request_count == 3  # the refused requests never reached the judge


async def _read_until_closed(reader, writer, trickle: bytes, every: float = 0.05) -> bytes:
    """Send ``trickle`` one byte at a time until the server answers or closes."""
    got = b""
    for byte in trickle:
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except ConnectionError:
            break
        try:
            chunk = await asyncio.wait_for(reader.read(65536), every)
        except asyncio.TimeoutError:
            continue
        except ConnectionError:
            break
        got += chunk  # an answer, or b"" when the server closed the connection
        break
    else:
        raise AssertionError("the server waited for the whole slow request")
    try:
        got += await asyncio.wait_for(reader.read(), 30)
    except ConnectionError:
        pass
    return got


async def test_slow_body_gets_408_and_slow_headers_are_cut_off():
    async with FakeJudgeServer(responder) as judge, OpenAIModel(judge.url, "fake-judge") as model:
        async with RewardServer(make_grader(model), body_timeout=0.5, header_timeout=0.5) as server:
            host, port = server.url.rsplit("/", 1)[1].split(":")
            # a body announced as 100 kB that comes one byte at a time
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"POST /grade HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100000\r\n\r\n")
            body_reply = await _read_until_closed(reader, writer, b'{"samples": [' + b" " * 99980)
            writer.close()
            # headers that never end
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"POST /grade HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            header_reply = await _read_until_closed(reader, writer, b"a" * 8000)
            writer.close()
            async with aiohttp.ClientSession() as s:  # a normal client is still served
                sample = {"prompt": "2+2?", "completion": "4", "metadata": {"reference": "4"}}
                async with s.post(f"{server.url}/grade", json={"samples": [sample]}) as r:
                    assert r.status == 200
    assert body_reply.startswith(b"HTTP/1.1 408") and b"did not arrive within 0.5 s" in body_reply
    assert b"Connection: close" in body_reply
    assert header_reply == b""  # closed without a request ever being handled
    assert server.metrics.requests[("/grade", 408)] == 1 and server.metrics.requests[("/grade", 200)] == 1


# --------------------------------------------------------------------------
# malformed bodies and headers
# --------------------------------------------------------------------------
_MSG = {"role": "user", "content": "2+2?"}
MALFORMED_GRADE = [
    b"", b"{not json", b"\xff\xfe{}", b"[" * 200_000 + b"]" * 200_000, b'{"samples": ' + b"[" * 5000,
    json.dumps({"samples": [{"prompt": "q", "completion": "4", "metadata": {"x": [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}}]}).encode().replace(
        b"[[[[", b"[[[[" * 20).replace(b"]]]]", b"]]]]" * 20),
    b"null", b"42", b'"samples"', b"[]", b"{}", b'{"samples": null}', b'{"samples": "x"}', b'{"samples": {}}',
    b'{"samples": []}', b'{"samples": [1]}', b'{"samples": [null]}', b'{"samples": [[]]}', b'{"samples": ["x"]}',
    *(json.dumps({"samples": [s]}).encode() for s in [
        {}, {"prompt": "q"}, {"completion": None}, {"completion": 5}, {"completion": ["x"]}, {"completion": {}},
        {"completion": [{"role": 5, "content": "x"}]},
        {"completion": [{"role": "assistant", "content": 5}]}, {"prompt": 5, "completion": "x"},
        {"prompt": {"a": 1}, "completion": "x"}, {"prompt": [5], "completion": "x"},
        {"prompt": [{"role": "user", "content": [{"type": "text", "text": 5}]}], "completion": "x"},
        {"prompt": [{"role": "user", "content": [5]}], "completion": "x"},
        {"completion": "x", "metadata": 5}, {"completion": "x", "metadata": []}, {"completion": "x", "metadata": "m"},
        {"messages": None}, {"messages": "x"}, {"messages": {}}, {"messages": []}, {"messages": [5]},
        {"messages": [{}]}, {"messages": [{"role": "user"}]}, {"messages": [{"content": "x"}]},
        {"messages": [{"role": None, "content": "x"}]},
        {"messages": [_MSG, {"role": "assistant", "content": {"a": 1}}]},
        {"messages": [_MSG, {"role": "assistant", "content": [{"type": "image_url"}]}]},
        {"messages": [_MSG, {"role": "assistant", "content": "4"}], "metadata": [1]},
    ]),
]
MALFORMED_GET_REWARD = [
    b"", b"{not json", b"\xc3\x28", b"[" * 200_000, b"null", b"[]", b"{}", b'{"query": null}', b'{"query": "x"}',
    b'{"query": {}}', b'{"query": [1]}', b'{"query": [null]}', b'{"query": [["x"]]}', b'{"query": [{"a": 1}]}',
    b'{"query": ["x"], "prompts": "x"}', b'{"query": ["x"], "prompts": 5}', b'{"query": ["x"], "prompts": [5]}',
    b'{"query": ["x"], "prompts": [["x"]]}', b'{"query": ["x"], "prompts": [{"a": 1}]}',
    b'{"query": ["x"], "prompts": ["x", "y"]}', b'{"query": ["x"], "prompts": []}', b'{"query": ["x"], "labels": 5}',
    b'{"query": ["x"], "labels": [1, 2]}', b'{"query": ["x"], "labels": {}}',
]


async def test_every_malformed_body_is_400_and_a_bad_authorization_401():
    async with FakeJudgeServer(responder) as judge, OpenAIModel(judge.url, "fake-judge") as model:
        async with RewardServer(make_grader(model), token="s3cret", estimator="dr_grpo") as server:
            auth = {"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
            got = []
            async with aiohttp.ClientSession() as s:
                for path, bodies in (("/grade", MALFORMED_GRADE), ("/get_reward", MALFORMED_GET_REWARD)):
                    for body in bodies:
                        async with s.post(f"{server.url}{path}", data=body, headers=auth) as r:
                            reply = await r.json()
                            got.append((path, body[:80], r.status, reply.get("error", "")[:80]))
                good = {"prompt": "2+2?", "completion": "4", "metadata": {"reference": "4"}}
                async with s.post(f"{server.url}/grade", json={"samples": [good]}, headers=auth) as r:
                    assert r.status == 200  # the server still grades
            host, port = server.url.rsplit("/", 1)[1].split(":")
            statuses = []
            for header in (b"Authorization: Bearer \xff\xfe\xfd", b"Authorization: \xc3(", b"Authorization: s3cret"):
                reader, writer = await asyncio.open_connection(host, int(port))
                writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + header + b"\r\nConnection: close\r\n\r\n")
                statuses.append((await reader.read()).split(b"\r\n", 1)[0])
                writer.close()
    wrong = [g for g in got if g[2] != 400 or not g[3]]
    assert not wrong, wrong
    assert len(got) == len(MALFORMED_GRADE) + len(MALFORMED_GET_REWARD)
    assert statuses == [b"HTTP/1.1 401 Unauthorized"] * 3
    assert judge.request_count == 1  # only the good sample reached the judge
    assert sum(n for (_, code), n in server.metrics.requests.items() if code >= 500) == 0


async def test_lone_surrogates_in_text_are_graded_not_a_500():
    async with FakeJudgeServer(responder) as judge, OpenAIModel(judge.url, "fake-judge", max_retries=0) as model:
        async with RewardServer(make_grader(model), estimator="dr_grpo") as server:
            async with aiohttp.ClientSession() as s:
                body = b'{"samples": [{"prompt": "2+2?\\ud800", "completion": "4", "metadata": {"reference": "4"}}]}'
                async with s.post(f"{server.url}/grade", data=body) as r:
                    grade = (r.status, (await r.json())["grades"][0]["value"])
                body = b'{"query": ["2+2?\\udfff 4"], "prompts": ["2+2?\\udfff"], "labels": ["4"]}'
                async with s.post(f"{server.url}/get_reward", data=body) as r:
                    reward = (r.status, (await r.json())["rewards"])
    assert grade == (200, 1.0) and reward == (200, [1.0])
    assert judge.request_count == 2  # both reached the judge


# --------------------------------------------------------------------------
# --workers N
# --------------------------------------------------------------------------
def test_route_is_stable_and_metrics_sum():
    assert route("p", 3) == route("p", 3) and {route(f"p{i}", 3) for i in range(30)} == {0, 1, 2}
    a, b = _Metrics(), _Metrics()
    for m, scored, latency in ((a, 3, 0.25), (b, 4, 0.5)):
        m.grades.update({"scored": scored, "unscored": 1})
        m.latency_sum, m.latency_count = latency, 4
        m.requests[("/grade", 200)] = 5
    front = _Metrics()
    front.requests[("/grade", 200)] = 7
    for m in (a, b):  # as a worker sends them to its front (GET /metrics?format=json)
        front.add(json.loads(json.dumps(m.counts())))
    text = front.text()
    assert 'rewardjudge_grades_total{status="scored"} 7\n' in text
    assert 'rewardjudge_grades_total{status="unscored"} 2\n' in text
    assert "rewardjudge_judge_latency_seconds_sum 0.750000\n" in text
    assert 'rewardjudge_requests_total{endpoint="/grade",code="200"} 7\n' in text  # the front's, not 17
    assert text.count("# TYPE rewardjudge_grades_total counter") == 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url, token="tok"):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    return urllib.request.urlopen(req, timeout=30).read().decode()


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in metrics")


def test_workers_route_each_group_to_one_worker_sum_metrics_and_drain(tmp_path):
    graders = tmp_path / "graders.py"
    graders.write_text(textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_serve_hardening import make_grader
        def make(model):
            return make_grader(model)
    """))
    port = _free_port()
    prompts = [f"what is {i} + {i}?" for i in range(12)]
    with FakeJudgeServer(responder, latency=0.05) as judge:
        proc = subprocess.Popen([sys.executable, "-m", "rewardjudge", "serve", "--grader", f"{graders}:make",
                                 "--judge", judge.url, "--judge-model", "fake-judge", "--max-retries", "0",
                                 "--port", str(port), "--workers", "3", "--estimator", "dr_grpo", "--group-size", "4"],
                                env={**os.environ, "REWARDJUDGE_SERVE_TOKEN": "tok"}, stderr=subprocess.PIPE,
                                text=True)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    health = json.loads(urllib.request.urlopen(f"{base}/health", timeout=1).read())
                    break
                except OSError:
                    assert proc.poll() is None, proc.stderr.read()
                    time.sleep(0.1)
            assert health["workers"] == 3 and health["grader"] == "hardening-judge"

            def sample(i, answer):
                return {"prompt": prompts[i], "completion": answer, "metadata": {"reference": str(2 * i)}}

            async def fire():
                auth = {"Authorization": "Bearer tok"}
                async with aiohttp.ClientSession(headers=auth) as s:
                    async def grade(samples):
                        async with s.post(f"{base}/grade", json={"samples": samples}) as r:
                            assert r.status == 200, await r.text()
                            return (await r.json())["grades"]
                    # each prompt's 4 samples in 4 requests, all at once; then one request of every prompt
                    singles = await asyncio.gather(*(grade([sample(i, a)]) for i in range(12)
                                                     for a in (str(2 * i), "x", str(2 * i), "boom")))
                    mixed = await grade([sample(i, str(2 * i) if i % 2 else "no") for i in range(12)])
                    body = {"query": [f"{p} {a}" for p in prompts[:4] for a in ("A", "B")],
                            "prompts": [p for p in prompts[:4] for _ in range(2)],
                            "labels": ["A"] * 8}
                    async with s.post(f"{base}/get_reward", json=body) as r:
                        assert r.status == 200, await r.text()
                        rewards = (await r.json())["rewards"]
                    async with s.post(f"{base}/grade", json={"samples": "x"}) as r:
                        bad = (r.status, (await r.json())["error"])

                    async def reward(answer):  # OpenRLHF's form: one sample per request
                        body = {"query": [f"g? {answer}"], "prompts": ["g?"], "labels": ["4"]}
                        async with s.post(f"{base}/get_reward", json=body) as r:
                            assert r.status == 200, await r.text()
                            return (await r.json())["rewards"][0]
                    group = await asyncio.gather(*(reward(a) for a in ("4", "5", "4", "boom")))
                    return [g for gs in singles for g in gs], mixed, rewards, bad, group

            singles, mixed, rewards, bad, group = asyncio.run(fire())
            metrics = _get(f"{base}/metrics")  # after every reply: nothing in flight
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            stderr = proc.stderr.read()
    worker_of: dict[str, set] = {}
    for k, g in enumerate(singles):
        worker_of.setdefault(prompts[k // 4], set()).add(g["worker"])
    for i, g in enumerate(mixed):
        worker_of[prompts[i]].add(g["worker"])
    assert all(len(w) == 1 for w in worker_of.values()), worker_of  # a group never spans workers
    pids = set().union(*worker_of.values())
    assert len(pids) == 3  # the groups are spread over the three workers
    assert [g["status"] for g in singles[:4]] == ["scored", "scored", "scored", "unscored"]
    # four /get_reward requests of one prompt met in one worker: the unscored one gets its group's mean
    assert group == [1.0, 0.0, 1.0, pytest.approx(2 / 3)]
    # a request split over workers comes back in its order
    assert [g["value"] for g in mixed] == [0.0 if i % 2 == 0 else 1.0 for i in range(12)]
    assert rewards == [1.0, 0.0] * 4
    assert bad[0] == 400 and "samples" in bad[1]
    # /metrics: the workers' counters summed
    assert _metric(metrics, 'rewardjudge_grades_total{status="scored"}') == 12 * 3 + 12 + 8 + 3
    assert _metric(metrics, 'rewardjudge_grades_total{status="unscored"}') == 12 + 1
    assert _metric(metrics, 'rewardjudge_requests_total{endpoint="/grade",code="200"}') == 12 * 4 + 1
    assert _metric(metrics, "rewardjudge_workers") == 3
    assert "drained" in stderr and "3 workers" in stderr
    for pid in pids:  # the workers exited with the front
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
