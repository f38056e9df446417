"""Grade distributions: from a judge's next-token probabilities to a reward.

* ``summarize(dist, grades)``: renormalise a ``TokenDistribution`` over the
  valid grades and compute the expected grade, the most likely grade and a
  confidence.
* ``score_choices`` / ``apply_expected_value``: the expected-value option of
  ``TemplatedPromptJudgeGrader``: after a generated verdict, read the
  probabilities of every possible score token at the position where the
  judge wrote its score, and average the verdict's value over them.

Confidence is ``1 - H(p) / ln(n)`` over the n valid grades: 1 when all the
valid mass sits on one grade, 0 when it is spread evenly (the
normalised-entropy complement; it does not depend on the scale's size the
way the top probability does).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pydantic import BaseModel

from ..errors import ConfigError
from ..models._base import Message, TokenDistribution
from ._outputs import output_value

__all__ = ["DistributionSummary", "apply_expected_value", "score_choices", "summarize",
           "weigh_verdict"]


@dataclass(frozen=True)
class DistributionSummary:
    """A grade distribution renormalised over the valid grades.

    ``probabilities`` maps each grade to its probability (sums to 1);
    ``valid_mass`` / ``outside_mass`` are the raw mass on valid grades and
    on everything else, before renormalising.
    """

    probabilities: dict[int, float]
    expected: float
    most_likely: int
    confidence: float
    valid_mass: float
    outside_mass: float

    def as_extra(self) -> dict[str, Any]:
        return {"probabilities": dict(self.probabilities), "expected_grade": self.expected,
                "most_likely_grade": self.most_likely, "confidence": self.confidence,
                "valid_mass": self.valid_mass, "outside_mass": self.outside_mass}


def confidence(probs: Sequence[float]) -> float:
    """``1 - H(p)/ln(n)``: 1 for a certain distribution, 0 for a uniform one.

    >>> confidence([1.0, 0.0]), confidence([0.5, 0.5])
    (1.0, 0.0)
    """
    n = len(probs)
    if n < 2:
        return 1.0
    h = -sum(p * math.log(p) for p in probs if p > 0.0)
    return max(0.0, min(1.0, 1.0 - h / math.log(n)))


def summarize(dist: TokenDistribution, grades: Sequence[int]) -> DistributionSummary:
    """Renormalise ``dist`` (whose choices are ``str(grade)``) over ``grades``.

    Raises ``ZeroDivisionError`` when no mass fell on any grade (callers
    check ``dist.valid_mass`` against their floor first).

    >>> d = TokenDistribution({"0": 0.1, "1": 0.3, "2": 0.4})
    >>> s = summarize(d, [0, 1, 2]); round(s.expected, 3), s.most_likely, round(s.outside_mass, 2)
    (1.375, 2, 0.2)
    """
    norm = dist.normalized()
    probabilities = {g: norm.get(str(g), 0.0) for g in grades}
    expected = sum(g * p for g, p in probabilities.items())
    top = max(probabilities.values())
    most_likely = min(g for g, p in probabilities.items() if p == top)  # ties: the lower grade
    return DistributionSummary(probabilities, expected, most_likely,
                               confidence(list(probabilities.values())),
                               dist.valid_mass, dist.outside)


# --------------------------------------------------------------------------
# expected value of a generated verdict
# --------------------------------------------------------------------------
def score_choices(output_model: type[BaseModel]) -> list[Any] | None:
    """The possible raw values of ``output_model``'s ``score`` field, when each
    can be written as one short token: an enum/Literal of up to 10 values, or
    an integer field bounded within 0..9. None when the score is not like that.

    >>> from rewardjudge.graders._outputs import GradedJudgeOutput
    >>> score_choices(GradedJudgeOutput)
    [0, 1, 2, 3, 4]
    """
    prop = (output_model.model_json_schema().get("properties") or {}).get("score")
    if not isinstance(prop, dict):
        return None
    if "const" in prop:
        return None
    if isinstance(prop.get("enum"), list):
        values = prop["enum"]
        ok = 2 <= len(values) <= 10 and all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                           for v in values)
        return list(values) if ok and len({str(v) for v in values}) == len(values) else None
    if prop.get("type") == "integer":
        lo = prop.get("minimum", prop.get("exclusiveMinimum", -1) + 1)
        hi = prop.get("maximum", prop.get("exclusiveMaximum", 11) - 1)
        if isinstance(lo, int) and isinstance(hi, int) and 0 <= lo < hi <= 9:
            return list(range(lo, hi + 1))
    return None


def _score_prefix(reply: str, raw_score: Any) -> str | None:
    """The reply up to where its (last) ``"score"`` value starts, or None."""
    text = str(raw_score)
    found = None
    for m in re.finditer(r'"score"\s*:\s*"?', reply):
        if reply.startswith(text, m.end()):
            found = m
    return None if found is None else reply[:found.end()]


def weigh_verdict(dist: TokenDistribution, verdict: BaseModel, output_model: type[BaseModel],
                  values: Sequence[Any], min_valid_mass: float) -> dict[str, Any]:
    """Average the verdict's value over the judge's probabilities ``dist`` of
    each score token in ``values``. Returns ``{"expected_value": v | None,
    "score_probabilities": {...}, ...}``; ``expected_value`` is None, with a
    ``distribution_error``, when less than ``min_valid_mass`` of the
    probability fell on valid scores."""
    raw = verdict.model_dump(mode="json")
    info: dict[str, Any] = {"score_probabilities": dict(dist.probs), "valid_mass": dist.valid_mass,
                            "outside_mass": dist.outside, "top_k": dist.top_k}
    if dist.valid_mass < min_valid_mass:
        info.update(expected_value=None,
                    distribution_error=f"only {dist.valid_mass:.1%} of the judge's probability fell on "
                                       f"valid scores (floor {min_valid_mass:.0%})")
        return info
    norm = dist.normalized()
    total = 0.0
    for v in values:
        candidate = output_model.model_validate({**raw, "score": v})
        total += norm.get(str(v), 0.0) * output_value(candidate)
    info["expected_value"] = total
    return info


def distribution_text(probabilities: Mapping[Any, float], outside: float) -> str:
    """A compact JSON record of a distribution, used as a grade's raw reply."""
    return json.dumps({"probabilities": {str(k): round(v, 6) for k, v in probabilities.items()},
                       "outside": round(outside, 6)})


