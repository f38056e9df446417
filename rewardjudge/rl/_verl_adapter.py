"""verl_compute_score: any grader as a verl ``compute_score`` function (docs/training.md: where an
unscored grade is a NaN marker and where it raises ``UnmaskedJudgeFailure``)."""

from __future__ import annotations

import math
import sys
from typing import Any, Callable, Literal, Mapping, Sequence, get_args

from ..errors import ConfigError, UnmaskedJudgeFailure
from ..evaluate._spec import resolve_grader, spec_target
from ..grade import STATUSES, Grade
from ..graders._base import Grader
from ..models import OpenAIModel
from ..models._discover import model_name
from ..templates._plain import to_plain
from ..thread import StringThread, message_turns, own_text, with_own_keys
from .._sync import LoopThread
from ._health import total_tokens

__all__ = ["EXTRA_KEYS", "VerlScore", "verl_compute_score"]

Form = Literal["single", "async", "batch", "async_batch"]
FORMS = get_args(Form)
_EVAL_SPLITS = frozenset({"test", "val", "valid", "validation", "eval", "evaluation", "dev"})
#: the keys of every result dict (and of every sample's reward_extra_info under our manager)
EXTRA_KEYS = ("score", *STATUSES, "forgery", "judge_attempts", "judge_latency_s", "judge_tokens")

#: the keyword rewardjudge.rl.verl_manager's manager adds to its calls
MANAGER_KWARG = "rewardjudge_manager"
MANAGER_CONFIG = ("    reward.reward_manager.source=importlib reward.reward_manager.module.path="
                  "pkg://rewardjudge.rl.verl_manager reward.reward_manager.name=RewardJudgeManager\n"
                  "    algorithm.adv_estimator=rewardjudge_grpo")
#: verl's reward manager that turns what compute_score raises, and a call over its timeout, into reward 0.0
_SWALLOWING = ("verl.experimental.reward_loop.reward_manager.limited", "RateLimitedRewardManager")


def _refuse_swallowing_manager(kwargs: Mapping[str, Any]) -> None:
    """``UnmaskedJudgeFailure`` when verl's ``rate_limited`` manager is up the calling frames."""
    if kwargs.get(MANAGER_KWARG):
        return
    manager = getattr(sys.modules.get(_SWALLOWING[0]), _SWALLOWING[1], None)
    frame = sys._getframe(1) if manager is not None else None
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), manager):
            raise UnmaskedJudgeFailure(
                "verl's rate_limited reward manager turns anything compute_score raises (a judge failure "
                "included) and any call over reward.timeout into reward 0.0, so a judge failure would train as "
                f"a real 0. Run it with:\n{MANAGER_CONFIG}\n(limit the judge's load with "
                "judge_options={'max_concurrency': N}, the requests in flight)")
        frame = frame.f_back


def _thread(grader_mode: str | None, prompt_keys: Sequence[str], data_source: Any, solution_str: Any,
            ground_truth: Any, extra_info: Any, index: int | None = None) -> StringThread:
    where = "compute_score" if index is None else f"compute_score item {index}"
    if not isinstance(solution_str, str):
        raise ConfigError(f"{where}: solution_str must be a str, got {type(solution_str).__name__}")
    extra_info = {} if extra_info is None else extra_info
    if not isinstance(extra_info, Mapping):
        raise ConfigError(f"{where}: extra_info must be a mapping or None, got {type(extra_info).__name__}")
    # verl hands its object arrays' items as they are: numpy arrays and scalars, bytes, in any of these
    extra_info, ground_truth, data_source = (to_plain(v, f"{where}: {name}") for v, name in (
        (extra_info, "extra_info"), (ground_truth, "ground_truth"), (data_source, "data_source")))
    key = next((k for k in prompt_keys if extra_info.get(k) is not None), None)
    turns = [] if key is None else message_turns(extra_info[key], "user", f"{where}: extra_info[{key!r}]")
    own = {"data_source": data_source, "ground_truth": ground_truth}
    if grader_mode is not None:
        own["eval"] = grader_mode == "eval"
    metadata = with_own_keys(extra_info, own, where, {"data_source": "verl's data_source",
                                                      "ground_truth": "verl's reward_model.ground_truth",
                                                      "eval": f"mode={grader_mode!r}"})
    if ground_truth is not None and metadata.get("reference") is None:
        metadata["reference"] = ground_truth  # the catalog's graders read `reference`
    if "eval" not in metadata:
        metadata["eval"] = str(extra_info.get("split", "")).lower() in _EVAL_SPLITS
    return StringThread([*turns, ("assistant", own_text(solution_str))], metadata)


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


