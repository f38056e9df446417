"""InferenceModel: the one seam between graders and any judge model."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Sequence

Message = dict[str, str]


@dataclass
class Completion:
    """One judge reply.

    ``top_logprobs`` holds, per generated token, a ``{token: logprob}`` dict of
    the alternatives the server returned (empty when not asked for).
    ``structured`` is True when the reply was constrained by a JSON schema.
    """

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    attempts: int = 1
    finish_reason: str | None = None
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    structured: bool = False
    raw: dict[str, Any] | None = None


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters a grader sends with every request."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    logprobs: bool = False
    top_logprobs: int | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in ("temperature", "top_p", "max_tokens", "seed"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        if self.stop:
            out["stop"] = list(self.stop)
        if self.logprobs:
            out["logprobs"] = True
            if self.top_logprobs is not None:
                out["top_logprobs"] = self.top_logprobs
        return out


class InferenceModel(abc.ABC):
    """An async judge model.

    Contract for implementations:

    * ``chat`` returns a ``Completion`` or raises a ``JudgeError`` subclass
      (never another exception for a judge-side failure); retries, if any,
      happen inside and ``Completion.attempts`` / ``JudgeError.attempts``
      count them.
    * ``json_schema`` asks for a reply constrained to that schema where the
      backend can; a backend that cannot ignores it (``Completion.structured``
      says which happened).
    * ``aclose`` releases connections and is safe to call twice. Models are
      async context managers.
    """

    #: a short name for logs and cache keys
    name: str = "model"

    @abc.abstractmethod
    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None) -> Completion:
        """Send ``messages`` and return the judge's reply."""

    async def aclose(self) -> None:
        """Release resources (connections, processes)."""

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
