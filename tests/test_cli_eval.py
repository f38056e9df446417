"""``rewardjudge eval`` / ``compare`` as a user runs them: a subprocess per command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardjudge.testing import Fault, FakeJudgeServer

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


def run(*args: str, cwd: Path = ROOT, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rewardjudge", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def verdict_by_length(req):
    # a deterministic verdict that differs between rows: odd-length prompts fail
    return json.dumps({"reasoning": "looked at it",
                       "score": "FAIL" if len(req["messages"][-1]["content"]) % 2 else "PASS"})


@pytest.fixture
def data_1000(tmp_path) -> Path:
    path = tmp_path / "answers.jsonl"
    with open(path, "w") as f:
        for i in range(1000):
            answer = json.dumps({"answer": "x" * (i % 5), "confidence": "low"}) if i % 50 else "oops"
            f.write(json.dumps({"question": f"Question {i}?", "response": answer, "gold": "x", "id": i}) + "\n")
    return path


def test_eval_on_1000_rows_against_the_fake_server(tmp_path, data_1000):
    out = tmp_path / "run"
    with FakeJudgeServer(verdict_by_length) as server:
        # --judge-model left out: the server's only model is used
        r = run("eval", str(data_1000), "--judge", server.url, "--grader", "demo", "--output", str(out),
                "--cache", str(tmp_path / "cache.sqlite"))
        assert r.returncode == 0, r.stderr[-3000:]
        # 20 malformed answers and 180 empty ones ({"answer": "", "confidence": "low"}: the one
        # free-text field is empty) never reach the judge
        assert server.request_count == 1 + 800  # the start-up probe, then the rows
        assert "rows: 1000  scored: 800  penalized: 200  unscored: 0" in r.stdout
        assert "row/s" in r.stderr  # the progress bar, with its rate
        assert "reference: not mapped; 'gold' might be it" in r.stderr  # said, not silently mapped
        rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        assert [row["id"] for row in rows] == list(range(1000))
        assert {row["grade_status"] for row in rows[1:50] if row["id"] % 5} == {"scored"}
        assert {row["grade_status"] for row in rows[5:50:5]} == {"penalized"}
        assert rows[0]["grade_status"] == "penalized" and rows[0]["grade_value"] == 0.0
        # the same command again resumes: nothing left to ask
        again = run("eval", str(data_1000), "--judge", server.url, "--grader", "demo", "--output", str(out))
        assert again.returncode == 0 and "graded now: 0  already done: 1000" in again.stdout
        assert server.request_count == 800 + 2  # only its probe
        # a fresh output folder with the same cache: every reply comes from the cache
        cached = run("eval", str(data_1000), "--judge", server.url, "--grader", "demo", "--output",
                     str(tmp_path / "run2"), "--cache", str(tmp_path / "cache.sqlite"), "--no-progress")
        assert cached.returncode == 0, cached.stderr[-3000:]
        assert server.request_count == 800 + 3
    rows2 = [json.loads(x) for x in (tmp_path / "run2" / "results.jsonl").read_text().splitlines()]
    assert [r["grade_value"] for r in rows2] == [r["grade_value"] for r in rows]
    cmp = run("compare", str(out), str(tmp_path / "run2"))
    assert cmp.returncode == 0 and "b - a: +0.0000" in cmp.stdout


def main_in_process(capsys, *args: str) -> tuple[int, str, str]:
    """The console script's entry point, run here (no interpreter start-up)."""
    from rewardjudge.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


def test_retry_unscored_after_an_outage(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"q{i}", "completion": json.dumps(
        {"answer": "a", "confidence": "high"})}) + "\n" for i in range(6)))
    out = tmp_path / "run"
    args = ("eval", str(data), "--grader", "demo", "--output", str(out), "--judge-model", "fake-judge",
            "--max-retries", "0", "--no-progress")
    with FakeJudgeServer() as server:
        # the start-up probe is answered, then the judge is down for the whole first run
        server.enqueue(Fault.reply("OK"), *[Fault.http(503)] * 6)
        code, stdout, stderr = main_in_process(capsys, *args, "--judge", server.url, "--concurrency", "1")
        assert code == 3, stderr  # every row unscored
        assert "--retry-unscored" in stderr
        code, stdout, _ = main_in_process(capsys, *args, "--judge", server.url)
        assert "graded now: 0" in stdout and server.request_count == 1 + 6 + 1  # probes and rows
        code, stdout, _ = main_in_process(capsys, *args, "--judge", server.url, "--retry-unscored")
        assert code == 0 and "graded now: 6" in stdout
        assert "scored: 6  penalized: 0  unscored: 0" in stdout
        assert server.request_count == 3 + 12


