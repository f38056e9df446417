"""Plug graders into RL training loops (TRL, verl, plain torch): docs/training.md.

Its names load on first use; the tensor helpers and adapters need torch, not trl or verl.
"""

from .._lazy import lazy_getattr as _lazy_getattr
import typing as _typing

_LAZY = {"OutageGuard": "._health", "group_normalize": "._tensors", "rewards_tensor": "._tensors", "judge_health": "._health",
         "trl_reward_func": "._trl_adapter", "trl_reward_funcs": "._trl_adapter",
         "verl_compute_score": "._verl_adapter"}

if _typing.TYPE_CHECKING:
    from ._health import OutageGuard, judge_health
    from ._tensors import group_normalize, rewards_tensor
    from ._trl_adapter import trl_reward_func, trl_reward_funcs
    from ._verl_adapter import verl_compute_score

__all__ = sorted(_LAZY)

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
