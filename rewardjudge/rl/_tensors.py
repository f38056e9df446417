"""Grades as torch tensors (an unscored grade is masked, never a fake 0), and GRPO-style
group-relative advantages that ignore masked entries."""

from __future__ import annotations

import operator
from typing import Hashable, Sequence

import torch

from ..errors import ConfigError
from ..grade import STATUSES, Grade
from ._health import checked_grades

__all__ = ["RewardTensors", "group_normalize", "rewards_tensor"]


class RewardTensors(tuple):
    """``(rewards, mask)`` (``mask`` **True where unscored**, as in ``numpy.ma``) with ``statuses`` and ``counts``."""

    rewards = property(operator.itemgetter(0))
    mask = property(operator.itemgetter(1))

    def __new__(cls, rewards: torch.Tensor, mask: torch.Tensor, statuses: list[str]) -> "RewardTensors":
        self = super().__new__(cls, (rewards, mask))
        self.statuses = statuses
        return self

    @property
    def counts(self) -> dict[str, int]:
        return {s: self.statuses.count(s) for s in STATUSES}


def rewards_tensor(grades: Sequence[Grade], *, fill: float = float("nan"), dtype: torch.dtype = torch.float32,
                   device: torch.device | str | None = None) -> RewardTensors:
    """Rewards and the mask of unscored entries; an unscored entry holds ``fill`` (NaN: a forgotten mask is loud).

    >>> from rewardjudge import Grade
    >>> rewards, mask = rewards_tensor([Grade(1.0, "g"), Grade(None, "g", error="judge down")])
    >>> rewards.tolist()[0], mask.tolist()
    (1.0, [False, True])
    """
    grades = checked_grades(grades)
    for i, g in enumerate(grades):
        if g.is_label_only:
            raise ConfigError(f"grades[{i}] is a label ({g.extra.get('label')!r}) from a labels-only scorer: "
                              f"it has no reward; give the scorer's output_spec 'values' to train on it")
    unscored = [g.status == "unscored" for g in grades]
    rewards = torch.tensor([fill if u else float(g.value) for g, u in zip(grades, unscored)],  # type: ignore[arg-type]
                           dtype=dtype, device=device)
    return RewardTensors(rewards, torch.tensor(unscored, dtype=torch.bool, device=device), [str(g.status) for g in grades])


def _group_index(n: int, group_ids, group_size: int | None, device) -> torch.Tensor:
    """Map every entry to a dense group number 0..G-1."""
    if (group_ids is None) == (group_size is None):
        raise ConfigError("pass exactly one of group_ids (one id per reward) or group_size "
                          "(consecutive blocks of that many rewards, TRL's layout)")
    if group_size is not None:
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ConfigError(f"group_size must be a positive int, got {group_size!r}")
        if n % group_size:
            raise ConfigError(f"{n} rewards do not split into groups of {group_size}")
        return torch.arange(n, device=device) // group_size
    if isinstance(group_ids, torch.Tensor):
        if group_ids.dim() != 1:
            raise ConfigError(f"group_ids must be 1-D, got shape {tuple(group_ids.shape)}")
        group_ids = group_ids.tolist()
    ids = list(group_ids)
    if len(ids) != n:
        raise ConfigError(f"group_ids has {len(ids)} entries for {n} rewards")
    dense: dict[Hashable, int] = {}
    try:
        index = [dense.setdefault(g, len(dense)) for g in ids]
    except TypeError:
        raise ConfigError("group_ids must be hashable (a prompt id, uid or index per reward)") from None
    return torch.tensor(index, dtype=torch.long, device=device)


def group_normalize(rewards: torch.Tensor, mask: torch.Tensor | None = None, *,
                    group_ids: Sequence[Hashable] | torch.Tensor | None = None,
                    group_size: int | None = None, eps: float = 1e-4, scale: bool = True) -> torch.Tensor:
    """GRPO advantages ``(r - mean) / (std + eps)`` per group (``group_ids`` or blocks of ``group_size``),
    masked and NaN entries left out; they and groups of under two usable rewards get 0; ``scale=False``: Dr. GRPO.

    >>> r = torch.tensor([1.0, 0.0, float("nan"), 0.5, 0.5, 0.5])
    >>> group_normalize(r, r.isnan(), group_size=3).tolist()[2:]
    [0.0, 0.0, 0.0, 0.0]
    """
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 1:
        raise ConfigError("rewards must be a 1-D tensor (use rewards_tensor(grades))")
    if not rewards.is_floating_point():
        rewards = rewards.float()
    n = rewards.numel()
    valid = ~torch.isnan(rewards)
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.shape != rewards.shape:
            raise ConfigError(f"mask must be a bool tensor shaped like rewards {tuple(rewards.shape)}")
        valid &= ~mask.to(device=rewards.device, dtype=torch.bool)
    if eps < 0:
        raise ConfigError("eps must be >= 0")
    group = _group_index(n, group_ids, group_size, rewards.device)
    if n == 0:
        return rewards.clone()
    n_groups = int(group.max()) + 1
    r = torch.where(valid, rewards, torch.zeros_like(rewards))
    w = valid.to(rewards.dtype)
    count = torch.zeros(n_groups, dtype=rewards.dtype, device=rewards.device).index_add_(0, group, w)
    total = torch.zeros_like(count).index_add_(0, group, r)
    mean = total / count.clamp(min=1)
    dev = (r - mean[group]) * w
    sq = torch.zeros_like(count).index_add_(0, group, dev * dev)
    std = torch.sqrt(sq / (count - 1).clamp(min=1))
    adv = r - mean[group]
    if scale:
        denom = std[group] + eps
        # a group without spread has r == mean everywhere: 0, not 0/0 when eps is 0
        adv = torch.where(denom > 0, adv / denom.clamp(min=torch.finfo(adv.dtype).tiny), torch.zeros_like(adv))
    return torch.where(valid, adv, torch.zeros_like(adv))
