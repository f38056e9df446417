"""The exception tree: ``ConfigError`` (a ValueError: a usage error, never a grade), ``JudgeError`` (a
RuntimeError: a judge-side failure, an ``unscored`` Grade) and ``OutputParserException`` (a ValueError: a text
that did not parse: a ``penalized`` completion, or a re-asked judge reply)."""

from __future__ import annotations

import re
from typing import Any

#: what judge servers say of a request longer than their context: vLLM (its V0 and V1 words) and
#: OpenAI, llama.cpp and llama-cpp-python, SGLang, TGI (422), Anthropic, LiteLLM, ``TorchModel``;
#: and HTTP 413, a body too large
_OVER_CONTEXT = re.compile(
    r"maximum context length|context_length_exceeded|exceeds? (?:the )?(?:context window|available context size)"
    r"|longer than the (?:model's context length|maximum model length)|is too long and exceeds limit"
    r"|prompt is too long|contextwindowexceeded|max_new_tokens`? must be <= |must have less than \d+ tokens"
    r"|does not fit the judge's context|^judge HTTP 413:", re.IGNORECASE)


class RewardJudgeError(Exception):
    """Base of every error rewardjudge raises on purpose."""


class ConfigError(RewardJudgeError, ValueError):
    """A usage error: bad config, template, output model or input data."""


class TemplateError(ConfigError):
    """A template that cannot be compiled or rendered safely; ``line``/``column``: 1-based, or None."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None, source: str | None = None):
        self.line, self.column, self.source = line, column, source
        where = f" (line {line}, column {column})" if line is not None else ""
        lines = (source.splitlines() or [""]) if source is not None and line is not None else []
        excerpt = (f"\n    {lines[line - 1]}\n    {' ' * max((column or 1) - 1, 0)}^"
                   if 0 < (line or 0) <= len(lines) else "")
        super().__init__(f"{message}{where}{excerpt}")


class TemplateVariableError(TemplateError):
    """A strict render met variables missing from the context."""

    def __init__(self, missing: list[str], available: Any):
        """``available``: the names, or the context itself (then a missing ``a.b`` names ``a``'s keys)."""
        self.missing = list(missing)
        self.available = sorted(available)
        inside = []
        for parent in dict.fromkeys(p.rpartition(".")[0] for p in self.missing if "." in p):
            node = available
            for part in parent.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, dict):
                inside.append(f"{parent} holds: {', '.join(sorted(map(str, node))) or '(nothing)'}")
        super().__init__(
            f"template variable(s) {', '.join(map(repr, self.missing))} missing from the context; "
            f"{''.join(f'{line}; ' for line in inside)}available: {', '.join(self.available) or '(none)'}")


class TemplateContextError(ConfigError):
    """A context value that a template must not receive (e.g. a callable)."""


class JudgeError(RewardJudgeError, RuntimeError):
    """The judge side failed. ``attempts`` counts the requests made; ``refused``: the judge refused
    this request as it is (HTTP 400, 413 or 422; a prompt over a local judge's context), so a smaller
    one may pass where the same one never will."""

    retryable: bool = False

    def __init__(self, message: str, *, attempts: int = 1, refused: bool = False):
        self.attempts, self.refused = attempts, refused
        super().__init__(message)

    @property
    def over_context(self) -> bool:
        """The judge refused this request as longer than its context (its error text says so)."""
        return self.refused and _OVER_CONTEXT.search(f"{self} {getattr(self, 'body', '')[:4000]}") is not None


class JudgeHTTPError(JudgeError):
    """The judge server answered with an HTTP error status."""

    def __init__(self, status: int, body: str = "", *, retry_after: float | None = None,
                 attempts: int = 1, retryable: bool | None = None):
        self.status, self.body, self.retry_after = status, body, retry_after
        self.retryable = (status in (408, 409, 429) or status >= 500) if retryable is None else retryable
        super().__init__(f"judge HTTP {status}: {body[:300]}", attempts=attempts, refused=status in (400, 413, 422))


class JudgeTimeoutError(JudgeError):
    """No complete answer within the request timeout."""

    retryable = True


class JudgeConnectionError(JudgeError):
    """The connection was refused, reset or dropped."""

    retryable = True


class JudgeResponseError(JudgeError):
    """The server answered 2xx with a body that is not a usable completion."""

    retryable = True

    def __init__(self, message: str, *, body: str = "", attempts: int = 1):
        self.body = body
        super().__init__(message, attempts=attempts)


class JudgeStartupError(JudgeError):
    """A spawned judge server exited or did not answer in time."""

    def __init__(self, message: str, *, log_tail: str = ""):
        self.log_tail = log_tail
        super().__init__(f"{message}\n--- server log (tail) ---\n{log_tail}" if log_tail else message)


class JudgeOutage(JudgeError):
    """Training stopped: the judge left too many samples unscored for too many steps in a row
    (``OutageGuard``). ``health`` is the judge-health summary of the last step."""

    def __init__(self, message: str, *, health: dict[str, float] | None = None):
        self.health = dict(health or {})
        super().__init__(message)


class UnmaskedJudgeFailure(BaseException):
    """A judge failure reached a trainer path that would turn it into a number (verl's compute_score outside
    rewardjudge's manager); the message names the configuration that keeps it out of training. A
    ``BaseException``, like ``SystemExit``: a trainer's ``except Exception`` fallback (verl's ``rate_limited``
    manager makes any exception reward 0.0) cannot swallow it."""


class OutputParserException(RewardJudgeError, ValueError):
    """Text could not be parsed into the expected model: ``reason`` says what failed, ``text`` is the input."""

    def __init__(self, reason: str, text: str = "", errors: list[dict[str, Any]] | None = None):
        self.reason, self.text, self.errors = reason, text, errors or []
        snippet = text if len(text) <= 200 else text[:200] + "..."
        super().__init__(f"{reason}; input: {snippet!r}")


def format_validation_error(exc: Any) -> str:
    """A pydantic ``ValidationError`` on one line: ``loc: msg; loc: msg``."""
    return "; ".join(f"{'.'.join(str(p) for p in err.get('loc', ())) or '(root)'}: {err.get('msg')}"
                     for err in exc.errors())
