"""Graders: turn a sample into a Grade."""

from ._base import Grader
from ._candidate_judge import CandidateJudgeGrader
from ._outputs import BinaryJudgeOutput, GradedJudgeOutput, JudgeOutput
from ._probability_judge import ProbabilityJudgeGrader
from .templated_prompt_judge import ScorerGrader, TemplatedPromptJudgeGrader

__all__ = ["BinaryJudgeOutput", "CandidateJudgeGrader", "GradedJudgeOutput", "Grader", "JudgeOutput",
           "ProbabilityJudgeGrader", "ScorerGrader", "TemplatedPromptJudgeGrader"]
