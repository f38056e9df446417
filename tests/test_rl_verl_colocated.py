"""verl 0.9.1's v1 colocated reward-model path (``reward.reward_model.enable=true``)
and its validation metrics, run with verl's own functions: the trainer's
``_compute_reward_colocate``, ``RewardLoopManager.compute_rm_score``,
``RewardLoopWorker.compute_score_batch`` and ``_val_metrics_update`` (the
transfer queue, Ray and the GPU workers are stubbed)."""

from __future__ import annotations

import math
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.reward_loop import reward_loop  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager, resolve_reward_manager_cls  # noqa: E402

from test_rl_verl_estimators import compute_advantage  # noqa: E402  (verl's, with its missing deps stubbed)
from test_rl_verl_managers import config  # noqa: E402

from verl.trainer.ppo.v1 import trainer_base  # noqa: E402  (importable once the stubs above are in place)

RUBRIC = textwrap.dedent('''
    from rewardjudge import JudgeTimeoutError
    from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
    from rewardjudge.testing import ScriptedModel
    from rewardjudge.rl import verl_compute_score

    def judge(messages, params, schema):
        text = messages[-1]["content"]
        if "Q: What is 2+2?" not in text:  # the raw prompt must reach the judge
            return "no verdict without the question"
        if "Answer: slow" in text:
            return JudgeTimeoutError("no answer in 60s")
        return '{"reasoning": "r", "score": "PASS"}' if "Answer: 4" in text else '{"reasoning": "r", "score": "FAIL"}'

    compute_score = verl_compute_score(TemplatedPromptJudgeGrader("rubric", ScriptedModel(judge),
        "Reply as JSON: {{output_schema}}", "Q: {{last_user_turn_content}}\\nAnswer: {{completion}}"))
''')

ANSWERS = ["4", "5", "slow", "4", "slow", "slow", "slow", "4", "4", "1", "4", "slow"]
UIDS = ["p"] * 4 + ["q"] * 4 + ["r"] * 4
UNSCORED = np.array([a == "slow" for a in ANSWERS])
LONE = np.array([u == "q" and a != "slow" for u, a in zip(UIDS, ANSWERS)])


def values(stack):
    """A column the trainer wrote back (a tensordict NonTensorStack) as floats."""
    return [float(x) for x in stack.tolist()]


@pytest.fixture()
def colocated(tmp_path, monkeypatch):
    from rewardjudge.rl._policies import smollm2_tokenizer

    tok = smollm2_tokenizer()
    path = tmp_path / "rubric_reward.py"
    path.write_text(RUBRIC)
    cfg = config(path, "compute_score", "RewardJudgeManager", source="importlib",
                 module="pkg://rewardjudge.rl.verl_manager")
    cfg.reward.reward_model.enable = True
    cfg.algorithm = OmegaConf.create({"adv_estimator": "rewardjudge_grpo", "norm_adv_by_std_in_grpo": True})

    # one RewardLoopWorker as verl builds it, minus Ray
    worker = object.__new__(reward_loop.RewardLoopWorker)
    worker.config, worker.reward_router_address = cfg, None
    worker.reward_manager = load_reward_manager(cfg, tok)
    worker.loop = worker.reward_manager.loop
    handle = SimpleNamespace(compute_score_batch=SimpleNamespace(
        remote=lambda chunk: worker.loop.run_until_complete(worker.compute_score_batch(chunk))))
    manager = object.__new__(reward_loop.RewardLoopManager)
    manager.config, manager.reward_model_manager, manager.reward_loop_workers = cfg, None, [handle]
    manager.reward_manager_cls = resolve_reward_manager_cls(cfg)
    monkeypatch.setattr(reward_loop.ray, "get", lambda refs: refs)

    # the transfer queue the v1 trainer reads the rollout from and writes rm_scores to
    prompt_ids = tok("What is 2+2?", add_special_tokens=False)["input_ids"]
    rows = [tok(a, add_special_tokens=False)["input_ids"] for a in ANSWERS]
    stored = {
        "prompts": torch.nested.nested_tensor([torch.tensor(prompt_ids)] * len(rows), layout=torch.jagged),
        "responses": torch.nested.nested_tensor([torch.tensor(r) for r in rows], layout=torch.jagged),
        "raw_prompt": [[{"role": "user", "content": "What is 2+2?"}] for _ in rows],
    }
    written = {}
    tq = SimpleNamespace(
        kv_batch_get=lambda keys, partition_id, select_fields: {k: stored[k] for k in select_fields},
        kv_batch_put=lambda keys, partition_id, fields: written.update(dict(fields.items())))
    monkeypatch.setattr(trainer_base, "tq", tq)
    trainer = SimpleNamespace(reward_loop_manager=manager, tokenizer=tok,
                              _lengths_to_mask=trainer_base.PPOTrainer._lengths_to_mask)

    class Batch(SimpleNamespace):
        def __len__(self):
            return len(self.keys)

    meta = Batch(keys=[f"{u}_{i}_0" for i, u in enumerate(UIDS)], partition_id="train")
    trainer_base.PPOTrainer._compute_reward_colocate(trainer, meta)
    return written, rows, path


def test_colocated_path_grades_the_raw_prompt_and_keeps_failures_out(colocated):
    # verl sends this path prompts, responses and raw_prompt only (naive's run_single: KeyError 'data_source')
    written, rows, _ = colocated
    rm_scores = written["rm_scores"].to_padded_tensor(0.0)
    scores = rm_scores.sum(-1)
    assert torch.isnan(scores).numpy().tolist() == UNSCORED.tolist()  # never 0.0 for a failure
    assert scores[~torch.from_numpy(UNSCORED)].tolist() == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    assert values(written["unscored"]) == UNSCORED.astype(float).tolist()  # reward_extra_info

    # the advantage step: verl hands the estimator the uid of each sample (the group), on this path too
    width = rm_scores.shape[1]
    mask = torch.tensor([[1.0] * len(r) + [0.0] * (width - len(r)) for r in rows])
    data = DataProto.from_dict(tensors={"token_level_rewards": rm_scores, "response_mask": mask},
                               non_tensors={"uid": np.array(UIDS, dtype=object)})
    algo = OmegaConf.create({"norm_adv_by_std_in_grpo": True})
    adv = compute_advantage(data, "rewardjudge_grpo", config=algo).batch["advantages"].sum(-1)
    usable = ~UNSCORED & ~LONE
    assert torch.all(adv[torch.from_numpy(~usable)] == 0)  # failures and q's lone survivor: 0
    keep = np.nonzero(usable)[0]
    ref, _ = core_algos.compute_grpo_outcome_advantage(rm_scores[keep], mask[keep], np.array(UIDS)[keep])
    assert (adv[torch.from_numpy(usable)] - ref.sum(-1)).abs().max() <= 1e-6
    assert ref.abs().max() > 0


def test_judge_health_reaches_verls_validation_metrics(colocated):
    written, _, _ = colocated
    infos = {k: values(written[k]) for k in ("score", "unscored", "forgery", "penalized")}
    infos["reward"] = [0.0 if math.isnan(s) else s for s in infos["score"]]
    stub = SimpleNamespace()
    metrics = trainer_base.PPOTrainer._val_metrics_update(stub, ["gsm8k"] * len(UIDS), UIDS, infos, [])
    assert metrics["val-aux/gsm8k/unscored/mean@4"] == pytest.approx(UNSCORED.mean())
    assert "val-aux/gsm8k/forgery/mean@4" in metrics and "val-aux/gsm8k/penalized/mean@4" in metrics
