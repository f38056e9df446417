"""The expected-value step of every family: after a generated verdict, the probability of
every score token where the judge wrote its score, and the verdict's value averaged over them
(an ``Expectation`` that ``Grader.scored`` folds into the Grade)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from ..models._base import GenerationParams, GradeDistributionUnsupported, Message, TokenDistribution
from ..readouts._distribution import read_distribution
from ..readouts._seal import value_offset
from ..readouts._text import neutralize_controls
from ..scales import Scale
from ._base import Expectation, JudgeFailure, log
from ._outputs import output_value, score_choices

__all__ = ["expected_grade", "expected_verdict", "score_choices"]


async def _distribution_after(grader: Any, messages: Sequence[Message], prefix: str, choices: Sequence[Any],
                              params: GenerationParams | None = None) -> "TokenDistribution | JudgeFailure":
    """The probability of each of ``choices`` right after ``prefix``, the judge's reply up to
    its score, sent as an assistant prefix: its control tokens defanged (its copies of policy
    text may decode into ones the server would read as turns of the prompt); its own tags and
    text as written."""
    return await grader.ask_distribution(
        grader.model, [*messages, {"role": "assistant",
                                   "content": neutralize_controls(prefix, grader.control_tokens())}],
        [str(c) for c in choices], params)


def _weighed(dist: "TokenDistribution | JudgeFailure", values: Mapping[Any, float], floor: float, shown: str,
             scale: Scale | None = None) -> Expectation:
    """The Expectation of ``dist`` over the choices of ``values`` (``read_distribution``): with
    ``scale``, the reward of the expected grade and the grade distribution's summary in
    ``extra``. None, with ``distribution_error``, when the read failed or too little fell on them."""
    if isinstance(dist, JudgeFailure):
        return _no_value(dist.reason, attempts=dist.attempts)
    extra: dict[str, Any] = {"expected_value": None, "valid_mass": dist.valid_mass,
                             "outside_mass": dist.outside, "top_k": dist.top_k}
    cost = {"attempts": dist.attempts, "usage": dict(dist.usage), "latency_s": dist.latency_s}
    summary = read_distribution(dist, values, floor, option="expected_value_floor", shown=shown)
    if not summary.ok:
        return Expectation(None, {**extra, "distribution_error": summary.reason}, **cost)
    value = summary.expected if scale is None else scale.to_reward(summary.expected)
    return Expectation(value, {**extra, **(summary.as_extra() if scale else {}), "expected_value": value},
                       distribution={str(k): v for k, v in summary.probabilities.items()}, **cost)


async def expected_verdict(grader: Any, messages: Sequence[Message], reply: str,
                           found: Any) -> Expectation:
    """The expected value of the sealed verdict ``found``: its value with each score in turn,
    weighed by the score's probability read with the reply cut right before its score. None,
    with ``distribution_error``, when that cannot be read; usage errors are raised."""
    scores = score_choices(grader.output_model)
    if scores is None:
        raise ConfigError(f"{grader.output_model.__name__}.score has no short set of values to weigh")
    at = value_offset(reply, found)
    if at is None:
        return _no_value("the score could not be located in the judge's sealed verdict")
    dist = await _distribution_after(grader, messages, reply[:at], scores)
    raw = found.value[0].model_dump(mode="json")
    values = {v: output_value(grader.output_model.model_validate({**raw, "score": v})) for v in scores}
    return _weighed(dist, values, grader.expected_value_floor, "valid scores")


async def expected_grade(grader: Any, messages: Sequence[Message], prefix: str, scale: Scale,
                         params: GenerationParams | None = None) -> Expectation:
    """``scale.to_reward(expected grade)`` after ``prefix`` (the reply cut right before the
    grade); None, with ``distribution_error``, when the model cannot read after a prefix, too
    little fell on the grades, or the read failed. Usage errors but
    ``GradeDistributionUnsupported`` are raised."""
    if not getattr(grader.model, "continues_prefix", False):
        return _unreadable(grader, f"{getattr(grader.model, 'name', type(grader.model).__name__)!r} "
                                   f"cannot read probabilities after a reply prefix "
                                   f"(continues_prefix is False)")
    try:
        dist = await _distribution_after(grader, messages, prefix, scale.grades, params)
    except GradeDistributionUnsupported as exc:
        return _unreadable(grader, f"GradeDistributionUnsupported: {exc}")
    except ConfigError:
        raise
    except Exception as exc:   # a broken model must not cost the sampled grade
        log.warning("grader %s: grade_distribution raised %r; the sampled grade stays",
                    grader.grader_key, exc)
        return _no_value(f"{type(exc).__name__}: {exc}")
    return _weighed(dist, {g: g for g in scale.grades}, grader.expected_value_floor,
                    f"the grades {scale.min}-{scale.max}", scale)


def _unreadable(grader: Any, reason: str) -> Expectation:
    """The sampled grade stays, saying why (warned once per grader)."""
    if not grader.__dict__.get("_warned_no_distribution"):
        grader._warned_no_distribution = True
        log.warning("grader %s: expected_value is on but %s; sampled grades are used",
                    grader.grader_key, reason)
    return _no_value(reason)


def _no_value(reason: str, **cost: Any) -> Expectation:
    """No expected value, saying why; the sampled one stays."""
    return Expectation(None, {"expected_value": None, "distribution_error": reason}, **cost)
