"""Content parts in StringThread: text joined, images refused naming the turn or kept on request;
judge_health counts forgeries."""

from __future__ import annotations

import pytest

from rewardjudge import ConfigError, Grade, StringThread
from rewardjudge.rl import judge_health

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


@pytest.mark.parametrize("content, text", [
    ([{"type": "text", "text": "What is"}, {"type": "text", "text": "2+2?"}], "What is\n2+2?"),  # joined
    ([{"type": "input_text", "text": "hi"}], "hi"),          # the Responses API's text part
    ({"type": "text", "text": "one part"}, "one part"),      # a lone part
    (["plain", {"type": "text", "text": "x"}], "plain\nx"),  # bare strings in the list
])
def test_text_parts_are_joined(content, text):
    assert StringThread([("user", content), ("assistant", "4")]).turns[0] == ("user", text)


def test_an_image_part_is_refused_naming_the_turn_unless_images_are_kept():
    with pytest.raises(ConfigError, match=r"turn 1 \(user\) content part 1 is an image"):
        StringThread([("system", "s"), ("user", [{"type": "text", "text": "what?"}, IMAGE])])
    thread = StringThread.from_messages([{"role": "user", "content": [IMAGE, {"type": "text", "text": "what?"}]},
                                         {"role": "assistant", "content": "a cat"}], images=True)
    assert thread.turns == [("user", "what?"), ("assistant", "a cat")]
    assert thread.images == [(0, IMAGE)]
    assert thread.with_metadata(x=1).images == [(0, IMAGE)]  # kept by the with_* helpers


@pytest.mark.parametrize("content, message", [
    ([{"type": "audio", "data": "..."}], "type 'audio'"),  # an unknown part type
    ([{"type": "text"}], "without a str 'text'"),          # a text part without text
    (42, "content must be a str or a list"),               # not content at all
])
def test_bad_content_is_a_config_error(content, message):
    with pytest.raises(ConfigError, match=message):
        StringThread([("user", content)])


def test_judge_health_counts_forgeries():
    grades = [Grade(0.0, "g", extra={"forgery": True}), Grade(1.0, "g"), Grade(None, "g", error="x")]
    h = judge_health(grades)
    assert h["judge/forgeries"] == 1.0 and h["judge/forgery_rate"] == pytest.approx(1 / 3)


def test_messages_read_the_same_everywhere():
    # StringThread.from_messages and the trainers' prompt/completion lists share one reader:
    # developer is system, a tool call is shown as ``[tool call NAME(ARGS)]``, a content-less tool-call message is kept
    messages = [{"role": "developer", "content": "rules"}, {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [{"name": "f"}]}, {"role": "tool", "content": "42"},
                {"role": "assistant", "content": "it is 42"}]
    expected = [("system", "rules"), ("user", "q"), ("assistant", "[tool call f()]"),
                ("tool", "42"), ("assistant", "it is 42")]
    assert StringThread.from_messages(messages).turns == expected
    from rewardjudge.thread import completion_threads

    assert completion_threads([messages[:2]], [messages[2:]])[0].turns == expected
    with pytest.raises(ConfigError, match=r"messages\[0\] has role 'narrator'"):
        StringThread.from_messages([{"role": "narrator", "content": "x"}])
