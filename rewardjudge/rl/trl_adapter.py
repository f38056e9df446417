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

import json
import math
from typing import Any, Callable, Literal, Mapping, Sequence

from ..errors import ConfigError
from ..grade import Grade
from ..graders.base import Grader
from ..thread import StringThread
from .health import judge_health

__all__ = ["TRLRewardFunc", "completion_threads", "trl_reward_func"]

# keyword arguments TRL passes that are not dataset columns
_TRL_RESERVED = frozenset({"trainer_state", "log_metric", "log_extra", "environments",
                           "completion_ids", "prompts", "completions"})
_ROLE_ALIASES = {"developer": "system", "ipython": "tool", "function": "tool"}


def _content_text(message: Mapping[str, Any], where: str) -> str:
    """A chat message's content as text: string content as is, content parts
    joined (non-text parts as a ``[type]`` placeholder), tool calls appended
    as JSON so the judge sees what the policy did."""
    content = message.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text":
                pieces.append(str(part.get("text", "")))
            elif isinstance(part, Mapping):
                pieces.append(f"[{part.get('type')}]")
            else:
                raise ConfigError(f"{where}: content part {part!r:.60} is neither text nor a mapping")
        text = "".join(pieces)
    else:
        raise ConfigError(f"{where}: content must be a str or a list of parts, got "
                          f"{type(content).__name__}")
    if message.get("tool_calls"):
        calls = json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
        text = f"{text}\n[tool_calls] {calls}" if text else f"[tool_calls] {calls}"
    return text


def _turns(value: Any, default_role: str, where: str) -> list[tuple[str, str]]:
    """Turns of a prompt or completion in TRL's standard (str) or
    conversational (list of messages) format."""
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
        turns.append((role, _content_text(m, f"{where}[{j}]")))
    return turns


def completion_threads(prompts: Sequence[Any], completions: Sequence[Any],
                       metadata: Sequence[Mapping[str, Any]] | None = None) -> list[StringThread]:
    """One StringThread per completion: the prompt's turns, then the completion's.

    A standard-format prompt is a user turn and a standard completion an
    assistant turn; conversational ones keep their roles. ``metadata[i]``
    becomes thread ``i``'s metadata (templates read it as ``{{metadata.x}}``).

    >>> completion_threads(["2+2?"], ["4"], [{"answer": "4"}])[0]
    StringThread([('user', '2+2?'), ('assistant', '4')], metadata={'answer': '4'})
    """
    if len(prompts) != len(completions):
        raise ConfigError(f"{len(prompts)} prompts for {len(completions)} completions")
    if metadata is not None and len(metadata) != len(prompts):
        raise ConfigError(f"{len(metadata)} metadata rows for {len(prompts)} completions")
    threads = []
    for i, (p, c) in enumerate(zip(prompts, completions)):
        turns = _turns(p, "user", f"prompts[{i}]") + _turns(c, "assistant", f"completions[{i}]")
        threads.append(StringThread(turns, metadata[i] if metadata is not None else None))
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
        return completion_threads(prompts, completions, metadata)

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                       completion_ids: Any = None, *, trainer_state: Any = None,
                       log_metric: Callable[[str, float], None] | None = None,
                       log_extra: Callable[[str, list], None] | None = None,
                       **columns: Any) -> list[float | None]:
        columns.pop("environments", None)
        threads = self.threads(prompts, completions, **columns)
        grades = await self.grader.grade_batch(threads)
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
