"""Prompt method names per class, generated from bundle.en.json by
``rewardjudge templates compile``; do not edit (a test fails when stale)."""

from typing import Literal, get_args

__all__ = [
    "PROMPT_METHODS", "PromptMethod", "CandidateJudgeGraderMethod",
    "CriterionJudgeGraderMethod", "ProbabilityJudgeGraderMethod", "ScorerGraderMethod",
    "TranslateCLIMethod"
]

CandidateJudgeGraderMethod = Literal["system", "user"]
CriterionJudgeGraderMethod = Literal[
    "criterion_completeness", "criterion_conciseness", "criterion_correctness",
    "criterion_faithfulness", "criterion_format_adherence", "criterion_harmlessness",
    "criterion_helpfulness", "criterion_instruction_following", "criterion_relevance", "system",
    "user"
]
ProbabilityJudgeGraderMethod = Literal["question", "search_relevance_question", "system", "user"]
ScorerGraderMethod = Literal["output_instructions"]
TranslateCLIMethod = Literal["user"]
#: every prompt method name
PromptMethod = Literal[
    CandidateJudgeGraderMethod, CriterionJudgeGraderMethod, ProbabilityJudgeGraderMethod,
    ScorerGraderMethod, TranslateCLIMethod
]

#: class name -> its prompt method names
PROMPT_METHODS = {
    "CandidateJudgeGrader": get_args(CandidateJudgeGraderMethod),
    "CriterionJudgeGrader": get_args(CriterionJudgeGraderMethod),
    "ProbabilityJudgeGrader": get_args(ProbabilityJudgeGraderMethod),
    "ScorerGrader": get_args(ScorerGraderMethod),
    "TranslateCLI": get_args(TranslateCLIMethod),
}
