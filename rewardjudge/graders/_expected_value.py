"""The expected-value option of a JSON verdict (``TemplatedPromptJudgeGrader``):
after a generated verdict, read the probabilities of every possible score
token at the position where the judge wrote its score
(``Grader.ask_distribution``) and average the verdict's value over them.
The token-distribution readout itself is ``readouts._distribution``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from pydantic import BaseModel

from ..errors import ConfigError
from ..models._base import Message, TokenDistribution
from ..readouts._distribution import EXPECTED_VALUE_FLOOR
from ._base import JudgeFailure
from ._outputs import output_value

__all__ = ["apply_expected_value", "score_choices", "weigh_verdict"]


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


def _score_prefixes(reply: str, verdict: BaseModel, raw: dict[str, Any]) -> list[str]:
    """The reply up to where each ``"score"`` value equal to the verdict's
    starts, only where the JSON object around the value is that verdict
    (``raw``: its JSON form; a label read from the last line leaves no such
    place, and a copy of the policy's verdict-shaped text is not one unless
    it is equal)."""
    text = str(raw.get("score"))
    out = []
    for m in re.finditer(r'"score"\s*:\s*"?', reply):
        if reply.startswith(text, m.end()) and _inside_verdict(reply, m.start(), verdict, raw):
            out.append(reply[:m.end()])
    return out


_DECODER = json.JSONDecoder()
_MAX_ENCLOSING = 64


def _inside_verdict(reply: str, at: int, verdict: BaseModel, want: dict[str, Any]) -> bool:
    """Whether a JSON object holding offset ``at`` decodes to ``verdict``
    (``want``: its JSON form)."""
    start = at
    for _ in range(_MAX_ENCLOSING):
        start = reply.rfind("{", 0, start)
        if start < 0:
            return False
        try:
            obj, end = _DECODER.raw_decode(reply, start)
        except ValueError:
            continue
        if end <= at or not isinstance(obj, dict):
            continue
        try:
            if type(verdict).model_validate(obj).model_dump(mode="json") == want:
                return True
        except Exception:   # not this output model's shape
            continue
    return False


#: most score positions read in one reply (more: the lowest score's value)
MAX_SCORE_POSITIONS = 8


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


async def apply_expected_value(grader: Any, messages: Sequence[Message], reply: str,
                               verdict: BaseModel, grade: Any) -> Any:
    """Replace a scored Grade's value by the verdict's expected value.

    Used by graders with ``expected_value=True`` (``grader.model``,
    ``grader.output_model``, optional ``grader.expected_value_floor``). The
    judge's generated ``reply`` is cut right before its score value and
    given back as an assistant prefix; the probabilities of every score
    token are read there (``Grader.ask_distribution``: an unconstrained
    step, even when the reply itself was schema-constrained) and the
    verdict's value averaged over them (``weigh_verdict``). Where the reply
    holds the same score at several places (a copy of the policy's text, say)
    every place where the JSON object is the verdict is read and the lowest
    expected value counts (a failed read
    there lets the sampled value count too; beyond ``MAX_SCORE_POSITIONS``
    places, the lowest value a score can carry), so text cannot move the
    read off the judge's own score. The sampled
    value is kept in ``extra["sampled_value"]``. When the distribution
    cannot be read (score not found in the reply, too little mass on valid
    scores, a judge error) the sampled value stays and
    ``extra["distribution_error"]`` says why. Usage errors (a model without
    ``grade_distribution``, a score that is not one token) are raised.
    """
    floor = getattr(grader, "expected_value_floor", EXPECTED_VALUE_FLOOR)
    grade.extra["sampled_value"] = grade.value
    values = score_choices(grader.output_model)
    if values is None:
        raise ConfigError(f"{grader.output_model.__name__}.score has no short set of values to weigh")
    raw = verdict.model_dump(mode="json")
    prefixes = _score_prefixes(reply, verdict, raw)
    info: dict[str, Any]
    if not prefixes:
        info = {"expected_value": None, "distribution_error":
                "the score could not be located in the judge's reply"}
    elif len(prefixes) > MAX_SCORE_POSITIONS:
        # too many places to read: the lowest value a score can carry
        lowest = min(output_value(grader.output_model.model_validate({**raw, "score": v}))
                     for v in values)
        info = {"expected_value": min(lowest, grade.value), "score_positions": len(prefixes),
                "distribution_error": f"the score appears at {len(prefixes)} places in the reply "
                                      f"(at most {MAX_SCORE_POSITIONS} are read): the lowest value"}
    else:
        # the reply may also hold copies of the policy's text with the same score
        # (the judge quoting or echoing it): the judge's own position is among
        # them, and a read inside a copy follows the copied text, so every
        # position is read and the lowest expected value counts; where a read
        # failed (that may be the judge's own), the sampled value counts too
        best: dict[str, Any] | None = None
        failed: dict[str, Any] | None = None
        for prefix in prefixes:
            dist = await grader.ask_distribution(
                grader.model, [*messages, {"role": "assistant", "content": prefix}],
                [str(v) for v in values])
            grade.attempts += dist.attempts
            if isinstance(dist, JudgeFailure):
                failed = failed or {"expected_value": None, "distribution_error": dist.reason}
                continue
            read = weigh_verdict(dist, verdict, grader.output_model, values, floor)
            if read.get("expected_value") is None:
                failed = failed or read
            elif best is None or read["expected_value"] < best["expected_value"]:
                best = read
        if best is None:
            info = failed or {}
        elif failed is not None and grade.value < best["expected_value"]:
            info = {**failed, "expected_value": None}
        else:
            info = best if failed is None else {**best, "distribution_error":
                                                    failed.get("distribution_error")}
        if len(prefixes) > 1:
            info["score_positions"] = len(prefixes)
    grade.extra.update(info)
    if info.get("expected_value") is not None:
        grade.value = float(info["expected_value"])
    return grade
