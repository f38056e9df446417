"""verl_compute_score: any grader as a verl ``compute_score`` function.

verl calls a custom reward function as ``compute_score(data_source=...,
solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)`` and
reads back a float or a dict holding ``"score"`` (its other keys are
collected per sample into ``reward_extra_info`` and logged, so they must be
numeric and present for every sample). Its reward loop awaits the function
when it is a coroutine function and runs it in a thread pool otherwise; its
batch manager calls ``compute_score(data_sources=..., solution_strs=...,
ground_truths=..., extra_infos=...)`` once per batch and expects a list.

verl has no mask for a missing reward: whatever ``score`` holds is trained
on. So an unscored grade (the judge failed) returns ``unscored_value`` as its
score, NaN by default; verl's GRPO does not ignore NaN, so a NaN reaching its
advantage estimator breaks the step loudly rather than training on a fake 0.
Set ``unscored_value`` to a number only knowingly; the dict's ``unscored``
key (1.0) marks those samples either way.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Literal, Mapping, Sequence

from ..errors import ConfigError
from ..grade import Grade
from ..graders.base import Grader
from ..thread import StringThread
from ._loop import LoopThread
from .trl_adapter import _turns

__all__ = ["verl_compute_score"]

Form = Literal["single", "async", "batch", "async_batch"]
FORMS = ("single", "async", "batch", "async_batch")
# verl's example preprocessors record the split in extra_info
_EVAL_SPLITS = frozenset({"test", "val", "valid", "validation", "eval", "evaluation", "dev"})


def _thread(grader_mode: str | None, prompt_keys: Sequence[str], data_source: Any, solution_str: Any,
            ground_truth: Any, extra_info: Any, index: int | None = None) -> StringThread:
    where = "compute_score" if index is None else f"compute_score item {index}"
    if not isinstance(solution_str, str):
        raise ConfigError(f"{where}: solution_str must be a str, got {type(solution_str).__name__}")
    if extra_info is None:
        extra_info = {}
    if not isinstance(extra_info, Mapping):
        raise ConfigError(f"{where}: extra_info must be a mapping or None, got {type(extra_info).__name__}")
    turns: list[tuple[str, str]] = []
    for key in prompt_keys:
        if extra_info.get(key) is not None:
            turns = _turns(extra_info[key], "user", f"{where}: extra_info[{key!r}]")
            break
    metadata = {**extra_info, "data_source": data_source, "ground_truth": ground_truth}
    if grader_mode is not None:
        metadata["eval"] = grader_mode == "eval"
    elif "eval" not in extra_info:
        metadata["eval"] = str(extra_info.get("split", "")).lower() in _EVAL_SPLITS
    return StringThread([*turns, ("assistant", solution_str)], metadata)


def _result(grade: Grade, unscored_value: float, return_dict: bool) -> float | dict[str, float]:
    score = unscored_value if grade.value is None else grade.value
    if not return_dict:
        return score
    return {
        "score": score,
        "scored": float(grade.status == "scored"),
        "penalized": float(grade.status == "penalized"),
        "unscored": float(grade.status == "unscored"),
        "judge_attempts": float(grade.attempts),
        "judge_latency_s": math.nan if grade.latency_s is None else float(grade.latency_s),
        "judge_tokens": float(grade.usage.get("total_tokens", grade.usage.get("prompt_tokens", 0)
                                              + grade.usage.get("completion_tokens", 0))),
    }


def verl_compute_score(grader: Grader, *, form: Form = "single",
                       mode: Literal["train", "eval"] | None = None,
                       prompt_keys: Sequence[str] = ("prompt", "question"),
                       unscored_value: float = math.nan, return_dict: bool = True) -> Callable[..., Any]:
    """A verl reward function that grades with ``grader``.

    ``form`` picks the calling convention:

    * ``"single"`` (default): ``compute_score(data_source, solution_str,
      ground_truth, extra_info=None, **kwargs)``, synchronous. It runs the
      grader on a private background event loop, so it works from plain code,
      from verl's thread pool and from inside a running loop (a notebook),
      and keeps the judge client's connections across calls.
    * ``"async"``: the same signature as a coroutine function, for verl's
      reward loop (which awaits coroutine functions).
    * ``"batch"`` / ``"async_batch"``: ``compute_score(data_sources,
      solution_strs, ground_truths, extra_infos=None, **kwargs)`` returning a
      list (verl's batch reward manager); the batch is graded concurrently.

    The thread graded is ``[prompt turns..., ("assistant", solution_str)]``:
    the prompt comes from the first of ``prompt_keys`` present in
    ``extra_info`` (a string or a message list; verl itself does not pass the
    prompt). Its metadata is ``extra_info`` plus ``data_source`` and
    ``ground_truth``, so a template reads ``{{metadata.ground_truth}}``.

    Penalty mode, first match wins: the grader's own ``mode``; ``mode``
    here; ``extra_info["eval"]``; ``extra_info["split"]`` being a test or
    validation split name (verl's example datasets record it); else training.

    Each result is ``{"score", "scored", "penalized", "unscored",
    "judge_attempts", "judge_latency_s", "judge_tokens"}`` (all floats; verl
    logs the extra keys) or, with ``return_dict=False``, the score alone.
    Unscored grades score ``unscored_value`` (NaN by default; see the module
    docstring). Extra keyword arguments verl may pass (``reward_router_address``
    ...) are accepted and ignored.

    >>> compute_score = verl_compute_score(grader)  # doctest: +SKIP
    >>> compute_score("gsm8k", '{"answer": "4", "confidence": "high"}', "4", {"question": "2+2?"})  # doctest: +SKIP
    {'score': 1.0, 'scored': 1.0, 'penalized': 0.0, 'unscored': 0.0, ...}
    """
    if not isinstance(grader, Grader):
        raise ConfigError(f"verl_compute_score needs a Grader, got {type(grader).__name__}")
    if form not in FORMS:
        raise ConfigError(f"form must be one of {FORMS}, got {form!r}")
    if mode not in (None, "train", "eval"):
        raise ConfigError(f"mode must be 'train', 'eval' or None, got {mode!r}")
    if isinstance(prompt_keys, str):
        prompt_keys = (prompt_keys,)
    prompt_keys = tuple(prompt_keys)
    unscored_value = float(unscored_value)

    async def score_one(data_source: Any, solution_str: str, ground_truth: Any = None,
                        extra_info: Mapping[str, Any] | None = None, **_: Any):
        thread = _thread(mode, prompt_keys, data_source, solution_str, ground_truth, extra_info)
        [grade] = await grader.grade_batch([thread])
        return _result(grade, unscored_value, return_dict)

    async def score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str],
                          ground_truths: Sequence[Any] | None = None,
                          extra_infos: Sequence[Mapping[str, Any] | None] | None = None, **_: Any):
        n = len(solution_strs)
        ground_truths = [None] * n if ground_truths is None else list(ground_truths)
        extra_infos = [None] * n if extra_infos is None else list(extra_infos)
        data_sources = [data_sources] * n if data_sources is None or isinstance(data_sources, str) \
            else list(data_sources)
        for name, seq in (("data_sources", data_sources), ("ground_truths", ground_truths),
                          ("extra_infos", extra_infos)):
            if len(seq) != n:
                raise ConfigError(f"{name} has {len(seq)} entries for {n} solution_strs")
        threads = [_thread(mode, prompt_keys, data_sources[i], solution_strs[i], ground_truths[i],
                           extra_infos[i], i) for i in range(n)]
        grades = await grader.grade_batch(threads)
        return [_result(g, unscored_value, return_dict) for g in grades]

    name = f"compute_score_{grader.grader_key}".replace("-", "_")
    if form == "async":
        score_one.__name__ = score_one.__qualname__ = name
        return score_one
    if form == "async_batch":
        score_batch.__name__ = score_batch.__qualname__ = name
        return score_batch

    runner = LoopThread(f"rewardjudge-verl-{grader.grader_key}")
    if form == "single":
        def compute_score(data_source: Any, solution_str: str, ground_truth: Any = None,
                          extra_info: Mapping[str, Any] | None = None, **kwargs: Any):
            return runner.run(score_one(data_source, solution_str, ground_truth, extra_info, **kwargs))
    else:
        def compute_score(data_sources: Sequence[Any], solution_strs: Sequence[str],
                          ground_truths: Sequence[Any] | None = None,
                          extra_infos: Sequence[Mapping[str, Any] | None] | None = None, **kwargs: Any):
            return runner.run(score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs))
    compute_score.__name__ = compute_score.__qualname__ = name
    compute_score.__doc__ = verl_compute_score.__doc__
    compute_score.close = runner.close  # type: ignore[attr-defined]
    return compute_score
