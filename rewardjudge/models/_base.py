"""InferenceModel: the one seam between graders and any judge model."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..errors import ConfigError

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
        """The parameters set, as request body fields (a new dict each call)."""
        cached = self.__dict__.get("_fields")
        if cached is None:   # frozen: computed once (not a field: eq, hash and repr ignore it)
            cached = {k: getattr(self, k) for k in ("temperature", "top_p", "max_tokens", "seed")
                      if getattr(self, k) is not None}
            if self.stop:
                cached["stop"] = list(self.stop)
            if self.logprobs:
                cached["logprobs"] = True
                if self.top_logprobs is not None:
                    cached["top_logprobs"] = self.top_logprobs
            object.__setattr__(self, "_fields", cached)
        return dict(cached)


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

    @property
    def control_tokens(self) -> tuple[str, ...]:
        """Literal special tokens of this judge's chat template, beyond the
        common forms graders always neutralise (``<|...|>``, ``[INST]``,
        ``<s>``...): graders defang them in policy text. A model built with a
        chat template (``spawn_judge``, ``TorchModel``) reads them from it."""
        template = getattr(self, "chat_template", None)
        return tuple(getattr(template, "control_tokens", ()) or ())

    @abc.abstractmethod
    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None) -> Completion:
        """Send ``messages`` and return the judge's reply."""

    #: True when ``grade_distribution`` can read right after a trailing
    #: assistant prefix (``"Grade: "``); graders use a prefix only then
    continues_prefix: bool = False

    #: True when the server compiles one grammar per distinct JSON schema and
    #: keeps it (vLLM, SGLang): graders then send one schema for every request
    #: and check the seal's value themselves. False for a server that converts
    #: every request's schema anyway (llama.cpp, ``spawn_judge``): the seal's
    #: value is then part of the schema, so even a small judge writes it exactly
    caches_grammars: bool = True

    async def grade_distribution(self, messages: Sequence[Message], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> "TokenDistribution":
        """The probability of each of ``choices`` as the reply's next token.

        Contract for implementations that support it:

        * The distribution is read at the first position of the assistant's
          reply to ``messages``; when the last message has role
          ``"assistant"``, its content is a prefix that the reply continues
          (no end-of-turn after it) and the distribution is read right
          after that prefix.
        * Each choice is meant to be one token (the digits of a grade);
          a token matches a choice when they are equal once surrounding
          whitespace is stripped, and the probabilities of matching tokens
          are summed. A backend that can tell raises ``ConfigError`` for a
          choice that is not one token.
        * Probabilities are the model's raw next-token probabilities
          (temperature 1, no top-p, never read from a grammar- or
          schema-constrained step), not renormalised over the choices:
          the rest is ``TokenDistribution.outside``.
        * Judge-side failures raise ``JudgeError`` subclasses as ``chat``
          does. ``params`` may carry a ``seed``; sampling settings do not
          change the distribution.

        The default raises ``GradeDistributionUnsupported``.
        """
        raise GradeDistributionUnsupported(
            f"{type(self).__name__} ({self.name!r}) cannot return grade probabilities; use an "
            f"OpenAIModel on a server that returns logprobs, or a TorchModel")

    async def aclose(self) -> None:
        """Release resources (connections, processes)."""

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


# --------------------------------------------------------------------------
# grade distributions: the probability of each grade token at one position
# --------------------------------------------------------------------------
class GradeDistributionUnsupported(ConfigError):
    """This model cannot return next-token probabilities (``grade_distribution``)."""


@dataclass
class TokenDistribution:
    """The judge's probability for each choice token at one reply position.

    ``probs`` maps every choice asked for to the model's probability that the
    reply's next token is that choice (variants that differ only by
    surrounding whitespace, ``"4"`` and ``" 4"``, are summed). Probabilities
    are *not* renormalised: ``outside`` is the mass on every other token,
    ``1 - sum(probs)``. A choice the backend did not see (outside a server's
    top-k list) has probability 0.0; ``top_k`` then says how many
    alternatives were visible and ``unseen_max`` bounds the probability any
    unseen token can have. ``top_k`` is None when the softmax was exact over
    the whole vocabulary (``TorchModel``).

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
    """Validate the choices of a ``grade_distribution`` call; return them as a list."""
    out = list(choices) if not isinstance(choices, str) else None
    if not out:
        raise ConfigError(f"choices must be a non-empty sequence of strings, got {choices!r}")
    for c in out:
        if not isinstance(c, str) or not c.strip() or c != c.strip():
            raise ConfigError(f"each choice must be a non-empty string without surrounding "
                              f"whitespace, got {c!r}")
    if len(set(out)) != len(out):
        raise ConfigError(f"choices must be distinct, got {out!r}")
    return out


def match_choices(top: "Mapping[str, float] | Iterable[tuple[str, float]]",
                  choices: Sequence[str]) -> dict[str, float]:
    """Sum the probabilities of ``top`` (token text -> logprob, a mapping or
    pairs) per choice.

    A token matches a choice when they are equal once surrounding whitespace
    is stripped; unmatched choices get 0.0.

    >>> match_choices([("4", -0.5), (" 4", -2.0), ("x", -1.0)], ["3", "4"])["3"]
    0.0
    """
    import math

    probs = {c: 0.0 for c in choices}
    items = top.items() if isinstance(top, Mapping) else top
    for token, logprob in items:
        key = token.strip()
        if key in probs and logprob is not None and math.isfinite(logprob):
            probs[key] += math.exp(logprob)
    return probs
