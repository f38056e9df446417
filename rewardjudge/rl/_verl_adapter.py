"""verl_compute_score: any grader as a verl ``compute_score`` function (docs/training.md).

An unscored grade is a NaN marker only under ``rewardjudge.rl.verl_manager``'s manager (or
``on_unscored="marker"``) and raises ``ConfigError`` anywhere else.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Literal, Mapping, Sequence

from ..errors import ConfigError
from ..grade import STATUSES, Grade
from ..graders._base import Grader
from ..thread import StringThread
from .._sync import LoopThread
from ._health import total_tokens
from ._trl_adapter import _turns

__all__ = ["VerlScore", "build_grader", "verl_compute_score"]

Form = Literal["single", "async", "batch", "async_batch"]
FORMS = ("single", "async", "batch", "async_batch")
_EVAL_SPLITS = frozenset({"test", "val", "valid", "validation", "eval", "evaluation", "dev"})


#: the keyword rewardjudge.rl.verl_manager's manager adds to its calls
MANAGER_KWARG = "rewardjudge_manager"
MANAGER_CONFIG = ("    reward.reward_manager.source=importlib reward.reward_manager.module.path="
                  "pkg://rewardjudge.rl.verl_manager reward.reward_manager.name=RewardJudgeManager\n"
                  "    algorithm.adv_estimator=rewardjudge_grpo")


def _thread(grader_mode: str | None, prompt_keys: Sequence[str], data_source: Any, solution_str: Any,
            ground_truth: Any, extra_info: Any, index: int | None = None) -> StringThread:
    where = "compute_score" if index is None else f"compute_score item {index}"
    if not isinstance(solution_str, str):
        raise ConfigError(f"{where}: solution_str must be a str, got {type(solution_str).__name__}")
    extra_info = {} if extra_info is None else extra_info
    if not isinstance(extra_info, Mapping):
        raise ConfigError(f"{where}: extra_info must be a mapping or None, got {type(extra_info).__name__}")
    key = next((k for k in prompt_keys if extra_info.get(k) is not None), None)
    turns = [] if key is None else _turns(extra_info[key], "user", f"{where}: extra_info[{key!r}]")
    metadata = {**extra_info, "data_source": data_source, "ground_truth": ground_truth}
    if ground_truth is not None and extra_info.get("reference") is None:
        metadata["reference"] = ground_truth  # the catalog's graders read `reference`
    if grader_mode is not None:
        metadata["eval"] = grader_mode == "eval"
    elif "eval" not in extra_info:
        metadata["eval"] = str(extra_info.get("split", "")).lower() in _EVAL_SPLITS
    return StringThread([*turns, ("assistant", solution_str)], metadata)


def _result(grade: Grade, unscored_value: float, return_dict: bool, marker: bool) -> float | dict[str, float]:
    if grade.status == "unscored" and not marker:
        raise ConfigError(
            f"the judge failed on a sample ({grade.error or 'no reason given'}) and this compute_score is not "
            f"running under rewardjudge's verl manager, so nothing keeps the failure out of training (under "
            f"verl's `naive` manager and `grpo` a NaN turns the group's advantages NaN and verl drops the "
            f"step; any stand-in number is a fake reward). Run it with:\n{MANAGER_CONFIG}\n"
            f"(or build it with on_unscored='marker' and handle the NaN marker yourself)")
    score = unscored_value if grade.value is None else grade.value
    if not return_dict:
        return score
    return {"score": score, **{s: float(grade.status == s) for s in STATUSES},
            "forgery": float(bool(grade.extra.get("forgery"))), "judge_attempts": float(grade.attempts),
            "judge_latency_s": math.nan if grade.latency_s is None else float(grade.latency_s),
            "judge_tokens": float(total_tokens(grade))}


def build_grader(spec: Any, judge: str | None = None, judge_model: str | None = None, **model_options: Any) -> Grader:
    """A grader from a SPEC and an OpenAI-compatible judge URL (without ``judge``, the SPEC's own model)."""
    from ..evaluate._spec import resolve_grader

    if isinstance(spec, Grader):
        return spec
    if judge is None:
        return resolve_grader(spec, None)
    from ..models import OpenAIModel

    if not judge_model:
        from ..models._discover import model_name

        judge_model = model_name(judge, None, float(model_options.get("timeout", 60.0)))
    return resolve_grader(spec, OpenAIModel(judge, judge_model, **model_options))


class VerlScore:
    """A picklable ``compute_score`` holding a grader SPEC and a judge URL; it builds the grader on
    its own loop at its first call in a process. Build it with ``verl_compute_score("SPEC", judge=URL)``."""

    rewardjudge_verl = True  # rewardjudge.rl.verl_manager's manager tells it it runs there

    def __init__(self, spec: Any, judge: str | None, judge_model: str | None, model_options: dict,
                 options: dict, batch: bool = False):
        self.spec, self.judge, self.judge_model = spec, judge, judge_model
        self.model_options, self.options, self.batch = dict(model_options), dict(options), batch
        self.__name__ = self.__qualname__ = "compute_score_" + str(spec).replace("-", "_")
        self._fn: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("spec", "judge", "judge_model", "model_options", "options", "batch")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def _ensure(self):
        with self._lock:
            if self._fn is None:
                runner = LoopThread("rewardjudge-verl-spec")

                async def build():
                    return build_grader(self.spec, self.judge, self.judge_model, **self.model_options)

                grader = runner.run(build())
                fn = verl_compute_score(grader, form="async_batch" if self.batch else "async", **self.options)
                self._fn, self._grader = (runner, fn), grader
            return self._fn

    def close(self) -> None:
        """Close the grader's judge client and its event loop (built again on the next call)."""
        with self._lock:
            fn, grader, self._fn, self._grader = self._fn, getattr(self, "_grader", None), None, None
        if fn is None or fn[0] is None:
            return
        aclose = getattr(getattr(grader, "model", None), "aclose", None)
        try:
            if aclose is not None:
                fn[0].run(aclose())
        finally:
            fn[0].close()

    def __call__(self, *args: Any, **kwargs: Any):
        runner, fn = self._ensure()
        return runner.run(fn(*args, **kwargs))


class _LiveScore:
    """The synchronous form around a live grader: it runs in this process only."""

    rewardjudge_verl = True

    def __init__(self, fn: Callable[..., Any], runner: LoopThread, name: str):
        self._fn, self._runner = fn, runner
        self.__name__ = self.__qualname__ = name
        self.__doc__ = verl_compute_score.__doc__
        self.close = runner.close

    def __call__(self, *args: Any, **kwargs: Any):
        return self._runner.run(self._fn(*args, **kwargs))

    def __reduce__(self):
        raise ConfigError(
            f"{self.__name__} holds a live grader (its judge client, locks, event loop) and cannot be sent to "
            f"another process (verl's `remote` manager, a process pool). Build it from a grader SPEC instead: "
            f"compute_score = verl_compute_score('SPEC', judge='http://host:port/v1') builds the grader inside "
            f"the worker")


def verl_compute_score(grader: Grader | str, *, form: Form = "single",
                       mode: Literal["train", "eval"] | None = None,
                       prompt_keys: Sequence[str] = ("prompt", "question"),
                       unscored_value: float = math.nan, return_dict: bool = True,
                       on_unscored: Literal["raise", "marker"] = "raise",
                       judge: str | None = None, judge_model: str | None = None,
                       judge_options: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """A verl reward function that grades with ``grader`` (docs/training.md).

    ``form``: ``"single"`` is ``compute_score(data_source, solution_str, ground_truth, extra_info=None,
    **kwargs)`` on a private loop, ``"async"`` a coroutine function, ``"batch"``/``"async_batch"`` the
    plural names. Each result is a dict of floats (or the score alone, ``return_dict=False``); an
    unscored grade raises ``ConfigError`` unless under the verl manager or ``on_unscored="marker"``.
    A SPEC string ``grader`` with ``judge=URL`` gives a picklable ``VerlScore``.

    >>> compute_score = verl_compute_score(grader)  # doctest: +SKIP
    >>> compute_score("gsm8k", '{"answer": "4", "confidence": "high"}', "4", {"question": "2+2?"})  # doctest: +SKIP
    {'score': 1.0, 'scored': 1.0, 'penalized': 0.0, 'unscored': 0.0, ...}
    """
    if form not in FORMS:
        raise ConfigError(f"form must be one of {FORMS}, got {form!r}")
    options = dict(mode=mode, prompt_keys=(prompt_keys,) if isinstance(prompt_keys, str) else tuple(prompt_keys),
                   unscored_value=unscored_value, return_dict=return_dict, on_unscored=on_unscored)
    if isinstance(grader, str):
        return _spec_score(grader, form, judge, judge_model, dict(judge_options or {}), options)
    if not isinstance(grader, Grader):
        raise ConfigError(f"verl_compute_score needs a Grader or a grader SPEC string, got {type(grader).__name__}")
    grader.require_rewards("verl_compute_score")
    if on_unscored not in ("raise", "marker"):
        raise ConfigError(f"on_unscored must be 'raise' or 'marker', got {on_unscored!r}")
    if mode not in (None, "train", "eval"):
        raise ConfigError(f"mode must be 'train', 'eval' or None, got {mode!r}")
    return _grader_score(grader, form, **{**options, "unscored_value": float(unscored_value)})


def _grader_score(grader: Grader, form: Form, *, mode: str | None, prompt_keys: tuple[str, ...],
                  unscored_value: float, return_dict: bool, on_unscored: str) -> Callable[..., Any]:
    """The compute_score of a live grader, in ``form``."""
    def results(grades: Sequence[Grade], kwargs: Mapping[str, Any]) -> list:
        marker = on_unscored == "marker" or bool(kwargs.get(MANAGER_KWARG))
        return [_result(g, unscored_value, return_dict, marker) for g in grades]

    async def score_one(data_source: Any, solution_str: str, ground_truth: Any = None,
                        extra_info: Mapping[str, Any] | None = None, **kwargs: Any):
        thread = _thread(mode, prompt_keys, data_source, solution_str, ground_truth, extra_info)
        return results(await grader.grade_batch([thread]), kwargs)[0]

    async def score_batch(data_sources: Sequence[Any] | None = None, solution_strs: Sequence[str] | None = None,
                          ground_truths: Sequence[Any] | None = None,
                          extra_infos: Sequence[Mapping[str, Any] | None] | None = None, **kwargs: Any):
        threads = _batch_threads(mode, prompt_keys, data_sources, solution_strs, ground_truths, extra_infos)
        return results(await grader.grade_batch(threads), kwargs)

    name = f"compute_score_{grader.grader_key}".replace("-", "_")
    fn = score_one if form in ("single", "async") else score_batch
    if form in ("async", "async_batch"):
        fn.__name__ = fn.__qualname__ = name
        fn.rewardjudge_verl = True  # type: ignore[attr-defined]
        return fn
    return _LiveScore(fn, LoopThread(f"rewardjudge-verl-{grader.grader_key}"), name)


def _batch_threads(mode: str | None, prompt_keys: Sequence[str], data_sources: Any, solution_strs: Any,
                   ground_truths: Any, extra_infos: Any) -> list[StringThread]:
    """The threads of a batch-form call, its per-sample lists checked against ``solution_strs``."""
    if solution_strs is None:
        raise ConfigError(
            "a batch-form compute_score was called per sample: verl 0.9 has no batch reward manager "
            "(it resolves naive, dapo, gdpo, rate_limited, remote). Use form='single' or form='async' "
            "with the rewardjudge manager (rewardjudge.rl.verl_manager); the batch forms are for "
            "verl 0.8's reward_manager=batch")
    n = len(solution_strs)
    ground_truths = [None] * n if ground_truths is None else list(ground_truths)
    extra_infos = [None] * n if extra_infos is None else list(extra_infos)
    data_sources = [data_sources] * n if data_sources is None or isinstance(data_sources, str) else list(data_sources)
    for name, seq in (("data_sources", data_sources), ("ground_truths", ground_truths), ("extra_infos", extra_infos)):
        if len(seq) != n:
            raise ConfigError(f"{name} has {len(seq)} entries for {n} solution_strs")
    return [_thread(mode, prompt_keys, data_sources[i], solution_strs[i], ground_truths[i], extra_infos[i], i)
            for i in range(n)]


def _spec_score(spec: str, form: Form, judge: str | None, judge_model: str | None, judge_options: dict,
                options: dict) -> Callable[..., Any]:
    """A grader SPEC's compute_score: a picklable ``VerlScore`` (sync forms), or a coroutine function
    that builds the grader on the caller's loop at its first call (async forms)."""
    spec_score = VerlScore(spec, judge, judge_model, judge_options, options, batch=form in ("batch", "async_batch"))
    if form in ("single", "batch"):
        return spec_score

    async def lazy(*args: Any, **kwargs: Any):
        if spec_score._fn is None:
            built = build_grader(spec, judge, judge_model, **judge_options)
            spec_score._fn = (None, verl_compute_score(built, form=form, **options))
        return await spec_score._fn[1](*args, **kwargs)

    lazy.__name__ = lazy.__qualname__ = spec_score.__name__
    lazy.rewardjudge_verl = True  # type: ignore[attr-defined]
    return lazy
