"""The recipes run end to end on CPU against the scripted judge (a few small steps).

Each recipe's first documented command (with ``--judge scripted``: the embedded judge
takes seconds a request on CPU) must give a learning signal: the judge is asked and
the rewards differ within a group on some step. Each step prints one readable line and
appends its full metrics, judge health included, to ``OUTPUT_DIR/metrics.jsonl``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parent.parent / "recipes"

#: the one line a recipe prints per training step
STEP_LINE = re.compile(r"^step (\d+)/(\d+)  reward (-?\d+\.\d{3}|n/a)  varied (\d+|n/a)%  "
                       r"unscored (\d+|n/a)%  judge-p50 (\d+\.\d{2}|n/a)s  loss (-?\d+\.\d{4}|n/a)\b")

#: judge-health keys every step's JSONL record carries (behind the recipe's prefix)
HEALTH_KEYS = ("count", "judged", "scored", "penalized", "unscored", "unscored_rate", "unscored/http",
               "unscored/timeout", "latency_p50", "latency_p90", "forgeries", "retry_rate", "reward_mean")


def load(name: str):
    if str(RECIPES) not in sys.path:
        sys.path.insert(0, str(RECIPES))  # trl_grpo imports its sibling grpo_torch
    spec = importlib.util.spec_from_file_location(name, RECIPES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def grpo_torch():
    return load("grpo_torch")


@pytest.fixture(scope="module")
def trl_grpo():
    return load("trl_grpo")


def step_lines(out: str) -> list[re.Match]:
    """The step lines of a recipe's stdout; any other line starting with 'step' fails."""
    lines = [line for line in out.splitlines() if line.startswith("step")]
    matches = [STEP_LINE.match(line) for line in lines]
    assert all(matches), f"unexpected step lines: {[ln for ln, m in zip(lines, matches) if not m]}"
    return matches


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_metrics_file(records: list[dict], steps: int, prefix: str) -> None:
    assert [r["step"] for r in records] == list(range(1, steps + 1))  # one record per step
    for r in records:
        assert math.isfinite(r["loss"])
        for key in HEALTH_KEYS:
            assert prefix + key in r, f"{prefix + key} missing from the metrics record"