@pytest.mark.parametrize("args,message", [
    (["--grader", "no_such_mod:x", "--judge", "http://127.0.0.1:9/v1", "--judge-model", "m"],
     "cannot import"),                                                   # unknown grader module
    (["--grader", "demo"], "--judge is required"),                       # no judge
    (["--grader", "dmeo", "--judge", "http://127.0.0.1:9/v1"], "unknown grader spec 'dmeo'"),  # before the judge
    (["--grader", "demo", "--judge", "carrier-pigeon"], "not understood"),  # bad judge
    (["--grader", "demo", "--judge", "http://127.0.0.1:9/v1", "--judge-model", "m",
      "--columns", "prompt=nope"], "'nope'"),                            # missing column
])
def test_usage_errors_exit_2_with_a_message(tmp_path, capsys, args, message):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "q", "completion": "a"}) + "\n")
    code, _, err = main_in_process(capsys, "eval", str(data), "--output", str(tmp_path / "o"), *args)
    assert code == 2 and message in err, err[-2000:]


def test_the_options_the_command_builds_are_handed_over_and_a_keyword_beside_them_wins():
    # eval builds EvalOptions once, before any judge, and adds a factory-built scorer's columns as a keyword
    from rewardjudge.evaluate import evaluate_dataset
    from rewardjudge.evaluate._runner import EvalOptions
    from rewardjudge.graders import TemplatedPromptJudgeGrader
    from rewardjudge.testing import ScriptedModel

    judge = ScriptedModel(default='{"reasoning": "ok", "score": "PASS"}')
    grader = TemplatedPromptJudgeGrader("g", judge, "", "{{completion}}")
    data = [{"prompt": f"q{i}", "completion": "a"} for i in range(6)]
    options = EvalOptions(progress=False, limit=5)
    assert len(evaluate_dataset(data, grader, options).dataset) == 5
    assert len(evaluate_dataset(data, grader, options, limit=2).dataset) == 2


@pytest.mark.judge
def test_eval_against_the_spawned_embedded_judge(tmp_path):
    src = ROOT / "rewardjudge" / "data" / "demo_completions.jsonl"
    out = tmp_path / "emb"
    # 3 rows: two answers for the judge, one malformed (penalized without a call)
    r = run("eval", str(src), "--judge", "embedded", "--grader", "demo", "--output", str(out),
            "--limit", "3", "--columns", "metadata=id", "--no-progress", timeout=300)
    assert r.returncode in (0, 3), r.stderr[-3000:]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["good-paris", "poor-paris", "malformed-confidence"]
    assert rows[2]["grade_status"] == "penalized" and rows[2]["grade_attempts"] == 0
    for row in rows[:2]:
        # a 135M judge's verdicts are noise: check the pipeline, not the verdict
        assert row["grade_status"] in ("scored", "unscored")
        assert row["grade_attempts"] >= 1 and row["grade_prompt_tokens"] > 0
        if row["grade_status"] == "scored":
            assert row["grade_value"] in (0.0, 1.0) and row["grade_raw_reply"]
    assert (out / "histogram.png").exists()


# -- the command line: version, options anywhere, column report, exit codes --------
def demo_rows(n: int) -> str:
    return "".join(json.dumps({"prompt": f"q{i}", "completion": json.dumps(
        {"answer": "a", "confidence": "high"}), "gold": "a"}) + "\n" for i in range(n))


def test_version_and_global_options_before_or_after_the_subcommand(tmp_path, capsys):
    from rewardjudge import __version__

    code, out, _ = main_in_process(capsys, "--version")
    assert code == 0 and out.strip() == f"rewardjudge {__version__}"
    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(2))
    with FakeJudgeServer() as server:
        for i, args in enumerate([
            ["--log-level", "INFO", "eval", str(data)],   # a global option before the subcommand
            ["eval", str(data), "--log-level", "info"],   # ... and after it
        ]):
            code, _, err = main_in_process(capsys, *args, "--grader", "demo", "--judge", server.url,
                                           "--output", str(tmp_path / f"o{i}"), "--no-progress")
            assert code == 0, err
            assert "rewardjudge: INFO: columns: prompt: 'prompt' (found by name)" in err