def _result(grade: Grade, unscored_value: float, return_dict: bool, marker: bool) -> float | dict[str, float]:
    if grade.status == "unscored" and not marker:
        raise UnmaskedJudgeFailure(
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


class VerlScore:
    """A synchronous verl ``compute_score`` running its grader on a private loop thread; built from a
    grader SPEC it pickles and builds the grader in each process (a live grader refuses to pickle)."""

    rewardjudge_verl = True  # rewardjudge.rl.verl_manager's manager tells it it runs there

    def __init__(self, spec: Grader | str, judge: str | None, judge_model: str | None, model_options: dict,
                 options: dict, batch: bool = False):
        self.spec, self.judge, self.judge_model = spec, judge, judge_model
        self.model_options, self.options, self.batch = dict(model_options), dict(options), batch
        key = spec.grader_key if isinstance(spec, Grader) else str(spec)
        self.__name__ = self.__qualname__ = f"compute_score_{key}".replace("-", "_")
        self._grader: Grader | None = spec if isinstance(spec, Grader) else None
        self._runner = LoopThread(f"rewardjudge-verl-{self.__name__}")  # its thread starts on the first call

    def __getstate__(self) -> dict[str, Any]:
        if isinstance(self.spec, Grader):
            raise ConfigError(
                f"{self.__name__} holds a live grader (its judge client, locks, event loop) and cannot be sent "
                f"to another process (verl's `remote` manager, a process pool). Build it from a grader SPEC "
                f"instead: compute_score = verl_compute_score('SPEC', judge='http://host:port/v1') builds the "
                f"grader inside the worker")
        return {k: getattr(self, k) for k in ("spec", "judge", "judge_model", "model_options", "options", "batch")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def _built(self) -> Grader:
        if self._grader is None:
            model = None
            if self.judge is not None:
                name = self.judge_model or model_name(self.judge, None, float(self.model_options.get("timeout", 60.0)))
                model = OpenAIModel(self.judge, name, **self.model_options)
            self._grader = resolve_grader(self.spec, model)
        return self._grader

    async def _grade(self, threads: list[StringThread], kwargs: Mapping[str, Any]) -> list:
        o = self.options
        manager = bool(kwargs.get(MANAGER_KWARG))
        marker = o["on_unscored"] == "marker" or manager
        # the manager knows a failure by its NaN marker: a finite unscored_value there (read alone when
        # return_dict=False) would be taken for the judge's score
        unscored_value = math.nan if manager else o["unscored_value"]
        return [_result(g, unscored_value, o["return_dict"], marker)
                for g in await self._built().grade_batch(threads)]

    async def score_one(self, data_source: Any, solution_str: str, ground_truth: Any = None,
                        extra_info: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        o = self.options
        thread = _thread(o["mode"], o["prompt_keys"], data_source, solution_str, ground_truth, extra_info)
        return (await self._grade([thread], kwargs))[0]

    async def score_batch(self, data_sources: Sequence[Any] | None = None, solution_strs: Sequence[str] | None = None,
                          ground_truths: Sequence[Any] | None = None,
                          extra_infos: Sequence[Mapping[str, Any] | None] | None = None, **kwargs: Any) -> list:
        o = self.options
        threads = _batch_threads(o["mode"], o["prompt_keys"], data_sources, solution_strs, ground_truths, extra_infos)
        return await self._grade(threads, kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _refuse_swallowing_manager(kwargs)
        return self._runner.run((self.score_batch if self.batch else self.score_one)(*args, **kwargs))

    def coroutine_function(self) -> Callable[..., Any]:
        """The ``async``/``async_batch`` form: a coroutine function (verl's reward loop awaits it)."""
        method = self.score_batch if self.batch else self.score_one

        async def compute_score(*args: Any, **kwargs: Any) -> Any:
            _refuse_swallowing_manager(kwargs)
            return await method(*args, **kwargs)

        compute_score.__name__ = compute_score.__qualname__ = self.__name__
        compute_score.rewardjudge_verl = True  # type: ignore[attr-defined]
        return compute_score

    def close(self) -> None:
        """Close the loop thread, and the judge client of a grader built from a SPEC."""
        if self._runner.loop is None:  # no call ran on it (or it is closed already)
            return
        built = None if isinstance(self.spec, Grader) else self._grader
        aclose = getattr(getattr(built, "model", None), "aclose", None)
        try:
            if aclose is not None:
                self._runner.run(aclose())
        finally:
            self._runner.close()
            if built is not None:
                self._grader = None


def verl_compute_score(grader: Grader | str, *, form: Form = "single",
                       mode: Literal["train", "eval"] | None = None,
                       prompt_keys: Sequence[str] = ("prompt", "question"),
                       unscored_value: float = math.nan, return_dict: bool = True,
                       on_unscored: Literal["raise", "marker"] = "raise",
                       judge: str | None = None, judge_model: str | None = None,
                       judge_options: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """A verl reward function grading with ``grader`` (docs/training.md) in ``form`` ``"single"``,
    ``"async"``, ``"batch"`` or ``"async_batch"``: a dict of ``EXTRA_KEYS`` (the score alone with
    ``return_dict=False``); a SPEC string (with ``judge=URL``) gives a picklable ``VerlScore``."""
    if form not in FORMS:
        raise ConfigError(f"form must be one of {FORMS}, got {form!r}")
    if isinstance(grader, Grader):
        grader.require_rewards("verl_compute_score")
    elif not isinstance(grader, str):
        raise ConfigError(f"verl_compute_score needs a Grader or a grader SPEC string, got {type(grader).__name__}")
    else:   # an unknown SPEC is named when verl loads the reward file, not at its first reward
        spec_target(grader)
    if on_unscored not in ("raise", "marker"):
        raise ConfigError(f"on_unscored must be 'raise' or 'marker', got {on_unscored!r}")
    if mode not in (None, "train", "eval"):
        raise ConfigError(f"mode must be 'train', 'eval' or None, got {mode!r}")
    options = dict(mode=mode, prompt_keys=(prompt_keys,) if isinstance(prompt_keys, str) else tuple(prompt_keys),
                   unscored_value=float(unscored_value), return_dict=return_dict, on_unscored=on_unscored)
    score = VerlScore(grader, judge, judge_model, dict(judge_options or {}), options, batch=form.endswith("batch"))
    return score if form in ("single", "batch") else score.coroutine_function()
