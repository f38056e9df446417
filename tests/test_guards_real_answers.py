"""The content-free screen on real models' answers (``python -m bench false_positives``): honest answers it
flagged, each fixed in the rule that flagged it, and real non-answers it rightly flags.

Answers are short excerpts of public benchmark runs, with their questions: AlpacaEval
(tatsu-lab/alpaca_eval, Apache License 2.0, ``results/<model>/model_outputs.json``), arena-hard-auto
(zeppombal/arena-hard-auto, Apache License 2.0, ``data/*/model_answer``), LLMBar (princeton-nlp/LLMBar,
MIT License, ``Dataset/*/dataset.json``), ja-mt-bench-harness (shisa-ai/ja-mt-bench-harness,
Apache License 2.0, ``fastchat/llm_judge/data/*/model_answer``)."""

from __future__ import annotations

import pytest

from rewardjudge.graders._guards import _content_free_flags, content_free_reason

EMOJI_TEXT = "Use appropriate emojis to convey the meaning in the given text.\n\nCute cat\nplayful\nSoft"
EMOJI_CHAT = ("Respond to the last text in the chat using the correct emojis to convey your feelings.\n\n"
              "+ Hey, how did your exams go?\n- They were alright. I'm just glad they're over.\n"
              "+ Yeah, I know how you feel. I'm just glad I don't have to worry about them anymore.")

#: honest answers the screen penalized: (answer, question, model)
HONEST = [
    # a message written in emoji, asked for (AlpacaEval; the screen read no letter or digit)
    ("\U0001f64c\U0001f389\U0001f605", EMOJI_CHAT, "gpt4_0613"),
    ("\U0001f60a\U0001f3a7", EMOJI_CHAT, "openchat-v3.1-13b"),
    ("\U0001f63a\U0001f431\U0001f43e\U0001f495", EMOJI_TEXT, "Infinity-Instruct-3M-0625-Llama3-70B"),
    ("\U0001f431\U0001f63b\U0001f9f8\U0001f43e", EMOJI_TEXT, "tulu-2-dpo-13b"),
    ("\U0001f44d \U0001f917 \U0001f60c\u200d\U0001f32b\ufe0f \U0001f4da", EMOJI_CHAT, "AlpacaEval"),
    ("\U0001f431\U0001f431\U0001f431\n\U0001f431\U0001f3be\n\U0001f431\U0001f63b\U0001f431", EMOJI_TEXT, "AlpacaEval"),
]


@pytest.mark.parametrize("answer,question,model", HONEST, ids=[f"{i}-{h[2]}" for i, h in enumerate(HONEST)])
def test_an_honest_real_answer_is_not_content_free(answer, question, model):
    assert content_free_reason(answer, question=question) is None
    # the screen of many texts in one pass (structured fields, a group's samples) reads it the same
    assert _content_free_flags([answer, "Paris"], (), question) == [False, False]
    assert content_free_reason('{"reply": "%s"}' % answer) is None   # a JSON document of it, as a plain answer


#: real answers that carry nothing, rightly penalized: (answer, question, source)
NOTHING = [
    ("", "Write a python function to find the nth occurrence of a specific character in a string.", "arena-hard"),
    ("\u200b", "Provide a Java solution to the following problem.", "AlpacaEval"),
    ("?", "how does memory affect performance of aws lambda written in nodejs", "arena-hard"),
    ("\u3002", "\u5229\u7528\u8fde\u7eed\u51fd\u6570\u7684 epsilon-delta \u5b9a\u4e49", "arena-hard"),   # "。"
    ("Sure!", "Could you write a captivating short story beginning with the sentence: The old abandoned house "
              "at the end of the street held a secret that no one had ever discovered.", "LLMBar"),
    ("Sure! Here", "can you please create a python script that outputs a derivative", "AlpacaEval"),
    ("\u041e\u0442\u0432\u0435\u0442:", "\u0431\u0443\u0445\u0433\u0430\u043b\u0442\u0435\u0440 "
                                         "\u043f\u0438\u0442\u043e\u043c\u043d\u0438\u043a\u0430", "arena-hard"),
    (" How to create media entity in Drupal?", "How to create media entity in Drupal?", "arena-hard"),
    ("\u5143\u306e\u8cea\u554f\u306b\u306f\u3001\u767d\u3044\u5bb6\u306e\u4f4d\u7f6e\u3092\u78ba\u5b9a\u7684\u306b"
     "\u6c7a\u5b9a\u3059\u308b\u305f\u3081\u306e\u624b\u304c\u304b\u308a\u304c\u542b\u307e\u308c\u3066\u3044\u307e"
     "\u3059\u304b\uff1f",
     "\u5143\u306e\u8cea\u554f\u306b\u306f\u3001\u767d\u3044\u5bb6\u306e\u4f4d\u7f6e\u3092\u78ba\u5b9a\u7684\u306b"
     "\u6c7a\u5b9a\u3059\u308b\u305f\u3081\u306e\u624b\u304c\u304b\u308a\u304c\u542b\u307e\u308c\u3066\u3044\u307e"
     "\u3059\u304b\uff1f", "ja-mt-bench"),   # the question repeated, word for word
    ("```\n```", "Write a code block in Markdown containing an example of a code block in Markdown.", "AlpacaEval"),
    # one emoji, however often: the shape of a one-token key (a judge may read a thumb as a verdict)
    ("\U0001f642", "Hello. I have the next python class for playable and npc characters", "arena-hard"),
    ("\U0001f44d\U0001f44d", EMOJI_CHAT, "AlpacaEval"),
]


@pytest.mark.parametrize("answer,question,source", NOTHING, ids=[f"{i}-{n[2]}" for i, n in enumerate(NOTHING)])
def test_a_real_non_answer_stays_penalized(answer, question, source):
    assert content_free_reason(answer, question=question) is not None
    assert _content_free_flags([answer, "Paris"], (), question) == [True, False]


@pytest.mark.parametrize("text", ["\u2705\U0001f44d", "\u2192 \u2713 \u2b50", "\U0001f1eb\U0001f1f7",
                                  "Thought process: \U0001f431\U0001f63a", "\U0001f431\U0001f63a Step by step:",
                                  "\U0001f44d\U0001f3fb\U0001f3ff"])
def test_emoji_beside_a_key_or_a_lone_pictograph_stays_content_free(text):
    # check marks, arrows and stars are no pictographs, nor are skin tones; a master key beside emoji is an opener
    assert content_free_reason(text) is not None
    assert _content_free_flags([text, "Paris"], ()) == [True, False]
