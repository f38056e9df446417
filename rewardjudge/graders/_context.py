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

from typing import Any, Collection, Iterable

from ..readouts._text import neutralize_all, neutralize_value
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
    turns = thread.turns
    texts = neutralize_all([c for _, c in turns], tags, ctl)
    return thread._derived([(r, t) for (r, _), t in zip(turns, texts)],
                           neutralize_value(thread.metadata, tags, ctl),
                           checked=type(thread) is StringThread)


def thread_context(thread: StringThread, *, tags: Iterable[str] = (),
                   control_tokens: Iterable[str] = (), output_schema: str = "",
                   names: "Collection[str] | None" = None) -> dict[str, Any]:
    """The vocabulary above for ``thread``, its text neutralised; ``names``:
    only these keys (and ``completion`` and ``metadata``), None for all."""
    tags, ctl = tuple(tags), tuple(control_tokens)
    turns = thread.turns
    texts = neutralize_all([c for _, c in turns], tags, ctl)
    all_turns = [(r, t) for (r, _), t in zip(turns, texts)]
    has_completion = bool(all_turns) and all_turns[-1][0] == "assistant"
    context = all_turns[:-1] if has_completion else all_turns
    last_user = None
    for i in range(len(context) - 1, -1, -1):
        if context[i][0] == "user":
            last_user = i
            break
    if last_user is None:
        without_last_user = list(context)
        last_user_text = ""
    else:
        without_last_user = context[:last_user] + context[last_user + 1:]
        last_user_text = context[last_user][1]
    completion = all_turns[-1][1] if has_completion else ""
    if names is not None:
        return _named(names, all_turns, context, without_last_user, last_user is None,
                      last_user_text, completion, thread, tags, ctl, output_schema)
    context_str = format_turns(context)
    if has_completion:   # format_turns(all_turns), from the text already joined
        block = f"[assistant]\n{completion}"
        thread_str = f"{context_str}\n\n{block}" if context else block
    else:
        thread_str = context_str
    return {
        "turns": [{"role": r, "content": c} for r, c in all_turns],
        "thread": thread_str,
        "context_turns": [{"role": r, "content": c} for r, c in context],
        "context_str": context_str,
        "context_turns_without_last_user": [{"role": r, "content": c} for r, c in without_last_user],
        "context_str_without_last_user": (context_str if last_user is None
                                          else format_turns(without_last_user)),
        "last_user_turn_content": last_user_text,
        "completion": completion,
        "last_content": all_turns[-1][1] if all_turns else "",
        "metadata": neutralize_value(thread.metadata, tags, ctl),   # a new mapping
        "output_schema": output_schema,
        "conversation": context_str,
        "last_user_message": last_user_text,
        "response": completion,
    }


def _named(names: "Collection[str]", all_turns: list, context: list, without_last_user: list,
           no_user: bool, last_user_text: str, completion: str, thread: StringThread,
           tags: tuple, ctl: tuple, output_schema: str) -> dict[str, Any]:
    """``thread_context``'s values of ``names`` only (with ``completion`` and ``metadata``)."""
    out: dict[str, Any] = {"completion": completion,
                           "metadata": neutralize_value(thread.metadata, tags, ctl)}
    context_str = None
    for name in names:
        if name in out or name not in _NAMES:
            continue
        if name in ("context_str", "conversation", "thread") or (
                name == "context_str_without_last_user" and no_user):
            if context_str is None:
                context_str = format_turns(context)
            if name == "thread":
                if all_turns and all_turns[-1][0] == "assistant":
                    block = f"[assistant]\n{completion}"
                    value: Any = f"{context_str}\n\n{block}" if context else block
                else:
                    value = context_str
            else:
                value = context_str
        elif name == "context_str_without_last_user":
            value = format_turns(without_last_user)
        elif name == "turns":
            value = [{"role": r, "content": c} for r, c in all_turns]
        elif name == "context_turns":
            value = [{"role": r, "content": c} for r, c in context]
        elif name == "context_turns_without_last_user":
            value = [{"role": r, "content": c} for r, c in without_last_user]
        elif name in ("last_user_turn_content", "last_user_message"):
            value = last_user_text
        elif name == "response":
            value = completion
        elif name == "last_content":
            value = all_turns[-1][1] if all_turns else ""
        else:   # output_schema
            value = output_schema
        out[name] = value
    return out


_NAMES = frozenset(THREAD_VARIABLES)
