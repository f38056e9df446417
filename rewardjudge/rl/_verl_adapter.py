"""verl_compute_score: any grader as a verl ``compute_score`` function.

verl calls a custom reward function as ``compute_score(data_source=...,
solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)`` and
reads back a float or a dict holding ``"score"`` (its other keys are
collected per sample into ``reward_extra_info`` and logged, so every sample
must return the same numeric keys). Its reward loop awaits the function when
it is a coroutine function and runs it in a thread pool otherwise; verl 0.8's
batch manager calls ``compute_score(data_sources=..., solution_strs=...,
ground_truths=..., extra_infos=...)`` once per batch and expects a list.

verl has no mask for a missing reward. Under ``rewardjudge.rl.verl_manager``'s
manager (which tells this function so with a keyword) an unscored grade (the
judge failed) returns ``unscored_value`` as its score, NaN by default, with
``unscored`` = 1.0: a marker that the manager checks its estimators handle
(``rewardjudge_grpo`` ...: advantage 0, never a fake reward). Anywhere else
(verl's ``naive`` manager with plain ``grpo``, where a NaN makes the group's
advantages NaN and verl silently drops the step) the first unscored grade
raises ``ConfigError`` with the two config lines that work, unless
``on_unscored="marker"`` says the caller handles the marker itself.

verl passes the dataset's reference answer as ``ground_truth``; the thread's
metadata carries it as both ``ground_truth`` and ``reference`` (what the
catalog's ``correctness`` grader reads), unless ``extra_info`` has its own
``reference``.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Literal, Mapping, Sequence

from ..errors import ConfigError
from ..grade import Grade
from ..graders._base import Grader
from ..thread import StringThread
from .._sync import LoopThread
from ._trl_adapter import _turns

__all__ = ["VerlScore", "build_grader", "verl_compute_score"]

Form = Literal["single", "async", "batch", "async_batch"]
FORMS = ("single", "async", "batch", "async_batch")
# verl's example preprocessors record the split in extra_info
_EVAL_SPLITS = frozenset({"test", "val", "valid", "validation", "eval", "evaluation", "dev"})


#: the keyword rewardjudge.rl.verl_manager's manager adds to its calls
MANAGER_KWARG = "rewardjudge_manager"
#: the config that keeps a judge failure out of verl's training
MANAGER_CONFIG = ("    reward.reward_manager.source=importlib reward.reward_manager.module.path="
                  "pkg://rewardjudge.rl.verl_manager reward.reward_manager.name=RewardJudgeManager\n"
                  "    algorithm.adv_estimator=rewardjudge_grpo")


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
    return {
        "score": score,
        "scored": float(grade.status == "scored"),
        "penalized": float(grade.status == "penalized"),
        "unscored": float(grade.status == "unscored"),
        "forgery": float(bool(grade.extra.get("forgery"))),
        "judge_attempts": float(grade.attempts),
        "judge_latency_s": math.nan if grade.latency_s is None else float(grade.latency_s),
        "judge_tokens": float(grade.usage.get("total_tokens", grade.usage.get("prompt_tokens", 0)
                                              + grade.usage.get("completion_tokens", 0))),
    }


def build_grader(spec: Any, judge: str | None = None, judge_model: str | None = None, **model_options: Any) -> Grader:
    """A grader from a SPEC (``rewardjudge.evaluate._spec.resolve_grader``)
    and a judge server URL (OpenAI-compatible, ending in /v1). Without
    ``judge``, the SPEC must name a Grader that brings its own model."""
    from ..evaluate._spec import resolve_grader

    if isinstance(spec, Grader):
        return spec
    if judge is None:
        grader = resolve_grader(spec, None)
        return grader
    from ..models import OpenAIModel

    if not judge_model:
        from ..evaluate._cli import _model_name

        judge_model = _model_name(judge, None, float(model_options.get("timeout", 60.0)))
    return resolve_grader(spec, OpenAIModel(judge, judge_model, **model_options))


class VerlScore:
    """A picklable ``compute_score``: holds a grader SPEC and a judge URL and
    builds the grader, on its own event loop, the first time it is called
    in a process. verl's ``remote`` manager (a Ray actor) and process pools
    can take it. Build it with ``verl_compute_score("SPEC", judge=URL)``."""

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
    ``ground_truth`` (also as ``reference``, which the catalog's
    ``correctness`` grader reads), so a template reads
    ``{{metadata.ground_truth}}``.

    Penalty mode, first match wins: the grader's own ``mode``; ``mode``
    here; ``extra_info["eval"]``; ``extra_info["split"]`` being a test or
    validation split name (verl's example datasets record it); else training.

    Each result is ``{"score", "scored", "penalized", "unscored",
    "forgery", "judge_attempts", "judge_latency_s", "judge_tokens"}`` (all
    floats; verl logs the extra keys; the same keys on every path) or, with
    ``return_dict=False``, the score alone. An unscored grade (the judge
    failed) raises ``ConfigError`` naming the config that works, unless this
    runs under ``rewardjudge.rl.verl_manager``'s manager (it says so with the
    ``rewardjudge_manager`` keyword) or ``on_unscored="marker"``: then it
    scores ``unscored_value``, NaN by default, a marker the manager's
    ``rewardjudge_<estimator>`` keeps out of training (verl's own estimators
    do *not* survive a NaN). Other keyword arguments verl may pass
    (``reward_router_address``
    ...) are accepted and ignored.

    ``grader`` may be a grader SPEC string (``"demo"``, ``"pkg.mod:attr"``, a
    catalog key...) with ``judge=URL`` (and ``judge_model``,
    ``judge_options`` for ``OpenAIModel``): the sync forms are then a
    picklable ``VerlScore`` that builds the grader inside whichever process
    calls it, which verl's ``remote`` manager (a Ray actor) needs. A sync
    form around a live Grader refuses to pickle, with a message saying so.

    >>> compute_score = verl_compute_score(grader)  # doctest: +SKIP
    >>> compute_score("gsm8k", '{"answer": "4", "confidence": "high"}', "4", {"question": "2+2?"})  # doctest: +SKIP
    {'score': 1.0, 'scored': 1.0, 'penalized': 0.0, 'unscored': 0.0, ...}
    """
    if form not in FORMS:
        raise ConfigError(f"form must be one of {FORMS}, got {form!r}")
    if isinstance(grader, str):
        options = dict(mode=mode, prompt_keys=tuple(prompt_keys) if not isinstance(prompt_keys, str)
                       else (prompt_keys,), unscored_value=unscored_value, return_dict=return_dict,
                       on_unscored=on_unscored)
        spec_score = VerlScore(grader, judge, judge_model, dict(judge_options or {}), options,
                               batch=form in ("batch", "async_batch"))
        if form in ("single", "batch"):
            return spec_score

        async def lazy(*args: Any, **kwargs: Any):  # the async forms build the grader on the caller's loop
            if spec_score._fn is None:
                built = build_grader(grader, judge, judge_model, **dict(judge_options or {}))
                spec_score._fn = (None, verl_compute_score(built, form=form, **options))
            return await spec_score._fn[1](*args, **kwargs)

        lazy.__name__ = lazy.__qualname__ = spec_score.__name__
        lazy.rewardjudge_verl = True  # type: ignore[attr-defined]
        return lazy
    if not isinstance(grader, Grader):
        raise ConfigError(f"verl_compute_score needs a Grader or a grader SPEC string, got {type(grader).__name__}")
    grader.require_rewards("verl_compute_score")
    if on_unscored not in ("raise", "marker"):
        raise ConfigError(f"on_unscored must be 'raise' or 'marker', got {on_unscored!r}")
    if mode not in (None, "train", "eval"):
        raise ConfigError(f"mode must be 'train', 'eval' or None, got {mode!r}")
    if isinstance(prompt_keys, str):
        prompt_keys = (prompt_keys,)
    prompt_keys = tuple(prompt_keys)
    unscored_value = float(unscored_value)

    async def score_one(data_source: Any, solution_str: str, ground_truth: Any = None,
                        extra_info: Mapping[str, Any] | None = None, **kwargs: Any):
        thread = _thread(mode, prompt_keys, data_source, solution_str, ground_truth, extra_info)
        [grade] = await grader.grade_batch([thread])
        return _result(grade, unscored_value, return_dict, on_unscored == "marker" or bool(kwargs.get(MANAGER_KWARG)))

    async def score_batch(data_sources: Sequence[Any] | None = None, solution_strs: Sequence[str] | None = None,
                          ground_truths: Sequence[Any] | None = None,
                          extra_infos: Sequence[Mapping[str, Any] | None] | None = None, **kwargs: Any):
        if solution_strs is None:
            raise ConfigError(
                "a batch-form compute_score was called per sample: verl 0.9 has no batch reward manager "
                "(it resolves naive, dapo, gdpo, rate_limited, remote). Use form='single' or form='async' "
                "with the rewardjudge manager (rewardjudge.rl.verl_manager); the batch forms are for "
                "verl 0.8's reward_manager=batch")
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
        marker = on_unscored == "marker" or bool(kwargs.get(MANAGER_KWARG))
        return [_result(g, unscored_value, return_dict, marker) for g in grades]

    name = f"compute_score_{grader.grader_key}".replace("-", "_")
    score_one.rewardjudge_verl = score_batch.rewardjudge_verl = True  # type: ignore[attr-defined]
    if form == "async":
        score_one.__name__ = score_one.__qualname__ = name
        return score_one
    if form == "async_batch":
        score_batch.__name__ = score_batch.__qualname__ = name
        return score_batch

    runner = LoopThread(f"rewardjudge-verl-{grader.grader_key}")
    return _LiveScore(score_one if form == "single" else score_batch, runner, name)
