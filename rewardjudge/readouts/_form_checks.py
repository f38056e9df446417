"""A declared verdict form's labels and bounds, checked (``VerdictForm``): a bad one raises ``ConfigError``."""

from __future__ import annotations

import math

from ..errors import ConfigError

__all__ = ["checked_bounds", "checked_labels"]

_LABEL = "{label}"


def checked_labels(pattern: str, labels: object) -> "tuple[str, ...]":
    if isinstance(labels, str) or not labels:
        raise ConfigError(f"the form {pattern!r} holds {_LABEL}: give its labels "
                          f"as a tuple of strings, got {labels!r}")
    labels = tuple(labels)  # type: ignore[arg-type]
    bad = [lab for lab in labels if not isinstance(lab, str) or not lab.strip() or lab != lab.strip()]
    if bad:
        raise ConfigError(f"labels must be non-empty strings without surrounding whitespace, got {bad!r}")
    if len(set(labels)) != len(labels):
        raise ConfigError(f"labels repeat: {labels!r}")
    return labels


def checked_bounds(bounds: object) -> "tuple[float, float]":
    try:
        lo, hi = (float(b) for b in bounds)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise ConfigError(f"bounds must be two numbers (low, high), got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ConfigError(f"bounds must be finite with low <= high, got {bounds!r}")
    return lo, hi
