"""The one cache folder: ``$REWARDJUDGE_CACHE``, else
``$XDG_CACHE_HOME/rewardjudge``, else ``~/.cache/rewardjudge``. Converted
models and tokenizers live under it (never in the repository)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_root"]

CACHE_ENV = "REWARDJUDGE_CACHE"


def cache_root() -> Path:
    """Where rewardjudge keeps converted models and tokenizers (read at each call)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rewardjudge")
    return Path(root)