def test_a_group_option_is_accepted_after_its_subcommand():
    import argparse

    from rewardjudge.cli import _share_options

    p = argparse.ArgumentParser(prog="x")
    p.add_argument("--log-level")
    sub = p.add_subparsers(dest="command", required=True)
    group = sub.add_parser("scorers")
    group.add_argument("--registry")
    leaves = group.add_subparsers(dest="action", required=True)
    leaves.add_parser("create").add_argument("file")
    leaves.add_parser("show").add_argument("--registry", dest="other")  # its own option wins
    _share_options(p)
    assert p.parse_args(["scorers", "--registry", "A", "create", "f"]).registry == "A"
    assert p.parse_args(["scorers", "create", "f", "--registry", "B"]).registry == "B"
    assert p.parse_args(["scorers", "create", "f", "--log-level", "INFO"]).log_level == "INFO"
    assert p.parse_args(["--log-level", "DEBUG", "scorers", "create", "f"]).log_level == "DEBUG"
    shown = p.parse_args(["scorers", "show", "--registry", "C"])
    assert shown.other == "C" and shown.registry is None


def test_the_column_mapping_is_printed_and_unsure_columns_are_left_alone(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(3))
    with FakeJudgeServer() as server:
        code, _, err = main_in_process(capsys, "eval", str(data), "--grader", "demo", "--judge", server.url,
                                       "--output", str(tmp_path / "o"), "--no-progress")
    assert code == 0, err
    assert "columns:\n  prompt: 'prompt' (found by name)\n  completion: 'completion' (found by name)\n" \
           "  reference: not mapped; 'gold' might be it (map it with --columns reference=gold)" in err
    rows = [json.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert rows[0]["gold"] == "a"  # the column is kept in the results, just not used as the reference


def test_fail_on_unscored_reports_a_partial_outage(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(6))
    code, help_text, _ = main_in_process(capsys, "eval", "--help")
    assert code == 0 and "--fail-on-unscored" in help_text and "4    done, some rows unscored" in help_text
    args = ("eval", str(data), "--grader", "demo", "--judge-model", "fake-judge", "--max-retries", "0",
            "--concurrency", "1", "--no-progress")
    with FakeJudgeServer() as server:
        server.enqueue(Fault.reply("OK"), Fault.http(503), Fault.http(503))  # the probe; 2 of 6 rows meet an outage
        code, out, err = main_in_process(capsys, *args, "--judge", server.url, "--output", str(tmp_path / "a"))
        assert code == 0 and "unscored: 2" in out  # by default only an all-unscored run fails
        server.enqueue(Fault.reply("OK"), Fault.http(503), Fault.http(503))
        code, out, err = main_in_process(capsys, *args, "--judge", server.url, "--output", str(tmp_path / "b"),
                                         "--fail-on-unscored")
        assert code == 4 and "--fail-on-unscored: 2 of 6 row(s) unscored" in err
        # once the rows are graded again, the same command passes
        code, out, err = main_in_process(capsys, *args, "--judge", server.url, "--output", str(tmp_path / "b"),
                                         "--fail-on-unscored", "--retry-unscored")
        assert code == 0 and "unscored: 0" in out, err


def test_content_part_messages_do_not_stop_eval(tmp_path, capsys):
    answer = json.dumps({"answer": "Paris", "confidence": "high"})
    rows = [
        {"messages": [{"role": "user", "content": "Capital of France?"},
                      {"role": "assistant", "content": answer}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "Capital of France?"}]},
                      {"role": "assistant", "content": [{"type": "text", "text": answer.replace("Paris", "Lyon")}]}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                                  {"type": "image_url", "image_url": {"url": "cat.png"}}]},
                      {"role": "assistant", "content": answer}]},
    ]
    data = tmp_path / "parts.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeJudgeServer() as server:
        code, out, err = main_in_process(capsys, "eval", str(data), "--grader", "demo", "--judge", server.url,
                                         "--output", str(tmp_path / "o"), "--no-progress")
        assert server.request_count == 1 + 2  # the probe; the image row is never sent
    assert code == 0, err
    got = [json.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert [r["grade_status"] for r in got] == ["scored", "scored", "unscored"]
    assert got[2]["grade_error"].startswith("input error: ")
    assert "messages: 'messages' (found by name)" in err


def test_a_judge_that_cannot_answer_is_refused_before_any_row(tmp_path, capsys):
    """The start-up check: not reachable, a model it does not serve, a probe it cannot answer —
    each a usage error (exit 2) saying what to fix, and no row is graded or journaled."""
    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(3))
    args = ("eval", str(data), "--grader", "demo", "--no-progress", "--max-retries", "0")
    with FakeJudgeServer() as server:
        url = server.url
        code, _, err = main_in_process(capsys, *args, "--judge", url, "--judge-model", "other",
                                       "--output", str(tmp_path / "a"))
        assert code == 2 and "does not serve 'other'" in err and "it lists ['fake-judge']" in err, err
        server.enqueue(Fault.http(404))
        code, _, err = main_in_process(capsys, *args, "--judge", url, "--output", str(tmp_path / "b"))
        assert code == 2 and "probe request failed" in err and "404" in err, err
        assert server.request_count == 1  # the probe only
    code, _, err = main_in_process(capsys, *args, "--judge", url, "--output", str(tmp_path / "c"))
    assert code == 2 and "is not reachable" in err, err  # the server is gone
    for name in "abc":
        assert not (tmp_path / name / "journal.jsonl").exists() or not (tmp_path / name / "journal.jsonl").read_text()


