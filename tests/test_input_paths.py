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


def test_chat_markup_preamble_is_not_dropped():
    from rewardjudge.serve._samples import split_chat_markup
    text = "Answer in French.\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    assert split_chat_markup(text) == [("user", text)]


def test_chat_markup_unknown_role_is_not_renamed():
    from rewardjudge.serve._samples import split_chat_markup
    text = "<|im_start|>critic\nthe draft is wrong<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
    assert split_chat_markup(text) == [("user", text)]


def test_chat_markup_still_splits_rendered_prompts():
    from rewardjudge.serve._samples import split_chat_markup
    chatml = "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    llama = ("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nQ<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert split_chat_markup(chatml) == [("system", "S"), ("user", "Q")]
    assert split_chat_markup(llama) == [("user", "Q")]


def test_system_column_of_content_parts_is_read_as_text():
    from rewardjudge.evaluate._data import Columns, row_to_thread
    row = {"system": [{"type": "text", "text": "Be brief."}], "prompt": "2+2?", "completion": "4"}
    thread = row_to_thread(row, Columns(prompt="prompt", completion="completion", system="system"), index=0)
    assert thread.turns[0] == ("system", "Be brief.")


def test_span_messages_keep_function_call_and_refusal():
    from rewardjudge.scorers._builtins import format_messages
    call = [{"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}]
    refusal = '[{"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]}]'
    assert format_messages(call, "assistant") == [("assistant", "[tool call f({})]")]
    assert format_messages(refusal, "assistant") == [("assistant", "[refusal] No.")]


def test_span_developer_message_is_a_system_turn():
    from rewardjudge.spans._otlp import Span, span_thread
    import json
    span = Span(name="chat", trace_id="t", span_id="s", attributes={"gen_ai.input.messages": json.dumps([
        {"role": "developer", "parts": [{"type": "text", "content": "Answer in French."}]},
        {"role": "user", "parts": [{"type": "text", "content": "2+2?"}]}])})
    assert span_thread(span).turns[0] == ("system", "Answer in French.")
