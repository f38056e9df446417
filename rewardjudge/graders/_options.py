"""Grader options validated once, by pydantic: a bad value is a ConfigError
naming the argument and the value given, raised at construction."""

from __future__ import annotations

import math
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

from ..errors import ConfigError

__all__ = ["GraderOptions", "JudgeOptions", "validated"]

Number = StrictFloat | StrictInt


class GraderOptions(BaseModel):
    """What every grader takes: its key, penalty mode and penalties, guards."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    grader_key: str = Field(min_length=1, description="must be a non-empty str")
    mode: Optional[Literal["train", "eval"]] = Field(None, description="must be 'train', 'eval' or None")
    train_penalty: Number = Field(-1.0, description="must be a finite number (a reward)")
    eval_penalty: Number = Field(0.0, description="must be a finite number (a reward)")
    reject_content_free: Optional[StrictBool] = Field(None, description="must be True, False or None")
    max_completion_chars: StrictInt = Field(262_144, ge=1, description="must be an int >= 1")


class JudgeOptions(BaseModel):
    """Sampling and re-ask settings of graders that ask a judge for text."""

    model_config = ConfigDict(extra="forbid")

    temperature: Optional[Number] = Field(0.0, ge=0.0, le=2.0,
                                          description="must be a number in [0, 2] (or None)")
    top_p: Optional[Number] = Field(None, gt=0.0, le=1.0, description="must be a number in (0, 1] (or None)")
    max_tokens: Optional[StrictInt] = Field(512, ge=1, description="must be an int >= 1 (or None)")
    seed: Optional[StrictInt] = Field(None, description="must be an int (or None)")
    reply_retries: StrictInt = Field(1, ge=0, le=20, description="must be >= 0 and <= 20 (an int)")


def validated(model: type[BaseModel], **values: Any) -> BaseModel:
    """``model(**values)``, or a ConfigError naming each bad argument and its value."""
    def problem(name: str) -> str:
        field = model.model_fields.get(name)
        rule = field.description if field is not None and field.description else "is invalid"
        return f"{name} {rule}, got {values.get(name)!r}"

    try:
        out = model(**values)
    except ValidationError as exc:
        names = list(dict.fromkeys(str(err.get("loc", ("(options)",))[0])
                                   for err in exc.errors(include_url=False)))
        raise ConfigError("; ".join(problem(n) for n in names)) from None
    for name, v in out:
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(problem(name))
    return out
