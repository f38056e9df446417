"""trl_reward_func: any grader as a reward function for TRL's GRPOTrainer (docs/training.md).

An unscored grade is returned as ``None`` (TRL masks it), never a fake 0. The
functions are coroutine functions to ``inspect``; a call from plain code returns the list.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import itertools
import logging
import math
import threading
import warnings
import weakref
from typing import Any, Callable, Literal, Mapping, Sequence

from .._hash import canonical_hash
from ..errors import ConfigError
from ..grade import Grade
from ..graders._base import Grader
from .._sync import LoopThread
from ..thread import StringThread, completion_threads, with_own_keys
from ._health import OutageGuard, judge_health

__all__ = ["JudgeGatedReward", "TRLRewardFunc", "trl_reward_func", "trl_reward_funcs"]

_TRL_RESERVED = frozenset({"trainer_state", "log_metric", "log_extra", "environments",
                           "completion_ids", "prompts", "completions"})
#: dataset column names GRPOTrainer never hands a reward function as the column: its own arguments
#: take the name, and it drops a ``completion`` column
_TRL_TAKEN = _TRL_RESERVED | {"completion"}


async def _trl_signature(prompts, completions, completion_ids=None, **kwargs):  # pragma: no cover
    """The signature (and coroutine flag) the reward functions show to ``inspect``."""


class _DualCall:
    """A coroutine function to ``inspect``: called in a running loop it returns a coroutine, else it runs
    on a long-lived loop thread."""

    __code__ = _trl_signature.__code__
    __defaults__ = None
    __kwdefaults__ = None
    _is_coroutine_marker = getattr(inspect, "_is_coroutine_mark", None)
    _loop_thread: LoopThread  # where a call from plain code runs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        coro = self._acall(*args, **kwargs)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._loop_thread.run(coro)
        return coro


#: batches kept for the other functions of a ``trl_reward_funcs`` set (oldest dropped past it)
_MAX_SHARED = 64
_TRL_NONE_WARNING = "All reward functions returned None"
_TRL_LOGGER = "trl.trainer.grpo_trainer"


_SEEN = [itertools.count()]  # its next() is atomic: reward calls may log from several threads


def _once_per_run(record: logging.LogRecord) -> bool:
    """Lets TRL's "All reward functions returned None" warning through once per run, as one line."""
    msg = record.msg
    if not (isinstance(msg, str) and _TRL_NONE_WARNING in msg[:80]):  # accelerate puts "[RANK n] " in front
        return True
    if next(_SEEN[0]):
        return False
    record.msg, record.args = ("Some completions got no reward (every reward function returned None: the "
                               "judge could not score them); TRL leaves them out of their group's baseline and "
                               "gives them advantage 0. Said once per run: the judge's unscored counts are "
                               "logged every step under judge/<grader>/unscored."), ()
    return True


def _install_warning_filter(reset: bool) -> None:
    logging.getLogger(_TRL_LOGGER).addFilter(_once_per_run)  # a filter already there is not added again
    if reset:
        _SEEN[0] = itertools.count()


_EXIT_CLOSES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[int]]" = weakref.WeakKeyDictionary()
_EXIT_LOCK = threading.Lock()


def _close_on_exit(reward: "TRLRewardFunc", loop: asyncio.AbstractEventLoop) -> None:
    """Close ``reward``'s judge client on ``loop`` at interpreter exit, while the loop still runs (TRL
    stops it without closing what runs on it)."""
    model = getattr(reward.grader, "model", None)
    if getattr(model, "aclose", None) is None:
        return
    with _EXIT_LOCK:
        registered = _EXIT_CLOSES.setdefault(loop, set())
        if id(model) in registered:
            return
        registered.add(id(model))
    atexit.register(_close_at_exit, model, weakref.ref(loop))  # holds the model: it is closed, not collected


def _close_at_exit(model: Any, loop_ref: "weakref.ref[asyncio.AbstractEventLoop]") -> None:
    loop = loop_ref()
    if loop is None or loop.is_closed() or not loop.is_running():
        return
    with contextlib.suppress(Exception):  # exiting anyway: a judge that will not close must not hang the exit
        asyncio.run_coroutine_threadsafe(model.aclose(), loop).result(5)


