"""Built-in prompts, looked up by grader class, method, language and modality.

Graders read prompts from the compiled bundles (``bundle.<lang>.json``
beside this module, built from the ``.txt`` sources by
``rewardjudge templates compile``; see ``bundle.py``), never from the
sources directly.

**Language**: the ``language`` argument, else the ``REWARDJUDGE_LANGUAGE``
environment variable (read at each call), else English. Any slug works
(``fr``, ``hindi``, ``pt_br``); ``"fr_FR"``, ``"fr-FR"`` and ``"french"``
all mean French when there is no bundle for the full slug. A key the chosen
language lacks falls back to English with one ``PromptFallbackWarning`` per
key (per process); a language with no bundle at all falls back to English
with one warning for the language.

**User bundles**: a folder given as ``user_dir`` (or listed in the
``REWARDJUDGE_PROMPTS`` environment variable, several joined by
``os.pathsep``) holds ``bundle.<lang>.json`` files (what ``rewardjudge
templates translate`` writes) and/or ``.txt`` sources laid out as the
shipped ones (``prompts/``, ``prompts.<lang>/``). They are merged over the
shipped bundles **per key**, prompts and fragments alike: for a language
``L`` a key is read from the user's ``L``, the shipped ``L``, the user's
English, then the shipped English.

**Fragments** are Handlebars partials resolved at render time from the same
chain (``prompt_template``); ``prompt_source`` returns one self-contained
source with them inlined.

**Multimodal**: ``multimodal=True`` asks for a prompt's variant for image
input (``<method>.multimodal.txt``) where one exists, else the plain prompt.

>>> prompt_template("CriterionJudgeGrader", "system").variables  # doctest: +SKIP
['criterion', 'output_schema']
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError
from ._bundle import (MULTIMODAL, TEMPLATES_DIR, build_bundle, bundle_path, discover_languages,
                     inline_partials, is_language_slug, load_bundle, source_dir)

__all__ = ["LANGUAGE_ENV", "PROMPTS_ENV", "PromptFallbackWarning", "PromptLibrary", "default_library",
           "prompt_source", "prompt_template", "resolve_language", "user_dirs"]

LANGUAGE_ENV = "REWARDJUDGE_LANGUAGE"
PROMPTS_ENV = "REWARDJUDGE_PROMPTS"

_ALIASES = {"english": "en", "french": "fr", "francais": "fr", "français": "fr", "german": "de",
            "deutsch": "de", "spanish": "es", "espanol": "es", "español": "es"}


class PromptFallbackWarning(UserWarning):
    """A prompt came from English (or from its source) instead of the bundle asked for."""


def _slug(language: str | None) -> str:
    raw = language if language is not None else os.environ.get(LANGUAGE_ENV, "")
    if not isinstance(raw, str):
        raise ConfigError(f"language must be a str such as 'en', 'fr' or 'hindi', got {raw!r}")
    code = raw.strip().lower().replace("-", "_")
    if not code:
        return "en"
    code = _ALIASES.get(code, code)
    if not is_language_slug(code):
        raise ConfigError(f"language {raw!r} is not a language slug (e.g. en, fr, pt_br, hindi)")
    return code


def resolve_language(language: str | None = None) -> str:
    """The base language code: the argument, else ``$REWARDJUDGE_LANGUAGE``, else ``"en"``.

    >>> resolve_language("fr_FR"), resolve_language("French"), resolve_language(""), resolve_language("hindi")
    ('fr', 'fr', 'en', 'hindi')
    """
    return _slug(language).split("_", 1)[0]


def user_dirs(user_dir: str | Path | Sequence[str | Path] | None = None) -> list[Path]:
    """The user bundle folders: ``user_dir``, else ``$REWARDJUDGE_PROMPTS`` (``os.pathsep``-joined)."""
    if user_dir is None:
        raw = os.environ.get(PROMPTS_ENV, "")
        return [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]
    if isinstance(user_dir, (str, Path)):
        return [Path(user_dir).expanduser()]
    return [Path(p).expanduser() for p in user_dir]


def _load_user_bundle(folder: Path, language: str) -> dict[str, Any] | None:
    """A user folder's bundle for ``language``: its JSON bundle, its sources, or both merged."""
    bundle = None
    path = bundle_path(folder, language)
    if path.is_file():
        bundle = load_bundle(path)
    if source_dir(folder, language).is_dir():
        built = build_bundle(folder, language)
        bundle = _merge(bundle, built) if bundle else built
    return bundle


