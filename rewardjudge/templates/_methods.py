"""Prompt method names per class, generated from bundle.en.json by
``rewardjudge templates compile``; do not edit (a test fails when stale)."""

from typing import Literal

__all__ = [
    "PROMPT_METHODS",
    "PromptMethod",
    "CandidateJudgeGraderMethod",
    "CriterionJudgeGraderMethod",
    "ProbabilityJudgeGraderMethod",
    "ScorerGraderMethod",
    "TranslateCLIMethod",
]

CandidateJudgeGraderMethod = Literal[
    "system",
    "user",
]
CriterionJudgeGraderMethod = Literal[
    "criterion_completeness",
    "criterion_conciseness",
    "criterion_correctness",
    "criterion_faithfulness",
    "criterion_format_adherence",
    "criterion_harmlessness",
    "criterion_helpfulness",
    "criterion_instruction_following",
    "criterion_relevance",
    "system",
    "user",
]
ProbabilityJudgeGraderMethod = Literal[
    "question",
    "system",
    "user",
]
ScorerGraderMethod = Literal[
    "output_instructions",
]
TranslateCLIMethod = Literal[
    "user",
]
PromptMethod = Literal[
    "criterion_completeness",
    "criterion_conciseness",
    "criterion_correctness",
    "criterion_faithfulness",
    "criterion_format_adherence",
    "criterion_harmlessness",
    "criterion_helpfulness",
    "criterion_instruction_following",
    "criterion_relevance",
    "output_instructions",
    "question",
    "system",
    "user",
]

#: class name -> its prompt method names
PROMPT_METHODS = {
    "CandidateJudgeGrader": (
        "system",
        "user",
    ),
    "CriterionJudgeGrader": (
        "criterion_completeness",
        "criterion_conciseness",
        "criterion_correctness",
        "criterion_faithfulness",
        "criterion_format_adherence",
        "criterion_harmlessness",
        "criterion_helpfulness",
        "criterion_instruction_following",
        "criterion_relevance",
        "system",
        "user",
    ),
    "ProbabilityJudgeGrader": (
        "question",
        "system",
        "user",
    ),
    "ScorerGrader": (
        "output_instructions",
    ),
    "TranslateCLI": (
        "user",
    ),
}
