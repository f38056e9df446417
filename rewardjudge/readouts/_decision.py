"""What a readout decides about one judge reply: a verdict, or why there is
none. Of several verdicts the last decides; the values of the others that
disagree with it are its ``others`` (graders record them in ``Grade.extra``)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import Any, Callable, Generic, Iterable, Sequence, TypeVar, Union

from ..grade import encodable

V = TypeVar("V")

__all__ = ["Decision", "NoVerdict", "Verdict", "disagreeing", "last_decides", "made_verdicts"]


@dataclass(frozen=True)
class Verdict(Generic[V]):
    """A verdict the judge wrote: ``value`` (a label, a number, an output model), where it
    stands in the reply, earlier disagreeing values, and ``value_at``: where the value itself
    begins (-1: not recorded; a sealed line's after its ``VERDICT <seal>:``)."""

    value: V
    start: int = 0
    end: int = 0
    others: tuple[Any, ...] = ()
    value_at: int = -1
    ok = True


@dataclass(frozen=True)
class NoVerdict:
    """No verdict: ``reason`` says why (the unscored grade's error); ``kind``, counted in judge
    health: ``"no sealed verdict"``, ``"cut off"``, ``"invalid"``, ``"no verdict"``."""

    reason: str
    kind: str = "no verdict"
    ok = False


Decision = Union[Verdict, NoVerdict]


def last_decides(found: "Sequence[Decision]", same: "Callable[[Any, Any], bool] | None" = None) -> Decision:
    """The decision of a reply's readings ``found`` (in reply order, at least one): the last
    one, a ``NoVerdict`` as it is, a verdict with the values of the earlier verdicts that
    disagree with it (``same``, default ``==``) as its ``others``."""
    last = found[-1]
    if isinstance(last, NoVerdict) or len(found) == 1:
        return last
    return replace(last, others=disagreeing((d.value for d in found[:-1] if isinstance(d, Verdict)),
                                            last.value, same))


def disagreeing(values: "Iterable[Any]", last: Any, same: "Callable[[Any, Any], bool] | None" = None
                ) -> "tuple[Any, ...]":
    """The earlier ``values`` that disagree with the ``last`` one (``same``, default ``==``): its ``others``."""
    agree = same or operator.eq
    return tuple(v for v in values if not agree(v, last))


def made_verdicts(decision: Decision, text: str, make: "Callable[[Any, str], tuple[Any, float]]") -> Decision:
    """``decision`` with its values made into ``(verdict, value)`` where they are not yet (a bare
    label, a declared form's number or label) by ``make(value, the reply before the verdict,
    stripped)``; ValueError makes it a ``NoVerdict``; any other decision as it is."""
    values = (decision.value, *decision.others) if isinstance(decision, Verdict) else ()
    if all(isinstance(v, tuple) for v in values):
        return decision   # no verdict, or every value a checked JSON verdict: nothing to make
    before = encodable(text[:decision.start].strip())   # a lone surrogate validates as no text field
    try:
        made = [v if isinstance(v, tuple) else make(v, before) for v in values]
    except ValueError as exc:
        return NoVerdict(f"the verdict does not fit: {exc}"[:400], kind="invalid")
    return replace(decision, value=made[0], others=tuple(made[1:]))
