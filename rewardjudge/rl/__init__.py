"""Plug graders into RL training loops.

* ``trl_reward_func(grader)``: an async reward function for TRL's GRPOTrainer.
* ``trl_reward_funcs(grader, [other, ...])``: the judge plus other reward
  functions gated on its outcome (a judge failure masks the whole row).
* ``verl_compute_score(grader)``: a verl ``compute_score`` function (sync,
  async, batch forms).
* ``rewards_tensor(grades)``: rewards and the mask of unscored entries.
* ``group_normalize(rewards, mask, group_size=...)``: GRPO advantages that
  ignore masked entries.
* ``judge_health(grades)``: flat judge-health metrics for a logger.

Importing this package needs torch, not trl or verl.
"""

from ._health import judge_health
from ._tensors import group_normalize, rewards_tensor
from ._trl_adapter import trl_reward_func, trl_reward_funcs
from ._verl_adapter import verl_compute_score

__all__ = ["group_normalize", "judge_health", "rewards_tensor", "trl_reward_func", "trl_reward_funcs",
           "verl_compute_score"]
