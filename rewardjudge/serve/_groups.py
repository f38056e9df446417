"""Groups as the reward server sees them: estimators, stand-in rewards, OpenRLHF's groups (docs/serve.md)."""

from __future__ import annotations

import asyncio
import collections
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Hashable, NoReturn, Sequence

from ..errors import ConfigError
from ..grade import Grade

__all__ = ["OPENRLHF_ESTIMATORS", "EXACT_ESTIMATORS", "check_estimator", "group_rewards", "openrlhf_reward_func",
           "stand_in", "PromptGroups"]

#: ``--algo.advantage.estimator`` choices of OpenRLHF 0.11.2 (cli/train_ppo_ray.py)
OPENRLHF_ESTIMATORS = ("gae", "reinforce", "rloo", "reinforce_baseline", "group_norm", "dr_grpo", "flash_reinforce")
#: the ones a stand-in reward keeps exact (advantage 0, the group's others unchanged)
EXACT_ESTIMATORS = ("dr_grpo",)

# why a stand-in cannot be exact, read from experience_maker.compute_advantages_and_returns
_WHY = {
    "group_norm": "it divides by the group's reward std, and any stand-in reward changes that std "
                  "(up to 0.52 of advantage on the others)",
    "rloo": "its leave-one-out baseline weighs the others by n/(n-1), so a stand-in rescales their advantages",
    "reinforce_baseline": "after subtracting the group mean it whitens advantages over every token of the "
                          "batch, and a stand-in's tokens move that mean and std",
    "reinforce": "it whitens returns over every token of the batch (mean and std), so no reward the "
                 "server can pick gives advantage 0 or leaves the others unchanged",
    "gae": "advantages come from the critic's per-token values and are whitened over the batch",
    "flash_reinforce": "its baseline is the whole rollout batch's mean, which the server never sees",
}

#: what keeps dr_grpo exact on OpenRLHF's side (said in every refusal and in the docs)
DR_GRPO_CONDITIONS = (
    "keep the KL out of the reward (--algo.kl.use_loss, or --algo.kl.init_coef 0: a KL penalty in the reward "
    "gives every sample, a judge failure too, its own per-token KL advantage) and leave "
    "--reward.overlong_buffer_len and --reward.stop_properly_penalty_coef unset (they change a sample's reward "
    "after the server)")


def check_estimator(estimator: str | None) -> str | None:
    """``estimator`` if a stand-in reward keeps it exact, None for None; else ``ConfigError``."""
    if estimator is None or estimator in EXACT_ESTIMATORS:
        return estimator
    if estimator not in OPENRLHF_ESTIMATORS:
        raise ConfigError(f"unknown OpenRLHF estimator {estimator!r}; OpenRLHF 0.11.2 has "
                          f"{', '.join(OPENRLHF_ESTIMATORS)}")
    raise ConfigError(
        f"OpenRLHF's {estimator} estimator cannot give a sample the judge could not score advantage 0 without "
        f"moving its group's other advantages: {_WHY[estimator]}, and OpenRLHF has no per-sample mask a reward "
        f"server could use (dynamic filtering drops whole groups). Run OpenRLHF with "
        f"--algo.advantage.estimator dr_grpo and serve with --estimator dr_grpo; {DR_GRPO_CONDITIONS}.")


PY_FORM_REFUSED = (
    "OpenRLHF's .py reward form cannot keep judge failures out of training: OpenRLHF calls reward_func with one "
    "sample at a time through asyncio.to_thread (a pool of a few threads) and swallows what it raises, and a "
    "sample the judge could not score needs its group's other rewards before it can be answered, so waiting for "
    "them would hold the pool until a timeout (6 prompts x 4 samples took 26 s) and answering at once would be a "
    "made-up number. Use the HTTP form: `rewardjudge serve --grader SPEC --judge URL --estimator dr_grpo "
    "--group-size N` and OpenRLHF's `--reward.remote_url http://127.0.0.1:5000/get_reward` with "
    "`--algo.advantage.estimator dr_grpo --rollout.n_samples_per_prompt N` (recipes/openrlhf_remote_rm.sh).")


