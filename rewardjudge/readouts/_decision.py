"""What a readout decides about one judge reply: a verdict, or why there is
none. Of several verdicts the last decides; the values of the others that
disagree with it are its ``others`` (graders record them in ``Grade.extra``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar, Union

V = TypeVar("V")

__all__ = ["Decision", "NoVerdict", "Verdict"]


@dataclass(frozen=True)
class Verdict(Generic[V]):
    """A verdict the judge wrote: ``value`` (a label, a number, an output
    model), where it stands in the reply, earlier disagreeing values, and
    ``value_at``: where the readout found the value itself begins (-1: not
    recorded; a sealed line's verdict after its ``VERDICT <seal>:``)."""

    value: V
    start: int = 0
    end: int = 0
    others: tuple[Any, ...] = field(default=())
    value_at: int = -1
    ok = True

    def map(self, fn: "Callable[[Any], Any]") -> "Verdict[Any]":
        """The same verdict with ``fn`` applied to its value and to each of ``others``."""
        return Verdict(fn(self.value), self.start, self.end, tuple(fn(v) for v in self.others), self.value_at)


@dataclass(frozen=True)
class NoVerdict:
    """No verdict: ``reason`` says why (the unscored grade's error); ``kind``,
    counted in judge health: ``"no sealed verdict"``, ``"cut off"``, ``"invalid"``, ``"no verdict"``."""

    reason: str
    kind: str = "no verdict"
    ok = False


Decision = Union[Verdict, NoVerdict]
