"""spawn_judge: command lines, readiness, clean stops, no orphans."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from rewardjudge.errors import ConfigError, JudgeStartupError
from rewardjudge.models import spawn_judge
from rewardjudge.models import embedded_model_path
from rewardjudge.models._spawn import JudgeServer, server_command


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_llama_cpp_command():
    cmd = server_command("llama_cpp", "/m.gguf", "127.0.0.1", 8011, served_name="j", n_threads=2)
    assert cmd[1:3] == ["-m", "llama_cpp.server"]
    assert cmd[cmd.index("--model") + 1] == "/m.gguf" and cmd[cmd.index("--port") + 1] == "8011"
    assert cmd[cmd.index("--model_alias") + 1] == "j" and cmd[cmd.index("--n_threads") + 1] == "2"


def test_vllm_and_sglang_commands():
    v = server_command("vllm", "Qwen/Qwen2.5-7B-Instruct", "127.0.0.1", 9000, served_name="judge",
                       context_length=8192, extra_args=["--tensor-parallel-size", "2"])
    assert v[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert v[v.index("--model") + 1] == "Qwen/Qwen2.5-7B-Instruct"
    assert v[v.index("--served-model-name") + 1] == "judge" and v[v.index("--max-model-len") + 1] == "8192"
    assert v[-2:] == ["--tensor-parallel-size", "2"]
    s = server_command("sglang", "/models/judge", "127.0.0.1", 9001, served_name="judge", context_length=4096)
    assert s[1:3] == ["-m", "sglang.launch_server"]
    assert s[s.index("--model-path") + 1] == "/models/judge" and s[s.index("--context-length") + 1] == "4096"


def test_vllm_spawn_builds_openai_model_with_json_schema():
    server = JudgeServer("vllm", "some/model", port=9123, served_name="judge")
    model = server.model()
    assert model.base_url == "http://127.0.0.1:9123/v1" and model.structured_output == "json_schema"


@pytest.mark.parametrize("backend, model", [("tgi", None), ("vllm", None)])
def test_bad_backend_config(backend, model):
    with pytest.raises(ConfigError):
        JudgeServer(backend, model)


def test_embedded_model_is_found():
    path = embedded_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


async def test_startup_failure_reports_log_and_leaves_no_process(tmp_path):
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"not a gguf")
    spawner = spawn_judge(model=bogus, startup_timeout=60)
    with pytest.raises(JudgeStartupError) as info:
        async with spawner:
            pass
    assert "exited" in str(info.value)
    assert spawner.server.process is None


@pytest.mark.judge
async def test_spawned_judge_answers_and_stops_even_on_error():
    spawner = spawn_judge()
    pid = None
    with pytest.raises(RuntimeError, match="user code failed"):
        async with spawner as judge:
            pid = spawner.server.process.pid
            reply = await judge.chat([{"role": "user", "content": "Say OK."}])
            assert isinstance(reply.text, str) and reply.usage["prompt_tokens"] > 0
            schema = {"type": "object", "properties": {"score": {"type": "string", "enum": ["PASS", "FAIL"]}},
                      "required": ["score"]}
            structured = await judge.chat([{"role": "user", "content": "Verdict?"}], json_schema=schema)
            assert json.loads(structured.text)["score"] in ("PASS", "FAIL")
            raise RuntimeError("user code failed")
    assert pid is not None and not alive(pid)


@pytest.mark.judge
def test_killed_parent_leaves_no_orphan(tmp_path):
    """A parent SIGKILLed while its judge runs: the child dies with it (PR_SET_PDEATHSIG)."""
    import signal
    import subprocess
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import asyncio, sys\n"
        "from rewardjudge.models import spawn_judge\n"
        "async def main():\n"
        "    s = spawn_judge()\n"
        "    async with s:\n"
        "        print(s.server.process.pid, flush=True)\n"
        "        await asyncio.sleep(60)\n"
        "asyncio.run(main())\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    child_pid = int(parent.stdout.readline())
    assert alive(child_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(100):
        if not alive(child_pid):
            break
        time.sleep(0.1)
    assert not alive(child_pid)


def test_extra_args_none_means_none():
    """``spawn_judge(extra_args=None)`` was a TypeError; None is no extra arguments."""
    assert server_command("vllm", "m", "127.0.0.1", 9000, served_name="j", extra_args=None) == \
        server_command("vllm", "m", "127.0.0.1", 9000, served_name="j")


def test_unknown_backend_is_named_with_the_known_ones():
    said = re.escape("unknown judge backend 'ollama'; expected one of ('llama_cpp', 'vllm', 'sglang'")
    for make in (lambda: server_command("ollama", "m", "127.0.0.1", 1, served_name="j"),
                 lambda: JudgeServer("ollama"), lambda: JudgeServer("ollama", "m")):
        with pytest.raises(ConfigError, match=said + r"\)\Z"):
            make()
    with pytest.raises(ConfigError, match=said + r", 'torch'\)\Z"):
        spawn_judge("ollama")
