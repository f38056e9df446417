"""Input paths, second audit: every reader of a role reads it through one alias table, a key an
adapter sets never silently replaces one the data holds, and the trainers' own shapes reach the judge."""

import json

import pytest

from rewardjudge import ConfigError
from rewardjudge.thread import ROLE_ALIASES, StringThread, message_turns, role_of

GEMINI = [{"role": "user", "content": "2+2?"}, {"role": "model", "content": "4"}]


def test_gemini_model_role_is_the_assistant_in_messages():
    assert message_turns(GEMINI) == [("user", "2+2?"), ("assistant", "4")]
    assert StringThread.from_messages(GEMINI).completion() == "4"


def test_gemini_model_role_is_the_assistant_in_spans():
    from rewardjudge.spans._otlp import Span, span_thread
    parts = [{"role": r["role"], "parts": [{"type": "text", "content": r["content"]}]} for r in GEMINI]
    span = Span(name="chat", trace_id="t", span_id="s",
                attributes={"gen_ai.input.messages": json.dumps(parts + [{"role": "user", "parts": [
                    {"type": "text", "content": "sure?"}]}])})
    assert span_thread(span).turns == [("user", "2+2?"), ("assistant", "4"), ("user", "sure?")]


def test_gemini_model_role_in_scorer_transcripts_and_chat_markup():
    from rewardjudge.scorers._builtins import format_messages
    from rewardjudge.serve._samples import split_chat_markup
    assert format_messages(GEMINI, "user") == [("user", "2+2?"), ("assistant", "4")]
    chatml = "<|im_start|>user\nQ<|im_end|>\n<|im_start|>model\nA<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n"
    assert split_chat_markup(chatml) == [("user", "Q"), ("assistant", "A"), ("user", "more")]


@pytest.mark.parametrize("alias", sorted(ROLE_ALIASES))
def test_every_reader_takes_every_alias(alias):
    from rewardjudge.scorers._builtins import format_messages
    from rewardjudge.serve._samples import split_chat_markup
    role = ROLE_ALIASES[alias]
    assert message_turns([{"role": alias, "content": "x"}]) == [(role, "x")]
    assert format_messages([{"role": alias, "content": "x"}], "user") == [(role, "x")]
    assert split_chat_markup(f"<|im_start|>{alias}\nx<|im_end|>\n") == [(role, "x")]


def test_an_unknown_role_is_still_refused():
    assert role_of("critic") is None
    with pytest.raises(ConfigError, match="critic"):
        message_turns([{"role": "critic", "content": "x"}])

