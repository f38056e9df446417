"""Compile the built-in prompt sources into one JSON bundle per language.

Sources are plain ``.txt`` files, easy to diff and edit::

    rewardjudge/templates/prompts/<GraderClass>/<method>.txt      English (the reference)
    rewardjudge/templates/prompts/_fragments/<name>.txt           shared English fragments
    rewardjudge/templates/prompts.<lang>/<GraderClass>/<method>.txt   a translation
    rewardjudge/templates/prompts.<lang>/_fragments/<name>.txt        its fragments

``compile_bundles()`` (``rewardjudge templates compile``) writes
``bundle.en.json`` and one ``bundle.<lang>.json`` per translation beside this
module; graders read only the bundles (``prompt_source`` in ``prompts.py``).

Fragments are inlined at compile time: a line or span ``[[> name]]`` is
replaced by the fragment's text (without its final newline). The marker is
neither Handlebars nor Jinja syntax on purpose: the Handlebars layer refuses
partials, and a marker left unresolved would otherwise be silently dropped.
Fragments may use other fragments; cycles and unknown names are errors. A
translation's prompt uses the translation's fragment when there is one and
the English fragment otherwise.

Bundle shape (``format`` 1)::

    {"format": 1, "language": "fr",
     "fragments": {"name": "text", ...},
     "prompts": {"GraderClass": {"method": "text with fragments inlined", ...}, ...}}

Order is stable: classes and methods already in the shipped bundle keep their
place and new ones are appended, so a recompile's diff shows only what
changed. Every prompt must compile as a Handlebars template.

>>> reports = compile_bundles(write=False)   # doctest: +SKIP
>>> [r.language for r in reports if r.stale]  # doctest: +SKIP
[]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, TemplateError

__all__ = ["BUNDLE_FORMAT", "BundleReport", "FRAGMENT_MARKER", "TEMPLATES_DIR", "build_bundle",
           "bundle_path", "check_bundles", "compile_bundles", "discover_languages",
           "inline_fragments", "load_bundle", "read_sources", "render_bundle"]

TEMPLATES_DIR = Path(__file__).resolve().parent
BUNDLE_FORMAT = 1
FRAGMENTS_DIR = "_fragments"
FRAGMENT_MARKER = re.compile(r"\[\[>\s*([A-Za-z0-9_.-]+)\s*\]\]")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LANG = re.compile(r"^[a-z]{2,3}(?:[-_][A-Za-z0-9]+)?$")


def source_dir(root: Path, language: str) -> Path:
    """Where a language's ``.txt`` sources live under ``root``."""
    return root / ("prompts" if language == "en" else f"prompts.{language}")


def bundle_path(root: Path, language: str) -> Path:
    """Where a language's compiled bundle lives under ``root``."""
    return root / f"bundle.{language}.json"


def discover_languages(root: Path = TEMPLATES_DIR) -> list[str]:
    """``["en", *translations]``: English first, then every ``prompts.<lang>/`` folder, sorted."""
    langs = sorted(p.name.split(".", 1)[1] for p in root.glob("prompts.*") if p.is_dir()
                   and _LANG.match(p.name.split(".", 1)[1]))
    return ["en", *[lang for lang in langs if lang != "en"]]


def read_sources(folder: Path) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    """Read ``folder``'s prompt sources and fragments (sorted by path).

    Returns ``({(class, method): text}, {fragment: text})``. Names must be
    identifiers; anything else under ``folder`` that is not a ``.txt`` source
    two levels down is refused rather than skipped.
    """
    prompts: dict[tuple[str, str], str] = {}
    fragments: dict[str, str] = {}
    if not folder.is_dir():
        return prompts, fragments
    for path in sorted(folder.rglob("*")):
        if path.is_dir() or path.name.startswith(".") or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(folder)
        if path.suffix != ".txt" or len(rel.parts) != 2:
            raise ConfigError(f"{path}: prompt sources are <GraderClass>/<method>.txt or "
                              f"{FRAGMENTS_DIR}/<name>.txt; move or remove this file")
        group, stem = rel.parts[0], path.stem
        if not _NAME.match(stem) or (group != FRAGMENTS_DIR and not _NAME.match(group)):
            raise ConfigError(f"{path}: class and method names must be identifiers")
        text = path.read_text(encoding="utf-8")
        if group == FRAGMENTS_DIR:
            fragments[stem] = text
        else:
            prompts[(group, stem)] = text
    return prompts, fragments


