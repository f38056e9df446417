"""rewardjudge serve: OpenRLHF's own reward client against our server on loopback,
/grade, /metrics, bad requests, the bearer token, batching, groups and SIGTERM."""

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

from rewardjudge import ConfigError
from rewardjudge.serve import RewardServer
from rewardjudge.serve._samples import openrlhf_thread
from rewardjudge.testing import FakeJudgeServer, ScriptedModel
from serve_judge import PASS, judge_fn, make_grader


@pytest.fixture(scope="module")
def tok():
    from rewardjudge.rl._policies import smollm2_tokenizer

    return smollm2_tokenizer()


class _Out:
    def __init__(self, ids):
        self.token_ids, self.finish_reason, self.logprobs = ids, "stop", None


class _Engine:
    """Stands in for OpenRLHF's vLLM engine: answers each prompt with a fixed text."""

    def __init__(self, tok, answer):
        self.ids = tok(answer + "<|im_end|>", add_special_tokens=False)["input_ids"]

    async def generate(self, prompt_token_ids, params, multi_modal_data=None):
        return type("R", (), {"outputs": [_Out(list(self.ids))]})()


class _Params:
    max_tokens, logprobs = 16, None


async def openrlhf_reward(url_or_py, tok, question, answer, label):
    """OpenRLHF's own single-turn executor: generation stubbed, reward call real."""
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    prompt = tok.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                     add_generation_prompt=True)
    executor = SingleTurnAgentExecutor(remote_rm_url=url_or_py)
    out = await executor.execute(prompt, label, _Params(), 512, tok, _Engine(tok, answer))
    return out


async def test_openrlhf_client_gets_rewards_and_unscored_is_the_group_mean(tok):
    model = ScriptedModel(judge_fn)
    async with RewardServer(make_grader(model), estimator="dr_grpo", group_size=4) as server:
        outs = await asyncio.gather(*(openrlhf_reward(f"{server.url}/get_reward", tok, "2+2?", a, "4")
                                      for a in ("4", "5", "4", "boom")))
    rewards = [o["reward"] for o in outs]
    assert rewards[:3] == [[1.0], [0.0], [1.0]]
    assert rewards[3] == [pytest.approx(2 / 3)]  # the judge failed: the group's mean, advantage 0, not 0
    assert [o["extra_logs"]["unscored"] for o in outs] == [[0.0], [0.0], [0.0], [1.0]]
    assert [o["extra_logs"]["group_partial"] for o in outs] == [[0.0]] * 4  # its group was complete
    sent = model.calls[0]["messages"][-1]["content"]
    assert "Question: 2+2?" in sent and "<|im_" not in sent  # chat markup and EOS stripped


