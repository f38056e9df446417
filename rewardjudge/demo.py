"""``rewardjudge demo``: the bundled structured completions graded on the embedded judge (or ``--judge``)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Literal

from pydantic import BaseModel, Field

from .core.structured_output import render_schema
from .grade import Grade
from .graders._candidate_judge import CandidateJudgeGrader
from .graders.templated_prompt_judge import BinaryJudgeOutput, TemplatedPromptJudgeGrader
from .models import OpenAIModel
from .models._base import InferenceModel
from .models._spawn import free_port
from .thread import StringThread


class AnalysisOutput(BaseModel):
    """The policy's structured answer."""

    answer: str = Field(description="The model's answer to the question")
    confidence: Literal["high", "medium", "low"] = Field(description="Model's confidence in the answer")


JUDGE_SYSTEM_PROMPT = """You are an expert evaluator assessing the quality of model responses.

Evaluate based on these criteria:
1. Correctness: is the answer factually accurate?
2. Completeness: does it fully address the question?
3. Clarity: is it clear and well-articulated?

Reply with one JSON object of this shape:
{{output_schema}}
Use "PASS" if the answer meets all criteria, "FAIL" otherwise."""

JUDGE_USER_TEMPLATE = """Question:
{{last_user_turn_content}}

Model answer:
{{answer}}

Confidence: {{confidence}}

Is this answer correct, complete, and well-articulated?"""


def demo_grader(judge: InferenceModel) -> TemplatedPromptJudgeGrader:
    """The cookbook's AnalysisGrader, malformed answers penalized by ``completion_model``."""
    return TemplatedPromptJudgeGrader(
        grader_key="analysis-grader", model=judge, system_template=JUDGE_SYSTEM_PROMPT,
        user_template=JUDGE_USER_TEMPLATE, output_model=BinaryJudgeOutput, temperature=0.0,
        completion_model=AnalysisOutput, max_tokens=200)


def demo_group_grader(judge: InferenceModel) -> CandidateJudgeGrader:
    """The same answers judged as groups: every answer to one question in one request."""
    return CandidateJudgeGrader(
        "analysis-group", judge, scale="graded", batch_size=8, completion_model=AnalysisOutput,
        title_field="answer", max_rounds=1,
        evaluation_description="Answers to quiz questions: grade correctness and completeness")


def demo_threads(eval_mode: bool = False) -> list[StringThread]:
    """The bundled completions as threads (system instructions, question, answer)."""
    instructions = f"Answer the question. Output must be valid JSON:\n{render_schema(AnalysisOutput)}"
    lines = resources.files("rewardjudge").joinpath("data/demo_completions.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [StringThread([("system", instructions), ("user", row["question"]), ("assistant", row["completion"])],
                         metadata={"eval": eval_mode, "id": row["id"], "expected": row["expected"]}) for row in rows]


def format_grade(thread: StringThread, grade: Grade) -> str:
    """Two lines: the grade (status, value, attempts, tokens, why) and the graded text."""
    value = "None" if grade.value is None else f"{grade.value:+.2f}"
    why = grade.reasoning if grade.status == "scored" else grade.error
    text = " ".join(thread.turns[-1][1].split())
    return (f"{thread.metadata['id']:<22} {grade.status:<10} value={value:<6} "
            f"attempts={grade.attempts} tokens={grade.usage.get('total_tokens', 0):<4} "
            f"reason: {(why or '').strip()[:160]}\n{'':<22} graded: {text[:100]}{'...' if len(text) > 100 else ''}")


async def run_demo(judge: InferenceModel, eval_mode: bool = False) -> list[Grade]:
    """Grade and print the bundled completions on ``judge`` (alone, in groups), then one with the judge down."""
    threads = demo_threads(eval_mode)
    grades = await demo_grader(judge).grade_batch(threads)
    group_grades = await demo_group_grader(judge).grade_batch(threads)
    for title, found, counts in (
            (f"{len(grades)} grades ({'evaluation' if eval_mode else 'training'} penalties):", grades, "counts:"),
            ("the same answers judged in groups (CandidateJudgeGrader: one request per question, graded 0-4):",
             group_grades, "group counts:")):
        print(f"\n{title}")
        for t, g in zip(threads, found):
            print(format_grade(t, g))
        print(f"\n{counts}", {s: sum(g.status == s for g in found) for s in ("scored", "penalized", "unscored")})
    # the third outcome: the judge side fails (here, nothing listens at a port just found free)
    down = OpenAIModel(f"http://127.0.0.1:{free_port()}/v1", "judge", max_retries=1, timeout=5.0)
    async with down:
        [failed] = await demo_grader(down).grade_batch(threads[:1])
    print("\nthe first answer with the judge down (a closed port): a judge failure is unscored, "
          "never a number; trainers leave it out of the loss")
    print(format_grade(threads[0], failed))
    return grades
