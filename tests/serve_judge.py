"""The scripted judge the serve and OpenRLHF tests grade with: PASS when the
answer equals the reference, an HTTP 503 for an answer holding "boom"."""

from rewardjudge import JudgeHTTPError
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.testing import ScriptedModel

PASS = '{"reasoning": "ok", "score": "PASS"}'
FAIL = '{"reasoning": "no", "score": "FAIL"}'
SYSTEM = "Grade the answer. Reply as JSON: {{output_schema}}"
USER = "Question: {{last_user_turn_content}}\nReference: {{metadata.reference}}\nAnswer: {{completion}}"


def judge_fn(messages, params, schema):
    text = messages[-1]["content"]
    answer = text.split("Answer: ", 1)[1]
    if "boom" in answer:
        return JudgeHTTPError(503, "overloaded")
    ref = text.split("Reference: ", 1)[1].split("\n", 1)[0]
    return PASS if answer.strip() == ref else FAIL


def make_grader(model=None):
    return TemplatedPromptJudgeGrader("serve-judge", model or ScriptedModel(judge_fn), SYSTEM, USER)