def openrlhf_reward_func(spec: Any = None, *, judge: str | None = None, judge_model: str | None = None,
                         **options: Any) -> NoReturn:
    """Refuses OpenRLHF's ``.py`` reward form when OpenRLHF loads the file (ConfigError naming the HTTP form)."""
    raise ConfigError(PY_FORM_REFUSED)


def stand_in(values: Sequence[float], fallback: float) -> float:
    """The reward of an unscored sample: the mean of its group's usable rewards, else ``fallback``."""
    return statistics.fmean(values) if values else float(fallback)


def group_rewards(grades: Sequence[Grade], groups: Sequence[Hashable], *,
                  unscored: str | float = "group_mean", fallback: float = 0.0) -> list[float]:
    """Each grade's reward for a trainer without a mask: its value; unscored, its group's mean (or ``unscored``).

    >>> from rewardjudge import Grade
    >>> group_rewards([Grade(1.0, "g"), Grade(0.0, "g"), Grade(None, "g")], ["p", "p", "p"])
    [1.0, 0.0, 0.5]
    """
    if len(grades) != len(groups):
        raise ConfigError(f"{len(groups)} group keys for {len(grades)} grades")
    usable: dict[Hashable, list[float]] = {}
    for g, key in zip(grades, groups):
        if g.status != "unscored":
            usable.setdefault(key, []).append(float(g.value))  # type: ignore[arg-type]
    return [float(g.value) if g.status != "unscored"  # type: ignore[arg-type]
            else stand_in(usable.get(key, ()), fallback) if unscored == "group_mean" else float(unscored)
            for g, key in zip(grades, groups)]


@dataclass(slots=True, eq=False)
class _Group:
    arrived: int = 0
    pending: int = 0   # arrived, not graded yet
    values: list[float] = field(default_factory=list)   # usable rewards
    waiters: list[asyncio.Future] = field(default_factory=list)   # unscored samples waiting for a stand-in
    closed_at: float | None = None   # quiet since then (no arrival for `quiet` s)
    timer: asyncio.TimerHandle | None = None


@dataclass(slots=True, eq=False)
class _Entry:
    """One sample's grading, shared by the request that sent it and any retry of that request."""

    task: asyncio.Future
    owner: Any
    delivered: bool = False
    released_at: float | None = None


