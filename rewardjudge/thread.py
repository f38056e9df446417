"""StringThread: a conversation as (role, content) turns plus metadata."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .errors import ConfigError

ROLES = ("system", "user", "assistant", "tool")


class StringThread:
    """An ordered list of ``(role, content)`` turns with a metadata dict.

    The last assistant turn is the completion being graded; everything before
    it is its context. Threads are treated as values: the ``with_*`` helpers
    return new threads.

    >>> t = StringThread([("user", "2+2?"), ("assistant", "4")], metadata={"eval": True})
    >>> t.last_content(), t.last_user_content()
    ('4', '2+2?')
    """

    __slots__ = ("_turns", "metadata")

    def __init__(self, turns: Iterable[tuple[str, str]] | None = None,
                 metadata: Mapping[str, Any] | None = None):
        checked: list[tuple[str, str]] = []
        for i, turn in enumerate(turns or []):
            try:
                role, content = turn
            except (TypeError, ValueError):
                raise ConfigError(f"turn {i} must be a (role, content) pair, got {turn!r:.80}") from None
            if role not in ROLES:
                raise ConfigError(f"turn {i} has role {role!r}; expected one of {ROLES}")
            if not isinstance(content, str):
                raise ConfigError(f"turn {i} content must be a str, got {type(content).__name__}")
            checked.append((role, content))
        self._turns = checked
        self.metadata: dict[str, Any] = dict(metadata or {})

    # -- construction -----------------------------------------------------
    @classmethod
    def from_messages(cls, messages: Iterable[Mapping[str, Any]],
                      metadata: Mapping[str, Any] | None = None) -> "StringThread":
        """Build from OpenAI-style ``{"role": ..., "content": ...}`` dicts."""
        turns = []
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
                raise ConfigError(f"message {i} must be a mapping with 'role' and 'content'")
            turns.append((m["role"], m["content"]))
        return cls(turns, metadata)

    def with_turn(self, role: str, content: str) -> "StringThread":
        return StringThread([*self._turns, (role, content)], self.metadata)

    def system(self, content: str) -> "StringThread":
        return self.with_turn("system", content)

    def user(self, content: str) -> "StringThread":
        return self.with_turn("user", content)

    def assistant(self, content: str) -> "StringThread":
        return self.with_turn("assistant", content)

    def with_metadata(self, **metadata: Any) -> "StringThread":
        return StringThread(self._turns, {**self.metadata, **metadata})

    # -- reading ----------------------------------------------------------
    @property
    def turns(self) -> list[tuple[str, str]]:
        return list(self._turns)

    def get_turns(self) -> list[tuple[str, str]]:
        return list(self._turns)

    def messages(self) -> list[dict[str, str]]:
        """The turns as OpenAI-style message dicts."""
        return [{"role": r, "content": c} for r, c in self._turns]

    def last_content(self) -> str:
        """Content of the last turn ("" for an empty thread)."""
        return self._turns[-1][1] if self._turns else ""

    def completion(self) -> str:
        """Content of the final turn if it is the assistant's, else ""."""
        if self._turns and self._turns[-1][0] == "assistant":
            return self._turns[-1][1]
        return ""

    def context_turns(self) -> list[tuple[str, str]]:
        """Every turn before the completion (all turns if there is none)."""
        if self._turns and self._turns[-1][0] == "assistant":
            return list(self._turns[:-1])
        return list(self._turns)

    def last_user_content(self) -> str:
        for role, content in reversed(self._turns):
            if role == "user":
                return content
        return ""

    def __len__(self) -> int:
        return len(self._turns)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, StringThread) and self._turns == other._turns
                and self.metadata == other.metadata)

    def __repr__(self) -> str:
        return f"StringThread({self._turns!r}, metadata={self.metadata!r})"

    def __str__(self) -> str:
        return format_turns(self._turns)


def format_turns(turns: Iterable[tuple[str, str]]) -> str:
    """Render turns as ``[role]`` headed blocks, the form used in judge prompts."""
    return "\n\n".join(f"[{role}]\n{content}" for role, content in turns)
