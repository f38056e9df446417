"""The one canonical JSON form and its SHA-256: grader versions, scorer
version ids, cache keys and dataset fingerprints all hash through here."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_hash", "canonical_json"]


def canonical_json(data: Any) -> str:
    """``data`` as canonical JSON: sorted keys, no spaces, UTF-8 kept; values
    JSON cannot hold are written with ``str`` (a dataset row's NaN as ``NaN``;
    configs that are hashed refuse non-finite numbers before they get here)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_hash(data: Any) -> str:
    """SHA-256 hex of ``canonical_json(data)``.

    >>> canonical_hash({"b": 1, "a": [1, 2]}) == canonical_hash({"a": [1, 2], "b": 1})
    True
    """
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()
