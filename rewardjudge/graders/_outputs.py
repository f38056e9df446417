"""Judge output models: the shape of a judge's verdict and its reward value."""

from __future__ import annotations

import math
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError, OutputParserException
from ..scales import Scale
from ..readouts._json_verdict import Reading, read_json_verdict
from ..readouts._plain_label import read_plain_label
from ..readouts._scan import PromptIndex


#: the most characters a built-in verdict's reasoning holds. The JSON schema
#: states it (``maxLength``), so a server that turns the schema into a grammar
#: (llama.cpp's ``json_object`` mode, vLLM) stops the judge there and the
#: verdict follows; a longer reasoning from an unconstrained judge is cut to
#: this length when read, never refused (``bounded_reasoning``).
REASONING_MAX_CHARS = 300


def bounded_reasoning(value: Any, limit: int = REASONING_MAX_CHARS) -> Any:
    """``value`` cut to ``limit`` characters (an ellipsis marks the cut) when it
    is a longer string; anything else unchanged, for the field's own check."""
    if isinstance(value, str) and len(value) > limit:
        return value[:limit - 1].rstrip() + "\u2026"
    return value


class JudgeOutput(BaseModel):
    """Base for judge verdicts: subclasses define ``to_value()`` (the reward)
    and may override ``reasoning_text()``."""

    model_config = ConfigDict(extra="forbid")

    def to_value(self) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def reasoning_text(self) -> str | None:
        return verdict_reasoning(self)


