"""Grader options validated once, by pydantic: a bad value is a ConfigError
naming the argument and the value given, raised at construction."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt

from .._validate import validated
from ..models._base import InferenceModel

__all__ = ["CandidateOptions", "GraderOptions", "JudgeBinding", "JudgeOptions", "ProbabilityOptions",
           "validated"]

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


class JudgeBinding(BaseModel):
    """What every judge-asking family takes: the judge, and the model a
    completion is parsed into before any judge call."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    model: InferenceModel = Field(description="must be an InferenceModel (a spawned or remote judge)")
    completion_model: Optional[type[BaseModel]] = Field(
        None, description="must be a pydantic BaseModel subclass (or None)")


class CandidateOptions(BaseModel):
    """The candidate (group) judge's own settings."""

    model_config = ConfigDict(extra="forbid")

    batch_size: StrictInt = Field(8, ge=1, description="must be an int >= 1")
    max_rounds: StrictInt = Field(3, ge=1, description="must be an int >= 1 (1 = no re-asks)")
    include_images: StrictBool = Field(False, description="must be True or False")
    expected_value_floor: Number = Field(0.5, ge=0.0, le=1.0,
                                         description="must be a probability in [0, 1]")


class ProbabilityOptions(BaseModel):
    """The probability judge's own settings."""

    model_config = ConfigDict(extra="forbid")

    value: Literal["expected", "most_likely"] = Field("expected",
                                                      description="must be 'expected' or 'most_likely'")
    min_valid_mass: Number = Field(0.5, ge=0.0, le=1.0, description="must be a number in [0, 1]")
