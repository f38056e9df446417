"""Graders: turn a sample into a Grade."""

from .base import Grader
from .candidate_judge import CandidateJudgeGrader
from .outputs import BinaryJudgeOutput, GradedJudgeOutput, JudgeOutput
from .probability_judge import ProbabilityJudgeGrader
from .templated_prompt_judge import TemplatedPromptJudgeGrader

__all__ = ["BinaryJudgeOutput", "CandidateJudgeGrader", "GradedJudgeOutput", "Grader", "JudgeOutput",
           "ProbabilityJudgeGrader", "TemplatedPromptJudgeGrader"]
