"""trl_reward_func: any grader as a reward function for TRL's GRPOTrainer.

TRL (1.16) calls a reward function with ``prompts``, ``completions``,
``completion_ids``, every dataset column as a keyword argument (one value per
completion), and ``trainer_state``, ``log_metric``, ``log_extra``. It runs
async reward functions together on a background event loop, turns ``None``
into NaN, leaves NaN out of the group baselines and gives a completion with no
reward at all advantage 0. So an unscored grade (the judge failed) is
returned as ``None``: masked, never a fake 0.

TRL does not tell a reward function whether it is training or evaluating;
the trainer's model does (``model.training``). ``attach(trainer)`` lets the
reward function read it, so malformed completions get the training penalty
during ``train()`` and the evaluation penalty during ``evaluate()``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from typing import Any, Callable, Literal, Mapping, Sequence

from .._hash import canonical_hash
from ..errors import ConfigError
from ..grade import Grade
from ..graders._base import Grader
from ..thread import StringThread, content_text
from ._health import judge_health

__all__ = ["JudgeGatedReward", "TRLRewardFunc", "completion_threads", "trl_reward_func", "trl_reward_funcs"]

# keyword arguments TRL passes that are not dataset columns
_TRL_RESERVED = frozenset({"trainer_state", "log_metric", "log_extra", "environments",
                           "completion_ids", "prompts", "completions"})
_ROLE_ALIASES = {"developer": "system", "ipython": "tool", "function": "tool"}


def _content_text(message: Mapping[str, Any], where: str, images: list | None = None,
                  turn: int = 0) -> str:
    """A chat message's content as text (``thread.content_text``: text parts
    joined, image parts kept in ``images`` or refused naming ``where``), tool
    calls appended as JSON so the judge sees what the policy did."""
    text = content_text(message.get("content"), f"{where} content", images=images, turn=turn)
    if message.get("tool_calls"):
        calls = json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
        text = f"{text}\n[tool_calls] {calls}" if text else f"[tool_calls] {calls}"
    return text


def reads_images(grader: Any) -> bool:
    """Whether ``grader`` asks for image content parts (a true ``reads_images``
    attribute); other graders get an error naming the row for an image part."""
    return bool(getattr(grader, "reads_images", False))


def _turns(value: Any, default_role: str, where: str, images: list | None = None,
           first_turn: int = 0) -> list[tuple[str, str]]:
    """Turns of a prompt or completion in TRL's standard (str) or
    conversational (list of messages) format. ``first_turn``: the index the
    first of them will have in the thread (for ``images``)."""
    if isinstance(value, str):
        return [(default_role, value)]
    if isinstance(value, Mapping):  # one message on its own
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where} must be a str (standard format) or a list of "
                          f"{{'role', 'content'}} messages (conversational format), got "
                          f"{type(value).__name__}")
    turns = []
    for j, m in enumerate(value):
        if not isinstance(m, Mapping) or "role" not in m:
            raise ConfigError(f"{where}[{j}] must be a message with a 'role', got {m!r:.80}")
        role = _ROLE_ALIASES.get(m["role"], m["role"])
        if role not in ("system", "user", "assistant", "tool"):
            raise ConfigError(f"{where}[{j}] has role {m['role']!r}; expected system, user, "
                              f"assistant or tool (developer is read as system)")
        turns.append((role, _content_text(m, f"{where}[{j}]", images, first_turn + j)))
    return turns


def completion_threads(prompts: Sequence[Any], completions: Sequence[Any],
                       metadata: Sequence[Mapping[str, Any]] | None = None, *,
                       images: bool = False) -> list[StringThread]:
    """One StringThread per completion: the prompt's turns, then the completion's.

    A standard-format prompt is a user turn and a standard completion an
    assistant turn; conversational ones keep their roles. ``metadata[i]``
    becomes thread ``i``'s metadata (templates read it as ``{{metadata.x}}``).
    Content parts are accepted: text joined; image parts kept in
    ``thread.images`` with ``images=True``, else a ConfigError naming the row.

    >>> completion_threads(["2+2?"], ["4"], [{"answer": "4"}])[0]
    StringThread([('user', '2+2?'), ('assistant', '4')], metadata={'answer': '4'})
    """
    if len(prompts) != len(completions):
        raise ConfigError(f"{len(prompts)} prompts for {len(completions)} completions")
    if metadata is not None and len(metadata) != len(prompts):
        raise ConfigError(f"{len(metadata)} metadata rows for {len(prompts)} completions")
    threads = []
    for i, (p, c) in enumerate(zip(prompts, completions)):
        kept: list | None = [] if images else None
        head = _turns(p, "user", f"row {i}: prompts[{i}]", kept)
        turns = head + _turns(c, "assistant", f"row {i}: completions[{i}]", kept, len(head))
        thread = StringThread(turns, metadata[i] if metadata is not None else None)
        thread.images = kept or []
        threads.append(thread)
    return threads


class TRLRewardFunc:
    """A grader as an async GRPOTrainer reward function; build it with
    ``trl_reward_func``.

    Attributes: ``grader``, ``__name__`` (the grader key: TRL logs
    ``rewards/<name>/mean``), ``last_grades`` (the Grades of the latest call,
    for inspection).
    """

    def __init__(self, grader: Grader, *, mode: Literal["train", "eval"] | None = None,
                 columns: Sequence[str] | None = None, log_health: bool = True,
                 health_prefix: str | None = None, log_completions: bool = True):
        if not isinstance(grader, Grader):
            raise ConfigError(f"trl_reward_func needs a Grader, got {type(grader).__name__}")
        if mode not in (None, "train", "eval"):
            raise ConfigError(f"mode must be 'train', 'eval' or None, got {mode!r}")
        self.grader = grader
        self.__name__ = grader.grader_key
        self.__qualname__ = grader.grader_key
        self.mode = mode
        self.columns = None if columns is None else list(columns)
        self.log_health = log_health
        self.health_prefix = f"judge/{grader.grader_key}/" if health_prefix is None else health_prefix
        self.log_completions = log_completions
        self.last_grades: list[Grade] = []
        self._trainer: Any = None
        # set by trl_reward_funcs: how many gated reward functions read each batch's grades
        self._sharers = 0
        self._shared: dict[str, list] = {}

    def attach(self, trainer: Any) -> "TRLRewardFunc":
        """Follow ``trainer``'s phase: evaluation penalties while its model is
        in eval mode (``trainer.evaluate()``), training penalties otherwise.
        Returns self."""
        if getattr(trainer, "model", None) is None or not hasattr(trainer.model, "training"):
            raise ConfigError("attach() needs a trainer whose .model is a torch module "
                              "(a transformers / TRL Trainer)")
        self._trainer = trainer
        return self

    def phase(self) -> Literal["train", "eval"] | None:
        """The phase this call grades in: ``mode`` if set, else the attached
        trainer's, else None (then a dataset column ``eval`` decides, per row,
        and without one it is training)."""
        if self.mode is not None:
            return self.mode
        if self._trainer is not None:
            return "train" if self._trainer.model.training else "eval"
        return None

    def threads(self, prompts: Sequence[Any], completions: Sequence[Any],
                **columns: Any) -> list[StringThread]:
        """The threads a call grades: dataset columns become each thread's
        metadata (TRL's own keyword arguments are left out)."""
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
        metadata = []
        for i in range(n):
            row = {name: columns[name][i] for name in names}
            if phase is not None:
                row["eval"] = phase == "eval"
            metadata.append(row)
        return completion_threads(prompts, completions, metadata, images=reads_images(self.grader))

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                       completion_ids: Any = None, *, trainer_state: Any = None,
                       log_metric: Callable[[str, float], None] | None = None,
                       log_extra: Callable[[str, list], None] | None = None,
                       **columns: Any) -> list[float | None]:
        grades = await self.grades_for(prompts, completions, **columns)
        self.last_grades = grades
        if self.log_health and log_metric is not None:
            for name, value in judge_health(grades, prefix=self.health_prefix).items():
                if math.isfinite(value):  # TRL averages metrics; a NaN would poison the mean
                    log_metric(name, value)
        if self.log_completions and log_extra is not None:
            key = self.grader.grader_key
            log_extra(f"{key}/status", [g.status for g in grades])
            log_extra(f"{key}/why", [(g.reasoning if g.status == "scored" else g.error) or ""
                                     for g in grades])
        return [g.value for g in grades]

    async def grades_for(self, prompts: Sequence[Any], completions: Sequence[Any],
                         **columns: Any) -> list[Grade]:
        """The Grades of one batch. With gated reward functions
        (``trl_reward_funcs``) the batch is graded once and every function
        of the set, TRL calling them together, reads the same Grades."""
        columns = {k: v for k, v in columns.items() if k not in _TRL_RESERVED}
        if not self._sharers:
            return await self.grader.grade_batch(self.threads(prompts, completions, **columns))
        key = canonical_hash([list(prompts), list(completions)])
        entry = self._shared.get(key)
        if entry is None:
            task = asyncio.ensure_future(self.grader.grade_batch(self.threads(prompts, completions, **columns)))
            entry = self._shared[key] = [task, self._sharers + 1]
        entry[1] -= 1
        if entry[1] <= 0:  # every function of the set has read this batch
            self._shared.pop(key, None)
        return list(await asyncio.shield(entry[0]))

    def __repr__(self) -> str:
        return f"trl_reward_func({type(self.grader).__name__}({self.grader.grader_key!r}), phase={self.phase()})"