def _merge(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    out = {"format": high.get("format"), "language": high.get("language"),
           "fragments": {**low.get("fragments", {}), **high.get("fragments", {})}}
    for section in ("prompts", MULTIMODAL):
        merged: dict[str, dict[str, str]] = {c: dict(m) for c, m in (low.get(section) or {}).items()}
        for cls, methods in (high.get(section) or {}).items():
            merged.setdefault(cls, {}).update(methods)
        out[section] = merged
    return out


class PromptLibrary:
    """The compiled bundles under one templates folder, plus user bundle folders.

    ``root`` holds the shipped ``bundle.<lang>.json`` (and, in a source
    checkout, the ``prompts*/`` sources). ``user_dir``: one folder or a list
    (default: ``$REWARDJUDGE_PROMPTS``, read at each call). Bundles are loaded
    lazily and cached; thread-safe; ``reload()`` forgets loaded bundles and the
    warnings already given.
    """

    def __init__(self, root: Path | str = TEMPLATES_DIR,
                 user_dir: str | Path | Sequence[str | Path] | None = None):
        self.root = Path(root)
        self._user_dir = user_dir
        self._bundles: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._warned: set[tuple[str, ...]] = set()
        self._lock = threading.Lock()

    def reload(self) -> None:
        with self._lock:
            self._bundles.clear()
            self._warned.clear()

    def user_dirs(self, user_dir=None) -> list[Path]:
        return user_dirs(user_dir if user_dir is not None else self._user_dir)

    def languages(self, user_dir=None) -> list[str]:
        """Languages with a bundle (shipped or user), English first."""
        found = set()
        for folder in [self.root, *self.user_dirs(user_dir)]:
            found.update(p.name[len("bundle."):-len(".json")] for p in folder.glob("bundle.*.json"))
            if folder != self.root and folder.is_dir():
                found.update(lang for lang in discover_languages(folder) if source_dir(folder, lang).is_dir())
        return ["en", *sorted(lang for lang in found if lang != "en")]

    def bundle(self, language: str, folder: Path | None = None) -> dict[str, Any] | None:
        """The bundle for ``language`` in ``folder`` (default: the shipped one); None when absent."""
        where = Path(folder) if folder is not None else self.root
        key = (str(where), language)
        with self._lock:
            if key not in self._bundles:
                if where == self.root:
                    path = bundle_path(where, language)
                    exists = path.is_file() or (language == "en")
                    self._bundles[key] = load_bundle(path) if exists else None
                else:
                    self._bundles[key] = _load_user_bundle(where, language)
            return self._bundles[key]

    def _language(self, language: str | None, user_dir=None) -> str:
        slug = _slug(language)
        if slug == "en" or "_" not in slug:
            return slug
        have = self.languages(user_dir)
        return slug if slug in have else slug.split("_", 1)[0]

    def chain(self, language: str | None = None, user_dir=None) -> list[tuple[str, dict[str, Any]]]:
        """``(language, bundle)`` layers consulted for a key, highest priority first."""
        lang = self._language(language, user_dir)
        layers = []
        for code in ([lang, "en"] if lang != "en" else ["en"]):
            for folder in self.user_dirs(user_dir):
                b = self.bundle(code, folder)
                if b:
                    layers.append((code, b))
            b = self.bundle(code)
            if b:
                layers.append((code, b))
        return layers

    def keys(self, language: str = "en", user_dir=None) -> list[tuple[str, str]]:
        """``(class, method)`` pairs the language's bundles hold (multimodal variants aside)."""
        lang = self._language(language, user_dir)
        seen: dict[tuple[str, str], None] = {}
        for code, b in self.chain(lang, user_dir):
            if code == lang:
                for cls, ms in b["prompts"].items():
                    for m in ms:
                        seen.setdefault((cls, m), None)
        return list(seen)

    def fragments(self, language: str | None = None, user_dir=None) -> dict[str, str]:
        """The fragments a prompt in ``language`` renders with, merged per name."""
        merged: dict[str, str] = {}
        for _, b in reversed(self.chain(language, user_dir)):
            merged.update(b.get("fragments") or {})
        return merged

    def _warn_once(self, key: tuple[str, ...], message: str) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        warnings.warn(message, PromptFallbackWarning, stacklevel=4)

    def raw_source(self, grader_class: str, method: str, language: str | None = None, *,
                   multimodal: bool = False, user_dir=None) -> str:
        """A prompt's text as stored (``{{> fragment}}`` tags kept)."""
        lang = self._language(language, user_dir)
        layers = self.chain(lang, user_dir)
        if lang != "en" and not any(code == lang for code, _ in layers):
            self._warn_once(("language", lang), f"no prompt bundle for language {lang!r} (have: "
                            f"{', '.join(self.languages(user_dir))}); using English")
        sections = [MULTIMODAL, "prompts"] if multimodal else ["prompts"]
        for section in sections:
            for code, b in layers:
                text = ((b.get(section) or {}).get(grader_class) or {}).get(method)
                if text is None:
                    continue
                if code != lang and any(c == lang for c, _ in layers):
                    self._warn_once(("key", lang, grader_class, method),
                                    f"prompt {grader_class}/{method} has no {lang!r} translation; "
                                    f"using English")
                return text
        return self._from_source(grader_class, method, multimodal)

    def _from_source(self, grader_class: str, method: str, multimodal: bool) -> str:
        folder = source_dir(self.root, "en")
        names = ([f"{method}.{MULTIMODAL}.txt"] if multimodal else []) + [f"{method}.txt"]
        for name in names:
            src = folder / grader_class / name
            if src.is_file():
                break
        else:
            known = sorted({c for c, _ in self.keys("en")})
            raise ConfigError(f"no built-in prompt {grader_class}/{method} (classes with prompts: "
                              f"{', '.join(known) or '(none)'})")
        self._warn_once(("source", grader_class, method),
                        f"prompt {grader_class}/{method} is not in the compiled bundle; read from "
                        f"{src.name} instead. Run `rewardjudge templates compile`.")
        return src.read_text(encoding="utf-8")

    def source(self, grader_class: str, method: str, language: str | None = None, *,
               multimodal: bool = False, user_dir=None) -> str:
        """A self-contained source of a built-in prompt (fragments inlined)."""
        text = self.raw_source(grader_class, method, language, multimodal=multimodal,
                               user_dir=user_dir)
        fragments = self.fragments(language, user_dir)
        if not fragments and source_dir(self.root, "en").is_dir():
            fragments = build_bundle(self.root, "en")["fragments"]
        return inline_partials(text, fragments)

    def template(self, grader_class: str, method: str, language: str | None = None, *,
                 multimodal: bool = False, strict: bool = True, user_dir=None,
                 name: str | None = None):
        """A ``PromptTemplate`` of a built-in prompt, its fragments as render-time partials."""
        from ._prompt import PromptTemplate

        text = self.raw_source(grader_class, method, language, multimodal=multimodal,
                               user_dir=user_dir)
        return PromptTemplate(text, "handlebars", name=name or f"{grader_class}/{method}",
                              strict=strict, partials=self.fragments(language, user_dir))


_DEFAULT = PromptLibrary()


def default_library() -> PromptLibrary:
    """The library over the package's shipped bundles and ``$REWARDJUDGE_PROMPTS``."""
    return _DEFAULT


def prompt_source(grader_class: str, method: str, language: str | None = None, *,
                  multimodal: bool = False, user_dir=None) -> str:
    """The source text of a built-in prompt, fragments inlined (see the module doc).

    Raises ``ConfigError`` when no bundle (nor source) has the key.
    """
    return _DEFAULT.source(grader_class, method, language, multimodal=multimodal, user_dir=user_dir)


def prompt_template(grader_class: str, method: str, language: str | None = None, *,
                    multimodal: bool = False, strict: bool = True, user_dir=None,
                    name: str | None = None):
    """A built-in prompt as a ``PromptTemplate`` whose fragments render as partials.

    >>> t = prompt_template("CriterionJudgeGrader", "system")  # doctest: +SKIP
    >>> t.render({"criterion": "Is it correct?", "output_schema": "{...}"})  # doctest: +SKIP
    """
    return _DEFAULT.template(grader_class, method, language, multimodal=multimodal, strict=strict,
                             user_dir=user_dir, name=name)
