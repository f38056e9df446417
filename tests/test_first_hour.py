"""The mistakes a new user makes in the first hour: each one gets a clear answer, early."""

from __future__ import annotations

import asyncio
import json

import pytest

from rewardjudge import TemplatedPromptJudgeGrader
from rewardjudge.evaluate import aevaluate_dataset
from rewardjudge.testing import ScriptedModel

PASS = '{"reasoning": "ok", "score": "PASS"}'


def test_a_cancelled_run_keeps_the_answers_of_the_rows_in_flight(tmp_path):
    """Ctrl-C (a cancel) with every row already sent: the judge's answers still reach the journal,
    as the CLI's message promises, so the rerun asks the judge nothing again."""
    judge = ScriptedModel(default=PASS, delay=0.3)
    grader = TemplatedPromptJudgeGrader("k", judge, "Grade. {{output_schema}}", "{{completion}}")
    rows = [{"prompt": "q", "completion": f"a{i}"} for i in range(4)]

    async def run_and_cancel():
        task = asyncio.ensure_future(aevaluate_dataset(rows, grader, output_dir=tmp_path, progress=False))
        while not judge.calls:
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return
        raise AssertionError("the run was not stopped")

    asyncio.run(run_and_cancel())
    journal = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert sorted(r["row"] for r in journal) == [0, 1, 2, 3]
    assert {r["grade"]["status"] for r in journal} == {"scored"}


def test_serve_names_an_unknown_grader_before_it_asks_the_judge(capsys):
    from rewardjudge.cli import main

    with pytest.raises(SystemExit) as exc:  # the judge is unreachable: its error would come first
        main(["serve", "--grader", "dmeo", "--judge", "http://127.0.0.1:9/v1", "--port", "0"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "unknown grader spec 'dmeo'" in err and "catalog keys" in err, err


def test_serve_with_workers_names_an_unknown_grader_once_before_starting_any(capsys):
    from rewardjudge.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["serve", "--grader", "dmeo", "--judge", "http://127.0.0.1:9/v1", "--port", "0", "--workers", "3"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("unknown grader spec 'dmeo'") == 1, err
    assert "did not start" not in err, err


def test_a_judge_url_without_v1_is_pointed_at_v1(tmp_path, capsys):
    """A server that answers 404 off its /v1 routes (llama.cpp's, vLLM's): the error says where the
    model list was looked for and that the URL should end in /v1, not just that there are no models."""
    import http.server
    import threading

    from rewardjudge.cli import main

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_error(404)

        def log_message(self, *args):
            pass

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "q", "completion": "a"}) + "\n")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(SystemExit) as exc:
            main(["eval", str(data), "--grader", "demo", "--judge", url, "--output", str(tmp_path / "o")])
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"{url}/models" in err and "ends in /v1" in err, err


def test_data_without_a_completion_column_is_refused_not_penalized_row_by_row():
    """An answer column the mapping does not know ('answer'): before, every row was graded as an
    empty answer and got the penalty, a score the policy never earned; now the run is refused and
    the error names the column that might be meant."""
    from rewardjudge import ConfigError
    from rewardjudge.evaluate import evaluate_dataset

    judge = ScriptedModel(default=PASS)
    grader = TemplatedPromptJudgeGrader("k", judge, "Grade. {{output_schema}}", "{{completion}}")
    rows = [{"question": "Router blinks red?", "answer": "Restart it."}]
    with pytest.raises(ConfigError, match=r"no completion column .*--columns completion=answer"):
        evaluate_dataset(rows, grader, progress=False)
    assert evaluate_dataset(rows, grader, columns="completion=answer", progress=False).summary.counts["scored"] == 1


def test_a_misspelt_metadata_key_names_the_keys_the_metadata_holds():
    """``{{metadata.refrence}}``: the error lists what metadata holds, where the typo shows."""
    from rewardjudge import StringThread, TemplateVariableError

    grader = TemplatedPromptJudgeGrader("k", ScriptedModel(default=PASS), "Grade. {{output_schema}}",
                                        "Reference: {{metadata.refrence}}\nAnswer: {{completion}}")
    thread = StringThread([("user", "q"), ("assistant", "a")], metadata={"reference": "Paris", "id": 3})
    with pytest.raises(TemplateVariableError, match=r"'metadata\.refrence' missing .*metadata holds: id, reference;"):
        asyncio.run(grader.grade(thread))


