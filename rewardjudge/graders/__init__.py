"""Graders: turn a sample into a Grade; each family's options are its options model's fields (docs/pipeline.md)."""

from ._base import Grader
from ._candidate_judge import CandidateJudgeGrader
from ._options import CandidateOptions, GraderOptions, ProbabilityOptions, TemplatedOptions
from ._outputs import BinaryJudgeOutput, GradedJudgeOutput, JudgeOutput
from ._probability_judge import ProbabilityJudgeGrader
from .templated_prompt_judge import ScorerGrader, TemplatedPromptJudgeGrader

__all__ = ["BinaryJudgeOutput", "CandidateJudgeGrader", "CandidateOptions", "GradedJudgeOutput", "Grader",
           "GraderOptions", "JudgeOutput", "ProbabilityJudgeGrader", "ProbabilityOptions", "ScorerGrader",
           "TemplatedOptions", "TemplatedPromptJudgeGrader"]
