"""The recipes run end to end on CPU against the scripted judge (a few small steps)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


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


SMALL = ["--judge", "scripted", "--device", "cpu", "--prompts-per-step", "2", "--group-size", "4",
         "--max-new-tokens", "6", "--seed", "0"]


def test_plain_torch_grpo_logs_judge_health_every_step(grpo_torch, capsys, tmp_path):
    log = tmp_path / "metrics.jsonl"
    history = grpo_torch.main([*SMALL, "--steps", "3", "--judge-fail-rate", "0.3",
                               "--log-jsonl", str(log)])
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [h["step"] for h in history] == [0, 1, 2]
    assert [p["step"] for p in printed] == [0, 1, 2]  # one JSON line of metrics printed per step
    assert len(log.read_text().splitlines()) == 3
    for h in history:
        assert h["judge/count"] == 8.0  # 2 prompts x 4 completions graded each step
        assert h["judge/penalized"] == 0.0  # constrained decoding: every completion is valid JSON
        assert math.isfinite(h["loss"])  # unscored completions are masked, no NaN reaches the loss
    assert sum(h["judge/unscored/http"] for h in history) > 0  # the injected outages show up


def test_plain_torch_grpo_free_decoding_penalizes_malformed_json(grpo_torch):
    [h] = grpo_torch.main([*SMALL, "--steps", "1", "--decoding", "free"])
    # a random tiny policy does not write JSON: penalized without asking the judge
    assert h["judge/penalized"] == 8.0 and h["judge/judged"] == 0.0
    assert h["judge/reward_mean"] == -1.0


def test_trl_recipe_runs_a_step_and_evaluates_with_the_eval_penalty():
    trl_grpo = load("trl_grpo")
    out = trl_grpo.main(["--judge", "scripted", "--device", "cpu", "--steps", "1", "--batch-size", "4",
                         "--num-generations", "4", "--max-new-tokens", "8"])
    [step] = [h for h in out["log_history"] if "judge/analysis-grader/count" in h]
    assert step["rewards/analysis-grader/mean"] == -1.0  # training penalty for malformed JSON
    assert out["eval"]["eval_rewards/analysis-grader/mean"] == 0.0  # evaluation penalty while evaluating
