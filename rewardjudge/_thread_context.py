"""The one template vocabulary for a thread, shared by every grader and by scorer bindings (the
table in docs/pipeline.md), its text neutralised before any judge sees it."""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Collection, Iterable

from .readouts._text import neutralize_all, neutralize_value
from .thread import ROLES, StringThread, format_turns

__all__ = ["THREAD_VARIABLES", "TURN_HEADERS", "neutralized_thread", "thread_context"]

THREAD_VARIABLES: tuple[str, ...] = (
    "turns", "thread", "context_turns", "context_str", "context_turns_without_last_user",
    "context_str_without_last_user", "last_user_turn_content", "completion", "last_content",
    "metadata", "output_schema", "conversation", "last_user_message", "response")
#: the line heading each turn where turns are shown as text (``format_turns``: ``thread``,
#: ``conversation``...), as delimiter labels (``readouts._text.template_tag_names``): structure a
#: judge reads the prompt by, so a turn's text imitating one (``[user]``) is defanged (``(user]``)
TURN_HEADERS: tuple[str, ...] = tuple(f"[{role}]" for role in ROLES)


def neutralized_thread(thread: StringThread, tags: Iterable[str] = (),
                       control_tokens: Iterable[str] = ()) -> StringThread:
    """A copy of ``thread`` whose turns and metadata are neutralised (images kept)."""
    tags, ctl = tuple(tags), tuple(control_tokens)
    turns = thread.turns
    texts = neutralize_all([c for _, c in turns], tags + TURN_HEADERS, ctl)
    return thread._derived([(r, t) for (r, _), t in zip(turns, texts)],
                           neutralize_value(thread.metadata, tags, ctl),
                           checked=type(thread) is StringThread)


def thread_context(thread: StringThread, *, tags: Iterable[str] = (),
                   control_tokens: Iterable[str] = (), output_schema: str = "",
                   names: "Collection[str] | None" = None) -> dict[str, Any]:
    """The vocabulary above for ``thread``, its text neutralised; ``names``:
    only these keys (and ``completion``), None for all."""
    values = _Values(thread, tuple(tags), tuple(control_tokens), output_schema)
    keys = THREAD_VARIABLES if names is None else _selected(frozenset(names))
    return {k: _VALUES[k](values) for k in keys}


@functools.lru_cache(maxsize=64)
def _selected(names: frozenset[str]) -> tuple[str, ...]:
    """The keys ``thread_context`` builds for ``names`` (a grader's template reads, the same for
    every sample; never policy text), in the vocabulary's order."""
    return tuple(k for k in THREAD_VARIABLES if k in names or k == "completion")


class _Values:
    """The pieces of one thread's vocabulary; the texts are joined when first read."""

    def __init__(self, thread: StringThread, tags: tuple, ctl: tuple, output_schema: str):
        turns = thread.turns
        contents = [c for _, c in turns]
        texts = neutralize_all(contents, tags + TURN_HEADERS, ctl)
        # clean texts come back as the same objects: the turns need no rebuilding
        self.all = turns if all(map(operator.is_, texts, contents)) else [
            (r, t) for (r, _), t in zip(turns, texts)]
        turns = self.all
        self.has_completion = has_completion = bool(turns) and turns[-1][0] == "assistant"
        self.context = context = turns[:-1] if has_completion else turns
        self.completion = turns[-1][1] if has_completion else ""
        last_user = len(context) - 1
        while last_user >= 0 and context[last_user][0] != "user":
            last_user -= 1
        self.no_user = last_user < 0
        self.without_last_user = (list(context) if last_user < 0
                                  else context[:last_user] + context[last_user + 1:])
        self.last_user_text = "" if last_user < 0 else context[last_user][1]
        self.thread, self.tags, self.ctl, self.output_schema = thread, tags, ctl, output_schema

    @functools.cached_property
    def context_str(self) -> str:
        return format_turns(self.context)

    def thread_str(self) -> str:
        if not self.has_completion:
            return self.context_str
        block = f"[assistant]\n{self.completion}"   # format_turns(all turns), from the text already joined
        return f"{self.context_str}\n\n{block}" if self.context else block


def _dicts(turns: list) -> list[dict[str, str]]:
    return [{"role": r, "content": c} for r, c in turns]


_VALUES: dict[str, Callable[[_Values], Any]] = {
    "turns": lambda v: _dicts(v.all),
    "thread": _Values.thread_str,
    "context_turns": lambda v: _dicts(v.context),
    "context_str": lambda v: v.context_str,
    "context_turns_without_last_user": lambda v: _dicts(v.without_last_user),
    "context_str_without_last_user": lambda v: v.context_str if v.no_user else format_turns(v.without_last_user),
    "last_user_turn_content": lambda v: v.last_user_text,
    "completion": lambda v: v.completion,
    "last_content": lambda v: v.all[-1][1] if v.all else "",
    "metadata": lambda v: neutralize_value(v.thread.metadata, v.tags, v.ctl),   # a new mapping
    "output_schema": lambda v: v.output_schema,
    "conversation": lambda v: v.context_str,
    "last_user_message": lambda v: v.last_user_text,
    "response": lambda v: v.completion,
}
