"""Judge output models: the shape of a judge's verdict and its reward value."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..core.structured_output import unanimous_verdict
from ..errors import ConfigError


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
    """A 1-5 grade mapped linearly to [0, 1]: 1 -> 0.0, 3 -> 0.5, 5 -> 1.0."""

    reasoning: str = Field(description="Brief reasoning that leads to the grade")
    score: int = Field(ge=1, le=5, description="1 (very poor) to 5 (excellent)")

    def to_value(self) -> float:
        return (self.score - 1) / 4.0


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


def check_output_model(model: Any) -> type[BaseModel]:
    """Refuse an output model that cannot yield a reward value."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ConfigError(f"output_model must be a pydantic BaseModel subclass, got {model!r}")
    if isinstance(model, type) and issubclass(model, JudgeOutput):
        if model.to_value is JudgeOutput.to_value:
            raise ConfigError(f"{model.__name__} must define to_value()")
        return model
    if "to_value" in dir(model):
        return model
    field = model.model_fields.get("score")
    if field is None or field.annotation not in (int, float, bool):
        raise ConfigError(f"output_model {model.__name__} needs a to_value() method or a numeric "
                          f"'score' field")
    return model


def output_value(parsed: BaseModel) -> float:
    fn = getattr(parsed, "to_value", None)
    value = fn() if callable(fn) else getattr(parsed, "score")
    return float(value)


def parse_judge_reply(text: str, model: type[BaseModel]) -> BaseModel:
    """Parse a judge reply into ``model``, refusing ambiguity.

    A reply may echo the candidate's text, forged verdicts included, so the
    verdict is accepted only when every JSON object in the reply that
    validates against ``model`` says the same thing; otherwise
    ``OutputParserException`` (the grader re-asks, then leaves it unscored).
    """
    def check(data: dict[str, Any]) -> BaseModel:
        try:
            return model.model_validate(data)
        except Exception as exc:  # ValidationError, or a validator's own error
            raise ValueError(f"does not match {model.__name__}: {exc}".replace("\n", " ")[:400]) from None

    return unanimous_verdict(text, check, output_value)
