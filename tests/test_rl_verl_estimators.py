"""Every advantage estimator verl 0.9.1 registers, reached through verl's own
``compute_advantage`` (and v1's ``compute_advantage_for_multi_trajectories``),
with ~30% judge failures graded under our manager: an unscored sample has
advantage exactly 0 and its group's other advantages equal verl's with it
removed, or the manager refuses the estimator at start naming one that works."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import math
import sys
from unittest import mock

import numpy as np
import pytest
import torch

pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager  # noqa: E402

from rewardjudge import ConfigError, JudgeOutage  # noqa: E402
from rewardjudge.rl.verl_manager import EXACT, PREFIX, REFUSED, RewardJudgeManager  # noqa: E402

from test_rl_verl_managers import GRADERS, batch, config, run_manager  # noqa: E402

# verl's trainer modules import packages its GPU stack brings (torchdata, peft, the transfer queue...):
# those that are not installed here are stubbed; the functions under test are verl's own.
_STUBS = {"torchdata", "peft", "cachetools", "transfer_queue"}


class _Stub(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in _STUBS:
            return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)
        return None


class _StubLoader:
    def create_module(self, spec):
        module = mock.MagicMock(name=spec.name)
        module.__path__, module.__spec__, module.__name__ = [], spec, spec.name
        return module

    def exec_module(self, module):
        pass


_STUBS = {m for m in _STUBS if importlib.util.find_spec(m) is None}
sys.meta_path.append(_Stub)
try:
    from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories  # noqa: E402
finally:
    sys.meta_path.remove(_Stub)
    # the stubs stay with the verl modules that imported them, never in sys.modules: another
    # library (TRL probes for peft) must not find a stub where the package is absent
    for _name in [n for n in sys.modules if n.split(".")[0] in _STUBS]:
        del sys.modules[_name]

# 8 prompts x 4 samples; "slow" answers time out at the judge (12 of 32, 38%)
ANSWERS = ["4", "5", "slow", "4",       # a: one failure
           "slow", "7", "6", "7",       # b
           "1", "3", "slow", "2",       # c
           "slow", "slow", "slow", "3",  # d: one usable sample left -> advantage 0
           "slow", "slow", "slow", "slow",  # e: no usable sample
           "9", "8", "9", "9",          # f: none failed
           "2", "slow", "2", "5",       # g
           "0", "1", "0", "slow"]       # h
TRUTHS = ["4"] * 4 + ["7"] * 4 + ["1"] * 4 + ["3"] * 4 + ["5"] * 4 + ["9"] * 4 + ["2"] * 4 + ["0"] * 4
UIDS = [g for g in "abcdefgh" for _ in range(4)]
UNSCORED = np.array([a == "slow" for a in ANSWERS])
LONE = np.array([u == "d" and a != "slow" for u, a in zip(UIDS, ANSWERS)])
USABLE = ~UNSCORED & ~LONE


def algorithm(estimator: str, norm: bool = True, **extra):
    return OmegaConf.create({"adv_estimator": estimator, "gamma": 1.0, "lam": 1.0,
                             "norm_adv_by_std_in_grpo": norm, **extra})


def manager_config(path, estimator, **extra):
    cfg = config(path, "sync_score", "RewardJudgeManager", source="importlib",
                 module="pkg://rewardjudge.rl.verl_manager")
    cfg.algorithm = algorithm(estimator, **extra)
    return cfg


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """rm_scores as verl builds them from our manager's results (the default agent-loop path)."""
    from rewardjudge.rl._policies import smollm2_tokenizer

    tok = smollm2_tokenizer()
    path = tmp_path_factory.mktemp("verl") / "my_reward.py"
    path.write_text(GRADERS)
    mgr = load_reward_manager(manager_config(path, PREFIX + "grpo"), tok)
    data = batch(tok, ANSWERS, TRUTHS, UIDS)
    outs = run_manager(mgr, data)
    scores = [o["reward_score"] for o in outs]
    rm_scores = RewardJudgeManager.assemble_rm_scores(data, scores)
    response_mask = data.batch["attention_mask"][:, data.batch["prompts"].shape[1]:].float()
    return {"rm_scores": rm_scores, "response_mask": response_mask, "outs": outs, "path": path, "tok": tok}


def proto(rm_scores, response_mask, uids):
    return DataProto.from_dict(tensors={"token_level_rewards": rm_scores.clone(), "response_mask": response_mask},
                               non_tensors={"uid": np.array(uids, dtype=object)})


def test_the_manager_marks_exactly_the_failed_samples(graded):
    scores = graded["rm_scores"].sum(-1)
    assert torch.isnan(scores).numpy().tolist() == UNSCORED.tolist()  # 38% failures, each a NaN marker
    assert [o["reward_extra_info"]["unscored"] for o in graded["outs"]] == UNSCORED.astype(float).tolist()


