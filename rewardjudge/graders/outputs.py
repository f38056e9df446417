"""Judge output models: the shape of a judge's verdict and its reward value."""

from __future__ import annotations

import math
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError, OutputParserException
from ..scales import Scale
from ..readouts import PromptIndex, Reading, read_json_verdict, read_plain_label


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

    reasoning: str = Field(description="Brief reasoning that leads to the verdict")
    score: Literal["PASS", "FAIL"] = Field(description="PASS if the answer meets every criterion, else FAIL")

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

    reasoning: str = Field(description="Brief reasoning that leads to the grade")
    score: int = Field(ge=Scale.GRADED.min, le=Scale.GRADED.max,
                       description="; ".join(f"{g} {lab.lower()}" for g, lab in Scale.GRADED.labels))

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


def parse_judge_reply(text: str, model: type[BaseModel], prompt: PromptIndex | None = None
                      ) -> Reading[BaseModel]:
    """Read a judge reply into ``model``: the judge's own JSON verdict
    (``readouts.json_verdict``), else, for label models such as
    ``BinaryJudgeOutput``, its own plain label line (``readouts.plain_label``).
    Copies of ``prompt`` are quoted text, never a verdict; own verdicts must
    agree. Raises ``OutputParserException`` otherwise.
    """
    def check(data: dict[str, Any]) -> BaseModel:
        try:
            return model.model_validate(data)
        except Exception as exc:  # ValidationError, or a validator's own error
            raise ValueError(f"does not match {model.__name__}: {exc}".replace("\n", " ")[:400]) from None

    try:
        return read_json_verdict(text, check, output_value, prompt)
    except OutputParserException as exc:
        plain = label_field(model)
        if plain is None:
            raise
        name, labels, reasoning_name = plain
        try:
            reading = read_plain_label(text, labels, prompt)
        except OutputParserException as plain_exc:
            raise OutputParserException(f"{exc.reason}; {plain_exc.reason}", text) from None
        label, reasoning = reading.verdict
        data: dict[str, Any] = {name: label}
        if reasoning_name is not None:
            data[reasoning_name] = reasoning
        return Reading(check(data), reading.forgeries, reading.quoted)
