"""The exception tree of rewardjudge.

Two families that a caller handles differently:

* ``ConfigError`` (a usage error): the grader, template, output model or
  dataset is wrong. Raised at construction where possible; fix the code or
  config and run again. Never turned into a grade.
* ``JudgeError`` (a runtime error): the judge side failed (HTTP status,
  timeout, refused connection, unreadable body). Graders turn it into an
  ``unscored`` Grade carrying the reason; it never becomes a score.

``OutputParserException`` (in ``rewardjudge.core.structured_output``, a
ValueError) is the third kind: a text did not parse. From the *policy's*
completion, graders turn it into a ``penalized`` Grade; from the judge's
reply, they re-ask and then leave the grade ``unscored``.

Tree::

    RewardJudgeError
    +-- OutputParserException (ValueError: a completion or reply that does not parse)
    +-- ConfigError (also ValueError)
    |   +-- TemplateError            (line, column, template excerpt)
    |   |   +-- TemplateVariableError (missing, available)
    |   +-- TemplateContextError     (a context value a template cannot hold)
    |   +-- TypedQuestionError       (graders/_typed_question.py: every bad scale at once)
    |   +-- GradeDistributionUnsupported (models/_base.py: the model cannot give grade probabilities)
    |   +-- ScorerNotFound           (scorers/_registry.py; also LookupError)
    |   +-- ScriptExhausted          (testing.py: a ScriptedModel ran out of replies)
    +-- JudgeError (also RuntimeError)  (attempts)
        +-- JudgeHTTPError           (status, body, retry_after)
        +-- JudgeTimeoutError
        +-- JudgeConnectionError
        +-- JudgeResponseError       (body: the unreadable reply)
        +-- JudgeStartupError        (log_tail: the spawned server's last output)
        +-- JudgeOutage              (rl/_health.py: too many unscored steps in a row; health)
"""

from __future__ import annotations

from typing import Any


class RewardJudgeError(Exception):
    """Base of every error rewardjudge raises on purpose."""


class ConfigError(RewardJudgeError, ValueError):
    """A usage error: bad config, template, output model or input data."""


class TemplateError(ConfigError):
    """A template that cannot be compiled or rendered safely.

    ``line`` and ``column`` are 1-based positions of the offending tag in the
    template source (None when the error has no position).
    """

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 source: str | None = None):
        self.line = line
        self.column = column
        self.source = source
        where = f" (line {line}, column {column})" if line is not None else ""
        excerpt = ""
        if source is not None and line is not None:
            lines = source.splitlines() or [""]
            if 0 < line <= len(lines):
                text = lines[line - 1]
                excerpt = f"\n    {text}\n    {' ' * max((column or 1) - 1, 0)}^"
        super().__init__(f"{message}{where}{excerpt}")


class TemplateVariableError(TemplateError):
    """A strict render met variables missing from the context."""

    def __init__(self, missing: list[str], available: list[str]):
        self.missing = list(missing)
        self.available = sorted(available)
        super().__init__(
            f"template variable(s) {', '.join(map(repr, self.missing))} missing from the context; "
            f"available: {', '.join(self.available) or '(none)'}"
        )


class TemplateContextError(ConfigError):
    """A context value that a template must not receive (e.g. a callable)."""


class JudgeError(RewardJudgeError, RuntimeError):
    """The judge side failed. ``attempts`` counts the requests made."""

    retryable: bool = False

    def __init__(self, message: str, *, attempts: int = 1):
        self.attempts = attempts
        super().__init__(message)


class JudgeHTTPError(JudgeError):
    """The judge server answered with an HTTP error status."""

    def __init__(self, status: int, body: str = "", *, retry_after: float | None = None,
                 attempts: int = 1, retryable: bool | None = None):
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.retryable = (status in (408, 409, 429) or status >= 500) if retryable is None else retryable
        super().__init__(f"judge HTTP {status}: {body[:300]}", attempts=attempts)


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
    """Training stopped: the judge left too many samples unscored for too
    many steps in a row (``OutageGuard``). Masking keeps a failed sample out
    of the loss, so a dead judge would otherwise train on nothing, silently.
    ``health`` is the judge-health summary of the last step."""

    def __init__(self, message: str, *, health: dict[str, float] | None = None):
        self.health = dict(health or {})
        super().__init__(message)


class OutputParserException(RewardJudgeError, ValueError):
    """Text could not be parsed into the expected model.

    ``reason`` says what failed ("no JSON object found", "invalid JSON", or the
    schema errors), ``text`` is the input (truncated in the message). Raised
    for a malformed completion (the grade is penalized) and for an unreadable
    judge reply (re-asked, then unscored). Also importable from
    ``rewardjudge.core.structured_output``.
    """

    def __init__(self, reason: str, text: str = "", errors: list[dict[str, Any]] | None = None):
        self.reason = reason
        self.text = text
        self.errors = errors or []
        snippet = text if len(text) <= 200 else text[:200] + "..."
        super().__init__(f"{reason}; input: {snippet!r}")


def format_validation_error(exc: Any) -> str:
    """A pydantic ``ValidationError`` on one line: ``loc: msg; loc: msg``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)