MEASURED: dict[str, float] = {}


@pytest.mark.parametrize("name", sorted(n for n in core_algos.ADV_ESTIMATOR_REGISTRY if not n.startswith(PREFIX)))
def test_every_registered_estimator_is_exact_or_refused_at_start(graded, name):
    if name in REFUSED:
        with pytest.raises(ConfigError, match=f"adv_estimator={name} cannot keep.*adv_estimator={PREFIX}grpo"):
            load_reward_manager(manager_config(graded["path"], name), graded["tok"])
        with pytest.raises(ConfigError, match=f"adv_estimator={PREFIX}grpo"):
            load_reward_manager(manager_config(graded["path"], PREFIX + name), graded["tok"])
        return
    assert name in EXACT, f"verl registers a new estimator {name!r}: make it exact or refuse it"
    # the plain name under our manager: refused, naming ours
    with pytest.raises(ConfigError, match=f"algorithm.adv_estimator={PREFIX}{name}"):
        load_reward_manager(manager_config(graded["path"], name), graded["tok"])
    for norm in (True, False):
        cfg = algorithm(PREFIX + name, norm)
        ours = compute_advantage(proto(graded["rm_scores"], graded["response_mask"], UIDS), PREFIX + name,
                                 norm_adv_by_std_in_grpo=norm, config=cfg)
        keep = np.nonzero(USABLE)[0]
        ref = compute_advantage(proto(graded["rm_scores"], graded["response_mask"], UIDS).select_idxs(keep), name,
                                norm_adv_by_std_in_grpo=norm, config=algorithm(name, norm))
        adv = ours.batch["advantages"]
        assert torch.isfinite(adv).all()
        assert torch.equal(adv[torch.from_numpy(~USABLE)], torch.zeros_like(adv[torch.from_numpy(~USABLE)]))
        diff = (adv[torch.from_numpy(USABLE)] - ref.batch["advantages"]).abs().max().item()
        assert diff <= 1e-6
        assert ref.batch["advantages"].abs().max() > 0  # a real signal was compared
        MEASURED[f"{name} norm={norm}"] = diff
    print(f"max abs advantage diff {name}: {MEASURED[f'{name} norm=True']:.3g}")


def test_an_estimator_rewardjudge_cannot_vouch_for_is_refused(graded):
    with pytest.raises(ConfigError, match=f"my_estimator is not one rewardjudge can make exact.*{PREFIX}grpo"):
        load_reward_manager(manager_config(graded["path"], "my_estimator"), graded["tok"])


def test_v1_multi_trajectory_entry_point_and_a_lone_sample(graded):
    keys = [f"{u}_{i % 4}_0" for i, u in enumerate(UIDS)]
    data = compute_advantage_for_multi_trajectories(
        proto(graded["rm_scores"], graded["response_mask"], UIDS), batch_keys=keys, adv_estimator=PREFIX + "grpo",
        config=algorithm(PREFIX + "grpo"))
    per_row = data.batch["advantages"].sum(-1)
    assert per_row[15] == 0  # group d: one usable sample left, advantage 0 (verl's grpo would give it its score)
    plain, _ = core_algos.compute_grpo_outcome_advantage(graded["rm_scores"][15:16], graded["response_mask"][15:16],
                                                         np.array(["d"]))
    assert plain.sum() != 0


def test_outage_guard_stops_the_run_from_the_estimator(graded):
    fn = core_algos.get_adv_estimator_fn(PREFIX + "rloo")
    rewards = torch.full((8, 3), math.nan)
    rewards[:2] = 1.0  # 75% unscored
    cfg = algorithm(PREFIX + "rloo", rewardjudge={"outage_threshold": 0.6, "outage_steps": 2})
    fn(token_level_rewards=rewards, response_mask=torch.ones(8, 3), index=np.array(["a"] * 8), config=cfg)
    with pytest.raises(JudgeOutage, match="75%, 75% over 2 consecutive steps"):
        fn(token_level_rewards=rewards, response_mask=torch.ones(8, 3), index=np.array(["a"] * 8), config=cfg)
    off = algorithm(PREFIX + "rloo", rewardjudge={"outage_threshold": None})
    for _ in range(4):  # off: trains on (the others are masked)
        fn(token_level_rewards=rewards, response_mask=torch.ones(8, 3), index=np.array(["a"] * 8), config=off)
    with pytest.raises(ConfigError, match=r"algorithm\.rewardjudge\.outage_threshold must be a share"):
        load_reward_manager(manager_config(graded["path"], PREFIX + "grpo", rewardjudge={"outage_threshold": 2}),
                            graded["tok"])
