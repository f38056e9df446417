"""Grading scales: binary (0-1), graded (0-4) and detailed (0-9).

Every grade on every scale is a single digit, so it is one token for common
tokenizers (Llama, Qwen, Mistral, SmolLM2: the digits 0-9 are single
tokens): a judge can answer in one step and its grade probabilities can be
read from one position. A grade maps to a reward in [0, 1] linearly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import ConfigError


@dataclass(frozen=True)
class Scale:
    """A named integer scale ``min..max`` with a label per grade.

    >>> Scale.get("graded").to_reward(3)
    0.75
    >>> [g for g, _ in Scale.BINARY.labels]
    [0, 1]
    """

    name: str
    min: int
    max: int
    labels: tuple[tuple[int, str], ...]

    BINARY: ClassVar["Scale"]
    GRADED: ClassVar["Scale"]
    DETAILED: ClassVar["Scale"]

    def __post_init__(self) -> None:
        if self.max <= self.min:
            raise ConfigError(f"scale {self.name!r}: max must exceed min")
        grades = [g for g, _ in self.labels]
        if grades != list(range(self.min, self.max + 1)):
            raise ConfigError(f"scale {self.name!r}: labels must cover {self.min}..{self.max} in order")

    @property
    def grades(self) -> list[int]:
        return list(range(self.min, self.max + 1))

    @property
    def size(self) -> int:
        return self.max - self.min + 1

    def contains(self, grade: Any) -> bool:
        return isinstance(grade, int) and not isinstance(grade, bool) and self.min <= grade <= self.max

    def to_reward(self, grade: float) -> float:
        """Map a grade (or an expected grade) to [0, 1]."""
        return (float(grade) - self.min) / (self.max - self.min)

    def label(self, grade: int) -> str:
        return dict(self.labels)[grade]

    def template_vars(self) -> dict[str, Any]:
        """``scale``, ``scale_min``, ``scale_max``, ``scale_labels`` for templates."""
        return {"scale": self.name, "scale_min": self.min, "scale_max": self.max,
                "scale_labels": [{"grade": g, "label": lab} for g, lab in self.labels]}

    @classmethod
    def get(cls, scale: "str | Scale") -> "Scale":
        """Look a scale up by name ("binary", "graded", "detailed") or pass one through."""
        if isinstance(scale, Scale):
            return scale
        try:
            return _BY_NAME[str(scale).lower()]
        except KeyError:
            raise ConfigError(f"unknown scale {scale!r}; expected one of {sorted(_BY_NAME)} "
                              f"or a Scale") from None


Scale.BINARY = Scale("binary", 0, 1, ((0, "Fail"), (1, "Pass")))
Scale.GRADED = Scale("graded", 0, 4, ((0, "Very poor"), (1, "Poor"), (2, "Acceptable"), (3, "Good"),
                                      (4, "Excellent")))
Scale.DETAILED = Scale("detailed", 0, 9, (
    (0, "Unusable"), (1, "Very poor"), (2, "Poor"), (3, "Weak"), (4, "Below average"),
    (5, "Average"), (6, "Above average"), (7, "Good"), (8, "Very good"), (9, "Excellent")))
_BY_NAME = {s.name: s for s in (Scale.BINARY, Scale.GRADED, Scale.DETAILED)}
SCALES = tuple(_BY_NAME.values())
