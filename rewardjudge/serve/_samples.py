"""Requests into threads and group keys (a malformed body is a ConfigError: a 400)."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from ..graders._schedule import prompt_key
from ..readouts._forms import END_TOKENS
from ..thread import StringThread, completion_threads, own_text, role_of

__all__ = ["DEFAULT_EOS", "grade_body", "group_key", "openrlhf_body", "openrlhf_thread", "sample_thread",
           "split_chat_markup"]

#: end markers stripped from the end of a decoded response: the readouts' ``END_TOKENS``, longest first
#: (``_strip_eos`` takes the first that matches: a marker that ends another is tried after it)
DEFAULT_EOS = tuple(sorted(END_TOKENS, key=len, reverse=True))

_CHATML = re.compile(r"<\|im_start\|>(\w+)\n(.*?)(?:<\|im_end\|>|$)", re.S)
_LLAMA3 = re.compile(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)(?:<\|eot_id\|>|$)", re.S)
#: beginning-of-sequence markers a rendered prompt may open with: no text of its own
_BOS = ("<|begin_of_text|>", "<s>", "<bos>", "<|endoftext|>")


def split_chat_markup(text: str) -> list[tuple[str, str]]:
    """A ChatML or Llama 3 rendered prompt back into turns; one with text no turn accounts for stays whole."""
    for pattern in (_CHATML, _LLAMA3):
        found = list(pattern.finditer(text))
        if not found:
            continue
        outside = pattern.sub("", text)
        for marker in _BOS:
            outside = outside.replace(marker, "")
        if outside.strip() or any(role_of(m[1]) is None for m in found):
            break
        turns = [(role_of(m[1]), m[2].strip("\n")) for m in found]
        if turns[-1][0] == "assistant" and not turns[-1][1].strip():
            turns.pop()
        return turns
    return [("user", text)] if text else []


def _strip_eos(text: str, eos: Sequence[str]) -> str:
    """``text`` without the end markers and whitespace it ends with (each step the first of ``eos``
    it ends with), stripped: one anchored match over the reversed text, linear in it."""
    m = _trailing_eos(tuple(eos)).match(text[::-1])
    return text[:len(text) - m.end()].strip()


@functools.lru_cache(maxsize=16)
def _trailing_eos(eos: "tuple[str, ...]") -> "re.Pattern[str]":
    """Whitespace, then the ``eos`` markers reversed in their order, as one regex matched from the
    reversed text's start (nothing after its loop: no start is tried twice, no step taken back). The
    markers are a group of their own, so that the regex parser takes out the start they share (every
    end token's ``>``): a marker that does not match fails at its first character after it."""
    markers = "|".join(re.escape(m[::-1]) for m in eos if m)
    return re.compile(r"(?:\s|(?:" + markers + "))*" if markers else r"\s*")


def openrlhf_thread(query: str, prompt: str | None, label: Any, *, eos: Sequence[str] = DEFAULT_EOS,
                    where: str = "sample") -> StringThread:
    """One OpenRLHF sample as a thread: the response is ``query`` after ``prompt``, without a trailing EOS;
    a label is ``metadata["label"]`` and ``["reference"]`` (a mapping is merged; None or "" sets neither)."""
    if not isinstance(query, str):
        raise ConfigError(f"{where}: query must be a str, got {type(query).__name__}")
    if prompt is not None and not isinstance(prompt, str):
        raise ConfigError(f"{where}: prompt must be a str, got {type(prompt).__name__}")
    prompt = prompt or ""
    # no prompt, or one that does not round-trip through the tokenizer: grade the whole text
    response = query[query.index(prompt) + len(prompt):] if prompt and prompt in query else query
    # OpenRLHF sends "" where no --label_key is set: no label, not an empty reference to grade against
    metadata: dict[str, Any] = {} if label is None or label == "" else {"label": label, "reference": label}
    if isinstance(label, Mapping):  # its own keys win: label and reference are defaults
        metadata.update(label)
    return StringThread([*split_chat_markup(prompt), ("assistant", own_text(_strip_eos(response, eos)))], metadata)


def sample_thread(sample: Any, where: str, *, images: bool = False) -> StringThread:
    """A ``/grade`` sample: ``{"messages": [...]}`` or ``{"prompt", "completion"}``, optional ``metadata``."""
    if not isinstance(sample, Mapping):
        raise ConfigError(f"{where} must be an object, got {type(sample).__name__}")
    metadata = sample.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise ConfigError(f"{where}: metadata must be an object")
    if "messages" in sample:
        messages = sample["messages"]
        if not isinstance(messages, list) or not messages:
            raise ConfigError(f"{where}: messages must be a non-empty list of {{'role', 'content'}} objects")
        try:
            return StringThread.from_messages(messages, metadata, images=images)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if "completion" not in sample:
        raise ConfigError(f"{where} needs 'messages', or 'completion' (and usually 'prompt')")
    prompt = sample.get("prompt")
    try:
        [thread] = completion_threads([[] if prompt is None else prompt], [sample["completion"]], [metadata],
                                      images=images)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {str(exc).removeprefix('row 0: ')}") from None
    return thread


def group_key(value: Any) -> str:
    """A group key as text: a str as it is, anything else as canonical JSON (what ``--workers`` routes by)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def grade_body(data: Any, *, images: bool) -> tuple[list[StringThread], list[str]]:
    """A ``/grade`` body's threads and group keys (a sample's ``group``, else its ``prompt_key``)."""
    samples = data.get("samples") if isinstance(data, dict) else None
    if not isinstance(samples, list) or not samples:
        raise ConfigError('expected {"samples": [{"messages": [...]} or {"prompt": ..., "completion": ...}, ...]}')
    threads = [sample_thread(s, f"samples[{i}]", images=images) for i, s in enumerate(samples)]
    return threads, [group_key(s["group"]) if "group" in s else prompt_key(t) for s, t in zip(samples, threads)]


def openrlhf_body(data: Any) -> tuple[list, list, list, list[str]]:
    """``(queries, prompts, labels, group keys)`` of a ``/get_reward`` body; the group is the prompt, else the query."""
    if not isinstance(data, dict) or not isinstance(data.get("query"), list):
        raise ConfigError('expected {"query": [str], "prompts": [str], "labels": [...]}')
    queries = data["query"]
    n = len(queries)
    prompts, labels = ([None] * n if data.get(k) is None else data[k] for k in ("prompts", "labels"))
    for name, values, what in (("prompts", prompts, "str"), ("labels", labels, "values")):
        if not isinstance(values, list) or len(values) != n:
            raise ConfigError(f"{name} must be a list of {n} {what} (one per query)")
    return queries, prompts, labels, [group_key(q if p is None else p) for p, q in zip(prompts, queries)]
