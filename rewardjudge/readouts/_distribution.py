"""The token-distribution readout: a judge's next-token probabilities over the
grades, renormalised into a grade distribution (``summarize``), and a compact
record of one kept as a grade's raw reply (``distribution_text``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..models._base import TokenDistribution
from ._decision import NoVerdict

__all__ = ["EXPECTED_VALUE_FLOOR", "DistributionSummary", "confidence", "distribution_text",
           "read_distribution", "summarize"]

#: default floor of valid-score probability for the expected-value option
EXPECTED_VALUE_FLOOR = 0.5


@dataclass(frozen=True)
class DistributionSummary:
    """A grade distribution renormalised over the valid grades (``probabilities``
    sum to 1); ``valid_mass`` / ``outside_mass``: raw mass on and off them."""

    probabilities: dict[int, float]
    expected: float
    most_likely: int
    confidence: float
    valid_mass: float
    outside_mass: float
    ok = True

    def as_extra(self) -> dict[str, Any]:
        return {"probabilities": dict(self.probabilities), "expected_grade": self.expected,
                "most_likely_grade": self.most_likely, "confidence": self.confidence,
                "valid_mass": self.valid_mass, "outside_mass": self.outside_mass}


def confidence(probs: Sequence[float]) -> float:
    """``1 - H(p)/ln(n)``: 1 for a certain distribution, 0 for a uniform one
    (unlike the top probability, independent of the scale's size).

    >>> confidence([1.0, 0.0]), confidence([0.5, 0.5])
    (1.0, 0.0)
    """
    n = len(probs)
    if n < 2:
        return 1.0
    h = -sum(p * math.log(p) for p in probs if p > 0.0)
    return max(0.0, min(1.0, 1.0 - h / math.log(n)))


def summarize(dist: TokenDistribution, grades: Sequence[Any],
              values: "Mapping[Any, float] | None" = None) -> DistributionSummary:
    """Renormalise ``dist`` (whose choices are ``str(grade)``) over ``grades``;
    ``values``: the number each grade stands for (default the grade itself: named
    tokens such as ``{"m": 1.0, "M": 0.0}`` carry theirs). ``ZeroDivisionError``
    when no mass fell on any grade (check ``valid_mass`` first).

    >>> d = TokenDistribution({"0": 0.1, "1": 0.3, "2": 0.4})
    >>> s = summarize(d, [0, 1, 2]); round(s.expected, 3), s.most_likely, round(s.outside_mass, 2)
    (1.375, 2, 0.2)
    """
    norm = dist.normalized()
    probabilities = {g: norm.get(str(g), 0.0) for g in grades}
    number = values if values is not None else {g: g for g in grades}
    expected = sum(number[g] * p for g, p in probabilities.items())
    top = max(probabilities.values())
    most_likely = min((g for g, p in probabilities.items() if p == top), key=number.__getitem__)  # ties: the lower
    return DistributionSummary(probabilities, expected, most_likely,
                               confidence(list(probabilities.values())),
                               dist.valid_mass, dist.outside)


def read_distribution(dist: TokenDistribution, grades: Sequence[Any], floor: float,
                      name: str = "floor", values: "Mapping[Any, float] | None" = None
                      ) -> "DistributionSummary | NoVerdict":
    """The distribution's reading over ``grades`` (``summarize``), or why there is
    none: nothing, or less than ``floor`` (the option ``name``), fell on them."""
    if dist.valid_mass <= 0.0 or dist.valid_mass < floor:
        shown = (f"the tokens {', '.join(map(repr, grades))}" if values is not None
                 else f"the grades {min(grades)}-{max(grades)}")
        return NoVerdict(f"only {dist.valid_mass:.1%} of the judge's probability fell on {shown} "
                         f"({name} {floor:.0%})", kind="invalid")
    return summarize(dist, grades, values)


def distribution_text(probabilities: Mapping[Any, float], outside: float) -> str:
    """A compact JSON record of a distribution, used as a grade's raw reply."""
    return json.dumps({"probabilities": {str(k): round(v, 6) for k, v in probabilities.items()},
                       "outside": round(outside, 6)})