#: default floor of valid-score probability for the expected-value option
EXPECTED_VALUE_FLOOR = 0.5


async def apply_expected_value(grader: Any, messages: Sequence[Message], reply: str,
                               verdict: BaseModel, grade: Any) -> Any:
    """Replace a scored Grade's value by the verdict's expected value.

    Used by graders with ``expected_value=True`` (``grader.model``,
    ``grader.output_model``, optional ``grader.expected_value_floor``). The
    judge's generated ``reply`` is cut right before its score value and
    given back as an assistant prefix; the probabilities of every score
    token are read there (``Grader.ask_distribution``: an unconstrained
    step, even when the reply itself was schema-constrained) and the
    verdict's value averaged over them (``weigh_verdict``). The sampled
    value is kept in ``extra["sampled_value"]``. When the distribution
    cannot be read (score not found in the reply, too little mass on valid
    scores, a judge error) the sampled value stays and
    ``extra["distribution_error"]`` says why. Usage errors (a model without
    ``grade_distribution``, a score that is not one token) are raised.
    """
    from ._base import JudgeFailure

    floor = getattr(grader, "expected_value_floor", EXPECTED_VALUE_FLOOR)
    grade.extra["sampled_value"] = grade.value
    values = score_choices(grader.output_model)
    if values is None:
        raise ConfigError(f"{grader.output_model.__name__}.score has no short set of values to weigh")
    prefix = _score_prefix(reply, verdict.model_dump(mode="json").get("score"))
    if prefix is None:
        info: dict[str, Any] = {"expected_value": None, "distribution_error":
                                "the score could not be located in the judge's reply"}
    else:
        dist = await grader.ask_distribution(
            grader.model, [*messages, {"role": "assistant", "content": prefix}],
            [str(v) for v in values])
        if isinstance(dist, JudgeFailure):
            info = {"expected_value": None, "distribution_error": dist.reason}
            grade.attempts += dist.attempts
        else:
            info = weigh_verdict(dist, verdict, grader.output_model, values, floor)
            grade.attempts += dist.attempts
    grade.extra.update(info)
    if info.get("expected_value") is not None:
        grade.value = float(info["expected_value"])
    return grade
