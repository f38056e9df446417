"""Honest unscored rewards inside verl 0.9 (docs/training.md): ``RewardJudgeManager`` and the
``rewardjudge_<name>`` advantage estimators, registered with verl when this module is imported.
Each estimator runs verl's own over the usable samples only (others: advantage and return 0).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections import Counter
from typing import Any, Callable

import numpy as np
import torch

try:
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager import register
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo import core_algos
except ImportError as exc:  # pragma: no cover - depends on the installed verl
    raise ImportError(f"rewardjudge.rl.verl_manager needs verl >= 0.9 (its reward loop registry): {exc}. "
                      f"Install it with `pip install --no-deps verl==0.9.1` plus ray, tensordict, "
                      f"transformers") from exc

from .._validate import validated_object
from ..errors import ConfigError
from ..grade import Grade
from ._health import OutageGuard, OutageOptions
from ._verl_adapter import EXTRA_KEYS, MANAGER_KWARG

__all__ = ["ESTIMATOR", "EXACT", "EXTRA_KEYS", "PREFIX", "REFUSED", "RewardJudgeManager",
           "check_estimator", "compute_rewardjudge_grpo_advantage", "usable_rows"]

PREFIX = "rewardjudge_"
ESTIMATOR = PREFIX + "grpo"
#: verl estimators that are exact over the usable samples (a rewardjudge_<name> is registered for each)
EXACT = ("grpo", "grpo_vectorized", "grpo_passk", "rloo", "rloo_vectorized", "opo", "gpg",
         "reinforce_plus_plus", "reinforce_plus_plus_baseline")
#: verl estimators that cannot be made exact, and why
REFUSED = {
    "gae": "GAE needs the critic's values, which verl passes only to its built-in `gae` branch, and the critic "
           "would be fitted to the unscored samples' returns",
    "gdpo": "verl hands the per-dimension rewards only to an estimator named exactly `gdpo`",
    "remax": "verl generates ReMax's greedy baselines only when adv_estimator is exactly `remax`",
    "optimal_token_baseline": "verl hands sum_pi_squared and old_log_probs only to an estimator named exactly "
                              "`optimal_token_baseline`",
    "tir_optimal_token_baseline": "verl hands sum_pi_squared and old_log_probs only to an estimator named exactly "
                                  "`tir_optimal_token_baseline`",
}


def _config_get(config: Any, key: str, default: Any = None) -> Any:
    if config is None:
        return default
    try:
        value = config.get(key, default) if hasattr(config, "get") else getattr(config, key, default)
    except Exception:  # an OmegaConf struct without the key
        return default
    return default if value is None and default is not None else value


class _VerlOutage(OutageOptions):
    where = "algorithm.rewardjudge"


_GUARDS: dict[tuple, OutageGuard] = {}  # kept across steps in verl's trainer process, one per setting


def _guard(algorithm: Any) -> OutageGuard:
    """The outage guard ``algorithm.rewardjudge`` sets up; ConfigError when malformed."""
    o = validated_object(_VerlOutage, _config_get(algorithm, "rewardjudge", None) or {})
    setting = (o.outage_threshold, o.outage_steps)
    return _GUARDS.setdefault(setting, OutageGuard(*setting))


def check_estimator(name: Any) -> str:
    """The verl estimator behind an exact ``rewardjudge_<name>``; else a ConfigError saying what to use."""
    name = getattr(name, "value", name)
    if not isinstance(name, str):
        raise ConfigError(f"algorithm.adv_estimator must be a str, got {name!r}")
    use = ", ".join(PREFIX + n for n in EXACT)
    base = name[len(PREFIX):] if name.startswith(PREFIX) else None
    if base in EXACT:
        return base
    if base is None and name in EXACT:
        raise ConfigError(
            f"algorithm.adv_estimator={name} turns a judge failure (the NaN marker) into NaN advantages and verl "
            f"drops the step. Use algorithm.adv_estimator={PREFIX}{name}: verl's own {name} over the scored "
            f"samples, advantage 0 for the failed ones")
    plain = base or name
    if plain in REFUSED:
        raise ConfigError(
            f"algorithm.adv_estimator={name} cannot keep a judge failure out of training: {REFUSED[plain]}. "
            f"Use algorithm.adv_estimator={ESTIMATOR} (or one of {use})")
    raise ConfigError(f"algorithm.adv_estimator={name} is not one rewardjudge can make exact for judge failures; "
                      f"use algorithm.adv_estimator={ESTIMATOR} (or one of {use})")


def usable_rows(finite: torch.Tensor, index: Any) -> torch.Tensor:
    """The rows an estimator may see: finite score, not the only one of a group of several."""
    if index is None:
        return finite.clone()
    index = list(np.asarray(index, dtype=object))
    total, alive = Counter(index), Counter(g for g, ok in zip(index, finite.tolist()) if ok)
    lone = torch.tensor([total[g] > 1 and alive[g] == 1 for g in index], dtype=torch.bool, device=finite.device)
    return finite & ~lone


_FAILED = Grade(None, "verl", error="unscored: the judge failed (compute_score's NaN marker)")


def _rows(value: Any, rows: torch.Tensor, n: int) -> Any:
    if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == n:
        return value[rows.to(value.device)]
    if isinstance(value, np.ndarray) and value.ndim > 0 and value.shape[0] == n:
        return value[rows.cpu().numpy()]
    return value


def _make_estimator(base: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    def estimator(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None,
                  config: Any = None, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        fn = core_algos.get_adv_estimator_fn(base)
        n = token_level_rewards.shape[0]
        finite = torch.isfinite(token_level_rewards.sum(dim=-1)).cpu()
        usable = usable_rows(finite, index)
        unscored, lone = n - int(finite.sum()), int((finite & ~usable).sum())
        print(f"[rewardjudge] {PREFIX}{base}: {n} samples, unscored {unscored} ({unscored / max(n, 1):.0%}), "
              f"lone usable in a failed group {lone}", flush=True)
        _guard(config).observe([Grade(1.0, "verl") if ok else _FAILED for ok in finite.tolist()])
        advantages = torch.zeros_like(token_level_rewards)
        returns = torch.zeros_like(token_level_rewards)
        if bool(usable.any()):
            rows = usable.nonzero(as_tuple=True)[0]
            columns = {"token_level_rewards": token_level_rewards, "response_mask": response_mask, **kwargs}
            if index is not None:
                columns["index"] = np.asarray(index)
            call = {"config": config, **{k: _rows(v, rows, n) for k, v in columns.items()}}
            if base == "grpo":  # verl's trainer calls its grpo with this from the algorithm config
                call.setdefault("norm_adv_by_std_in_grpo", bool(_config_get(config, "norm_adv_by_std_in_grpo", True)))
            adv, ret = fn(**call)
            advantages[rows.to(advantages.device)] = adv.to(advantages.dtype)
            returns[rows.to(returns.device)] = ret.to(returns.dtype)
        return advantages, returns

    estimator.__name__ = estimator.__qualname__ = f"compute_{PREFIX}{base}_advantage"
    estimator.__doc__ = (f"verl's `{base}` over the usable samples (finite score, not alone in a failed group); "
                         f"advantage and return 0 for the others. Runs the outage guard once per call.")
    return estimator


_ESTIMATORS: dict[str, Callable[..., Any]] = {}
for _base in EXACT:
    if _base in core_algos.ADV_ESTIMATOR_REGISTRY:
        _ESTIMATORS[_base] = core_algos.register_adv_est(PREFIX + _base)(_make_estimator(_base))
compute_rewardjudge_grpo_advantage = _ESTIMATORS["grpo"]


def _normalized_extra(result: Any, score: Any) -> tuple[float, dict[str, float]]:
    """(score, extra) with ``EXTRA_KEYS`` whatever the compute_score returned; unscored: NaN."""
    extra = dict(result) if isinstance(result, dict) else {}
    unscored = not math.isfinite(float(score)) or float(extra.get("unscored", 0.0)) == 1.0
    score = math.nan if unscored else float(score)
    defaults = {"scored": float(not unscored), "penalized": 0.0, "forgery": 0.0}  # for a plain function's float
    out = {k: float(extra.get(k, defaults.get(k, math.nan))) for k in EXTRA_KEYS}
    out.update(score=score, unscored=float(unscored))
    return score, out


def _raw_function(fn: Any) -> Any:
    """The user's function inside verl's ``partial(_call_with_kwargs, raw_fn, kwargs)``."""
    while isinstance(fn, functools.partial):
        fn = fn.args[0] if fn.args and callable(fn.args[0]) else fn.func
    return fn


def _tell_compute_score(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` called with ``rewardjudge_manager=True`` when it is ours (it returns the marker)."""
    if not getattr(_raw_function(fn), "rewardjudge_verl", False):
        return fn
    if inspect.iscoroutinefunction(fn):
        async def told(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **kwargs, **{MANAGER_KWARG: True})
    else:
        def told(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs, **{MANAGER_KWARG: True})
    told.__wrapped__ = fn  # type: ignore[attr-defined]
    return told


