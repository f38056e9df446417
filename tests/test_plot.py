"""``rewardjudge plot RUN`` (judge health over rows) and the eval histogram's whole-number ticks."""

from __future__ import annotations

import json

import pytest

from rewardjudge.testing import Fault, FakeJudgeServer

PASS = '{"reasoning": "fine", "score": "PASS"}'


def main_in_process(capsys, *args: str) -> tuple[int, str, str]:
    from rewardjudge.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


def demo_rows(n: int) -> str:
    rows = []
    for i in range(n):
        completion = "not json" if i % 10 == 9 else json.dumps({"answer": "a", "confidence": "high"})
        rows.append(json.dumps({"prompt": f"q{i}", "completion": completion}) + "\n")
    return "".join(rows)


def assert_png(path) -> tuple[int, int]:
    from PIL import Image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        return im.size


@pytest.fixture
def run_with_failures(tmp_path, capsys):
    """A real eval run against the fake judge: scored rows, penalized rows (malformed answers),
    and unscored rows of two kinds (HTTP 503 and replies with no readable verdict)."""
    data = tmp_path / "d.jsonl"
    data.write_text(demo_rows(40))
    count = {"n": 0}

    def judge(req):
        count["n"] += 1
        if count["n"] == 1:
            return "OK"  # the start-up probe
        if 10 <= count["n"] < 14:
            return Fault.http(503)
        if 20 <= count["n"] < 24:  # two rows: an unreadable reply is asked again once
            return "this is not a verdict"
        return PASS

    out = tmp_path / "run"
    with FakeJudgeServer(judge) as server:
        code, stdout, err = main_in_process(capsys, "eval", str(data), "--grader", "demo", "--judge", server.url,
                                            "--output", str(out), "--no-progress", "--max-retries", "0",
                                            "--concurrency", "1")
    assert code == 0, err
    assert "unscored: 6" in stdout and "penalized: 4" in stdout, stdout
    return out


def test_plot_draws_a_runs_judge_health(run_with_failures, capsys):
    from rewardjudge.evaluate._plot import read_run_health

    out = run_with_failures
    code, stdout, err = main_in_process(capsys, "plot", str(out))
    assert code == 0, err
    png = out / "health.png"
    assert str(png) in stdout
    width, height = assert_png(png)
    assert (width, height) == (800, 800)
    health = read_run_health(out)
    assert health.n == 40
    assert int((health.status == 2).sum()) == 6  # unscored
    from rewardjudge.rl._health import UNSCORED_KINDS

    kinds = {UNSCORED_KINDS[k] for k in health.kind[health.status == 2]}
    # the fake judge seals its prose as a verdict line ("VERDICT <seal>: this is not a verdict"):
    # a sealed line that holds no verdict is an invalid reply
    assert kinds == {"http", "invalid_reply"}
    # --output elsewhere, and a results file instead of the folder
    code, _, err = main_in_process(capsys, "plot", str(out / "results.jsonl"), "-o", str(out / "x" / "h.png"))
    assert code == 0, err
    assert_png(out / "x" / "h.png")


def test_plot_reads_the_journal_of_a_run_that_did_not_finish(tmp_path, capsys):
    """A run stopped early has a journal and no results file: the plot is drawn from the journal."""
    out = tmp_path / "run"
    out.mkdir()
    records = [{"row": i, "input": "0", "grade": {"status": "unscored" if i % 3 == 0 else "scored",
                                                   "value": None if i % 3 == 0 else 1.0,
                                                   "error": "JudgeTimeoutError: slow" if i % 3 == 0 else None,
                                                   "latency_s": 0.1 * i}} for i in range(250)]
    (out / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + '{"row": 9')  # torn
    code, _, err = main_in_process(capsys, "plot", str(out))
    assert code == 0, err
    assert_png(out / "health.png")
    from rewardjudge.evaluate._plot import health_figure, read_run_health

    health = read_run_health(out)
    assert health.n == 250 and int((health.status == 2).sum()) == 84
    fig = health_figure(health)
    fig.canvas.draw()
    for ax in (fig.axes[0], fig.axes[2]):  # the count panels have whole-number ticks
        assert all(float(t).is_integer() for t in ax.get_yticks())


def test_plot_usage_errors(tmp_path, capsys, monkeypatch):
    code, _, err = main_in_process(capsys, "plot", str(tmp_path / "nope"))
    assert code == 2 and "no evaluation run" in err
    (tmp_path / "empty").mkdir()
    code, _, err = main_in_process(capsys, "plot", str(tmp_path / "empty"))
    assert code == 2 and "eval output folder" in err
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed
    code, _, err = main_in_process(capsys, "plot", str(tmp_path / "empty"))
    assert code == 2 and "needs matplotlib" in err and "rewardjudge[eval]" in err
    code, out, _ = main_in_process(capsys, "--help")
    assert code == 0 and "plot" in out and "judge health" in out


@pytest.mark.parametrize("values", [[1.0, 0.0, 1.0], [0.2, 0.4, 0.6, 0.8, 1.0, 0.2], [0.5]])
def test_histogram_count_ticks_are_whole_numbers(values, tmp_path):
    from rewardjudge.evaluate._plot import _histogram_figure, save_histogram
    from rewardjudge.evaluate._report import SummaryBuilder
    from rewardjudge.grade import Grade

    builder = SummaryBuilder()
    for v in values:
        builder.add(Grade(value=v, grader_key="g"))
    builder.add(Grade(value=0.0, grader_key="g", status="penalized"))
    fig = _histogram_figure(builder, None)
    fig.canvas.draw()
    ticks = fig.axes[0].get_yticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks
    assert_png(save_histogram(builder, tmp_path / "h.png"))


def test_eval_histogram_of_a_run_has_whole_number_ticks(run_with_failures):
    from rewardjudge.evaluate._plot import _histogram_figure
    from rewardjudge.evaluate._report import SummaryBuilder

    builder = SummaryBuilder()
    for line in (run_with_failures / "journal.jsonl").read_text().splitlines():
        builder.add(json.loads(line)["grade"])
    fig = _histogram_figure(builder, None)
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in fig.axes[0].get_yticks())
    assert_png(run_with_failures / "histogram.png")