def test_compare_and_plot_of_a_run_stopped_early_say_to_rerun_it(tmp_path, capsys):
    """A run stopped (Ctrl-C) before its results: it is an eval folder, and the error says so."""
    from rewardjudge.cli import main

    from rewardjudge.evaluate import evaluate_dataset

    judge = ScriptedModel(default=PASS)
    grader = TemplatedPromptJudgeGrader("k", judge, "Grade. {{output_schema}}", "{{completion}}")
    evaluate_dataset([{"prompt": "q", "completion": "a"}], grader, output_dir=tmp_path / "a", progress=False)
    stopped = tmp_path / "b"
    evaluate_dataset([{"prompt": "q", "completion": "a"}], grader, output_dir=stopped, progress=False)
    for name in ("results.parquet", "results.jsonl", "summary.json"):
        (stopped / name).unlink(missing_ok=True)  # as a run cut short leaves it: manifest and journal
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(tmp_path / "a"), str(stopped)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "stopped before it wrote its results" in err and "rerun its eval" in err, err
    (stopped / "journal.jsonl").unlink()
    with pytest.raises(SystemExit) as exc:
        main(["plot", str(stopped)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "stopped before it finished a row" in err, err


@pytest.mark.parametrize("user", ["Answer: {completion}", "Question: {{last_user_turn_content}}", ""])
def test_templates_that_never_show_the_judge_the_completion_are_refused(user):
    """Single braces (plain text in Handlebars), or only the question: the judge graded the prompt
    alone, the same grade for every answer to it; now the grader is refused when it is built."""
    from rewardjudge import ConfigError

    with pytest.raises(ConfigError, match=r"never show the judge the completion.*\{\{completion\}\}"):
        TemplatedPromptJudgeGrader("k", ScriptedModel(default=PASS), "Grade. {{output_schema}}", user)
    TemplatedPromptJudgeGrader("k", ScriptedModel(default=PASS), "Grade. {{output_schema}}", user + " {{completion}}")


def test_a_thread_built_from_message_dicts_points_at_from_messages():
    """OpenAI message dicts given to StringThread read as turns ('role', 'content') and were refused for
    the role 'role'; a bare string, or a str as metadata, gave no hint either."""
    from rewardjudge import ConfigError, StringThread

    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    with pytest.raises(ConfigError, match=r"turn 0 is a message dict.*StringThread\.from_messages"):
        StringThread(messages)
    assert StringThread.from_messages(messages).completion() == "a"
    with pytest.raises(ConfigError, match=r"list of \(role, content\) pairs and a metadata dict, got str"):
        StringThread("Paris")
    with pytest.raises(ConfigError, match=r"metadata dict, got list and str"):
        StringThread([("user", "q")], metadata="Paris")


def test_threads_given_where_a_list_or_rows_are_taken_say_what_to_call():
    """One thread given to grade_batch was a TypeError ('StringThread' object is not iterable);
    threads given to evaluate_dataset, which takes rows, did not say what grades threads."""
    from rewardjudge import ConfigError, StringThread

    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    grader = TemplatedPromptJudgeGrader("k", ScriptedModel(default=PASS), "Grade. {{output_schema}}", "{{completion}}")
    with pytest.raises(ConfigError, match=r"grade_batch takes a list of samples; grade one with grade\(sample\)"):
        grader.grade_batch_sync(StringThread.from_messages(messages))
    with pytest.raises(ConfigError, match=r"a sample must be a StringThread, e\.g\. StringThread\(\[\('user'"):
        grader.grade_batch_sync(["Paris"])
    from rewardjudge.evaluate import evaluate_dataset

    with pytest.raises(ConfigError, match=r"grader\.grade_batch\(threads\)"):
        evaluate_dataset([StringThread.from_messages(messages)], grader, progress=False)


def test_spawn_judge_given_without_entering_it_says_async_with():
    from rewardjudge import ConfigError, spawn_judge

    with pytest.raises(ConfigError, match=r"model must be an InferenceModel: the judge of `async with spawn_judge\(\)"):
        TemplatedPromptJudgeGrader("k", spawn_judge(), "Grade. {{output_schema}}", "{{completion}}")


def test_a_grader_used_after_its_spawned_judge_stopped_says_so(tmp_path):
    """A notebook cell grading after the ``async with spawn_judge()`` cell ended: every grade was
    unscored (connection refused, after retries); now one ConfigError says the block ended."""
    import os
    import pathlib

    from rewardjudge import ConfigError, StringThread, spawn_judge

    server = tmp_path / "llama_cpp" / "server"   # a stand-in llama_cpp.server: the fake judge on --port
    server.mkdir(parents=True)
    (server.parent / "__init__.py").write_text("")
    (server / "__init__.py").write_text("")
    (server / "__main__.py").write_text(
        "import runpy, sys\nport = sys.argv[sys.argv.index('--port') + 1]\n"
        "sys.argv = ['fake', '--port', port]\nrunpy.run_module('rewardjudge.testing', run_name='__main__')\n")
    root = pathlib.Path(__file__).resolve().parent.parent
    thread = StringThread([("user", "q"), ("assistant", "a")])

    async def main():
        async with spawn_judge(env={"PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}) as judge:
            grader = TemplatedPromptJudgeGrader("k", judge, "Grade. {{output_schema}}", "{{completion}}")
            assert (await grader.grade(thread)).status == "scored"
        with pytest.raises(ConfigError, match=r"stopped when its spawn_judge block ended: grade inside `async with"):
            await grader.grade(thread)

    asyncio.run(main())


def test_verl_compute_score_names_an_unknown_spec_when_built():
    """verl loads the reward file at start; the typo used to surface at the first reward, as an
    unreachable judge, after the rollout."""
    from rewardjudge import ConfigError, verl_compute_score

    with pytest.raises(ConfigError, match=r"unknown grader spec 'dmeo'"):
        verl_compute_score("dmeo", judge="http://127.0.0.1:9/v1")


def test_an_output_folder_that_is_a_file_is_refused_before_grading(tmp_path):
    """``--output results.jsonl`` over an existing file: a FileExistsError traceback after the judge
    was spawned; now a usage error built with the options."""
    from rewardjudge import ConfigError
    from rewardjudge.evaluate import evaluate_dataset

    judge = ScriptedModel(default=PASS)
    grader = TemplatedPromptJudgeGrader("k", judge, "Grade. {{output_schema}}", "{{completion}}")
    taken = tmp_path / "results.jsonl"
    taken.write_text("")
    with pytest.raises(ConfigError, match=r"output_dir \(--output\) is the folder .*'.*results\.jsonl' is a file"):
        evaluate_dataset([{"prompt": "q", "completion": "a"}], grader, output_dir=taken, progress=False)
    assert not judge.calls


def test_eval_where_every_row_is_penalized_says_which_answers_the_grader_reads(tmp_path, capsys):
    """The docs' first command, ``--grader demo`` on plain-text answers: every row penalized (0.0,
    exit 0) without a word; now the run says the grader read none of them and what 'demo' reads."""
    from rewardjudge.cli import main
    from rewardjudge.testing import FakeJudgeServer

    data = tmp_path / "answers.jsonl"
    data.write_text(json.dumps({"question": "Capital of France?", "response": "Paris"}) + "\n")
    with FakeJudgeServer() as judge, pytest.raises(SystemExit) as exc:
        main(["eval", str(data), "--grader", "demo", "--judge", judge.url, "--output", str(tmp_path / "o"),
              "--no-progress"])
    err = capsys.readouterr().err
    assert exc.value.code == 0 and "every row was penalized" in err and '"confidence"' in err, err


def test_bench_commands_in_the_docs_take_the_flags_they_show():
    """``python -m bench NAME`` runs NAME's main() with no arguments: flags shown beside it went
    nowhere (its parser refused them); a ``python -m bench.bench_NAME`` line's flags are its own."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for line in page.read_text(encoding="utf-8").splitlines():
            for m in re.finditer(r"python -m bench(?:\.(bench_\w+))?", line):
                flags = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", line[m.end():])) - {"--list"}
                if m[1] is None:
                    assert not flags, f"{page.name}: {line.strip()}"
                else:
                    source = (root / "bench" / f"{m[1]}.py").read_text()
                    assert all(f'"{f}"' in source for f in flags), f"{page.name}: {line.strip()}"
