"""Kill-and-resume: SIGKILL the CLI mid-run several times, rerun, lose nothing.

The judge is a FakeJudgeServer in this process, so every request of every
run is counted here, and each request names its row (the question text).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from rewardjudge.evaluate import evaluate_dataset, resolve_grader
from rewardjudge.evaluate._journal import Journal
from rewardjudge.models import OpenAIModel
from rewardjudge.testing import FakeJudgeServer

N = 240
ROOT = Path(__file__).resolve().parents[1]
COMPARED = ("grade_value", "grade_status", "grade_reasoning", "grade_error", "grade_raw_reply",
            "grade_version", "grade_key", "grade_prompt_tokens", "grade_completion_tokens")


def responder(req):
    asked = re.search(r"What is (\d+)\?", req["messages"][-1]["content"])
    if asked is None:
        return "OK"  # the start-up probe
    question = asked.group(1)
    score = "PASS" if int(question) % 4 else "FAIL"
    return json.dumps({"reasoning": f"checked {question}", "score": score})


def asked_rows(requests) -> list[int]:
    # the rows asked (each run's start-up probe asks no row)
    return [int(m.group(1)) for r in requests if (m := re.search(r"What is (\d+)\?", r["messages"][-1]["content"]))]


def write_data(path: Path) -> set[int]:
    """N rows; every 7th answer is malformed (penalized without a judge call)."""
    judged = set()
    with open(path, "w") as f:
        for i in range(N):
            ok = i % 7 != 3
            completion = json.dumps({"answer": f"it is {i}", "confidence": "high"}) if ok else "{broken"
            if ok:
                judged.add(i)
            f.write(json.dumps({"question": f"What is {i}?", "completion": completion, "id": i}) + "\n")
    return judged


def journal_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def cli(data: Path, out: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "rewardjudge", "eval", str(data), "--judge", url, "--judge-model", "fake-judge",
            "--grader", "demo", "--output", str(out), "--columns", "metadata=id", "--concurrency", "4",
            "--no-progress"]


def test_sigkill_several_times_then_resume_matches_an_uninterrupted_run(tmp_path, monkeypatch):
    # one seal key for the killed runs and the reference run (a resumed run keeps its own in the
    # output folder; an uninterrupted run elsewhere would seal its requests with another)
    monkeypatch.setenv("REWARDJUDGE_SEAL_KEY", "resume-test-seal-key")
    data = tmp_path / "data.jsonl"
    judged = write_data(data)
    out = tmp_path / "killed"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    with FakeJudgeServer(responder, latency=0.03) as server:
        kills = 0
        for threshold in (30, 100, 170):  # journal lines at which the run is killed
            before_requests = server.request_count
            done_before = set(Journal(out / "journal.jsonl").load())
            proc = subprocess.Popen(cli(data, out, server.url), cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 60
            while journal_lines(out / "journal.jsonl") < threshold and proc.poll() is None:
                assert time.monotonic() < deadline, "the run made no progress"
                time.sleep(0.005)
            proc.kill()  # SIGKILL: no cleanup runs
            proc.wait(10)
            assert proc.returncode == -9, proc.stderr.read().decode()[-2000:]
            proc.stderr.close()
            kills += 1
            # rows finished in earlier runs were never sent to the judge again
            assert not set(asked_rows(server.requests[before_requests:])) & done_before
            assert not (out / "results.jsonl").exists()
        assert kills == 3
        done_at_last_kill = set(Journal(out / "journal.jsonl").load())
        assert 170 <= len(done_at_last_kill) < N
        before_final = server.request_count
        final = subprocess.run(cli(data, out, server.url), cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=120)
        assert final.returncode == 0, final.stderr[-2000:]
        assert not set(asked_rows(server.requests[before_final:])) & done_at_last_kill
        interrupted_requests = asked_rows(server.requests)

        # every judged row was asked; a row is asked twice only if it was in flight at a kill
        assert set(interrupted_requests) == judged
        repeats = len(interrupted_requests) - len(judged)
        assert 0 <= repeats <= kills * 4  # at most `--concurrency` rows in flight per kill

        # the uninterrupted reference run, against the same server
        start = server.request_count
        model = OpenAIModel(server.url, "fake-judge", max_concurrency=4)
        reference = evaluate_dataset(str(data), resolve_grader("demo", model), columns="metadata=id",
                                     output_dir=tmp_path / "clean", progress=False)
        assert server.request_count - start == len(judged)

    # the journal holds each row exactly once, none lost or duplicated
    journal_rows = [json.loads(x)["row"] for x in (out / "journal.jsonl").read_text().splitlines()]
    assert sorted(journal_rows) == list(range(N))
    got = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    want = reference.dataset.to_list()
    assert len(got) == len(want) == N
    for i, (g, w) in enumerate(zip(got, want)):
        assert g["id"] == w["id"] == i
        assert {k: g.get(k) for k in COMPARED} == {k: w.get(k) for k in COMPARED}, f"row {i}"
    assert sum(1 for g in got if g["grade_status"] == "penalized") == N - len(judged)
