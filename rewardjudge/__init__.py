"""rewardjudge: LLM-as-judge reward graders for RL training and evaluation.

The one door: everything a user needs is importable from here.

>>> from rewardjudge import StringThread, TemplatedPromptJudgeGrader, BinaryJudgeOutput
>>> thread = StringThread([("user", "Capital of France?"), ("assistant", "Paris")])

Every name but the error classes loads on first use, so ``import
rewardjudge`` stays light (no pybars3, aiohttp or torch until needed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_getattr as _lazy_getattr
from .errors import (ConfigError, JudgeConnectionError, JudgeError, JudgeHTTPError, JudgeOutage,
                     JudgeResponseError, JudgeStartupError, JudgeTimeoutError, OutputParserException,
                     RewardJudgeError, TemplateContextError, TemplateError, TemplateVariableError)

__version__ = "0.1.0"

#: name -> module, imported on first access: ``import rewardjudge`` (and the
#: command line's ``--help``) loads neither pybars3, aiohttp nor torch
_LAZY = {
    "Grade": "rewardjudge.grade",
    "StringThread": "rewardjudge.thread",
    "Scale": "rewardjudge.scales",
    **dict.fromkeys(["BinaryJudgeOutput", "CandidateJudgeGrader", "GradedJudgeOutput", "Grader",
                     "JudgeOutput", "ProbabilityJudgeGrader", "ScorerGrader", "TemplatedPromptJudgeGrader"],
                    "rewardjudge.graders"),
    **dict.fromkeys(["CachedModel", "InferenceModel", "OpenAIModel", "spawn_judge", "TorchModel"],
                    "rewardjudge.models"),
    "CriterionJudgeGrader": "rewardjudge.catalog",
    "Scorer": "rewardjudge.scorers",
    "evaluate_dataset": "rewardjudge.evaluate",
    "judge_health": "rewardjudge.rl",
    "trl_reward_funcs": "rewardjudge.rl",
    "verl_compute_score": "rewardjudge.rl",
}

if TYPE_CHECKING:  # what editors and type checkers see
    from .catalog import CriterionJudgeGrader
    from .evaluate import evaluate_dataset
    from .grade import Grade
    from .graders import (BinaryJudgeOutput, CandidateJudgeGrader, GradedJudgeOutput, Grader, JudgeOutput,
                          ProbabilityJudgeGrader, ScorerGrader, TemplatedPromptJudgeGrader)
    from .models import CachedModel, InferenceModel, OpenAIModel, TorchModel, spawn_judge
    from .rl import judge_health, trl_reward_funcs, verl_compute_score
    from .scales import Scale
    from .scorers import Scorer
    from .thread import StringThread

__all__ = sorted([
    "ConfigError", "JudgeConnectionError", "JudgeError", "JudgeHTTPError", "JudgeOutage", "JudgeResponseError",
    "JudgeStartupError", "JudgeTimeoutError", "OutputParserException", "RewardJudgeError",
    "TemplateContextError", "TemplateError", "TemplateVariableError", *_LAZY,
])


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