@register("rewardjudge")
class RewardJudgeManager(NaiveRewardManager):
    """verl's naive manager, checking the estimator at start and keeping the unscored marker honest."""

    def __init__(self, config, tokenizer, compute_score, reward_router_address=None, reward_model_tokenizer=None):
        algorithm = _config_get(config, "algorithm", None)
        if algorithm is not None:  # verl always passes its whole config; a bare test config may lack it
            check_estimator(_config_get(algorithm, "adv_estimator", "gae"))
            _guard(algorithm)
        super().__init__(config, tokenizer, compute_score, reward_router_address=reward_router_address,
                         reward_model_tokenizer=reward_model_tokenizer)
        self.compute_score = _tell_compute_score(self.compute_score)
        self.is_async_reward_score = inspect.iscoroutinefunction(self.compute_score)

    async def run_single(self, data):
        nt = data.non_tensor_batch
        if "data_source" not in nt or "reward_model" not in nt:
            data = self._colocated_input(data)
        out = await super().run_single(data)
        out["reward_score"], out["reward_extra_info"] = _normalized_extra(out.get("reward_extra_info"),
                                                                          out["reward_score"])
        return out

    @staticmethod
    def _colocated_input(data):
        """The colocated reward-model path sends ``raw_prompt`` only: grade it, no reference."""
        n = len(data)
        nt = dict(data.non_tensor_batch)
        raw = nt.get("raw_prompt")
        extra = [{"prompt": None if raw is None else raw[i]} for i in range(n)]  # an array: read as a list
        nt.setdefault("data_source", np.array([None] * n, dtype=object))
        nt.setdefault("reward_model", np.array([{"ground_truth": None} for _ in range(n)], dtype=object))
        nt.setdefault("extra_info", np.array(extra, dtype=object))
        return DataProto(batch=data.batch, non_tensor_batch=nt, meta_info=dict(data.meta_info))