def _dataset_columns(trainer: Any) -> set[str]:
    """The column names of ``trainer``'s train and eval datasets (an eval dict's every dataset)."""
    names: set[str] = set()
    for data in (getattr(trainer, "train_dataset", None), getattr(trainer, "eval_dataset", None)):
        for ds in (data.values() if isinstance(data, Mapping) else [data]):
            names.update(getattr(ds, "column_names", None) or ())
    return names


def _refuse_taken(names: Any, what: str) -> None:
    taken = sorted(set(names) & _TRL_TAKEN)
    if taken:
        raise ConfigError(f"{what} {', '.join(map(repr, taken))}: GRPOTrainer passes its own arguments under "
                          f"{'these names' if len(taken) > 1 else 'this name'} (or drops a 'completion' column), "
                          f"so the judge would never see the column; rename it")


class TRLRewardFunc(_DualCall):
    """A grader as an async GRPOTrainer reward function (docs/training.md), with ``last_grades`` and its
    ``guard``. Options: ``mode`` (default: the attached trainer's phase, else an ``eval`` column),
    ``columns`` (put in thread metadata; default all), ``log_health`` and ``health_prefix`` (through
    ``log_metric``), ``log_completions`` (through ``log_extra``), ``outage_threshold``/``outage_steps``."""

    def __init__(self, grader: Grader, *, mode: Literal["train", "eval"] | None = None,
                 columns: Sequence[str] | None = None, log_health: bool = True,
                 health_prefix: str | None = None, log_completions: bool = True,
                 outage_threshold: float | None = 0.5, outage_steps: int = 3):
        if not isinstance(grader, Grader):
            raise ConfigError(f"trl_reward_func needs a Grader, got {type(grader).__name__}")
        grader.require_rewards("a TRL reward function")
        if mode not in (None, "train", "eval"):
            raise ConfigError(f"mode must be 'train', 'eval' or None, got {mode!r}")
        self.grader, self.mode, self.log_health, self.log_completions = grader, mode, log_health, log_completions
        self.__name__ = self.__qualname__ = grader.grader_key
        self.columns = None if columns is None else list(columns)
        _refuse_taken(self.columns or (), "columns=")
        self.health_prefix = f"judge/{grader.grader_key}/" if health_prefix is None else health_prefix
        self.last_grades: list[Grade] = []
        self.guard = OutageGuard(outage_threshold, outage_steps)
        self._sharers = 0  # set by trl_reward_funcs: how many gated functions read each batch
        self._fresh()

    def _fresh(self) -> None:  # the state that is not pickled
        self._trainer: Any = None
        self._shared: dict[str, list] = {}
        self._loop_thread = LoopThread(f"rewardjudge-trl-{self.__name__}")  # its thread starts on first use
        self._warned = False

    def __getstate__(self) -> dict[str, Any]:
        drop = ("_trainer", "_shared", "_loop_thread", "_warned")
        return {k: v for k, v in self.__dict__.items() if k not in drop}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._fresh()

    def attach(self, trainer: Any) -> "TRLRewardFunc":
        """Follow ``trainer``'s phase and refuse an ungated reward function beside this judge; self."""
        if getattr(trainer, "model", None) is None or not hasattr(trainer.model, "training"):
            raise ConfigError("attach() needs a trainer whose .model is a torch module "
                              "(a transformers / TRL Trainer)")
        funcs = getattr(trainer, "reward_funcs", None)
        if isinstance(funcs, (list, tuple)) and any(f is self for f in funcs):
            ungated = [f for f in funcs if f is not self and not (isinstance(f, JudgeGatedReward) and f.judge is self)]
            if ungated:
                names = ", ".join(repr(getattr(f, "__name__", type(f).__name__)) for f in ungated)
                raise ConfigError(
                    f"reward function(s) {names} stand beside the judge {self.__name__!r} ungated: where the "
                    f"judge cannot score a completion (unscored, None), TRL still adds their rewards, so a judge "
                    f"failure becomes a number in training. Build the set with "
                    f"rewardjudge.rl.trl_reward_funcs(judge, [other, ...]) and pass all of it as reward_funcs "
                    f"(reward_weights in the same order): every function then returns None where the judge failed")
        aggregation = getattr(getattr(trainer, "args", None), "multi_objective_aggregation", None)
        if aggregation == "normalize_then_sum":
            raise ConfigError(
                "multi_objective_aggregation='normalize_then_sum' gives a completion left alone in its group by "
                "judge failures a non-zero advantage (its per-function std is undefined, TRL then sums a 0); use "
                "multi_objective_aggregation='sum_then_normalize' (TRL's default), where unscored completions "
                "leave the baseline and a lone survivor gets advantage 0")
        names = _dataset_columns(trainer)
        _refuse_taken(names - {"completion"}, "the trainer's dataset column(s)")
        if "completion" in names:   # prompt-completion datasets (trl-lib/tldr) are common: said, not refused
            warnings.warn("the dataset's 'completion' column is dropped by GRPOTrainer: the judge grades the "
                          "generated completion and never sees that column (rename it, e.g. 'reference', to "
                          "show it to the judge)", stacklevel=2)
        self._trainer = trainer
        _install_warning_filter(reset=True)
        return self

    def phase(self) -> Literal["train", "eval"] | None:
        """``mode`` if set, else the attached trainer's phase, else None (a column ``eval`` decides)."""
        if self.mode is not None:
            return self.mode
        if self._trainer is not None:
            return "train" if self._trainer.model.training else "eval"
        return None

    def threads(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[StringThread]:
        """The threads a call grades, dataset columns as each thread's metadata."""
        n = len(prompts)
        names = [k for k in columns if k not in _TRL_RESERVED] if self.columns is None else self.columns
        for name in names:
            if name not in columns:
                raise ConfigError(f"column {name!r} was not passed to the reward function; "
                                  f"available: {sorted(k for k in columns if k not in _TRL_RESERVED)}")
            values = columns[name]
            if not isinstance(values, (list, tuple)) or len(values) != n:
                raise ConfigError(f"column {name!r} must hold one value per completion ({n}), got "
                                  f"{type(values).__name__} of length "
                                  f"{len(values) if hasattr(values, '__len__') else '?'}")
        phase = self.phase()
        own = {} if phase is None else {"eval": phase == "eval"}
        setter = f"the reward function's {phase} phase (its mode, or the attached trainer's)"
        metadata = [with_own_keys({name: columns[name][i] for name in names}, own, f"completion {i}", setter)
                    for i in range(n)]
        images = bool(getattr(self.grader, "reads_images", False))  # the grader asks for image content parts
        return completion_threads(prompts, completions, metadata, images=images)

    async def _acall(self, prompts: Sequence[Any], completions: Sequence[Any],
                     completion_ids: Any = None, *, trainer_state: Any = None,
                     log_metric: Callable[[str, float], None] | None = None,
                     log_extra: Callable[[str, list], None] | None = None, **columns: Any) -> list[float | None]:
        if trainer_state is not None:  # called by a trainer
            self._first_trainer_call(getattr(log_metric, "__self__", None))
            loop = asyncio.get_running_loop()
            if self._loop_thread.loop is not loop:  # a trainer's own loop
                _close_on_exit(self, loop)
        grades = await self.grades_for(prompts, completions, **columns)
        self.last_grades = grades
        if self.phase() != "eval":
            self.guard.observe(grades)  # JudgeOutage stops the run when the judge is down
        self._log(grades, log_metric, log_extra)
        return [g.value for g in grades]

    def _log(self, grades: list[Grade], log_metric: Callable[[str, float], None] | None,
             log_extra: Callable[[str, list], None] | None) -> None:
        """Judge health through TRL's ``log_metric``; each completion's status and reason through ``log_extra``."""
        if self.log_health and log_metric is not None:
            for name, value in judge_health(grades, prefix=self.health_prefix).items():
                if math.isfinite(value):  # TRL averages metrics; a NaN would poison the mean
                    log_metric(name, value)
        if self.log_completions and log_extra is not None:
            key = self.grader.grader_key
            log_extra(f"{key}/status", [g.status for g in grades])
            log_extra(f"{key}/why", [(g.reasoning if g.status == "scored" else g.error) or "" for g in grades])

    def _first_trainer_call(self, trainer: Any) -> None:
        """Attach to ``trainer`` (TRL binds ``log_metric`` to it) if not attached; else warn once."""
        funcs = getattr(trainer, "reward_funcs", None)
        if self._trainer is None and isinstance(funcs, (list, tuple)) and any(f is self for f in funcs):
            self.attach(trainer)
        if self._warned:
            return
        self._warned = True
        _install_warning_filter(reset=False)
        if self._trainer is None:
            warnings.warn(
                f"trl_reward_func {self.__name__!r} is not attached to its trainer, so it cannot see the "
                f"trainer's other reward functions: a plain one beside it turns every judge failure into its "
                f"own reward. Call reward.attach(trainer) after building the GRPOTrainer (it checks them and "
                f"follows train/eval), and build several with rewardjudge.rl.trl_reward_funcs(judge, [others]).",
                RuntimeWarning, stacklevel=2)

    async def grades_for(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[Grade]:
        """The Grades of one batch, graded once for a ``trl_reward_funcs`` set."""
        columns = {k: v for k, v in columns.items() if k not in _TRL_RESERVED}
        if not self._sharers:
            return await self.grader.grade_batch(self.threads(prompts, completions, **columns))
        # the columns and the phase are part of what is graded: the same completions with another reference,
        # or in evaluation, are another batch
        key = canonical_hash([list(prompts), list(completions), columns, self.phase()])
        entry = self._shared.get(key)
        if entry is None:
            task = asyncio.ensure_future(self.grader.grade_batch(self.threads(prompts, completions, **columns)))
            entry = self._shared[key] = [task, self._sharers + 1]
            while len(self._shared) > _MAX_SHARED:  # a set not all called (a function left out) must not grow forever
                self._shared.pop(next(iter(self._shared)))
        entry[1] -= 1
        if entry[1] <= 0:  # every function of the set has read this batch
            self._shared.pop(key, None)
        return list(await asyncio.shield(entry[0]))

    def __repr__(self) -> str:
        return f"trl_reward_func({type(self.grader).__name__}({self.grader.grader_key!r}), phase={self.phase()})"


def trl_reward_func(grader: Grader, **options: Any) -> TRLRewardFunc:
    """``grader`` as an async reward function for ``trl.GRPOTrainer`` (``TRLRewardFunc``'s options):
    one float per completion, ``None`` where unscored (docs/training.md)."""
    return TRLRewardFunc(grader, **options)


class JudgeGatedReward(_DualCall):
    """Another reward function, ``None`` wherever the judge's grade is unscored (``trl_reward_funcs``)."""

    def __init__(self, func: Callable[..., Any], judge: TRLRewardFunc):
        if not callable(func):
            raise ConfigError(f"reward functions must be callable, got {type(func).__name__}")
        self.func = func
        self.judge = judge
        inner = func
        while hasattr(inner, "func") and not hasattr(inner, "__name__"):  # functools.partial
            inner = inner.func
        self.__name__ = self.__qualname__ = getattr(inner, "__name__", type(func).__name__)

    @property
    def _loop_thread(self) -> LoopThread:  # type: ignore[override]
        return self.judge._loop_thread  # the judge's loop: a batch it graded there is shared

    async def _acall(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None,
                     **kwargs: Any) -> list[float | None]:
        grades = await self.judge.grades_for(prompts, completions, **kwargs)
        out = self.func(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)
        if inspect.isawaitable(out):
            out = await out
        out = list(out)
        if len(out) != len(grades):
            raise ConfigError(f"reward function {self.__name__!r} returned {len(out)} rewards for "
                              f"{len(grades)} completions")
        return [None if g.status == "unscored" else v for g, v in zip(grades, out)]

    def __repr__(self) -> str:
        return f"JudgeGatedReward({self.__name__!r}, judge={self.judge.__name__!r})"


def trl_reward_funcs(judge: Grader | TRLRewardFunc, others: Sequence[Callable[..., Any]] = (),
                     **judge_options: Any) -> list[Any]:
    """``[judge, *gated others]`` for ``GRPOTrainer`` (docs/training.md): each batch graded once, every
    function None where the judge could not score; ``judge``: a Grader or a built ``TRLRewardFunc``."""
    if isinstance(judge, TRLRewardFunc) and judge_options:
        raise ConfigError("judge options apply when judge is a Grader, not an already built reward function")
    reward = judge if isinstance(judge, TRLRewardFunc) else trl_reward_func(judge, **judge_options)
    gated = [JudgeGatedReward(f, reward) for f in others]
    reward._sharers = len(gated)
    return [reward, *gated]