def inline_fragments(text: str, fragments: dict[str, str], where: str = "template",
                     _stack: tuple[str, ...] = ()) -> str:
    """Replace every ``[[> name]]`` in ``text`` by its fragment, recursively.

    >>> inline_fragments("A\\n[[> rule]]\\nB", {"rule": "be fair\\n"})
    'A\\nbe fair\\nB'
    """
    def expand(m: re.Match) -> str:
        name = m.group(1)
        if name not in fragments:
            line = text.count("\n", 0, m.start()) + 1
            raise ConfigError(f"{where}, line {line}: unknown fragment {name!r}; known: "
                              f"{', '.join(sorted(fragments)) or '(none)'}")
        if name in _stack:
            raise ConfigError(f"{where}: fragment cycle {' -> '.join((*_stack, name))}")
        body = fragments[name]
        body = body[:-1] if body.endswith("\n") else body
        return inline_fragments(body, fragments, f"fragment {name!r}", (*_stack, name))

    return FRAGMENT_MARKER.sub(expand, text)


def _ordered(new: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """``new``'s items, keys already in ``previous`` first in their old order, new keys after."""
    prev = list(previous or {})
    out = {k: new[k] for k in prev if k in new}
    out.update((k, v) for k, v in new.items() if k not in out)
    return out


def build_bundle(root: Path = TEMPLATES_DIR, language: str = "en",
                 previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """Compile one language's sources into a bundle dict (nothing written).

    ``previous`` (the bundle now on disk) fixes the order of known keys.
    Raises ``ConfigError`` for a bad source layout, an unknown fragment or a
    prompt that is not a valid Handlebars template.
    """
    from .handlebars import compile_template

    prompts, fragments = read_sources(source_dir(root, language))
    if language != "en":
        _, en_fragments = read_sources(source_dir(root, "en"))
        fragments = {**en_fragments, **fragments}
        own = set(read_sources(source_dir(root, language))[1])
    else:
        own = set(fragments)
    inlined_fragments = {name: inline_fragments(fragments[name], fragments, f"fragment {name!r}")
                         for name in sorted(own)}
    by_class: dict[str, dict[str, str]] = {}
    for (cls, method), text in prompts.items():
        where = f"{source_dir(root, language).name}/{cls}/{method}.txt"
        body = inline_fragments(text, fragments, where)
        try:
            compile_template(body)
        except TemplateError as exc:
            raise ConfigError(f"{where}: not a valid Handlebars template: {exc}") from None
        by_class.setdefault(cls, {})[method] = body
    prev_prompts = (previous or {}).get("prompts") or {}
    ordered = {cls: _ordered(methods, prev_prompts.get(cls))
               for cls, methods in _ordered(by_class, prev_prompts).items()}
    return {"format": BUNDLE_FORMAT, "language": language,
            "fragments": _ordered(inlined_fragments, (previous or {}).get("fragments")),
            "prompts": ordered}


def render_bundle(bundle: dict[str, Any]) -> str:
    """The bundle's file text: 2-space JSON, UTF-8 kept readable, final newline."""
    return json.dumps(bundle, indent=2, ensure_ascii=False) + "\n"


def load_bundle(path: Path) -> dict[str, Any]:
    """Read and shape-check a bundle file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"no prompt bundle at {path}; run `rewardjudge templates compile`") from None
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); run `rewardjudge templates compile`") from None
    if not (isinstance(data, dict) and data.get("format") == BUNDLE_FORMAT
            and isinstance(data.get("prompts"), dict) and isinstance(data.get("fragments"), dict)):
        raise ConfigError(f"{path} is not a format-{BUNDLE_FORMAT} prompt bundle; "
                          f"run `rewardjudge templates compile`")
    return data


def _keys(bundle: dict[str, Any] | None) -> set[str]:
    if not bundle:
        return set()
    return {f"{c}/{m}" for c, ms in bundle.get("prompts", {}).items() for m in ms}


@dataclass
class BundleReport:
    """What compiling one language did (or would do, when not written)."""

    language: str
    path: Path
    prompts: int
    fragments: int
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    stale: bool = False
    written: bool = False

    def summary(self) -> str:
        state = "written" if self.written else ("STALE" if self.stale else "up to date")
        parts = [f"{self.language}: {self.prompts} prompts, {self.fragments} fragments -> "
                 f"{self.path.name} ({state})"]
        for label, keys in (("added", self.added), ("removed", self.removed), ("changed", self.changed)):
            if keys:
                parts.append(f"  {label}: {', '.join(keys)}")
        return "\n".join(parts)


def compile_bundles(root: Path = TEMPLATES_DIR, languages: list[str] | None = None, *,
                    write: bool = True) -> list[BundleReport]:
    """Compile every language's sources; write the bundles that changed.

    With ``write=False`` nothing is written and each report's ``stale`` says
    whether the file on disk differs from what the sources compile to.
    """
    root = Path(root)
    reports = []
    for language in languages or discover_languages(root):
        path = bundle_path(root, language)
        old_text = path.read_text(encoding="utf-8") if path.is_file() else None
        try:
            previous = json.loads(old_text) if old_text else None
        except ValueError:
            previous = None
        bundle = build_bundle(root, language, previous if isinstance(previous, dict) else None)
        text = render_bundle(bundle)
        old_prompts = (previous or {}).get("prompts", {}) if isinstance(previous, dict) else {}
        new_keys, old_keys = _keys(bundle), _keys(previous if isinstance(previous, dict) else None)
        changed = sorted(k for k in new_keys & old_keys
                         if bundle["prompts"][k.split("/")[0]][k.split("/")[1]]
                         != old_prompts[k.split("/")[0]][k.split("/")[1]])
        report = BundleReport(language, path, len(new_keys), len(bundle["fragments"]),
                              added=sorted(new_keys - old_keys), removed=sorted(old_keys - new_keys),
                              changed=changed, stale=text != old_text)
        if write and report.stale:
            path.write_text(text, encoding="utf-8")
            report.written = True
        reports.append(report)
    return reports


def check_bundles(root: Path = TEMPLATES_DIR) -> list[str]:
    """Problems with the shipped bundles, as messages ([] when all is well).

    Reports a stale or unreadable bundle, a translation key with no English
    original, and a translation that reads a variable the English prompt does
    not (the grader would not provide it).
    """
    from .handlebars import template_variables

    problems: list[str] = []
    root = Path(root)
    try:
        reports = compile_bundles(root, write=False)
    except ConfigError as exc:
        return [str(exc)]
    for r in reports:
        if r.stale:
            problems.append(f"{r.path.name} is stale (added: {r.added or '-'}, removed: "
                            f"{r.removed or '-'}, changed: {r.changed or '-'}); "
                            f"run `rewardjudge templates compile`")
    english = build_bundle(root, "en")["prompts"]
    for language in discover_languages(root)[1:]:
        for cls, methods in build_bundle(root, language)["prompts"].items():
            for method, text in methods.items():
                key = f"{cls}/{method}"
                if method not in english.get(cls, {}):
                    problems.append(f"{language}: {key} has no English original")
                    continue
                extra = set(template_variables(text)) - set(template_variables(english[cls][method]))
                if extra:
                    problems.append(f"{language}: {key} reads {sorted(extra)}, which the English "
                                    f"prompt does not use (the grader may not provide them)")
    return problems