def test_openrlhf_py_reward_func_form_is_refused_at_load(tmp_path):
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    graders = tmp_path / "graders.py"
    graders.write_text(textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_serve import make_grader
        GRADER = make_grader()
    """))
    rf = tmp_path / "reward.py"
    rf.write_text(f"from rewardjudge.serve import openrlhf_reward_func\n"
                  f"reward_func = openrlhf_reward_func({str(graders) + ':GRADER'!r}, group_size=4)\n")
    # OpenRLHF runs reward_func in its small to_thread pool and swallows what a call raises: waiting
    # there for a group would hold the pool, so the file is refused when OpenRLHF loads it
    with pytest.raises(ConfigError, match="HTTP form") as err:
        SingleTurnAgentExecutor(remote_rm_url=str(rf))
    assert "/get_reward" in str(err.value) and "--estimator dr_grpo" in str(err.value)


async def test_grade_endpoint_bad_requests_token_and_metrics():
    async with RewardServer(make_grader(), token="s3cret", max_body=4096) as server:
        auth = {"Authorization": "Bearer s3cret"}
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{server.url}/health") as r:  # no token needed
                assert r.status == 200
            async with s.post(f"{server.url}/grade", json={"samples": []}) as r:
                assert r.status == 401 and "bearer token" in (await r.json())["error"]
            async with s.get(f"{server.url}/metrics", headers={"Authorization": "Bearer wrong"}) as r:
                assert r.status == 401
            cases = [
                (b"{not json", 400, "not JSON"),                                   # not JSON
                (json.dumps({"prompts": ["p"]}).encode(), 400, "query"),           # /get_reward needs query
                (b'{"query": ["' + b"x" * 5000 + b'"]}', 413, "limit"),           # over max_body
                (json.dumps({"query": ["a"], "prompts": ["p", "q"]}).encode(), 400, "prompts"),
            ]
            for body, status, words in cases:
                async with s.post(f"{server.url}/get_reward", data=body, headers=auth) as r:
                    assert r.status == status and words in (await r.json())["error"]
            samples = [
                {"messages": [{"role": "user", "content": [{"type": "text", "text": "2+2?"}]},
                              {"role": "assistant", "content": "4"}], "metadata": {"reference": "4"}},
                {"prompt": "2+2?", "completion": "boom", "metadata": {"reference": "4"}},
                {"prompt": "2+2?", "completion": "5", "metadata": {"reference": "4"}},
            ]
            async with s.post(f"{server.url}/grade", json={"samples": samples}, headers=auth) as r:
                grades = (await r.json())["grades"]
            assert [g["status"] for g in grades] == ["scored", "unscored", "scored"]
            assert [g["value"] for g in grades] == [1.0, None, 0.0]
            assert grades[1]["reward"] == 0.5 and "503" in grades[1]["error"]  # same prompt: one group
            other_query = [samples[0], {**samples[1], "metadata": {"reference": "4", "query": {"id": 2}}}]
            async with s.post(f"{server.url}/grade", json={"samples": other_query}, headers=auth) as r:
                grades = (await r.json())["grades"]
            assert grades[1]["reward"] == 0.0  # another metadata query: its own group, no usable reward
            image = {"prompt": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
                     "completion": "a cat"}
            async with s.post(f"{server.url}/grade", json={"samples": [samples[0], image]}, headers=auth) as r:
                assert r.status == 400 and "samples[1]" in (await r.json())["error"]
            async with s.get(f"{server.url}/metrics", headers=auth) as r:
                text = await r.text()
    assert 'rewardjudge_grades_total{status="unscored"} 2' in text
    assert 'rewardjudge_unscored_total{kind="http"} 2' in text
    assert 'rewardjudge_requests_total{endpoint="/get_reward",code="413"} 1' in text


async def test_concurrent_requests_are_graded_in_one_batch():
    grader = make_grader(ScriptedModel(default=PASS))
    async with RewardServer(grader, batch_window=0.2, estimator="dr_grpo") as server:
        async with aiohttp.ClientSession() as s:
            async def one(i):
                body = {"query": [f"q{i} a"], "prompts": [f"q{i}"], "labels": ["a"]}
                async with s.post(f"{server.url}/get_reward", json=body) as r:
                    return (await r.json())["rewards"]
            outs = await asyncio.gather(*(one(i) for i in range(20)))
    assert outs == [[1.0]] * 20
    assert server.metrics.batched_samples == 20 and server.metrics.batches < 20  # requests shared batches


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_cli_serves_and_drains_on_sigterm(tmp_path):
    graders = tmp_path / "graders.py"
    graders.write_text(textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_serve import make_grader
        def make(model):
            return make_grader(model)
    """))
    port = _free_port()
    with FakeJudgeServer(lambda req: PASS, latency=1.5) as judge:
        env = {**os.environ, "REWARDJUDGE_SERVE_TOKEN": "tok"}
        proc = subprocess.Popen([sys.executable, "-m", "rewardjudge", "serve", "--grader", f"{graders}:make",
                                 "--judge", judge.url, "--judge-model", "fake-judge", "--port", str(port),
                                 "--estimator", "dr_grpo"],
                                env=env, stderr=subprocess.PIPE, text=True)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(200):
                try:
                    urllib.request.urlopen(f"{base}/health", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.1)
            req = urllib.request.Request(f"{base}/get_reward", method="POST",
                                         data=json.dumps({"query": ["q 4"], "prompts": ["q"], "labels": ["4"]}).encode(),
                                         headers={"Authorization": "Bearer tok", "Content-Type": "application/json"})
            import threading
            result = {}
            t = threading.Thread(target=lambda: result.setdefault("body", urllib.request.urlopen(req, timeout=30).read()))
            t.start()
            while judge.request_count < 2:  # past the start-up probe, the request reached the judge: in flight
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            t.join(30)
            assert json.loads(result["body"])["rewards"] == [1.0]  # answered although SIGTERM came first
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            stderr = proc.stderr.read()
    assert "drained" in stderr and "127.0.0.1" in stderr


@pytest.mark.parametrize("query, prompt, turns", [
    # ChatML prompt and EOS: markup split into turns, EOS dropped
    ("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>",
     "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n", [("user", "2+2?"), ("assistant", "4")]),
    # no markup: the prompt is one user turn
    ("Q: 2+2? A: 4</s>", "Q: 2+2? A:", [("user", "Q: 2+2? A:"), ("assistant", "4")]),
    # a prompt that does not round-trip: the whole query is graded
    ("something else", "Q", [("user", "Q"), ("assistant", "something else")]),
])
def test_openrlhf_queries_become_threads(query, prompt, turns):
    assert openrlhf_thread(query, prompt, "4").turns == turns


async def test_the_catalog_list_over_http_as_its_document_answers_it():
    """GET /api/v1/agent_version/judge_templates with a bearer token: the catalog document's
    list; errors in its {code, message, status} shape; an idempotency_key answers the same
    with the same query and idempotency_key_already_used with another."""
    from rewardjudge.catalog import listing

    path = "/api/v1/agent_version/judge_templates"
    async with RewardServer(make_grader(ScriptedModel([])), token="tok") as server, aiohttp.ClientSession() as http:
        auth = {"Authorization": "Bearer tok"}
        async with http.get(server.url + path, headers=auth) as r:
            assert r.status == 200 and await r.json() == listing()
        body = await r.json()
        assert body["default_system_prompt_template"] == "You are a judge.\n\n{{ criterion }}"
        async with http.get(server.url + path) as r:
            assert r.status == 401
            assert (await r.json())["code"] == "not_authenticated" and (await r.json())["status"] == "error"
        async with http.get(server.url + path, headers=auth, params={"idempotency_key": "k1"}) as r:
            assert r.status == 200 and await r.json() == listing()
        async with http.get(server.url + path, headers=auth, params={"idempotency_key": "k1"}) as r:
            assert r.status == 200 and await r.json() == listing()  # the same query: the same answer
        async with http.get(server.url + path, headers=auth,
                            params={"idempotency_key": "k1", "language": "fr"}) as r:
            error = await r.json()
            assert r.status == 409 and error["code"] == "idempotency_key_already_used"
            assert set(error) == {"code", "message", "status"}
        async with http.get(server.url + path, headers=auth, params={"language": "fr"}) as r:
            assert r.status == 200 and await r.json() == listing("fr")
        async with http.get(server.url + path, headers=auth, params={"language": "../x"}) as r:
            assert r.status == 400 and (await r.json())["code"] == "invalid_value"
