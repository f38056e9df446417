"""InferenceModel: the one seam between graders and any judge model."""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..errors import ConfigError

Message = dict[str, str]

#: how a server says a reply ended on its own, case aside: ``stop`` (OpenAI and most servers), TGI's
#: ``eos_token`` and ``stop_sequence``, ``end_turn`` and ``eos`` as proxies pass them on
ENDED_ON_ITS_OWN = frozenset({"stop", "eos", "eos_token", "stop_sequence", "end_turn"})


@dataclass
class Completion:
    """One judge reply: ``top_logprobs`` holds per generated token ``{token: logprob}`` of the
    alternatives returned; ``structured`` is True when a JSON schema constrained the reply."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    attempts: int = 1
    finish_reason: str | None = None
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    structured: bool = False
    raw: dict[str, Any] | None = None

    @property
    def cut_short(self) -> bool:
        """True when the server says the reply did not end on its own (``finish_reason`` neither None nor
        one of ``ENDED_ON_ITS_OWN``): cut off at ``max_tokens`` or the context (``length``, Mistral's
        ``model_length``), filtered, aborted, failed, or stopped for a tool call. Such a reply is never
        read: its last sealed verdict may be a draft the judge had not yet replaced."""
        reason = self.finish_reason
        return reason is not None and (type(reason) is not str or reason.casefold() not in ENDED_ON_ITS_OWN)


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
    #: which re-ask of one request this is (0: the first ask); never sent, but a request cache keys on
    #: it, so a grader's re-ask of a reply it could not read reaches the judge instead of that reply
    reask: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The parameters set, as request body fields (a new dict each call)."""
        out = {k: getattr(self, k) for k in ("temperature", "top_p", "max_tokens", "seed")
               if getattr(self, k) is not None}
        if self.stop:
            out["stop"] = list(self.stop)
        if self.logprobs:
            out["logprobs"] = True
            if self.top_logprobs is not None:
                out["top_logprobs"] = self.top_logprobs
        return out


class InferenceModel(abc.ABC):
    """An async judge model (an async context manager): ``chat`` returns a ``Completion`` or raises a
    ``JudgeError`` after retries; ``aclose`` is safe to call twice (docs/judges.md)."""

    #: a short name for logs and cache keys
    name: str = "model"

    @property
    def control_tokens(self) -> tuple[str, ...]:
        """Literal special tokens of this judge's chat template, which graders defang in policy text."""
        template = getattr(self, "chat_template", None)
        # no attribute looked up on None: a lookup that fails costs an exception raised inside
        return () if template is None else tuple(getattr(template, "control_tokens", ()) or ())

    @abc.abstractmethod
    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None) -> Completion:
        """The judge's reply to ``messages`` (``json_schema`` constrains it where the backend can)."""

    #: True when ``grade_distribution`` can read right after a trailing assistant prefix
    continues_prefix: bool = False

    #: True when the server keeps one grammar per distinct JSON schema (vLLM, SGLang): graders send
    #: one schema and check the seal's value themselves. False where every request's schema is
    #: converted anyway (llama.cpp): the seal's value is then part of the schema
    caches_grammars: bool = True

    async def grade_distribution(self, messages: Sequence[Message], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> "TokenDistribution":
        """The raw probability of each one-token choice as the reply's next token, or right after a
        trailing assistant prefix (docs/probability.md); the default raises ``GradeDistributionUnsupported``."""
        raise GradeDistributionUnsupported(
            f"{type(self).__name__} ({self.name!r}) cannot return grade probabilities; use an "
            f"OpenAIModel on a server that returns logprobs, or a TorchModel")

    async def aclose(self) -> None:
        """Release resources (connections, processes)."""

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


class GradeDistributionUnsupported(ConfigError):
    """This model cannot return next-token probabilities (``grade_distribution``)."""


@dataclass
class TokenDistribution:
    """Each choice's probability as the next token, not renormalised (``outside`` is the rest);
    ``top_k``: alternatives visible (None: exact), ``unseen_max`` bounds an unseen token's.

    >>> d = TokenDistribution({"0": 0.1, "1": 0.6}, top_k=None)
    >>> round(d.outside, 3), round(d.normalized()["1"], 3)
    (0.3, 0.857)
    """

    probs: dict[str, float]
    top_k: int | None = None
    unseen_max: float | None = None
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    attempts: int = 1
    raw: dict[str, Any] | None = None

    @property
    def valid_mass(self) -> float:
        """Probability that the next token is one of the choices."""
        return min(1.0, sum(self.probs.values()))

    @property
    def outside(self) -> float:
        """Probability that the next token is none of the choices."""
        return max(0.0, 1.0 - self.valid_mass)

    def normalized(self) -> dict[str, float]:
        """``probs`` rescaled to sum to 1 (raises ZeroDivisionError on zero valid mass)."""
        total = sum(self.probs.values())
        if total <= 0.0:
            raise ZeroDivisionError("no probability mass on any choice")
        return {k: v / total for k, v in self.probs.items()}


def check_choices(choices: Sequence[str]) -> list[str]:
    """The choices of a ``grade_distribution`` call, checked, as a list."""
    out = list(choices) if not isinstance(choices, str) else None
    if not out:
        raise ConfigError(f"choices must be a non-empty sequence of strings, got {choices!r}")
    bad = next((c for c in out if not isinstance(c, str) or not c.strip() or c != c.strip()), None)
    if bad is not None:
        raise ConfigError(f"each choice must be a non-empty string without surrounding whitespace, got {bad!r}")
    if len(set(out)) != len(out):
        raise ConfigError(f"choices must be distinct, got {out!r}")
    return out


#: SentencePiece's space and byte-level BPE's space and newline, as raw tokens spell them
_PIECE_MARKERS = str.maketrans({"\u2581": " ", "\u0120": " ", "\u010a": "\n"})


def match_choices(top: "Mapping[str, float] | Iterable[tuple[str, float]]",
                  choices: Sequence[str]) -> dict[str, float]:
    """The probabilities of ``top`` (token -> logprob, a mapping or pairs) summed per choice (stripped,
    a tokenizer's space or newline marker read as the space or newline: some vLLM releases list raw
    pieces, ``▁4`` or ``Ġ4``, where servers list the decoded ``" 4"``)."""
    probs = {c: 0.0 for c in choices}
    items = top.items() if isinstance(top, Mapping) else top
    for token, logprob in items:
        key = token.translate(_PIECE_MARKERS).strip()
        if key in probs and logprob is not None and math.isfinite(logprob):
            probs[key] += math.exp(logprob)
    return probs
