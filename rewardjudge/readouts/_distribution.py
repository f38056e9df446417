"""The token-distribution readout: a judge's next-token probabilities over a few
choices, renormalised and weighed into an expected value (``read_distribution``: every
family's one expected-value step)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..models._base import TokenDistribution
from ._decision import NoVerdict

__all__ = ["EXPECTED_VALUE_FLOOR", "DistributionSummary", "confidence", "read_distribution"]

#: default floor of valid-score probability for the expected-value option
EXPECTED_VALUE_FLOOR = 0.5


@dataclass(frozen=True)
class DistributionSummary:
    """A distribution renormalised over the valid choices (``probabilities`` sum to 1),
    its expected value and most likely choice; ``valid_mass`` / ``outside_mass``: raw
    mass on and off them."""

    probabilities: dict[Any, float]
    expected: float
    most_likely: Any
    confidence: float
    valid_mass: float
    outside_mass: float
    ok = True

    def as_extra(self) -> dict[str, Any]:
        return {"expected_grade": self.expected,
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


def read_distribution(dist: TokenDistribution, values: Mapping[Any, float], floor: float, *,
                      option: str = "floor", shown: str | None = None) -> "DistributionSummary | NoVerdict":
    """The one expected-value step: ``dist`` (whose choices are ``str(choice)``) renormalised
    over the choices of ``values``, each worth ``values[choice]`` (a grade itself, a named
    token's reward, a verdict's value), or why there is none: nothing, or less than ``floor``
    (the option ``option``), fell on ``shown`` (default: the choices, named).

    >>> d = TokenDistribution({"0": 0.1, "1": 0.3, "2": 0.4})
    >>> s = read_distribution(d, {0: 0, 1: 1, 2: 2}, 0.5)
    >>> round(s.expected, 3), s.most_likely, round(s.outside_mass, 2)
    (1.375, 2, 0.2)
    """
    if dist.valid_mass <= 0.0 or dist.valid_mass < floor:
        shown = shown or f"the tokens {', '.join(map(repr, values))}"
        return NoVerdict(f"only {dist.valid_mass:.1%} of the judge's probability fell on {shown} "
                         f"({option} {floor:.0%})", kind="invalid")
    norm = dist.normalized()
    probabilities = {c: norm.get(str(c), 0.0) for c in values}
    expected = sum(values[c] * p for c, p in probabilities.items())
    top = max(probabilities.values())
    # ties: the lower value
    most_likely = min((c for c, p in probabilities.items() if p == top), key=values.__getitem__)
    return DistributionSummary(probabilities, expected, most_likely, confidence(list(probabilities.values())),
                               dist.valid_mass, dist.outside)
