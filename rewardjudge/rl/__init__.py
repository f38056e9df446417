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
* ``OutageGuard()``: ``observe(grades)`` once per step stops a run whose
  judge is down (``JudgeOutage``) instead of training on nothing.

Its names load on first use; the tensor helpers and adapters need torch, not trl or verl.
"""

from .._lazy import lazy_getattr as _lazy_getattr
import typing as _typing

#: name -> module, imported on first use (``rl._health`` alone needs no torch)
_LAZY = {"OutageGuard": "._health", "group_normalize": "._tensors", "rewards_tensor": "._tensors", "judge_health": "._health",
         "trl_reward_func": "._trl_adapter", "trl_reward_funcs": "._trl_adapter",
         "verl_compute_score": "._verl_adapter"}

if _typing.TYPE_CHECKING:
    from ._health import OutageGuard, judge_health
    from ._tensors import group_normalize, rewards_tensor
    from ._trl_adapter import trl_reward_func, trl_reward_funcs
    from ._verl_adapter import verl_compute_score

__all__ = ["OutageGuard", "group_normalize", "judge_health", "rewards_tensor", "trl_reward_func", "trl_reward_funcs",
           "verl_compute_score"]

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
