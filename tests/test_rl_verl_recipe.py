"""recipes/verl_grpo.sh and its reward file: the script's overrides compose with
verl's own Hydra config, and the composed config runs verl's reward loop (our
manager, the recipe's reward file with its defaults) on gsm8k-style answers
against a scripted judge server: right answers 1.0, wrong 0.0, a failed judge
call the marker, and advantages that carry a learning signal."""

from __future__ import annotations

import math
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("verl")

from test_rl_verl_managers import batch, run_manager  # noqa: E402

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


def script_overrides(tmp_home: Path) -> list[str]:
    """The `python3 -m verl.trainer.main_ppo` overrides, as the shell would pass them."""
    text = (RECIPES / "verl_grpo.sh").read_text()
    command = text[text.index("python3 -m verl.trainer.main_ppo"):].replace("\\\n", " ")
    command = command.split("\n", 1)[0].replace('"$@"', "")
    command = command.replace("$HERE", str(RECIPES)).replace("$HOME", str(tmp_home))
    words = shlex.split(command)
    assert words[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    return words[3:]


def compose(overrides):
    import verl
    from hydra import compose as hydra_compose, initialize_config_dir

    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"),
                               version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)  # unknown keys raise here


def test_script_overrides_compose_with_verls_config(tmp_path):
    cfg = compose(script_overrides(tmp_path))
    assert cfg.algorithm.adv_estimator == "rewardjudge_grpo"
    assert cfg.reward.reward_manager.module.path == "pkg://rewardjudge.rl.verl_manager"
    assert cfg.reward.custom_reward_function.path == str(RECIPES / "verl_grpo_reward.py")
    assert dict(cfg.algorithm.rewardjudge) == {"outage_threshold": 0.5, "outage_steps": 3}
    assert list(cfg.trainer.logger) == ["console"]  # no wandb login needed
    assert 'REWARDJUDGE_GRADER="${REWARDJUDGE_GRADER:-correctness}"' in (RECIPES / "verl_grpo.sh").read_text()


GSM8K = [  # (question, reference, sampled answer); "judge-down" makes the judge reply garbage
    ("Natalia sold 48 clips in April and half as many in May. How many in total?", "72",
     "In May she sold 48 / 2 = 24.\n48 + 24 = 72\n#### 72"),
    ("Natalia sold 48 clips in April and half as many in May. How many in total?", "72", "48 + 48 = 96\n#### 96"),
    ("Natalia sold 48 clips in April and half as many in May. How many in total?", "72", "#### 72"),
    ("Natalia sold 48 clips in April and half as many in May. How many in total?", "72", "judge-down #### 72"),
    ("Weng earns $12 an hour. How much for 50 minutes?", "10", "12 / 60 * 50 = 10\n#### 10"),
    ("Weng earns $12 an hour. How much for 50 minutes?", "10", "#### 12"),
    ("Weng earns $12 an hour. How much for 50 minutes?", "10", "The answer is 600.\n#### 600"),
    ("Weng earns $12 an hour. How much for 50 minutes?", "10", "She earns 10 dollars.\n#### 10"),
]


def judge(request):
    text = request["messages"][-1]["content"]
    reference = re.search(r"<reference>\n(.*?)\n</reference>", text, re.S).group(1)
    response = re.search(r"<response>\n(.*?)\n</response>", text, re.S).group(1)
    if "judge-down" in response:
        return "the judge is overloaded"  # no verdict: unscored
    final = response.rsplit("####", 1)[-1].strip()
    verdict = "PASS" if final == reference else "FAIL"
    return f'{{"reasoning": "final answer {final} vs {reference}", "score": "{verdict}"}}'


def test_recipe_defaults_give_a_learning_signal_on_gsm8k(tmp_path, monkeypatch):
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.reward import load_reward_manager

    from rewardjudge.rl._policies import smollm2_tokenizer
    from rewardjudge.rl.verl_manager import _raw_function
    from rewardjudge.testing import FakeJudgeServer

    with FakeJudgeServer(judge) as server:
        monkeypatch.delenv("REWARDJUDGE_GRADER", raising=False)  # the recipe's default grader
        monkeypatch.setenv("REWARDJUDGE_JUDGE", server.url)
        cfg = compose(script_overrides(tmp_path))
        tok = smollm2_tokenizer()
        mgr = load_reward_manager(cfg, tok)  # verl loads the recipe's reward file and our manager
        data = batch(tok, [a for _, _, a in GSM8K], [r for _, r, _ in GSM8K], ["p"] * 4 + ["q"] * 4)
        data.non_tensor_batch["extra_info"] = np.array(  # as verl's gsm8k preprocessing writes it
            [{"split": "train", "index": i, "question": q} for i, (q, _, _) in enumerate(GSM8K)], dtype=object)
        outs = run_manager(mgr, data)
        _raw_function(mgr.compute_score.__wrapped__).close()  # the recipe's VerlScore: its judge client
    scores = [o["reward_score"] for o in outs]
    assert scores[:3] == [1.0, 0.0, 1.0] and math.isnan(scores[3])  # the failure is the marker, not -1 or 0
    assert scores[4:] == [1.0, 0.0, 0.0, 1.0]
    assert all("Natalia" in r["messages"][-1]["content"] or "Weng" in r["messages"][-1]["content"]
               for r in server.requests)  # the question reached the judge
    rewards = torch.zeros(8, 2)
    rewards[:, -1] = torch.tensor(scores)
    fn = core_algos.get_adv_estimator_fn(cfg.algorithm.adv_estimator)
    adv, _ = fn(token_level_rewards=rewards, response_mask=torch.ones(8, 2), index=np.array(["p"] * 4 + ["q"] * 4),
                config=cfg.algorithm)
    per_row = adv[:, 0]
    assert per_row[3] == 0 and torch.isfinite(per_row).all()
    assert per_row[0] > 0 > per_row[1] and per_row[4] > 0 > per_row[5]  # right answers pushed up, wrong down
