"""Grade: what a grader returns for one sample, and why."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .errors import ConfigError

Status = Literal["scored", "penalized", "unscored"]
STATUSES: tuple[str, ...] = ("scored", "penalized", "unscored")


_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: Any) -> Any:
    """``text`` with each surrogate code point as U+FFFD (no UTF-8 request, file or Arrow column
    can hold one); anything else as it is. The one surrogate rule: the neutraliser uses it too."""
    if not isinstance(text, str) or text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


@dataclass
class Grade:
    """One grade, with the reason it is what it is.

    ``scored``: ``value`` is the judge's score; ``penalized``: the policy's output was malformed,
    ``value`` is the penalty; ``unscored``: the judge side failed, ``value`` is None (never a fake 0).
    A *label-only* verdict is ``scored`` with ``value`` None and ``extra["label"]``,
    ``extra["labels_only"]`` True. Without ``status``, ``value`` decides (None: unscored).

    >>> Grade(value=1.0, grader_key="g").status
    'scored'
    >>> Grade(value=None, grader_key="g", error="judge HTTP 503").status
    'unscored'
    """

    value: float | None
    grader_key: str
    reasoning: str | None = None
    status: Status | None = None
    error: str | None = None
    raw_reply: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    latency_s: float | None = None
    grader_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: the judge's (renormalised) probability of each grade, where read from a distribution
    distribution: dict[str, float] | None = None

    def __post_init__(self) -> None:
        value, r, e, x = self.value, self.reasoning, self.error, self.raw_reply
        # a scored finite float with ASCII texts (or none): ``_check`` would change nothing
        if self.status == "scored" and type(value) is float and value - value == 0.0 \
                and (r is None or type(r) is str and r.isascii()) \
                and (e is None or type(e) is str and e.isascii()) \
                and (x is None or type(x) is str and x.isascii()):
            return
        self._check()

    def _check(self) -> None:
        # a judge's JSON may escape a lone surrogate ("\ud800"): no UTF-8 file or Arrow column
        # holds one, so a journal line or results file could never be written
        self.reasoning, self.error, self.raw_reply = map(encodable, (self.reasoning, self.error, self.raw_reply))
        if self.status is None:
            self.status = "unscored" if self.value is None else "scored"
        if self.status not in STATUSES:
            raise ConfigError(f"Grade.status must be one of {STATUSES}, got {self.status!r}")
        if self.status == "unscored":
            if self.value is not None:
                raise ConfigError("an unscored Grade has value None")
        elif not (self.value is None and self.status == "scored" and self.is_label_only):
            if self.value is None or isinstance(self.value, bool):
                raise ConfigError(f"a {self.status} Grade needs a numeric value, got {self.value!r}")
            self.value = float(self.value)
            if math.isnan(self.value):
                raise ConfigError("Grade.value must not be NaN; use status='unscored'")
            if math.isinf(self.value):  # a trainer would turn it into NaN advantages, a server into invalid JSON
                raise ConfigError(f"Grade.value must be finite, got {self.value}")

    @property
    def is_label_only(self) -> bool:
        """A label without a number (see the class doc)."""
        extra = self.extra if isinstance(self.extra, dict) else {}
        return extra.get("labels_only") is True and isinstance(extra.get("label"), str)

    @property
    def details(self) -> dict[str, Any]:
        """The judge-side details: raw reply, usage, attempts, error, latency, extras."""
        return {"raw_reply": self.raw_reply, "usage": dict(self.usage), "attempts": self.attempts,
                "error": self.error, "latency_s": self.latency_s, **self.extra}

    @property
    def reward(self) -> float:
        """The value as a float for a trainer: NaN when unscored (or label-only)."""
        return math.nan if self.value is None else self.value

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
