"""The expected-value step of every family (``read_distribution``; after a generated verdict,
``expected_after``); see docs/probability.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from ..models._base import GenerationParams, GradeDistributionUnsupported, Message, TokenDistribution
from ..readouts._decision import NoVerdict
from ..readouts._seal import value_offset
from ..readouts._text import neutralize
from ..scales import Scale
from ._base import Expectation, JudgeFailure, log
from ._outputs import output_value, score_choices

__all__ = ["DistributionSummary", "confidence", "expected_after", "expected_verdict", "read_distribution",
           "score_choices"]


@dataclass(frozen=True)
class DistributionSummary:
    """A distribution renormalised over the valid choices, its expected value and most likely choice."""

    probabilities: dict[Any, float]
    expected: float
    most_likely: Any
    confidence: float
    valid_mass: float
    outside_mass: float
    ok = True

    def as_extra(self) -> dict[str, Any]:
        return {"expected_grade": self.expected, "most_likely_grade": self.most_likely, "confidence": self.confidence,
                "valid_mass": self.valid_mass, "outside_mass": self.outside_mass}


def confidence(probs: Sequence[float]) -> float:
    """``1 - H(p)/ln(n)``: 1 for a certain distribution, 0 for a uniform one."""
    n = len(probs)
    if n < 2:
        return 1.0
    h = -sum(p * math.log(p) for p in probs if p > 0.0)
    return max(0.0, min(1.0, 1.0 - h / math.log(n)))


def read_distribution(dist: TokenDistribution, values: Mapping[Any, float], floor: float, *,
                      option: str = "floor", shown: str | None = None) -> "DistributionSummary | NoVerdict":
    """``dist`` renormalised over the choices of ``values`` (each worth its value) and weighed, or
    a ``NoVerdict`` when less than ``floor`` (the option ``option``) fell on ``shown``."""
    if dist.valid_mass <= 0.0 or dist.valid_mass < floor:
        shown = shown or f"the tokens {', '.join(map(repr, values))}"
        return NoVerdict(f"only {dist.valid_mass:.1%} of the judge's probability fell on {shown} "
                         f"({option} {floor:.0%})", kind="invalid")
    norm = dist.normalized()
    probabilities = {c: norm.get(str(c), 0.0) for c in values}
    expected = sum(values[c] * p for c, p in probabilities.items())
    top = max(probabilities.values())
    # ties: the lower value
    most_likely = min((c for c, p in probabilities.items() if p == top), key=values.__getitem__)
    return DistributionSummary(probabilities, expected, most_likely, confidence(list(probabilities.values())),
                               dist.valid_mass, dist.outside)


async def expected_after(grader: Any, messages: Sequence[Message], prefix: str, values: Mapping[Any, float],
                         shown: str, params: GenerationParams | None = None, scale: Scale | None = None
                         ) -> Expectation:
    """``read_distribution`` of the choices of ``values`` right after ``prefix`` (the reply cut before its
    score, control tokens defanged); with ``scale``, the expected grade's reward. No value, saying why,
    when it cannot be read: the sampled value stays. Usage errors are raised."""
    if not getattr(grader.model, "continues_prefix", False):
        return _unreadable(grader, f"{getattr(grader.model, 'name', type(grader.model).__name__)!r} "
                                   f"cannot read probabilities after a reply prefix (continues_prefix is False)")
    try:
        dist = await grader.ask_distribution(
            grader.model, [*messages, {"role": "assistant",
                                       "content": neutralize(prefix, (), grader.control_tokens(), tags=False)}],
            [str(c) for c in values], params)
    except GradeDistributionUnsupported as exc:
        return _unreadable(grader, f"GradeDistributionUnsupported: {exc}")
    except ConfigError:
        raise
    except Exception as exc:   # a broken model must not cost the sampled value
        log.warning("grader %s: grade_distribution raised %r; the sampled grade stays", grader.grader_key, exc)
        return _no_value(f"{type(exc).__name__}: {exc}")
    if isinstance(dist, JudgeFailure):
        return _no_value(dist.reason, attempts=dist.attempts)
    extra: dict[str, Any] = {"expected_value": None, "valid_mass": dist.valid_mass,
                             "outside_mass": dist.outside, "top_k": dist.top_k}
    cost = {"attempts": dist.attempts, "usage": dict(dist.usage), "latency_s": dist.latency_s}
    summary = read_distribution(dist, values, grader.expected_value_floor, option="expected_value_floor", shown=shown)
    if not summary.ok:
        return Expectation(None, {**extra, "distribution_error": summary.reason}, **cost)
    value = summary.expected if scale is None else scale.to_reward(summary.expected)
    return Expectation(value, {**extra, **(summary.as_extra() if scale else {}), "expected_value": value},
                       distribution={str(k): v for k, v in summary.probabilities.items()}, **cost)


async def expected_verdict(grader: Any, messages: Sequence[Message], reply: str, found: Any) -> Expectation:
    """The sealed verdict ``found``'s value with each score in turn, weighed by ``expected_after``."""
    at = value_offset(reply, found)
    if at is None:
        return _no_value("the score could not be located in the judge's sealed verdict")
    raw = found.value[0].model_dump(mode="json")
    values = {v: output_value(grader.output_model.model_validate({**raw, "score": v}))
              for v in score_choices(grader.output_model)}   # a list: TemplatedOptions refuses a model without one
    return await expected_after(grader, messages, reply[:at], values, "valid scores")


def _unreadable(grader: Any, reason: str) -> Expectation:   # warned once per grader
    if not grader.__dict__.get("_warned_no_distribution"):
        grader._warned_no_distribution = True
        log.warning("grader %s: expected_value is on but %s; sampled grades are used", grader.grader_key, reason)
    return _no_value(reason)


def _no_value(reason: str, **cost: Any) -> Expectation:
    return Expectation(None, {"expected_value": None, "distribution_error": reason}, **cost)
