"""What a readout decides about one judge reply: a verdict, or why there is none (docs/sealed-verdicts.md)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import Any, Callable, Generic, Iterable, Sequence, TypeVar, Union

from ..grade import encodable

V = TypeVar("V")

__all__ = ["Decision", "NoVerdict", "Verdict", "disagreeing", "last_decides", "made_verdicts"]


@dataclass(frozen=True, init=False)
class Verdict(Generic[V]):
    """A verdict the judge wrote: its value, where it and (``value_at``, -1: unknown) its value stand in
    the reply, and the earlier values that disagree with it."""

    value: V
    start: int = 0
    end: int = 0
    others: tuple[Any, ...] = ()
    value_at: int = -1
    ok = True

    def __init__(self, value: V, start: int = 0, end: int = 0, others: tuple[Any, ...] = (),
                 value_at: int = -1) -> None:
        # the fields set at once: a frozen dataclass's own __init__ sets each through
        # object.__setattr__ (one per read verdict: 11k -> 6k instructions)
        fields = self.__dict__
        fields["value"], fields["start"], fields["end"], fields["others"], fields["value_at"] = \
            value, start, end, others, value_at


@dataclass(frozen=True)
class NoVerdict:
    """No verdict, and why; ``kind`` (judge health): no sealed verdict, cut off, invalid, no verdict."""

    reason: str
    kind: str = "no verdict"
    ok = False


Decision = Union[Verdict, NoVerdict]


def last_decides(found: "Sequence[Decision]", same: "Callable[[Any, Any], bool] | None" = None) -> Decision:
    """The last of ``found`` (reply order), a verdict with the earlier values unlike it (``same``) as ``others``."""
    last = found[-1]
    if isinstance(last, NoVerdict) or len(found) == 1:
        return last
    return replace(last, others=disagreeing((d.value for d in found[:-1] if isinstance(d, Verdict)),
                                            last.value, same))


def disagreeing(values: "Iterable[Any]", last: Any, same: "Callable[[Any, Any], bool] | None" = None) -> tuple:
    return tuple(v for v in values if not (same or operator.eq)(v, last))


def made_verdicts(decision: Decision, text: str, make: "Callable[[Any, str], tuple[Any, float]]") -> Decision:
    """``decision`` with each value not yet a ``(verdict, value)`` made one by ``make(value, the reply
    before the verdict)``; a ValueError makes it a ``NoVerdict``."""
    if not isinstance(decision, Verdict) or not decision.others and isinstance(decision.value, tuple):
        return decision   # no verdict, or one checked JSON verdict (most replies): no walk over values
    values = (decision.value, *decision.others)
    if all(isinstance(v, tuple) for v in values):
        return decision   # every value a checked JSON verdict: nothing to make
    before = encodable(text[:decision.start].strip())   # a lone surrogate validates as no text field
    try:
        made = [v if isinstance(v, tuple) else make(v, before) for v in values]
    except ValueError as exc:
        return NoVerdict(f"the verdict does not fit: {exc}"[:400], kind="invalid")
    return replace(decision, value=made[0], others=tuple(made[1:]))
