"""Judge output models: the shape of a judge's verdict and its reward value."""

from __future__ import annotations

import functools
import json
import math
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from ..errors import ConfigError
from ..scales import Scale


#: the most characters a built-in verdict's reasoning holds (the schema's ``maxLength``; a
#: longer one from an unconstrained judge is cut when read, never refused)
REASONING_MAX_CHARS = 300


def bounded_reasoning(value: Any, limit: int = REASONING_MAX_CHARS) -> Any:
    """``value`` cut to ``limit`` characters (an ellipsis marks the cut) when it
    is a longer string; anything else unchanged, for the field's own check."""
    if isinstance(value, str) and len(value) > limit:
        return value[:limit - 1].rstrip() + "\u2026"
    return value


#: a built-in verdict's reasoning: cut to ``REASONING_MAX_CHARS`` when read
_Reasoning = Annotated[str, BeforeValidator(bounded_reasoning)]


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

    reasoning: _Reasoning = Field(description=f"Brief reasoning that leads to the verdict "
                                              f"(at most {REASONING_MAX_CHARS} characters)",
                                  max_length=REASONING_MAX_CHARS)
    score: Literal["PASS", "FAIL"] = Field(description="PASS if the answer meets every criterion, else FAIL")

    @field_validator("score", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    def to_value(self) -> float:
        return 1.0 if self.score == "PASS" else 0.0


class GradedJudgeOutput(JudgeOutput):
    """A grade on the graded scale (``Scale.GRADED``: 0 very poor .. 4 excellent), mapped
    linearly to [0, 1]: 0 -> 0.0, 2 -> 0.5, 4 -> 1.0."""

    reasoning: _Reasoning = Field(description=f"Brief reasoning that leads to the grade "
                                              f"(at most {REASONING_MAX_CHARS} characters)",
                                  max_length=REASONING_MAX_CHARS)
    # the grades also as an enum: llama-cpp-python's schema grammar ignores minimum and
    # maximum (the 135M judge wrote 5-9 and 391), but holds the judge to an enum
    score: int = Field(ge=Scale.GRADED.min, le=Scale.GRADED.max,
                       description="; ".join(f"{g} {lab.lower()}" for g, lab in Scale.GRADED.labels),
                       json_schema_extra={"enum": Scale.GRADED.grades})

    def to_value(self) -> float:
        return Scale.GRADED.to_reward(self.score)


class DeclaredVerdict(JudgeOutput):
    """A verdict read in a declared form (``verdict_form``): the number or the
    label the judge wrote, its reward, and the judge's text before it."""

    reasoning: str = ""
    score: float | None = None
    label: str | None = None
    value: float

    def to_value(self) -> float:
        return self.value


#: field names read as the judge's reasoning, first match wins
REASONING_FIELDS = ("reasoning", "reason", "explanation", "rationale", "justification", "analysis",
                    "critique", "feedback")


def verdict_reasoning(verdict: BaseModel) -> str | None:
    """The reasoning a verdict carries: the first str field named in ``REASONING_FIELDS``."""
    for name in REASONING_FIELDS:   # a loop: a generator under ``next`` cost 5k instructions a verdict, this 1k
        value = getattr(verdict, name, None)
        if isinstance(value, str):
            return value
    return None


#: reply budget of a schema-constrained verdict: a string of ``maxLength`` n costs
#: n / CHARS_PER_TOKEN tokens, every key and value some syntax
_CHARS_PER_TOKEN = 2
_SYNTAX_TOKENS = 6


def fitted_max_tokens(model: type[BaseModel]) -> int | None:
    """The ``max_tokens`` a reply of ``model`` needs when the server constrains it
    to the model's JSON schema (every string bounded, plus the JSON syntax); None
    when its length is not known (an unbounded string, an array, a reference).

    >>> fitted_max_tokens(BinaryJudgeOutput) < 256
    True
    """
    def cost(node: Any) -> int | None:
        if not isinstance(node, dict) or "$ref" in node or "anyOf" in node or "oneOf" in node:
            return None
        if "enum" in node or "const" in node:
            values = node.get("enum", [node.get("const")])
            return max(len(str(v)) for v in values) // _CHARS_PER_TOKEN + 2 if values else None
        kind, limit = node.get("type"), node.get("maxLength")
        if kind == "string":
            return -(-int(limit) // _CHARS_PER_TOKEN) + 2 if isinstance(limit, int) else None
        if kind == "object":
            costs = [(cost(sub), key) for key, sub in (node.get("properties") or {}).items()]
            return None if any(c is None for c, _ in costs) else \
                2 + sum(c + len(key) // _CHARS_PER_TOKEN + _SYNTAX_TOKENS for c, key in costs)
        return {"integer": 8, "number": 8, "boolean": 2}.get(kind)

    try:
        return cost(model.model_json_schema())
    except Exception:  # a schema pydantic cannot write: no fit
        return None


def _bounded(field: Any) -> bool:
    meta = getattr(field, "metadata", ())
    return all(any(getattr(m, a, None) is not None for m in meta for a in ab) for ab in (("ge", "gt"), ("le", "lt")))


def check_output_model(model: Any) -> type[BaseModel]:
    """Refuse an output model that cannot yield a finite reward: it needs a ``to_value()``
    method or a bounded numeric ``score`` field (``Field(ge=..., le=...)``)."""
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


@functools.lru_cache(maxsize=1024)
def _label_form(model: type[BaseModel]) -> "tuple[str | None, dict[str, float]] | None":
    """``(reasoning_field, value of each label)`` when a verdict of ``model`` can be one bare
    label (``score`` a Literal of strings, every other required field a reasoning string);
    None otherwise."""
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
    return reasoning, {lab: output_value(model.model_construct(score=lab)) for lab in labels}


@functools.lru_cache(maxsize=1024)
def schema_fields(model: type[BaseModel]) -> str:
    """A short list of a verdict's fields for a seal instruction: ``"reasoning" (text),
    "score" ("PASS" or "FAIL")`` (cached per output model)."""
    out = []
    for name, node in (model.model_json_schema().get("properties") or {}).items():
        if "enum" in node:
            kind = " or ".join(json.dumps(v) for v in node["enum"])
        elif "const" in node:
            kind = json.dumps(node["const"])
        else:
            kind = {"string": "text", "integer": "an integer", "number": "a number",
                    "boolean": "true or false"}.get(node.get("type"), "a value")
            if node.get("type") in ("integer", "number") and "minimum" in node and "maximum" in node:
                kind += f" from {node['minimum']:g} to {node['maximum']:g}"
        out.append(f"\"{name}\" ({kind})")
    return ", ".join(out)


def score_choices(output_model: type[BaseModel]) -> list[Any] | None:
    """The possible raw values of ``output_model``'s ``score`` when each is one short token
    (an enum/Literal of up to 10 values, or an int bounded within 0..9), else None.

    >>> score_choices(GradedJudgeOutput)
    [0, 1, 2, 3, 4]
    """
    prop = (output_model.model_json_schema().get("properties") or {}).get("score")
    if not isinstance(prop, dict) or "const" in prop:
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
