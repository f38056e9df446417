"""What a readout decides about one judge reply: a verdict, or why there is none.

Readers return these values; they never carry data on exceptions. A reader
that finds several verdicts takes the last one the judge wrote and lists the
values of the others that disagree with it in ``others`` (graders record them
in ``Grade.extra``).

>>> d = Verdict("PASS", start=10, end=14)
>>> d.ok, NoVerdict("no sealed verdict").ok
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar, Union

V = TypeVar("V")

__all__ = ["Decision", "NoVerdict", "Verdict"]


@dataclass(frozen=True)
class Verdict(Generic[V]):
    """A verdict the judge wrote: ``value`` (a label, a number, a validated
    output model), where it stands in the reply, and the values of earlier
    verdicts in the same reply that disagree with it."""

    value: V
    start: int = 0
    end: int = 0
    others: tuple[Any, ...] = field(default=())
    ok = True

    def map(self, fn: "Callable[[Any], Any]") -> "Verdict[Any]":
        """The same verdict with ``fn`` applied to its value and to each of ``others``."""
        return Verdict(fn(self.value), self.start, self.end, tuple(fn(v) for v in self.others))


@dataclass(frozen=True)
class NoVerdict:
    """No verdict can be read: ``reason`` says why (it becomes the unscored
    grade's error after the retries); ``kind`` is a short fixed name counted
    in judge health (``"no sealed verdict"``, ``"cut off"``, ``"invalid"``,
    ``"no verdict"``)."""

    reason: str
    kind: str = "no verdict"
    ok = False


Decision = Union[Verdict, NoVerdict]