class BinaryJudgeOutput(JudgeOutput):
    """PASS / FAIL verdict: PASS -> 1.0, FAIL -> 0.0."""

    reasoning: str = Field(description=f"Brief reasoning that leads to the verdict "
                                       f"(at most {REASONING_MAX_CHARS} characters)",
                           max_length=REASONING_MAX_CHARS)
    score: Literal["PASS", "FAIL"] = Field(description="PASS if the answer meets every criterion, else FAIL")

    @field_validator("reasoning", mode="before")
    @classmethod
    def _bound(cls, v: Any) -> Any:
        return bounded_reasoning(v)

    @field_validator("score", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    def to_value(self) -> float:
        return 1.0 if self.score == "PASS" else 0.0


class GradedJudgeOutput(JudgeOutput):
    """A grade on the graded scale (``Scale.GRADED``: 0 very poor .. 4
    excellent), mapped linearly to [0, 1]: 0 -> 0.0, 2 -> 0.5, 4 -> 1.0.
    "graded" means this one scale everywhere: output models, candidate and
    probability judges, the catalog's ``output="graded"``."""

    reasoning: str = Field(description=f"Brief reasoning that leads to the grade "
                                       f"(at most {REASONING_MAX_CHARS} characters)",
                           max_length=REASONING_MAX_CHARS)
    # the grades also as an enum: llama-cpp-python's schema grammar ignores minimum and
    # maximum (the 135M judge wrote 5-9 and 391), but holds the judge to an enum
    score: int = Field(ge=Scale.GRADED.min, le=Scale.GRADED.max,
                       description="; ".join(f"{g} {lab.lower()}" for g, lab in Scale.GRADED.labels),
                       json_schema_extra={"enum": Scale.GRADED.grades})

    @field_validator("reasoning", mode="before")
    @classmethod
    def _bound(cls, v: Any) -> Any:
        return bounded_reasoning(v)

    def to_value(self) -> float:
        return Scale.GRADED.to_reward(self.score)


#: field names read as the judge's reasoning, first match wins
REASONING_FIELDS = ("reasoning", "reason", "explanation", "rationale", "justification", "analysis",
                    "critique", "feedback")


def verdict_reasoning(verdict: BaseModel) -> str | None:
    """The reasoning a verdict carries: the first str field named in ``REASONING_FIELDS``."""
    for name in REASONING_FIELDS:
        value = getattr(verdict, name, None)
        if isinstance(value, str):
            return value
    return None


#: reply budget of a schema-constrained verdict: a string of ``maxLength`` n
#: costs n / CHARS_PER_TOKEN tokens (English prose runs ~4 characters a token;
#: 2 leaves room for digits and rare words), every key and value some syntax
_CHARS_PER_TOKEN = 2
_SYNTAX_TOKENS = 6


def fitted_max_tokens(model: type[BaseModel]) -> int | None:
    """The ``max_tokens`` a reply of ``model`` needs when the server constrains it
    to the model's JSON schema: every string bounded (``maxLength`` or an enum),
    numbers and booleans a few tokens, plus the JSON syntax around them.
    None when the schema has an unbounded string, an array or a reference (its
    length is not known): the caller keeps its flat default.

    >>> fitted_max_tokens(BinaryJudgeOutput) < 256
    True
    """
    def cost(node: Any) -> int | None:
        if not isinstance(node, dict) or "$ref" in node or "anyOf" in node or "oneOf" in node:
            return None
        if "enum" in node or "const" in node:
            values = node.get("enum", [node.get("const")])
            return max(len(str(v)) for v in values) // _CHARS_PER_TOKEN + 2 if values else None
        kind = node.get("type")
        if kind == "string":
            limit = node.get("maxLength")
            return -(-int(limit) // _CHARS_PER_TOKEN) + 2 if isinstance(limit, int) else None
        if kind in ("integer", "number"):
            return 8
        if kind == "boolean":
            return 2
        if kind == "object":
            total = 2
            for key, sub in (node.get("properties") or {}).items():
                c = cost(sub)
                if c is None:
                    return None
                total += c + len(key) // _CHARS_PER_TOKEN + _SYNTAX_TOKENS
            return total
        return None

    try:
        return cost(model.model_json_schema())
    except Exception:  # a schema pydantic cannot write: no fit
        return None


def _bounded(field: Any) -> bool:
    lower = upper = False
    for m in getattr(field, "metadata", ()):
        lower = lower or any(getattr(m, a, None) is not None for a in ("ge", "gt"))
        upper = upper or any(getattr(m, a, None) is not None for a in ("le", "lt"))
    return lower and upper


def check_output_model(model: Any) -> type[BaseModel]:
    """Refuse an output model that cannot yield a finite reward value.

    The model needs a ``to_value()`` method or a numeric ``score`` field; a
    numeric ``score`` read directly as the reward must be bounded
    (``Field(ge=..., le=...)``), so no judge reply becomes an unbounded reward.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ConfigError(f"output_model must be a pydantic BaseModel subclass, got {model!r}")
    if issubclass(model, JudgeOutput):
        if model.to_value is JudgeOutput.to_value:
            raise ConfigError(f"{model.__name__} must define to_value()")
        return model
    if "to_value" in dir(model):
        return model
    field = model.model_fields.get("score")
    if field is None or field.annotation not in (int, float, bool):
        raise ConfigError(f"output_model {model.__name__} needs a to_value() method or a numeric "
                          f"'score' field")
    if field.annotation is not bool and not _bounded(field):
        raise ConfigError(f"output_model {model.__name__}: 'score' is the reward, so it must be "
                          f"bounded, e.g. score: {field.annotation.__name__} = Field(ge=0, le=1)")
    return model


def output_value(parsed: BaseModel) -> float:
    """The reward a verdict stands for; ``ValueError`` when it is not a finite number."""
    fn = getattr(parsed, "to_value", None)
    value = float(fn() if callable(fn) else getattr(parsed, "score"))
    if not math.isfinite(value):
        raise ValueError(f"verdict value {value} is not a finite number")
    return value


def label_field(model: type[BaseModel]) -> tuple[str, list[str], str | None] | None:
    """``(field, labels, reasoning_field)`` when a verdict of ``model`` can be
    written as one bare label: its ``score`` is a Literal of strings and every
    other required field is a reasoning string. None otherwise."""
    field = model.model_fields.get("score")
    if field is None or typing.get_origin(field.annotation) is not typing.Literal:
        return None
    labels = [a for a in typing.get_args(field.annotation) if isinstance(a, str)]
    if not labels:
        return None
    reasoning = None
    for name, f in model.model_fields.items():
        if name == "score":
            continue
        if name in REASONING_FIELDS and f.annotation is str:
            reasoning = reasoning or name
        elif f.is_required():
            return None
    return "score", labels, reasoning


def _label_form(model: type[BaseModel]) -> "tuple[str, list[str], str | None, dict[str, float]] | None":
    """``label_field(model)`` and the value of each label, remembered per model."""
    if model in _LABEL_FORMS:
        return _LABEL_FORMS[model]
    form = label_field(model)
    out = None
    if form is not None:
        name, labels, reasoning = form
        values = {lab: output_value(model.model_construct(**{name: lab})) for lab in labels}
        out = (name, labels, reasoning, values)
    if len(_LABEL_FORMS) < 1024:
        _LABEL_FORMS[model] = out
    return out


_LABEL_FORMS: "dict[type[BaseModel], tuple[str, list[str], str | None, dict[str, float]] | None]" = {}


def lowest_value(model: type[BaseModel]) -> float | None:
    """The lowest reward a verdict of ``model`` can carry (its ``score``'s
    labels or bounds, through ``to_value``), or None when it cannot be told."""
    if model in _LOWEST:
        return _LOWEST[model]
    low: float | None = None
    field = model.model_fields.get("score")
    if field is not None:
        if typing.get_origin(field.annotation) is typing.Literal:
            candidates = list(typing.get_args(field.annotation))
        else:
            candidates = [getattr(m, a) for m in field.metadata for a in ("ge", "gt", "le", "lt")
                          if getattr(m, a, None) is not None]
        try:
            values = [output_value(model.model_construct(score=c)) for c in candidates]
            low = min(values) if values else None
        except Exception:  # a to_value that needs more than the score
            low = None
    _LOWEST[model] = low
    return low


_LOWEST: "dict[type[BaseModel], float | None]" = {}


def parse_judge_reply(text: str, model: type[BaseModel], prompt: PromptIndex | None = None
                      ) -> Reading[BaseModel]:
    """Read a judge reply into ``model``: the judge's own JSON verdict
    (``readouts._json_verdict``), else, for label models such as
    ``BinaryJudgeOutput``, its own plain label line (``readouts._plain_label``).
    Copies of ``prompt`` are quoted text, never a verdict; own verdicts must
    agree. For label models the two readouts are one decision: the strongest
    tier of ``readouts._json_verdict.decide`` found in either decides (a JSON
    copy of policy text never outweighs a lower label line the judge wrote),
    and verdicts of that tier in both must agree; a verdict that is not
    surely the judge's own never outweighs a lower one of the other form, nor
    a JSON verdict of its own a lower label line in excess. Raises
    ``OutputParserException`` otherwise.
    """
    def check(data: dict[str, Any]) -> BaseModel:
        try:
            return model.model_validate(data)
        except Exception as exc:  # ValidationError, or a validator's own error
            raise ValueError(f"does not match {model.__name__}: {exc}".replace("\n", " ")[:400]) from None

    # a reply that is nothing but a copy of policy text is read only when its
    # verdict cannot raise the policy's reward
    low = lowest_value(model)
    harmless = None if low is None else (lambda v: output_value(v) <= low)
    try:
        json_reading: "Reading[BaseModel] | None" = read_json_verdict(text, check, output_value, prompt,
                                                                      harmless=harmless,
                                                                      value=output_value)
        json_exc: "OutputParserException | None" = None
    except OutputParserException as exc:
        json_reading, json_exc = None, exc
    if json_reading is not None and json_reading.tier == 0:
        mine = output_value(json_reading.verdict)
        if prompt is None or low is None or mine <= low:
            return json_reading
    plain = _label_form(model)   # only now: most replies are settled above
    if plain is None:
        if json_exc is not None:
            raise json_exc
        return json_reading
    # no JSON verdict the judge surely wrote: its own label line may be there. The two
    # readouts are one decision: the strongest tier in either decides (a JSON copy the
    # judge quoted twice is no match for a label line it wrote), and verdicts of one
    # tier must agree
    name, labels, reasoning_name, values = plain
    label_value = values.__getitem__

    if json_reading is not None and json_reading.tier == 0:
        # only a line holding a lower label can outweigh the JSON verdict (below)
        folded = text.casefold()
        if not any(lab.casefold() in folded for lab in labels if values[lab] < mine):
            return json_reading
    try:
        reading = read_plain_label(text, labels, prompt, harmless=None if low is None else (
            lambda lab: label_value(lab) <= low), value=label_value)
        plain_exc: "OutputParserException | None" = None
    except OutputParserException as exc:
        reading, plain_exc = None, exc
    if json_reading is not None and json_reading.tier == 0:
        # a JSON verdict above the lowest, in text no prompt text folds to (which a judge
        # re-writing policy text may still make): a lower label line the judge may have
        # written (one of its own, or one in excess) makes the reply ambiguous
        lower = (reading.tier <= 1 and label_value(reading.verdict[0]) < mine) if reading is not None \
            else (getattr(plain_exc, "tier", None) is not None and plain_exc.tier <= 1  # type: ignore[union-attr]
                  and getattr(plain_exc, "floor", None) is not None and plain_exc.floor < mine)  # type: ignore[union-attr]
        if lower:
            raise OutputParserException("ambiguous reply: a JSON verdict of the judge's own and a "
                                        "lower label line that may be its own", text)
        return json_reading
    # a verdict that is not surely the judge's own (a tier above 0) is read only when no
    # candidate of the other readout is lower: that one may be the judge's own
    floors = [f for f in (getattr(r, "floor", None) for r in (json_reading, json_exc, reading, plain_exc))
              if f is not None]
    if json_reading is not None and json_reading.floor is None:   # its only candidate
        floors.append(output_value(json_reading.verdict))
    if reading is not None and reading.floor is None:
        floors.append(label_value(reading.verdict[0]))
    result = _one_decision(text, json_reading, json_exc, reading, plain_exc, label_value, check, name,
                           reasoning_name)
    if result.tier > 0 and floors and output_value(result.verdict) > min(floors):
        raise OutputParserException("ambiguous reply: a verdict that is not surely the judge's own "
                                    "above a lower one in the other form", text)
    return result


def _one_decision(text: str, json_reading: "Reading[BaseModel] | None",
                  json_exc: "OutputParserException | None", reading: "Reading[tuple[str, str]] | None",
                  plain_exc: "OutputParserException | None", label_value: Any, check: Any, name: str,
                  reasoning_name: "str | None") -> "Reading[BaseModel]":
    """The JSON and label readouts of one reply as one decision (``parse_judge_reply``)."""
    if reading is None:
        assert plain_exc is not None
        tier = getattr(plain_exc, "tier", None)   # label lines of one tier that disagree
        if json_reading is not None and (tier is None or tier > json_reading.tier):
            return json_reading
        if json_reading is not None:
            raise plain_exc
        raise OutputParserException(f"{json_exc.reason}; {plain_exc.reason}", text) from None
    label, reasoning = reading.verdict
    if json_reading is not None:
        if reading.tier > json_reading.tier:
            return json_reading
        if label_value(label) == output_value(json_reading.verdict):
            return json_reading
        # a label line outweighs a JSON copy only where that cannot raise the reward (a line
        # the judge seems to have written may still be policy text it re-flowed)
        if reading.tier == json_reading.tier or label_value(label) > output_value(json_reading.verdict):
            raise OutputParserException("ambiguous reply: a JSON verdict and a label line of the "
                                        "judge's own that disagree", text)
    else:
        tier = getattr(json_exc, "tier", None)   # JSON verdicts of one tier that disagree
        if tier is not None and tier <= reading.tier:
            raise json_exc
    data: dict[str, Any] = {name: label}
    if reasoning_name is not None:
        data[reasoning_name] = reasoning
    return Reading(check(data), reading.forgeries, reading.quoted, reading.tier, reading.floor)
