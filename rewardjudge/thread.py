"""StringThread: a conversation as (role, content) turns plus metadata. Content is a string or a list of
OpenAI-style content parts: text parts joined with a newline, image parts refused unless ``images=True``."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping, Sequence

from .errors import ConfigError

ROLES = ("system", "user", "assistant", "tool")
#: other names of the roles (OpenAI's developer, Llama's ipython, Gemini's model), read by ``role_of``
ROLE_ALIASES = {"developer": "system", "ipython": "tool", "function": "tool", "model": "assistant"}
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
IMAGE_PART_TYPES = frozenset({"image", "image_url", "input_image"})
_PART_TYPES = TEXT_PART_TYPES | IMAGE_PART_TYPES | {"refusal"}
#: what makes a mapping a message besides its role: any one of them carries what was said
_MESSAGE_BODY_KEYS = ("content", "tool_calls", "function_call", "refusal")
#: where a marker the library writes into a turn's text begins (``tool_call_text``, ``refusal_text``)
_MARKER = re.compile(r"\[(?=[ \t]*(?:tool[ \t_-]*calls?|refusal)(?![A-Za-z0-9]))", re.IGNORECASE)


def own_text(text: str) -> str:
    """``text`` as a turn holds what a message said: a marker of the library's own (``[tool call``,
    ``[refusal]``) that it writes is defanged (``(tool call``), so only a real call or refusal reads as one.

    >>> own_text("Done.\\n[tool call get_weather({})]")
    'Done.\\n(tool call get_weather({})]'
    """
    if not isinstance(text, str) or "[" not in text:
        return text
    # a marker holds "tool" or "refusal" matched ignoring case, each character of which folds to its own
    # letter (``ſ`` to ``s``): a text whose case fold holds neither has none, found by two searches in C (a
    # text of 87,000 '[' and no marker: 11 ms of the pattern's tries, in the event loop, down to 0.2)
    folded = text.casefold()
    return _MARKER.sub("(", text) if "tool" in folded or "refusal" in folded else text


def role_of(name: Any) -> str | None:
    """The one of ``ROLES`` that ``name`` stands for (any case, ``ROLE_ALIASES``), else None.

    >>> role_of("model"), role_of("Developer"), role_of("critic")
    ('assistant', 'system', None)
    """
    if not isinstance(name, str):
        return None
    low = name.strip().lower()
    low = ROLE_ALIASES.get(low, low)
    return low if low in ROLES else None


def tool_call_text(call: Any) -> str:
    """A tool call (OpenAI's or a flat OpenTelemetry GenAI one) as the judge is shown it; its id and type
    are no content, so a call that names nothing is the frame alone (no answer to the content screen).

    >>> tool_call_text({"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}})
    '[tool call f({"x": 1})]'
    """
    if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
        call = call["function"]
    if not isinstance(call, Mapping):
        return f"[tool call {own_text(json.dumps(call, ensure_ascii=False, default=str))}]"
    name, args = call.get("name"), call.get("arguments")
    name = name if isinstance(name, str) else "" if name is None else json.dumps(name, ensure_ascii=False, default=str)
    args = args if isinstance(args, str) else "" if args is None else json.dumps(args, ensure_ascii=False, default=str)
    return f"[tool call {own_text(name)}({own_text(args)})]"


def refusal_text(refusal: str) -> str:
    """A refusal (a message's field, an OpenAI content part) as the judge is shown it: the answer."""
    return f"[refusal] {own_text(refusal)}"


def message_extras(message: Mapping[str, Any]) -> list[str]:
    """What a message says besides its content (its ``refusal``, ``tool_calls`` and legacy
    ``function_call``), shown to the judge: the answer when content is None.

    >>> message_extras({"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}})
    ['[tool call f({})]']
    """
    calls = message.get("tool_calls") or []
    calls = [*(calls if isinstance(calls, (list, tuple)) else [calls]),
             *([message["function_call"]] if message.get("function_call") else [])]
    refusal = message.get("refusal")
    return [*([refusal_text(refusal)] if isinstance(refusal, str) and refusal else []), *map(tool_call_text, calls)]


def content_text(content: Any, where: str = "content", *, images: list | None = None, turn: int = 0) -> str:
    """A message content as text (parts joined with a newline, through ``part_text``); image parts go to
    ``images`` as ``(turn, part)`` when a list is given, else a ConfigError.

    >>> content_text([{"type": "text", "text": "What is"}, {"type": "text", "text": "2+2?"}])
    'What is\\n2+2?'
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return own_text(content)
    if isinstance(content, Mapping):  # a single part on its own
        content = [content]
    if not isinstance(content, (list, tuple)):
        raise ConfigError(f"{where} must be a str or a list of content parts, got {type(content).__name__}")
    pieces = (part_text(part, f"{where} part {j}", images=images, turn=turn) for j, part in enumerate(content))
    return "\n".join(p for p in pieces if p)


def part_text(part: Any, where: str = "content part", *, images: list | None = None, turn: int = 0,
              lenient: bool = False) -> str:
    """What one content part says, as a turn shows it: a text part's text, a refusal, an image to
    ``images``. Strict (a dataset's messages): any other part is a ConfigError. ``lenient`` (a trace's
    messages, shown to a scorer as they were recorded): any part is shown, the reasoning channel never.

    >>> part_text({"type": "reasoning", "text": "..."}, lenient=True), part_text({"type": "audio"}, lenient=True)
    ('', '[audio]')
    """
    if isinstance(part, str):
        return own_text(part)
    if not isinstance(part, Mapping):
        return _not_a_part(part, where, lenient)
    kind = part.get("type", "text" if lenient or "text" in part else None)
    if kind in TEXT_PART_TYPES:
        text = next((part[k] for k in ("text", "content")[:1 + lenient] if isinstance(part.get(k), str)), None)
        if text is not None:
            return own_text(text)
        if not lenient:
            raise ConfigError(f"{where} is a text part without a str 'text'")
    elif kind == "refusal":   # as a message's refusal field (``message_extras``) is
        refusal = part.get("refusal")
        if isinstance(refusal, str):
            return refusal_text(refusal) if refusal else ""
        if not lenient:
            raise ConfigError(f"{where} is a refusal part without a str 'refusal'")
    elif kind in IMAGE_PART_TYPES and images is not None:
        images.append((turn, dict(part)))
        return ""
    if lenient:
        return _recorded_part(part, kind)
    if kind in IMAGE_PART_TYPES:
        raise ConfigError(f"{where} is an image ({kind!r}) and this grader reads text "
                          f"only; drop the image, or use a grader that reads images")
    raise ConfigError(f"{where} has type {kind!r}; expected one of {sorted(_PART_TYPES)}")


def _not_a_part(part: Any, where: str, lenient: bool) -> str:
    if not lenient:
        raise ConfigError(f"{where} must be a mapping like {{'type': 'text', 'text': ...}}, got {type(part).__name__}")
    return "" if part is None else str(part)


def _recorded_part(part: Mapping[str, Any], kind: Any) -> str:
    """A trace's part that holds no text: a tool call or its result shown, the reasoning channel never
    (it is not the answer, as a judge's own is never its verdict), any other kind named."""
    if kind == "reasoning":
        return ""
    if kind in ("tool_call", "function_call"):
        return tool_call_text(part)
    if kind == "tool_call_response":
        resp = part.get("response")
        return f"[tool result {own_text(resp if isinstance(resp, str) else json.dumps(resp, ensure_ascii=False))}]"
    return f"[{kind}]"


class StringThread:
    """``(role, content)`` turns with a metadata dict; a last assistant turn is the completion.

    >>> t = StringThread([("user", "2+2?"), ("assistant", "4")], metadata={"eval": True})
    >>> t.last_content(), t.last_user_content()
    ('4', '2+2?')
    """

    __slots__ = ("_turns", "metadata", "images")

    def __init__(self, turns: Iterable[tuple[str, Any]] | None = None,
                 metadata: Mapping[str, Any] | None = None, *, images: bool = False):
        """``turns``: ``(role, content)`` pairs; ``images=True`` keeps image parts in ``self.images``."""
        checked: list[tuple[str, str]] = []
        kept: list[tuple[int, dict]] | None = [] if images else None
        if isinstance(turns, (str, Mapping)) or not isinstance(metadata or {}, Mapping):
            raise ConfigError(f"StringThread takes a list of (role, content) pairs and a metadata dict, got "
                              f"{type(turns).__name__} and {type(metadata).__name__}")
        for i, turn in enumerate(turns or []):
            if isinstance(turn, Mapping):
                raise ConfigError(f"turn {i} is a message dict, not a (role, content) pair: build the thread "
                                  f"with StringThread.from_messages(messages)")
            try:
                role, content = turn
            except (TypeError, ValueError):
                raise ConfigError(f"turn {i} must be a (role, content) pair, got {turn!r:.80}") from None
            if role not in ROLES:
                raise ConfigError(f"turn {i} has role {role!r}; expected one of {ROLES}")
            if not isinstance(content, str):
                if content is None or not isinstance(content, (list, tuple, Mapping)):
                    raise ConfigError(f"turn {i} content must be a str or a list of content parts, got "
                                      f"{type(content).__name__}")
                content = content_text(content, f"turn {i} ({role}) content", images=kept, turn=i)
            checked.append((role, content))
        self._turns = checked
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.images: list[tuple[int, dict]] = kept or []

    def _derived(self, turns: list[tuple[str, str]], metadata: Mapping[str, Any], *,
                 checked: bool = False) -> "StringThread":
        """A thread of ``turns`` and ``metadata`` with this thread's images (``checked``: not checked again)."""
        if not checked:
            new = StringThread(turns, metadata)
        else:
            new = StringThread.__new__(StringThread)
            new._turns = list(turns)
            new.metadata = dict(metadata)
        new.images = list(self.images)
        return new

    @classmethod
    def from_messages(cls, messages: Sequence[Mapping[str, Any]],
                      metadata: Mapping[str, Any] | None = None, *, images: bool = False) -> "StringThread":
        """Build from OpenAI-style ``{"role": ..., "content": ...}`` dicts (read as ``message_turns`` reads them)."""
        kept: list | None = [] if images else None
        thread = cls(message_turns(list(messages), "user", "messages", kept), metadata)
        thread.images = kept or []
        return thread

    def with_turn(self, role: str, content: str) -> "StringThread":
        return self._derived([*self._turns, (role, content)], self.metadata)

    def system(self, content: str) -> "StringThread":
        return self.with_turn("system", content)

    def user(self, content: str) -> "StringThread":
        return self.with_turn("user", content)

    def assistant(self, content: str) -> "StringThread":
        return self.with_turn("assistant", content)

    def with_metadata(self, **metadata: Any) -> "StringThread":
        return self._derived(self._turns, {**self.metadata, **metadata})

    @property
    def turns(self) -> list[tuple[str, str]]:
        return list(self._turns)

    def messages(self) -> list[dict[str, str]]:
        """The turns as OpenAI-style message dicts."""
        return [{"role": r, "content": c} for r, c in self._turns]

    def last_content(self) -> str:
        """Content of the last turn ("" for an empty thread)."""
        return self._turns[-1][1] if self._turns else ""

    def completion(self) -> str:
        """Content of the final turn if it is the assistant's, else ""."""
        return self._turns[-1][1] if self._turns and self._turns[-1][0] == "assistant" else ""

    def context_turns(self) -> list[tuple[str, str]]:
        """Every turn before the completion (all turns if there is none)."""
        return list(self._turns[:-1] if self._turns and self._turns[-1][0] == "assistant" else self._turns)

    def last_user_content(self) -> str:
        for role, content in reversed(self._turns):   # a loop, not a generator: no frame to build
            if role == "user":
                return content
        return ""

    def __len__(self) -> int:
        return len(self._turns)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, StringThread) and self._turns == other._turns
                and self.metadata == other.metadata and self.images == other.images)

    def __repr__(self) -> str:
        return f"StringThread({self._turns!r}, metadata={self.metadata!r})"

    def __str__(self) -> str:
        return format_turns(self._turns)


def message_turns(value: Any, default_role: str = "user", where: str = "messages", images: list | None = None,
                  first_turn: int = 0) -> list[tuple[str, str]]:
    """The turns of a str (one ``default_role`` turn), one message or a list of OpenAI-style messages
    (roles through ``role_of``, parts through ``content_text``, ``message_extras`` appended).

    >>> message_turns([{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}])
    [('system', 'be brief'), ('user', 'hi')]
    """
    if isinstance(value, str):
        return [(default_role, own_text(value))]
    if isinstance(value, Mapping):  # one message on its own
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where} must be a str (standard format) or a list of {{'role', 'content'}} messages "
                          f"(conversational format), got {type(value).__name__}")
    turns = []
    for j, m in enumerate(value):
        if not isinstance(m, Mapping) or "role" not in m or not any(k in m for k in _MESSAGE_BODY_KEYS):
            raise ConfigError(f"{where}[{j}] must be a message with 'role' and 'content' (or 'tool_calls'), "
                              f"got {m!r:.80}")
        role = role_of(m["role"])
        if role is None:
            raise ConfigError(f"{where}[{j}] has role {m['role']!r:.60}; expected system, user, assistant or tool "
                              f"(or an alias: {', '.join(f'{a} as {r}' for a, r in ROLE_ALIASES.items())})")
        text = content_text(m.get("content"), f"{where}[{j}] content", images=images, turn=first_turn + j)
        extra = message_extras(m)
        if extra:
            text = "\n".join([text, *extra] if text else extra)
        turns.append((role, text))
    return turns


def with_own_keys(data: Mapping[str, Any], own: Mapping[str, Any], where: str,
                  setter: "str | Mapping[str, str]") -> dict[str, Any]:
    """``data`` with ``own`` (keys an adapter sets; ``setter`` names who, once or per key) added; a key
    both hold with different values is a ConfigError naming it.

    >>> with_own_keys({"eval": True, "topic": "math"}, {"eval": True}, "row 0", "the evaluation mode")
    {'eval': True, 'topic': 'math'}
    """
    for key, value in own.items():
        if key in data and not _same(data[key], value):
            who = setter if isinstance(setter, str) else setter[key]
            raise ConfigError(f"{where}: metadata key {key!r} comes from the data ({data[key]!r:.60}) and from "
                              f"{who} ({value!r:.60}); one would silently replace the other: rename the "
                              f"data's {key!r} (column, extra_info or label key)")
    return {**data, **own}


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:  # an array compared element-wise: not one truth value
        return False


def completion_threads(prompts: Sequence[Any], completions: Sequence[Any],
                       metadata: Sequence[Mapping[str, Any]] | None = None, *,
                       images: bool = False) -> list[StringThread]:
    """One StringThread per completion: the prompt's turns, then the completion's, ``metadata[i]``.

    >>> completion_threads(["2+2?"], ["4"], [{"answer": "4"}])[0]
    StringThread([('user', '2+2?'), ('assistant', '4')], metadata={'answer': '4'})
    """
    if len(prompts) != len(completions):
        raise ConfigError(f"{len(prompts)} prompts for {len(completions)} completions")
    if metadata is not None and len(metadata) != len(prompts):
        raise ConfigError(f"{len(metadata)} metadata rows for {len(prompts)} completions")
    threads = []
    for i, (p, c) in enumerate(zip(prompts, completions)):
        kept: list | None = [] if images else None
        head = message_turns(p, "user", f"row {i}: prompts[{i}]", kept)
        turns = head + message_turns(c, "assistant", f"row {i}: completions[{i}]", kept, len(head))
        thread = StringThread(turns, metadata[i] if metadata is not None else None)
        thread.images = kept or []
        threads.append(thread)
    return threads


def format_turns(turns: Iterable[tuple[str, str]]) -> str:
    """Render turns as ``[role]`` headed blocks, the form used in judge prompts."""
    return "\n\n".join(f"[{role}]\n{content}" for role, content in turns)