def test_a_judge_that_dies_mid_run_stops_the_run_and_the_rerun_resumes(tmp_path, capsys):
    """The outage guard: more than half of the rows unscored in 3 windows of 64 rows in a row
    stops the run (exit 5) with the judge-health summary; finished rows are kept."""
    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(600))
    args = ("eval", str(data), "--grader", "demo", "--judge-model", "fake-judge", "--max-retries", "0",
            "--concurrency", "1", "--no-progress", "--output", str(tmp_path / "run"))
    alive = {"ok": 100}

    def judge(req):
        alive["ok"] -= 1
        return Fault.reply('{"reasoning": "fine", "score": "PASS"}') if alive["ok"] >= 0 else Fault.http(503)

    with FakeJudgeServer(judge) as server:
        code, out, err = main_in_process(capsys, *args, "--judge", server.url)
        assert code == 5 and "judge outage" in err and "unscored by kind: http" in err, err
        assert "rerun the same command to resume" in err
        asked = server.request_count
        assert asked < 100 + 4 * 64  # stopped after the third bad window, not after 600 rows
        journal = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
        assert 99 <= len(journal) < 600
        alive["ok"] = 10 ** 6  # the judge is back
        code, out, err = main_in_process(capsys, *args, "--judge", server.url, "--retry-unscored")
        assert code == 0 and "unscored: 0" in out, err


def test_ctrl_c_says_what_it_waits_for_and_a_second_one_stops(tmp_path):
    """The first Ctrl-C says it waits for the rows in flight; the second stops the run
    (exit 130); the same command then resumes."""
    import signal
    import time

    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(50))
    def judge(req):  # answers the start-up probe, then never answers a row in this test's life
        probe = "Reply with OK." in req["messages"][-1]["content"]
        return "OK" if probe else Fault.timeout(600)

    with FakeJudgeServer(judge) as server:
        proc = subprocess.Popen([sys.executable, "-m", "rewardjudge", "eval", str(data), "--grader", "demo",
                                 "--judge", server.url, "--judge-model", "fake-judge", "--no-progress",
                                 "--output", str(tmp_path / "run")],
                                cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            while server.request_count < 2:          # rows are in flight at the judge
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.1)
            proc.send_signal(signal.SIGINT)
            line = ""
            while "interrupted" not in line:
                line = proc.stderr.readline()
                assert line, "no message after Ctrl-C"
            assert "waiting for the judge's answers to the rows in flight" in line
            assert "Ctrl-C again to stop at once" in line
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=120) == 130
            assert "stopped at once" in proc.stderr.read()
        finally:
            proc.kill()
            proc.wait()


def test_judge_torch_is_refused_for_a_chat_grader_on_cpu(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():  # the check is about machines without a GPU
        return
    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(2))
    code, _, err = main_in_process(capsys, "eval", str(data), "--grader", "demo", "--judge", "torch",
                                   "--output", str(tmp_path / "o"), "--no-progress")
    assert code == 2 and "--judge embedded" in err and "probability grader" in err, err
    assert not (tmp_path / "o" / "results.jsonl").exists()


# -- scorers in eval: template variables checked against the columns, the scorer's own model -----
def scorer_file(tmp_path: Path, template: str, model: str = "scorer-model") -> Path:
    path = tmp_path / "scorer.json"
    path.write_text(json.dumps({"name": "Resolved", "config": {
        "model": model, "prompt_template": template, "output_spec": {"type": "boolean"}}}))
    return path


def scorer_rows(n: int = 3) -> str:
    return "".join(json.dumps({"prompt": f"q{i}", "completion": f"a{i}", "ticket": f"Ticket {i}?",
                               "gold": f"g{i}", "extra": {"product": f"p{i}"}}) + "\n" for i in range(n))


