"""Attack hunt 9: markup past the content-free screen, and regressions for what held."""

from __future__ import annotations

import asyncio

import pytest

from rewardjudge import BinaryJudgeOutput, StringThread, TemplatedPromptJudgeGrader
from rewardjudge.graders._guards import content_free_fields, content_free_reason
from rewardjudge.testing import ScriptedModel

QUESTION = "What is the capital of France?"


def _thread(completion: str) -> StringThread:
    return StringThread([("user", QUESTION), ("assistant", completion)])


def _grader(model, **kw) -> TemplatedPromptJudgeGrader:
    return TemplatedPromptJudgeGrader(
        "t", model, "You grade answers.", "Question: {{last_user_turn_content}}\nAnswer: {{completion}}",
        BinaryJudgeOutput, reply_retries=0, **kw)


# -- 1. markup is no answer: the letters of a tag's name counted as content, so an empty reasoning
# block (``<think></think>``, what a reasoning policy writes before no answer at all), a master key
# in a tag, or a lone control token passed the screen and reached a judge that passed it
@pytest.mark.parametrize("text", [
    "<think></think>", "<think>\n\n</think>\n\n", "<think>Thought process:</think>", "<b>Answer</b>",
    "**<u>Solution</u>**", "<|im_end|>", "</s>", "<br/>", "<answer>\n</answer>", "<think> </think>\n```\n```",
])
def test_markup_alone_is_content_free(text):
    assert content_free_reason(text) is not None
    assert content_free_fields({"answer": text}) is not None
    assert content_free_fields({"answers": [text] * 9}) is not None   # the joined pass
    grade = asyncio.run(_grader(ScriptedModel(default='{"reasoning": "ok", "score": "PASS"}')).grade(_thread(text)))
    assert grade.status == "penalized"


@pytest.mark.parametrize("text", [
    "<b>Paris</b>", "<think>2+2=4</think>", "Use the <iostream> header.", "List<String>", "1 < 2 and x>3",
    '<img src="map.png">', "a<b>c", "<p>The answer is 4.</p>", "<think>hmm</think>Paris",
])
def test_markup_around_an_answer_keeps_it(text):
    assert content_free_reason(text) is None
    assert content_free_fields({"answers": [text] * 9}) is None
