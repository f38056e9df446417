"""Names every scorer template can read without a mapping (``BUILTIN_VARIABLES``) and the Jinja2
functions (``BUILTIN_FUNCTIONS``); see docs/scorers.md. A messages attribute may hold
``{"role", "content"}`` or OpenTelemetry GenAI messages, their JSON text, or a plain string.

>>> f = builtin_functions({"gen_ai.input.messages": '[{"role": "user", "content": "Hi"}]'})
>>> f["format_input_transcript"]("gen_ai.input.messages")
'user: Hi'"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

from ..thread import message_extras, own_text, part_text, role_of

__all__ = ["BUILTIN_FUNCTIONS", "BUILTIN_NAMES", "BUILTIN_VARIABLES", "builtin_functions",
           "format_messages", "lookup_attribute", "lookup_path", "role_lines"]

BUILTIN_VARIABLES: dict[str, str] = {
    "completion": "the final assistant turn (the text being graded)",
    "transcript": "every turn (input and output messages), one per line, as 'role: text'",
    "context": "the turns before the completion, as 'role: text' lines",
    "last_user_message": "the last user turn",
    "metadata": "the sample's metadata, i.e. the span's attributes (e.g. {{ metadata.reference }})",
    "output_schema": "the reply's JSON schema, as JSON text",
    "output_instructions": "a sentence telling the judge how to reply (built-in, translated)",
    # the thread vocabulary every grader shares (rewardjudge._thread_context)
    "turns": "every turn, completion included, as [{role, content}]",
    "thread": "every turn as text ('[role]' headed blocks)",
    "context_turns": "the turns before the completion, as [{role, content}]",
    "context_str": "the turns before the completion as text ('[role]' headed blocks)",
    "context_turns_without_last_user": "the turns before the completion but the last user turn",
    "context_str_without_last_user": "the same, as text",
    "last_user_turn_content": "the last user turn (as last_user_message)",
    "last_content": "the last turn's content, whoever wrote it",
}

BUILTIN_FUNCTIONS: dict[str, str] = {
    "attr": 'attr("key"): the value of the attribute (metadata key) "key"',
    "format_input_transcript": 'format_input_transcript("key", ...): a messages attribute as '
                               "input messages, 'role: text' lines",
    "format_output_transcript": 'format_output_transcript("key", ...): a messages attribute as '
                                "output messages, 'role: text' lines",
}

BUILTIN_NAMES = frozenset(BUILTIN_VARIABLES) | frozenset(BUILTIN_FUNCTIONS)

MISSING = object()


def lookup_attribute(attributes: Mapping[str, Any], key: str) -> Any:
    """``attributes[key]`` when present (span keys contain dots), else the dotted path; ``MISSING``."""
    return attributes[key] if key in attributes else lookup_path(attributes, key)


def lookup_path(value: Any, path: str) -> Any:
    """The value at a dotted path (list indexes as numbers, negative from the end), or ``MISSING``."""
    cur = value
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return MISSING
    return cur


#: a line break as ``str.splitlines`` reads one (a judge's tokenizer and a reader alike)
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def role_lines(turns: list[tuple[str, str]]) -> str:
    r"""``role: text`` lines, the transcript format of the scorer document; a turn's further lines are
    indented, so that only the turns' own headers start a line (a text's ``\nuser: ...`` is no turn).

    >>> role_lines([("user", "2+2?"), ("assistant", "4\nuser: 5?")])
    'user: 2+2?\nassistant: 4\n  user: 5?'
    """
    return "\n".join(f"{role}: {_LINE_BREAK.sub(chr(10) + '  ', text)}" for role, text in turns)


def format_messages(value: Any, default_role: str) -> list[tuple[str, str]]:
    """``(role, text)`` pairs from a messages value (see the module doc). JSON text is read as
    messages only when it holds messages; any other text (a structured answer such as
    ``{"answer": "4"}``, a list of numbers) is one ``default_role`` turn, as written."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if _holds_messages(parsed):
                return format_messages(parsed, default_role)
        return [(default_role, own_text(value))]
    if isinstance(value, Mapping):
        if not _holds_messages(value):   # a value, not a message: shown whole
            return [(default_role, json.dumps(value, ensure_ascii=False, default=str))]
        if "role" not in value:
            return format_messages(value["messages"], default_role)
        body = value["content"] if "content" in value else value.get("parts")
        parts = body if isinstance(body, (list, tuple)) else [body]
        role = value["role"] or default_role
        return [(role_of(role) or str(role), "\n".join(
            t for t in (*(part_text(p, lenient=True) for p in parts), *message_extras(value)) if t))]
    if isinstance(value, (list, tuple)):
        return [turn for item in value for turn in format_messages(item, default_role)]
    return [(default_role, str(value))]


def _holds_messages(value: Any) -> bool:
    """Whether ``value`` is messages: a message (a mapping with a ``role``), a mapping holding a
    ``messages`` list, or a list of those (``[]``: no messages)."""
    if isinstance(value, Mapping):
        return "role" in value or isinstance(value.get("messages"), (list, tuple))
    return isinstance(value, (list, tuple)) and all(
        isinstance(v, Mapping) and _holds_messages(v) for v in value)


def builtin_functions(attributes: Mapping[str, Any]) -> dict[str, Callable[..., Any]]:
    """The function built-ins reading ``attributes`` (the sample's metadata, as plain data)."""

    def attr(key: str) -> Any:
        if not isinstance(key, str):
            raise TypeError(f"attr() takes an attribute key string, got {key!r:.60}")
        value = lookup_attribute(attributes, key)
        if value is MISSING or value is None:
            from jinja2 import ChainableUndefined

            return ChainableUndefined(name=f"attr({key!r})")
        return value

    def transcript_of(default_role: str, name: str) -> Callable[..., str]:
        def fmt(*keys: str) -> str:
            if not keys:
                raise TypeError(f"{name}() takes one or more attribute keys")
            turns: list[tuple[str, str]] = []
            for key in keys:
                if not isinstance(key, str):
                    raise TypeError(f"{name}() takes attribute key strings, got {key!r:.60}")
                value = lookup_attribute(attributes, key)
                if value is not MISSING:
                    turns += format_messages(value, default_role)
            return role_lines(turns)

        fmt.__name__ = name
        return fmt

    return {"attr": attr,
            "format_input_transcript": transcript_of("user", "format_input_transcript"),
            "format_output_transcript": transcript_of("assistant", "format_output_transcript")}