def boolean_verdict(req):
    return json.dumps({"reason": "fine", "verdict": True})


def test_a_scorer_variable_that_no_column_gives_is_a_usage_error_before_the_judge(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(scorer_rows())
    grader = scorer_file(tmp_path, "Q: {{ tiket }}\nA: {{ completion }}")  # a typo
    code, _, err = main_in_process(capsys, "eval", str(data), "--grader", str(grader), "--output",
                                   str(tmp_path / "o"), "--judge", "http://127.0.0.1:9/v1", "--no-progress")
    # checked before the judge is asked: the unreachable judge is never reported
    assert code == 2 and "'tiket'" in err and "no column of the data" in err, err
    assert "'ticket'" in err and "'completion'" in err  # the columns are listed
    assert "not reachable" not in err
    assert not (tmp_path / "o" / "journal.jsonl").exists()


def test_scorer_variables_read_mapped_named_and_nested_columns(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(scorer_rows())
    # ticket: a column of that name (added to metadata, and said); reference: --columns reference=;
    # product: a key of a metadata column holding objects
    grader = scorer_file(tmp_path, "Q: {{ ticket }}\nA: {{ completion }}\nR: {{ reference }}\nP: {{ product }}")
    with FakeJudgeServer(boolean_verdict, model="scorer-model") as server:
        code, out, err = main_in_process(capsys, "eval", str(data), "--grader", str(grader), "--judge", server.url,
                                         "--columns", "reference=gold,metadata=extra", "--output",
                                         str(tmp_path / "o"), "--no-progress")
        prompts = [r["messages"][-1]["content"] for r in server.requests[1:]]
    assert code == 0, err
    assert "variable(s) ticket read the column(s) of the same name" in err
    assert "scored: 3" in out
    assert any("Q: Ticket 1?" in p and "R: g1" in p and "P: p1" in p for p in prompts), prompts
    rows = [json.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert all(json.loads(r["grade_extra"])["missing_variables"] == [] for r in rows)


class TwoModelServer(FakeJudgeServer):
    """A fake judge whose /models lists two models (one of them the scorer's)."""

    def _handle(self, conn, method, path, body):
        if method == "GET" and path.rstrip("/").endswith("/models"):
            conn._send(200, json.dumps({"data": [{"id": "fake-judge"}, {"id": "scorer-model"}]}).encode())
            return
        super()._handle(conn, method, path, body)


def test_judge_model_defaults_to_the_scorers_model_when_the_server_lists_it(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(scorer_rows(2))
    grader = scorer_file(tmp_path, "Q: {{ ticket }}\nA: {{ completion }}")
    with TwoModelServer(boolean_verdict) as server:
        code, out, err = main_in_process(capsys, "eval", str(data), "--grader", str(grader), "--judge", server.url,
                                         "--output", str(tmp_path / "o"), "--no-progress")
        asked = {r["model"] for r in server.requests}
    assert code == 0 and "scored: 2" in out, err
    assert asked == {"scorer-model"}


def test_a_scorer_runs_on_another_model_only_with_allow_model_override(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(scorer_rows(2))
    grader = scorer_file(tmp_path, "Q: {{ ticket }}\nA: {{ completion }}")
    args = ("eval", str(data), "--grader", str(grader), "--no-progress")
    with FakeJudgeServer(boolean_verdict) as server:  # serves only "fake-judge"
        for extra in ([], ["--judge-model", "fake-judge"]):
            code, _, err = main_in_process(capsys, *args, "--judge", server.url, *extra,
                                           "--output", str(tmp_path / "a"))
            assert code == 2 and "names judge model 'scorer-model'" in err and "--allow-model-override" in err, err
        assert server.request_count == 0  # refused before the probe
        code, out, err = main_in_process(capsys, *args, "--judge", server.url, "--allow-model-override",
                                         "--output", str(tmp_path / "b"))
        assert code == 0 and "scored: 2" in out, err
        assert {r["model"] for r in server.requests} == {"fake-judge"}
    rows = [json.loads(x) for x in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
    extra = json.loads(rows[0]["grade_extra"])
    assert extra["scorer_model"] == "scorer-model" and extra["judge_model"] == "fake-judge"
    # the embedded judge is another model too: refused before it is spawned
    code, _, err = main_in_process(capsys, *args, "--judge", "embedded", "--output", str(tmp_path / "c"))
    assert code == 2 and "--judge embedded serves 'smollm2-135m-instruct'" in err, err
