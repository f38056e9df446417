"""The one template vocabulary for a thread, shared by every grader.

Every grader's templates see these names for the sample's thread (the
cookbook's names are the reference):

===================================  ==============================================
``turns``                            every turn, ``[{role, content}]``, completion included
``thread``                           every turn as text (``[role]`` headed blocks)
``context_turns`` / ``context_str``  the turns before the completion (list / text)
``context_turns_without_last_user``  the same without the last user turn
``context_str_without_last_user``    (list / text)
``last_user_turn_content``           the last user turn's content
``completion``                       the final assistant turn ("" if none)
``last_content``                     the last turn's content, whoever wrote it
``metadata``                         the sample's metadata
``output_schema``                    the output model's JSON shape ("" without one)
===================================  ==============================================

Documented aliases: ``conversation`` = ``context_str``,
``last_user_message`` = ``last_user_turn_content``, ``response`` =
``completion``. Text from the thread is neutralised (protocol and template
tags, chat-template control tokens) before any judge sees it.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..readouts._text import neutralize, neutralize_value
from ..thread import StringThread, format_turns

__all__ = ["THREAD_VARIABLES", "neutralized_thread", "thread_context"]

THREAD_VARIABLES: tuple[str, ...] = (
    "turns", "thread", "context_turns", "context_str", "context_turns_without_last_user",
    "context_str_without_last_user", "last_user_turn_content", "completion", "last_content",
    "metadata", "output_schema", "conversation", "last_user_message", "response")


def neutralized_thread(thread: StringThread, tags: Iterable[str] = (),
                       control_tokens: Iterable[str] = ()) -> StringThread:
    """A copy of ``thread`` whose turns and metadata are neutralised (images kept)."""
    tags, ctl = tuple(tags), tuple(control_tokens)
    turns = [(r, neutralize(c, tags, ctl)) for r, c in thread.turns]
    return thread._derived(turns, neutralize_value(dict(thread.metadata), tags, ctl))


def thread_context(thread: StringThread, *, tags: Iterable[str] = (),
                   control_tokens: Iterable[str] = (), output_schema: str = "") -> dict[str, Any]:
    """The vocabulary above for ``thread``, its text neutralised."""
    tags, ctl = tuple(tags), tuple(control_tokens)

    def clean(text: str) -> str:
        return neutralize(text, tags, ctl)

    all_turns = [(r, clean(c)) for r, c in thread.turns]
    has_completion = bool(all_turns) and all_turns[-1][0] == "assistant"
    context = all_turns[:-1] if has_completion else list(all_turns)
    last_user = max((i for i, (r, _) in enumerate(context) if r == "user"), default=None)
    without_last_user = [t for i, t in enumerate(context) if i != last_user]
    last_user_text = context[last_user][1] if last_user is not None else ""
    completion = all_turns[-1][1] if has_completion else ""

    def dicts(turns: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in turns]

    context_turns = dicts(context)
    return {
        "turns": dicts(all_turns),
        "thread": format_turns(all_turns),
        "context_turns": context_turns,
        "context_str": format_turns(context),
        "context_turns_without_last_user": dicts(without_last_user),
        "context_str_without_last_user": format_turns(without_last_user),
        "last_user_turn_content": last_user_text,
        "completion": completion,
        "last_content": all_turns[-1][1] if all_turns else "",
        "metadata": neutralize_value(dict(thread.metadata), tags, ctl),
        "output_schema": output_schema,
        "conversation": format_turns(context),
        "last_user_message": last_user_text,
        "response": completion,
    }
