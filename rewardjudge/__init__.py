"""rewardjudge: LLM-as-judge reward graders for RL training and evaluation.

>>> from rewardjudge import StringThread, Grade
"""

from .errors import (ConfigError, JudgeConnectionError, JudgeError, JudgeHTTPError,
                     JudgeResponseError, JudgeStartupError, JudgeTimeoutError, RewardJudgeError,
                     TemplateContextError, TemplateError, TemplateVariableError)
from .grade import Grade
from .scales import Scale
from .thread import StringThread

__version__ = "0.1.0"

__all__ = sorted([
    "ConfigError", "Grade", "JudgeConnectionError", "JudgeError", "JudgeHTTPError",
    "JudgeResponseError", "JudgeStartupError", "JudgeTimeoutError", "RewardJudgeError",
    "Scale", "StringThread", "TemplateContextError", "TemplateError", "TemplateVariableError",
])
