"""rewardjudge: LLM-as-judge reward graders for RL training and evaluation.

The one door: everything a user needs is importable from here.

>>> from rewardjudge import StringThread, TemplatedPromptJudgeGrader, BinaryJudgeOutput
>>> thread = StringThread([("user", "Capital of France?"), ("assistant", "Paris")])

Names that need torch or the evaluation stack (``TorchModel``,
``evaluate_dataset``, the RL adapters) load on first use, so
``import rewardjudge`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import (ConfigError, JudgeConnectionError, JudgeError, JudgeHTTPError, JudgeOutage,
                     JudgeResponseError, JudgeStartupError, JudgeTimeoutError, OutputParserException, RewardJudgeError,
                     TemplateContextError, TemplateError, TemplateVariableError)
from .grade import Grade
from .graders import (BinaryJudgeOutput, CandidateJudgeGrader, GradedJudgeOutput, Grader, JudgeOutput,
                      ProbabilityJudgeGrader, TemplatedPromptJudgeGrader)
from .models import CachedModel, InferenceModel, OpenAIModel, spawn_judge
from .scales import Scale
from .thread import StringThread

__version__ = "0.1.0"

#: name -> module, imported on first access (they pull in torch, datasets, trl...)
_LAZY = {
    "TorchModel": "rewardjudge.models",
    "CriterionJudgeGrader": "rewardjudge.catalog",
    "Scorer": "rewardjudge.scorers",
    "ScorerGrader": "rewardjudge.scorers",
    "evaluate_dataset": "rewardjudge.evaluate",
    "judge_health": "rewardjudge.rl",
    "trl_reward_funcs": "rewardjudge.rl",
    "verl_compute_score": "rewardjudge.rl",
}

__all__ = sorted([
    "BinaryJudgeOutput", "CachedModel", "CandidateJudgeGrader", "ConfigError", "Grade",
    "GradedJudgeOutput", "Grader", "InferenceModel", "JudgeConnectionError", "JudgeError",
    "JudgeHTTPError", "JudgeOutage", "JudgeOutput", "JudgeResponseError", "JudgeStartupError", "JudgeTimeoutError",
    "OpenAIModel", "OutputParserException", "ProbabilityJudgeGrader", "RewardJudgeError", "Scale",
    "StringThread", "TemplateContextError", "TemplateError", "TemplateVariableError",
    "TemplatedPromptJudgeGrader",
    "spawn_judge", *_LAZY,
])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rewardjudge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