def trl_reward_func(grader: Grader, *, mode: Literal["train", "eval"] | None = None,
                    columns: Sequence[str] | None = None, log_health: bool = True,
                    health_prefix: str | None = None, log_completions: bool = True) -> TRLRewardFunc:
    """Turn ``grader`` into an async reward function for ``trl.GRPOTrainer``.

    The function takes ``prompts`` and ``completions`` in TRL's standard
    (strings) or conversational (message lists) format and the dataset
    columns as keyword arguments; each column's value for a completion lands
    in its thread's metadata, so a template reaches a reference answer as
    ``{{metadata.reference}}``. ``columns`` restricts which columns are
    passed on (default: all). It returns one float per completion, ``None``
    where the grade is unscored (TRL masks it), and is named after the
    grader key.

    Penalty mode, first match wins: the grader's own ``mode``; ``mode``
    here; the phase of a trainer given to ``attach``; a boolean dataset
    column ``eval``; else training. With ``log_health`` each call logs
    ``judge_health`` metrics through TRL's ``log_metric`` (under
    ``judge/<grader_key>/``); with ``log_completions`` each completion's
    status and reason go to TRL's completions table via ``log_extra``.

    >>> reward = trl_reward_func(grader)  # doctest: +SKIP
    >>> trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=ds)  # doctest: +SKIP
    >>> reward.attach(trainer)  # evaluation penalties during trainer.evaluate()  # doctest: +SKIP
    """
    return TRLRewardFunc(grader, mode=mode, columns=columns, log_health=log_health,
                         health_prefix=health_prefix, log_completions=log_completions)