# --------------------------------------------------------------------------
# plain torch
# --------------------------------------------------------------------------
def test_plain_torch_first_command_gives_a_learning_signal(grpo_torch, capsys, tmp_path):
    # `python recipes/grpo_torch.py --steps 4`, with the scripted judge
    history = grpo_torch.main(["--judge", "scripted", "--steps", "4", "--output-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert sum(h["judge/judged"] for h in history) == 4 * 8  # the judge was asked for every completion
    assert all(h["judge/penalized"] == 0 for h in history)  # constrained decoding: always valid JSON
    assert max(h["reward/group_std_mean"] for h in history) > 0  # rewards differ within a group
    assert max(h["reward/groups_varied"] for h in history) > 0
    assert any(h["loss"] != 0 for h in history)

    lines = step_lines(out)
    assert [(int(m[1]), int(m[2])) for m in lines] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert all(len(m.string) < 160 for m in lines)  # a line, not the metrics dict
    assert "{" not in "".join(m.string for m in lines)
    for m, h in zip(lines, history):
        assert float(m[3]) == pytest.approx(h["judge/reward_mean"], abs=5e-4)
        assert float(m[7]) == pytest.approx(h["loss"], abs=5e-5)

    records = jsonl(tmp_path / "metrics.jsonl")  # the default: OUTPUT_DIR/metrics.jsonl
    assert_metrics_file(records, 4, "judge/")
    assert records == json.loads(json.dumps(history, allow_nan=True).replace("NaN", "null"))


def test_plain_torch_masks_judge_failures_and_takes_a_metrics_path(grpo_torch, capsys, tmp_path):
    log = tmp_path / "elsewhere" / "steps.jsonl"
    history = grpo_torch.main(["--judge", "scripted", "--device", "cpu", "--prompts-per-step", "2",
                               "--group-size", "4", "--max-new-tokens", "6", "--steps", "3",
                               "--judge-fail-rate", "0.3", "--output-dir", str(tmp_path), "--metrics", str(log)])
    lines = step_lines(capsys.readouterr().out)
    assert len(lines) == 3
    assert_metrics_file(jsonl(log), 3, "judge/")
    assert not (tmp_path / "metrics.jsonl").exists()
    for h in history:
        assert h["judge/count"] == 8.0  # 2 prompts x 4 completions graded each step
        assert math.isfinite(h["loss"])  # unscored completions are masked, no NaN reaches the loss
    assert sum(h["judge/unscored/http"] for h in history) > 0  # the injected outages show up
    assert any(int(m[5]) > 0 for m in lines)  # and reach the printed unscored rate


def test_plain_torch_free_decoding_penalizes_malformed_json(grpo_torch, tmp_path):
    [h] = grpo_torch.main(["--judge", "scripted", "--device", "cpu", "--max-new-tokens", "6", "--steps", "1",
                           "--decoding", "free", "--output-dir", str(tmp_path)])
    # a random tiny policy does not write JSON: penalized without asking the judge
    assert h["judge/penalized"] == 8.0 and h["judge/judged"] == 0.0
    assert h["judge/reward_mean"] == -1.0
    assert h["reward/groups_varied"] == 0.0  # no learning signal: why constrained decoding is the default


def test_scripted_judge_rubric(grpo_torch):
    verdict = grpo_torch.lenient_verdict
    assert verdict("Paris", "it is paris.")[0]
    assert verdict("Paris", "a rising star")[0]  # 'ar', 'ri', 'is' of pa/ar/ri/is: partial credit
    assert not verdict("Paris", "no match here")[0]
    assert verdict("4", "about 4")[0] and not verdict("4", "four")[0]


# --------------------------------------------------------------------------
# TRL
# --------------------------------------------------------------------------
def test_trl_first_command_gives_a_learning_signal(trl_grpo, capsys, tmp_path):
    # `python recipes/trl_grpo.py --steps 2`, with the scripted judge
    out = trl_grpo.main(["--judge", "scripted", "--steps", "2", "--output-dir", str(tmp_path)])
    printed = capsys.readouterr().out
    key = "judge/analysis-grader/"
    steps = out["steps"]
    assert [s["step"] for s in steps] == [1, 2]
    assert sum(s[key + "judged"] for s in steps) == 2 * 8  # every completion judged, none penalized
    assert all(s[key + "penalized"] == 0 for s in steps)
    assert min(s["frac_reward_zero_std"] for s in steps) < 1.0  # TRL's own within-group measure
    assert max(s["reward/groups_varied"] for s in steps) > 0
    assert any(s["grad_norm"] > 0 for s in steps)  # the policy moved

    lines = step_lines(printed)
    assert [(int(m[1]), int(m[2])) for m in lines] == [(1, 2), (2, 2)]
    assert "{'loss'" not in printed and "{'eval_" not in printed  # TRL's dict printer is gone
    assert all(len(m.string) < 160 for m in lines)
    for m, s in zip(lines, steps):
        assert float(m[3]) == pytest.approx(s["rewards/analysis-grader/mean"], abs=5e-4)

    records = jsonl(tmp_path / "metrics.jsonl")
    assert out["metrics_path"] == str(tmp_path / "metrics.jsonl")
    assert_metrics_file(records, 2, key)
    for r in records:  # TRL's own numbers too
        assert {"reward", "reward_std", "frac_reward_zero_std", "grad_norm", "rewards/analysis-grader/mean"} <= set(r)


def test_trl_json_task_penalizes_in_training_and_evaluates_with_the_eval_penalty(trl_grpo, tmp_path):
    out = trl_grpo.main(["--judge", "scripted", "--task", "json", "--device", "cpu", "--steps", "1",
                         "--batch-size", "4", "--num-generations", "4", "--max-new-tokens", "8",
                         "--output-dir", str(tmp_path)])
    [step] = [h for h in out["log_history"] if "judge/analysis-grader/count" in h]
    assert step["rewards/analysis-grader/mean"] == -1.0  # training penalty for malformed JSON
    assert step["judge/analysis-grader/judged"] == 0.0  # the judge is never asked: no signal
    assert out["eval"]["eval_rewards/analysis-grader/mean"] == 0.0  # evaluation penalty while evaluating
    assert len(jsonl(tmp_path / "metrics.jsonl")) == 1


def test_trl_recipe_as_written_keeps_judge_failures_out_of_the_rewards(trl_grpo, tmp_path):
    # the recipe's default path with the judge failing ~40% of its requests: TRL gets None for them,
    # so its reward mean is the mean of the scored rewards alone (a failure read as 0 would pull it down)
    out = trl_grpo.main(["--judge", "scripted", "--judge-fail-rate", "0.4", "--steps", "1",
                         "--output-dir", str(tmp_path)])
    [step] = out["steps"]
    key = "judge/analysis-grader/"
    assert step[key + "unscored/http"] > 0 and step[key + "scored"] > 0
    assert step["rewards/analysis-grader/mean"] == pytest.approx(step[key + "reward_mean"])
    assert math.isfinite(step["loss"])
