"""Built-in prompts, looked up by grader class, method and language.

Graders read prompts from the compiled bundles (``bundle.<lang>.json``
beside this module, built from the ``.txt`` sources by
``rewardjudge templates compile``; see ``bundle.py``), never from the
sources directly.

Language: the ``language`` argument, else the ``REWARDJUDGE_LANGUAGE``
environment variable (read at each call), else English. ``"fr"``,
``"fr_FR"``, ``"fr-FR"`` and ``"french"`` all mean French. A key the chosen
language's bundle lacks falls back to English with one
``PromptFallbackWarning`` per key (per process); a language with no bundle at
all falls back to English with one warning for the language.

A key missing from the English bundle while its ``.txt`` source exists (a
source checkout where someone added a prompt and did not recompile) is read
from the source, fragments inlined, with one warning saying to recompile.

>>> prompt_source("CriterionJudgeGrader", "system")[:20]  # doctest: +SKIP
'You are an impartial'
>>> prompt_source("CriterionJudgeGrader", "system", language="fr")[:20]  # doctest: +SKIP
'Vous êtes un juge im'
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .bundle import (TEMPLATES_DIR, bundle_path, inline_fragments, load_bundle, read_sources,
                     source_dir)

__all__ = ["LANGUAGE_ENV", "PromptFallbackWarning", "PromptLibrary", "prompt_source",
           "resolve_language"]

LANGUAGE_ENV = "REWARDJUDGE_LANGUAGE"

_ALIASES = {"english": "en", "french": "fr", "francais": "fr", "français": "fr", "german": "de",
            "deutsch": "de", "spanish": "es", "espanol": "es", "español": "es"}


class PromptFallbackWarning(UserWarning):
    """A prompt came from English (or from its source) instead of the bundle asked for."""


def resolve_language(language: str | None = None) -> str:
    """The language code to use: the argument, else ``$REWARDJUDGE_LANGUAGE``, else ``"en"``.

    >>> resolve_language("fr_FR"), resolve_language("French"), resolve_language("")
    ('fr', 'fr', 'en')
    """
    raw = language if language is not None else os.environ.get(LANGUAGE_ENV, "")
    if not isinstance(raw, str):
        raise ConfigError(f"language must be a str such as 'en' or 'fr', got {raw!r}")
    code = raw.strip().lower()
    if not code:
        return "en"
    code = _ALIASES.get(code, code)
    return code.replace("-", "_").split("_", 1)[0]


class PromptLibrary:
    """The compiled bundles under one templates folder, loaded lazily and cached.

    ``root`` holds ``bundle.<lang>.json`` (and, in a source checkout, the
    ``prompts*/`` sources). Thread-safe; ``reload()`` forgets loaded bundles
    and the warnings already given.
    """

    def __init__(self, root: Path | str = TEMPLATES_DIR):
        self.root = Path(root)
        self._bundles: dict[str, dict[str, Any] | None] = {}
        self._warned: set[tuple[str, ...]] = set()
        self._lock = threading.Lock()

    def reload(self) -> None:
        with self._lock:
            self._bundles.clear()
            self._warned.clear()

    def languages(self) -> list[str]:
        """Languages with a shipped bundle, English first."""
        found = sorted(p.name[len("bundle."):-len(".json")] for p in self.root.glob("bundle.*.json"))
        return ["en", *[lang for lang in found if lang != "en"]]

    def bundle(self, language: str) -> dict[str, Any] | None:
        """The bundle for ``language`` (None when it has none; English must exist)."""
        with self._lock:
            if language not in self._bundles:
                path = bundle_path(self.root, language)
                if language != "en" and not path.is_file():
                    self._bundles[language] = None
                else:
                    self._bundles[language] = load_bundle(path)
            return self._bundles[language]

    def keys(self, language: str = "en") -> list[tuple[str, str]]:
        """``(class, method)`` pairs the language's bundle holds, in bundle order."""
        b = self.bundle(resolve_language(language)) or {"prompts": {}}
        return [(c, m) for c, ms in b["prompts"].items() for m in ms]

    def _warn_once(self, key: tuple[str, ...], message: str) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        warnings.warn(message, PromptFallbackWarning, stacklevel=3)

    def source(self, grader_class: str, method: str, language: str | None = None) -> str:
        """The template source of a built-in prompt (fragments already inlined)."""
        lang = resolve_language(language)
        if lang != "en":
            b = self.bundle(lang)
            if b is None:
                self._warn_once(("language", lang),
                                f"no prompt bundle for language {lang!r} (have: "
                                f"{', '.join(self.languages())}); using English")
            else:
                text = b["prompts"].get(grader_class, {}).get(method)
                if text is not None:
                    return text
                self._warn_once(("key", lang, grader_class, method),
                                f"prompt {grader_class}/{method} has no {lang!r} translation; "
                                f"using English")
        text = (self.bundle("en") or {"prompts": {}})["prompts"].get(grader_class, {}).get(method)
        if text is not None:
            return text
        return self._from_source(grader_class, method)

    def _from_source(self, grader_class: str, method: str) -> str:
        src = source_dir(self.root, "en") / grader_class / f"{method}.txt"
        if not src.is_file():
            known = sorted({c for c, _ in self.keys("en")})
            raise ConfigError(f"no built-in prompt {grader_class}/{method} (classes with prompts: "
                              f"{', '.join(known) or '(none)'})")
        self._warn_once(("source", grader_class, method),
                        f"prompt {grader_class}/{method} is not in the compiled bundle; read from "
                        f"{src.name} instead. Run `rewardjudge templates compile`.")
        _, fragments = read_sources(source_dir(self.root, "en"))
        return inline_fragments(src.read_text(encoding="utf-8"), fragments,
                                f"{grader_class}/{method}.txt")


_DEFAULT = PromptLibrary()


def default_library() -> PromptLibrary:
    """The library over the package's shipped bundles."""
    return _DEFAULT


def prompt_source(grader_class: str, method: str, language: str | None = None) -> str:
    """The source text of a built-in prompt, in ``language`` (see the module doc).

    Raises ``ConfigError`` when no bundle (nor source) has the key.
    """
    return _DEFAULT.source(grader_class, method, language)