class JudgeGatedReward:
    """Another reward function, gated by the judge: ``None`` wherever the
    judge's grade for the same completion is unscored, its own value
    elsewhere. Build the set with ``trl_reward_funcs``.

    TRL sums reward functions with ``nansum`` and leaves a completion out of
    its group baseline only when *every* function returned None; gating the
    other functions on the judge's outcome makes a judge failure exactly
    that, instead of a 0 judge reward plus the other rewards.
    """

    def __init__(self, func: Callable[..., Any], judge: TRLRewardFunc):
        if not callable(func):
            raise ConfigError(f"reward functions must be callable, got {type(func).__name__}")
        self.func = func
        self.judge = judge
        inner = func
        while hasattr(inner, "func") and not hasattr(inner, "__name__"):  # functools.partial
            inner = inner.func
        self.__name__ = getattr(inner, "__name__", type(func).__name__)
        self.__qualname__ = self.__name__

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None,
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
    """The judge and other reward functions as one set for ``GRPOTrainer``,
    sharing the judge's outcome: ``[judge, *gated others]``, in that order
    (give ``reward_weights`` in the same order).

    Each batch is graded once; where the judge could not score a completion
    (unscored) *every* function of the set returns None, so TRL leaves the
    completion out of its group's baseline and gives it advantage 0 (its
    "unscorable" rows), while the other completions' advantages are those of
    the group without it. Scored and penalized completions get every
    function's own reward. ``judge`` is a Grader (``judge_options`` go to
    ``trl_reward_func``) or a ``trl_reward_func`` already built.

    >>> funcs = trl_reward_funcs(grader, [format_reward])  # doctest: +SKIP
    >>> GRPOTrainer(model=..., reward_funcs=funcs, args=GRPOConfig(reward_weights=[1.0, 0.5], ...))  # doctest: +SKIP
    """
    if isinstance(judge, TRLRewardFunc):
        if judge_options:
            raise ConfigError("judge options apply when judge is a Grader, not an already built reward function")
        reward = judge
    else:
        reward = trl_reward_func(judge, **judge_options)
    others = list(others)
    gated = [JudgeGatedReward(f, reward) for f in others]
    reward._sharers = len(gated)
    return [reward, *gated]
