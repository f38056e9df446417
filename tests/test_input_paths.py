"""Input paths keep what a user or a policy said: nothing in a message reaches the judge as an empty turn."""

from rewardjudge.thread import StringThread, message_turns


def test_legacy_function_call_reaches_the_judge():
    # OpenAI's pre-tools format: content None, the call in ``function_call``
    turns = message_turns([{"role": "assistant", "content": None,
                            "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}])
    assert turns == [("assistant", '[tool call get_weather({"city": "Oslo"})]')]


def test_function_call_without_content_key_is_a_message():
    thread = StringThread.from_messages([{"role": "user", "content": "weather?"},
                                         {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}])
    assert thread.completion() == "[tool call f({})]"


def test_assistant_refusal_field_is_kept():
    # the OpenAI chat completions message carries a refusal beside a None content
    turns = message_turns([{"role": "assistant", "content": None, "refusal": "I can't help with that."}])
    assert turns == [("assistant", "[refusal] I can't help with that.")]


def test_plain_message_unchanged():
    assert message_turns([{"role": "assistant", "content": "4", "refusal": None}]) == [("assistant", "4")]
