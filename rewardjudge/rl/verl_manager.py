"""Honest unscored rewards inside verl 0.9: a reward manager and a GRPO
advantage estimator, registered with verl when this module is imported.

verl has no mask for a missing reward, and its GRPO
(``core_algos.compute_grpo_outcome_advantage``) takes a plain mean and std
per prompt: one NaN makes the whole group NaN and verl skips the optimizer
step with a printed warning; a 0 would teach the policy that a judge outage
means a wrong answer. ``verl_compute_score`` marks an unscored sample with a
NaN score and ``unscored`` = 1.0; this module turns the marker into:

* **advantage estimator ``rewardjudge_grpo``**: verl's own
  ``compute_grpo_outcome_advantage`` run over each group's *scored and
  penalized* samples only; unscored samples get advantage 0. The others get
  exactly the advantages of the same step with the unscored samples removed.
  This works in verl 0.9's default set-up, where the agent loop computes
  rewards sample by sample and no reward manager ever sees the batch.
* **reward manager ``rewardjudge``** (verl's naive manager, plus): every
  sample's ``reward_extra_info`` has the same keys whatever ``compute_score``
  returned, and where verl hands the manager the whole batch
  (``assemble_rm_scores``: the colocated reward-model path) an unscored
  sample's score becomes its group's (``uid``'s) mean of usable rewards, so
  plain ``grpo`` gives it advantage 0 and its group's mean is unchanged (the
  group's std shrinks by sqrt((k-1)/(n-1)) for k usable of n samples).
  A group with no usable reward gets 0.0 for all: advantage 0.

verl options (the manager's import also registers the estimator in the
driver, which is where verl computes advantages)::

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=pkg://rewardjudge.rl.verl_manager
    reward.reward_manager.name=RewardJudgeManager
    reward.custom_reward_function.path=my_reward.py      # compute_score = verl_compute_score(...)
    reward.custom_reward_function.name=compute_score
    algorithm.adv_estimator=rewardjudge_grpo

Other managers: ``naive`` and ``dapo`` call the sync or async
``verl_compute_score`` correctly and keep the NaN marker for
``rewardjudge_grpo``; ``remote`` needs the picklable SPEC form
(``verl_compute_score("SPEC", judge=URL)``); a live-grader sync function
refuses to pickle with a message saying so. ``rate_limited`` turns a timeout
or an exception into a 0.0 score with other keys: not honest, do not use it
(bound the judge with the judge model's own concurrency and timeout).
``batch`` exists in verl 0.8 only (a batch-form function called per sample
raises a ConfigError naming the managers to use). Plain ``grpo`` without the
manager's batch path meets the NaN: don't.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Sequence

import numpy as np
import torch

try:
    from verl.experimental.reward_loop.reward_manager import register
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo import core_algos
except ImportError as exc:  # pragma: no cover - depends on the installed verl
    raise ImportError(f"rewardjudge.rl.verl_manager needs verl >= 0.9 (its reward loop registry): {exc}. "
                      f"Install it with `pip install --no-deps verl==0.9.1` plus ray, tensordict, "
                      f"transformers") from exc

__all__ = ["ESTIMATOR", "EXTRA_KEYS", "RewardJudgeManager", "compute_rewardjudge_grpo_advantage",
           "fill_unscored"]

#: the advantage estimator's name (algorithm.adv_estimator=...)
ESTIMATOR = "rewardjudge_grpo"
#: reward_extra_info keys every sample carries (verl_compute_score's dict)
EXTRA_KEYS = ("score", "scored", "penalized", "unscored", "judge_attempts", "judge_latency_s", "judge_tokens")


def fill_unscored(scores: Sequence[float], index: Sequence[Any], fallback: float = 0.0) -> list[float]:
    """Each NaN score replaced by the mean of its group's (same ``index``)
    finite scores; ``fallback`` when the group has none.

    >>> fill_unscored([1.0, float("nan"), 0.0, float("nan")], ["a", "a", "a", "b"])
    [1.0, 0.5, 0.0, 0.0]
    """
    scores = [float(s) for s in scores]
    if len(scores) != len(index):
        raise ValueError(f"{len(index)} group ids for {len(scores)} scores")
    usable: dict[Any, list[float]] = defaultdict(list)
    for s, g in zip(scores, index):
        if math.isfinite(s):
            usable[g].append(s)
    return [s if math.isfinite(s) else (sum(usable[g]) / len(usable[g]) if usable[g] else float(fallback))
            for s, g in zip(scores, index)]


def _normalized_extra(result: Any, score: float) -> dict[str, float]:
    """The same keys for every sample, whatever compute_score returned."""
    extra = dict(result) if isinstance(result, dict) else {}
    unscored = not math.isfinite(score)
    out = {
        "score": float(score),
        "scored": float(extra.get("scored", 0.0 if unscored else 1.0)),
        "penalized": float(extra.get("penalized", 0.0)),
        "unscored": float(extra.get("unscored", 1.0 if unscored else 0.0)),
        "judge_attempts": float(extra.get("judge_attempts", math.nan)),
        "judge_latency_s": float(extra.get("judge_latency_s", math.nan)),
        "judge_tokens": float(extra.get("judge_tokens", math.nan)),
    }
    return out


@register("rewardjudge")
class RewardJudgeManager(NaiveRewardManager):
    """verl's naive manager with fixed extra keys and batch-level unscored
    handling (see the module docstring). Sync and async compute_score work."""

    async def run_single(self, data):
        out = await super().run_single(data)
        score = float(out["reward_score"])
        out["reward_extra_info"] = _normalized_extra(out.get("reward_extra_info"), score)
        return out

    @classmethod
    def assemble_rm_scores(cls, data, scores: list[float]) -> torch.Tensor:
        if "uid" in data.non_tensor_batch:
            index = list(data.non_tensor_batch["uid"])
        else:  # no groups known: every unscored sample is its own group (0.0, advantage 0 under GRPO)
            index = list(range(len(scores)))
        return super().assemble_rm_scores(data, fill_unscored(scores, index))


@core_algos.register_adv_est(ESTIMATOR)
def compute_rewardjudge_grpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                                       index: np.ndarray, epsilon: float = 1e-6,
                                       norm_adv_by_std_in_grpo: bool | None = None, config: Any = None,
                                       **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's GRPO over the samples with a finite outcome score; advantage 0
    (and return 0) for the unscored ones (NaN score)."""
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = True if config is None else bool(config.get("norm_adv_by_std_in_grpo", True))
    scores = token_level_rewards.sum(dim=-1)
    usable = torch.isfinite(scores)
    advantages = torch.zeros_like(token_level_rewards)
    if bool(usable.any()):
        rows = usable.nonzero(as_tuple=True)[0]
        sub_index = np.asarray(index)[rows.cpu().numpy()]
        sub_rewards = torch.nan_to_num(token_level_rewards[rows], nan=0.0)
        adv, _ = core_algos.compute_grpo_outcome_advantage(
            token_level_rewards=sub_rewards, response_mask=response_mask[rows], index=sub_index,
            epsilon=epsilon, norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
        advantages[rows] = adv
    return advantages, advantages