class PromptGroups:
    """Samples in, ``(grade, reward, exact)`` out: an unscored one waits for its group (``size`` samples, else
    the largest seen, or quiet for ``quiet`` s: ``exact=False``); results are kept ``keep`` s."""

    def __init__(self, grade: Callable[[Any], Awaitable[Grade]], *, size: int | None, quiet: float,
                 keep: float = 600.0, max_groups: int = 100_000, fallback: float = 0.0):
        self.grade, self.size, self.quiet, self.keep = grade, size, float(quiet), float(keep)
        self.max_groups, self.fallback = int(max_groups), float(fallback)
        self.learned: int | None = None
        self.retries = 0  # retried requests answered from their first one's grading
        self._groups: collections.OrderedDict[Hashable, _Group] = collections.OrderedDict()
        self._entries: dict[Hashable, list[_Entry]] = {}
        self._released: collections.deque = collections.deque()  # (time, dkey, entry)

    def _group_for(self, key: Hashable, now: float) -> _Group:
        g = self._groups.get(key)
        if g is not None:
            forgotten = g.closed_at is not None and now - g.closed_at > self.keep
            if self.size is not None:
                full = g.arrived >= self.size
            else:  # a learned size may be short: only a full group that went quiet is over
                full = self.learned is not None and g.arrived >= self.learned and g.closed_at is not None
            if not forgotten and not full:
                return g
        g = self._groups[key] = _Group()
        self._groups.move_to_end(key)
        self._evict(now)
        return g

    def _evict(self, now: float) -> None:
        while len(self._groups) > 1:
            key, old = next(iter(self._groups.items()))
            busy = old.pending or old.waiters or old.closed_at is None
            if busy or (len(self._groups) <= self.max_groups and now - old.closed_at <= self.keep):
                break
            self._groups.pop(key)

    def _quiet(self, g: _Group) -> None:
        g.timer = None
        g.closed_at = time.monotonic()
        self._settle(g)  # before learning from it: this group's size was not known
        self._learn(g)

    def _learn(self, g: _Group) -> None:
        if self.size is None and g.arrived > (self.learned or 0):
            self.learned = g.arrived

    def _settle(self, g: _Group) -> None:
        size = self.size or self.learned
        full = size is not None and g.arrived >= size
        if full:
            self._learn(g)
        if g.pending or not g.waiters or not (full or g.closed_at is not None):
            return
        reward = stand_in(g.values, self.fallback)
        waiters, g.waiters = g.waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result((reward, full))

    async def sample(self, key: Hashable, thread: Any) -> tuple[Grade, float, bool]:
        """Grade one sample of prompt ``key``: ``(grade, reward, exact)``."""
        g = self._group_for(key, time.monotonic())
        g.arrived += 1
        g.pending += 1
        if g.closed_at is not None:  # late: its group went quiet before it came
            self._learn(g)
        else:  # (re)armed: the group is quiet once no sample came for `quiet` s
            if g.timer is not None:
                g.timer.cancel()
            g.timer = asyncio.get_running_loop().call_later(self.quiet, self._quiet, g)
        try:
            grade = await self.grade(thread)
            if grade.status != "unscored":
                g.values.append(float(grade.value))  # type: ignore[arg-type]
        finally:
            g.pending -= 1
            self._settle(g)
        if grade.status != "unscored":
            return grade, float(grade.value), True  # type: ignore[arg-type]
        fut = asyncio.get_running_loop().create_future()
        g.waiters.append(fut)
        self._settle(g)
        try:
            reward, exact = await asyncio.shield(fut)
        finally:
            self._settle(g)  # another waiter may be the last thing this group waits for
        return grade, reward, exact

    def submit(self, key: Hashable, dkey: Hashable, thread: Any, owner: Any, alive: Callable[[Any], bool]) -> _Entry:
        """The grading of one sample for ``owner``; an identical one (``dkey``) whose client left is taken over."""
        self._expire(time.monotonic())
        for entry in self._entries.get(dkey, ()):
            if not entry.delivered and (entry.owner is None or not alive(entry.owner)):
                entry.owner, entry.released_at = owner, None
                self.retries += 1
                return entry
        entry = _Entry(asyncio.ensure_future(self.sample(key, thread)), owner)
        self._entries.setdefault(dkey, []).append(entry)
        entry.task.add_done_callback(lambda _t, d=dkey, e=entry: self._done(d, e))
        return entry

    def _done(self, dkey: Hashable, entry: _Entry) -> None:
        if entry.task.cancelled():
            self._drop(dkey, entry)
        elif entry.owner is None:  # nobody waits for it: keep it for a retry
            self._release_later(dkey, entry)

    def finish(self, dkey: Hashable, entry: _Entry, owner: Any, delivered: bool) -> None:
        """``owner`` is done with ``entry``; an undelivered grading waits ``keep`` s for a retry."""
        if entry.owner is not owner:
            return  # a retry took it over
        if delivered:
            entry.delivered = True
            self._drop(dkey, entry)
        else:
            entry.owner = None
            self._release_later(dkey, entry)

    def _release_later(self, dkey: Hashable, entry: _Entry) -> None:
        if entry.task.done() and entry.released_at is None:
            entry.released_at = time.monotonic()
            self._released.append((entry.released_at, dkey, entry))

    def _drop(self, dkey: Hashable, entry: _Entry) -> None:
        entries = self._entries.get(dkey)
        if entries and entry in entries:
            entries.remove(entry)
            if not entries:
                del self._entries[dkey]

    def _expire(self, now: float) -> None:
        while self._released and now - self._released[0][0] > self.keep:
            _, dkey, entry = self._released.popleft()
            if entry.owner is None and not entry.delivered:
                self._drop(dkey, entry)
