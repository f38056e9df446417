"""The expected-value step of every family: after a generated verdict, the probability of
every score token where the judge wrote its score, and the verdict's value averaged over them
(an ``Expectation`` that ``Grader.scored`` folds into the Grade)."""

from __future__ import annotations

import json
import re
from json.decoder import scanstring
from typing import Any, Sequence

from pydantic import BaseModel

from ..errors import ConfigError
from ..models._base import GenerationParams, GradeDistributionUnsupported, Message, TokenDistribution
from ..readouts._distribution import EXPECTED_VALUE_FLOOR, read_distribution
from ..readouts._text import neutralize_controls
from ..scales import Scale
from ._base import Expectation, JudgeFailure, log
from ._outputs import output_value, score_choices

__all__ = ["expected_grade", "expected_verdict", "score_choices", "score_offset", "weigh_verdict"]


def score_offset(reply: str, start: int, end: int, field: str = "score", value_at: int = -1) -> int | None:
    """Where the value of ``field`` starts inside the verdict at ``reply[start:end]``: a
    line's value where the readout found it (``value_at``: after ``VERDICT <seal>:``, never
    at an earlier colon of the line, which may be the policy's text quoted), else a JSON
    object's own top-level key (inside a string value, after the quote). None when not found."""
    if value_at >= 0:
        return value_at if start <= value_at < end else None
    if reply.startswith("{", start):
        return _json_value_offset(reply, start, end, field)
    return None


#: JSON whitespace; raw line breaks inside strings are read as llama.cpp's grammars let them through
_WS = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder(strict=False)


def _json_value_offset(reply: str, start: int, end: int, field: str) -> int | None:
    """The start of the value of the object's own key ``field`` (inside a string, after
    its quote), reading the object at ``reply[start:end]`` key by key."""
    try:
        i = _WS.match(reply, start + 1).end()
        while i < end and reply[i] == '"':
            key, i = scanstring(reply, i + 1, False)
            i = _WS.match(reply, i).end()
            if reply[i] != ":":
                return None
            i = _WS.match(reply, i + 1).end()
            if key == field:
                return i + 1 if reply[i] == '"' else i
            i = _WS.match(reply, _DECODER.raw_decode(reply, i)[1]).end()
            if reply[i] != ",":
                return None
            i = _WS.match(reply, i + 1).end()
    except (ValueError, IndexError, RecursionError):
        pass
    return None


def reply_prefix(grader: Any, prefix: str) -> str:
    """The judge's reply up to its score, as the prefix the distribution is read after: its
    control tokens defanged (its copies of policy text may decode into ones the server would
    read as turns of the prompt); its own tags and text as written."""
    return neutralize_controls(prefix, grader.control_tokens())


def weigh_verdict(dist: TokenDistribution, verdict: BaseModel, output_model: type[BaseModel],
                  values: Sequence[Any], min_valid_mass: float) -> dict[str, Any]:
    """Average the verdict's value over ``dist``, the probability of each score in ``values``:
    ``{"expected_value": v | None, "score_probabilities": {...}, ...}`` (None, with a
    ``distribution_error``, when less than ``min_valid_mass`` fell on valid scores)."""
    raw = verdict.model_dump(mode="json")
    info: dict[str, Any] = {"score_probabilities": dict(dist.probs), "valid_mass": dist.valid_mass,
                            "outside_mass": dist.outside, "top_k": dist.top_k}
    if dist.valid_mass < min_valid_mass:
        info.update(expected_value=None,
                    distribution_error=f"only {dist.valid_mass:.1%} of the judge's probability fell on "
                                       f"valid scores (floor {min_valid_mass:.0%})")
        return info
    norm = dist.normalized()
    info["expected_value"] = sum(norm.get(str(v), 0.0) * output_value(output_model.model_validate({**raw, "score": v}))
                                 for v in values)
    return info


async def expected_verdict(grader: Any, messages: Sequence[Message], reply: str,
                           found: Any) -> Expectation:
    """The expected value of the sealed verdict ``found``, read with the reply cut right
    before its score as an assistant prefix (``weigh_verdict``). None, with
    ``distribution_error``, when that cannot be read; usage errors are raised."""
    floor = getattr(grader, "expected_value_floor", EXPECTED_VALUE_FLOOR)
    values = score_choices(grader.output_model)
    if values is None:
        raise ConfigError(f"{grader.output_model.__name__}.score has no short set of values to weigh")
    at = score_offset(reply, found.start, found.end, value_at=found.value_at)
    if at is None:
        return _no_value("the score could not be located in the judge's sealed verdict")
    dist = await grader.ask_distribution(
        grader.model, [*messages, {"role": "assistant", "content": reply_prefix(grader, reply[:at])}],
        [str(v) for v in values])
    if isinstance(dist, JudgeFailure):
        return _no_value(dist.reason, attempts=dist.attempts)
    info = weigh_verdict(dist, found.value[0], grader.output_model, values, floor)
    value = info.get("expected_value")
    return Expectation(None if value is None else float(value), info, attempts=dist.attempts,
                       distribution=None if value is None
                       else {str(v): p for v, p in dist.normalized().items()})


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
        dist = await grader.ask_distribution(grader.model, [*messages, {"role": "assistant",
                                                                         "content": reply_prefix(grader, prefix)}],
                                             [str(g) for g in scale.grades], params)
    except GradeDistributionUnsupported as exc:
        return _unreadable(grader, f"GradeDistributionUnsupported: {exc}")
    except ConfigError:
        raise
    except Exception as exc:   # a broken model must not cost the sampled grade
        log.warning("grader %s: grade_distribution raised %r; the sampled grade stays",
                    grader.grader_key, exc)
        return _no_value(f"{type(exc).__name__}: {exc}")
    if isinstance(dist, JudgeFailure):
        return _no_value(dist.reason, attempts=dist.attempts)
    extra: dict[str, Any] = {"expected_value": None, "valid_mass": dist.valid_mass,
                             "outside_mass": dist.outside, "top_k": dist.top_k}
    cost = {"attempts": dist.attempts, "usage": dict(dist.usage), "latency_s": dist.latency_s}
    summary = read_distribution(dist, scale.grades, grader.expected_value_floor, "expected_value_floor")
    if not summary.ok:
        return Expectation(None, {**extra, "distribution_error": summary.reason}, **cost)
    value = scale.to_reward(summary.expected)
    return Expectation(value, {**extra, **summary.as_extra(), "expected_value": value},
                       distribution={str(k): v for k, v in summary.probabilities.items()}, **cost)


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
