"""Grading scales: binary (0-1), graded (0-4) and detailed (0-9), single-digit grades mapped linearly to
a reward in [0, 1]; label families give them other labels (``Scale.get("graded", labels="relevance")``)."""

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
    #: the kind templates see as ``scale`` (binary/graded/detailed); "" means ``name``
    kind: str = ""

    BINARY: ClassVar["Scale"]
    GRADED: ClassVar["Scale"]
    DETAILED: ClassVar["Scale"]

    def __post_init__(self) -> None:
        if self.max <= self.min:
            raise ConfigError(f"scale {self.name!r}: max must exceed min")
        if [g for g, _ in self.labels] != self.grades:
            raise ConfigError(f"scale {self.name!r}: labels must cover {self.min}..{self.max} in order")

    @property
    def base(self) -> str:
        """What templates see as ``scale``: the kind for a label-family scale, else the name."""
        return self.kind or self.name

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
        return {"scale": self.base, "scale_min": self.min, "scale_max": self.max,
                "scale_labels": [{"grade": g, "label": lab} for g, lab in self.labels]}

    @classmethod
    def get(cls, scale: "str | Scale", labels: str | None = None) -> "Scale":
        """A scale by name, or passed through; ``labels`` names a family and gives its scale of that kind:

        >>> Scale.get("graded", labels="relevance").label(4)
        'Highly Relevant'
        >>> Scale.get("relevance-graded").template_vars()["scale"]
        'graded'
        """
        if isinstance(scale, Scale):
            found = scale
        else:
            try:
                found = _BY_NAME[str(scale).strip().lower()]
            except KeyError:
                raise ConfigError(f"unknown scale {scale!r}; expected one of {sorted(_BY_NAME)} "
                                  f"or a Scale") from None
        if labels is None:
            return found
        family = LABEL_FAMILIES.get(str(labels).strip().lower())
        if family is None:
            raise ConfigError(f"unknown label family {labels!r}; expected one of {sorted(LABEL_FAMILIES)}")
        if found.base not in family:
            raise ConfigError(f"the {labels!r} labels have no {found.base!r} scale "
                              f"(scale {found.name!r} runs {found.min}-{found.max})")
        return family[found.base]


Scale.BINARY = Scale("binary", 0, 1, ((0, "Fail"), (1, "Pass")))
Scale.GRADED = Scale("graded", 0, 4, ((0, "Very poor"), (1, "Poor"), (2, "Acceptable"), (3, "Good"), (4, "Excellent")))
Scale.DETAILED = Scale("detailed", 0, 9, (
    (0, "Unusable"), (1, "Very poor"), (2, "Poor"), (3, "Weak"), (4, "Below average"),
    (5, "Average"), (6, "Above average"), (7, "Good"), (8, "Very good"), (9, "Excellent")))
SCALES = (Scale.BINARY, Scale.GRADED, Scale.DETAILED)
"""The three kinds of scale (a typed question describes each of them)."""

RELEVANCE_SCALES = (
    Scale("relevance-binary", 0, 1, ((0, "Not Relevant"), (1, "Relevant")), kind="binary"),
    Scale("relevance-graded", 0, 4, (
        (0, "Not Relevant"), (1, "Marginally Relevant"), (2, "Somewhat Relevant"), (3, "Relevant"),
        (4, "Highly Relevant")), kind="graded"),
    Scale("relevance-detailed", 0, 9, (
        (0, "Completely Irrelevant"), (1, "Not Relevant"), (2, "Barely Relevant"),
        (3, "Marginally Relevant"), (4, "Slightly Relevant"), (5, "Somewhat Relevant"),
        (6, "Fairly Relevant"), (7, "Relevant"), (8, "Highly Relevant"), (9, "Perfectly Relevant")),
        kind="detailed"),
)
#: label family -> kind -> scale
LABEL_FAMILIES: dict[str, dict[str, Scale]] = {
    "generic": {s.name: s for s in SCALES}, "relevance": {s.kind: s for s in RELEVANCE_SCALES},
}
_BY_NAME = {s.name: s for s in (*SCALES, *RELEVANCE_SCALES)}
