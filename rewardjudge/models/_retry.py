"""The one retry loop: exponential backoff with full jitter, Retry-After honoured; what is
retried is a ``JudgeError`` whose ``retryable`` is True."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, TypeVar

from ..errors import ConfigError, JudgeError

T = TypeVar("T")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date)."""
    try:
        return max(0.0, float(value.strip()))  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(value.strip()) if value else None
    except (TypeError, ValueError):
        return None
    return None if when is None else max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt (so at most
    ``max_retries + 1`` attempts). The wait before retry ``k`` (1-based) is a
    uniform draw in ``[0, min(max_delay, base_delay * 2**(k-1))]``, or the
    server's Retry-After when it gives one (capped by ``max_retry_after``)."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) \
                or self.max_retries < 0:
            raise ConfigError(f"max_retries must be an int >= 0, got {self.max_retries!r}")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise ConfigError(f"{name} must be a number of seconds >= 0, got {v!r}")

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        return rng.uniform(0.0, min(self.max_delay, self.base_delay * (2 ** (retry - 1))))


async def retry_async(attempt: Callable[[int], Awaitable[T]], policy: RetryPolicy,
                      rng: random.Random | None = None) -> tuple[T, int]:
    """``(result, attempts)`` of ``attempt(n)`` (n = 1, 2, ...) once it succeeds; a non-retryable
    ``JudgeError`` or the last retryable one is re-raised with ``attempts`` set."""
    rng = rng or random.Random()
    n = 0
    while True:
        n += 1
        try:
            return await attempt(n), n
        except JudgeError as exc:
            exc.attempts = n
            if not exc.retryable or n > policy.max_retries:
                raise
            await asyncio.sleep(policy.delay(n, getattr(exc, "retry_after", None), rng))
