"""Compile the built-in prompt sources into one JSON bundle per language; the layout and the
bundle format: docs/templates.md. A recompile keeps known keys in place (a diff shows only what changed)."""

from __future__ import annotations

import contextlib
import json
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError, TemplateError
from ._handlebars import Template, _compile, partial_names
from ._prompt import ENGINES
from ._pybars_overrides import indent_lines

__all__ = ["BUNDLE_FORMAT", "BundleReport", "TEMPLATES_DIR", "build_bundle", "bundle_entries",
           "bundle_path", "bundle_text", "check_bundles", "compile_bundles", "discover_languages",
           "entry_key", "expand_fragment_refs", "fragment_cycle", "fragment_refs",
           "is_language_slug", "load_bundle", "merge_bundles", "read_sources", "render_bundle",
           "source_dir"]

TEMPLATES_DIR = Path(__file__).resolve().parent
BUNDLE_FORMAT = 2
FRAGMENTS_DIR = "_fragments"
MULTIMODAL = "multimodal"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LANG = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
SECTIONS = ("prompts", MULTIMODAL)
ENGINE_KEY = "engine"
_FRAGMENT_REF = re.compile(r"\{\{-?\s*_fragments\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)"
                           r"|\[\s*(['\"])([A-Za-z_][A-Za-z0-9_]*)\2\s*\])\s*-?\}\}")


def fragment_refs(text: str) -> list[str]:
    """The fragment names a text uses as ``{{ _fragments.name }}``, in order, once each."""
    return list(dict.fromkeys(m.group(1) or m.group(3) for m in _FRAGMENT_REF.finditer(text)))


def expand_fragment_refs(text: str, fragments: dict[str, str], *, engine: str = "handlebars",
                         _stack: tuple[str, ...] = ()) -> str:
    """``text`` with every ``{{ _fragments.name }}`` replaced by that fragment's source (one final
    newline dropped), recursively; for a Jinja2 prompt (``engine="jinja2"``) every ``{{> name}}`` of
    a known fragment is inlined too (a standalone partial's line by the fragment, indented like the
    tag): one self-contained source. An unknown name or a cycle raises ``ConfigError``.

    >>> expand_fragment_refs("A {{ _fragments.rule }} B", {"rule": "be {{tone}}\\n"})
    'A be {{tone}} B'
    >>> expand_fragment_refs("A\\n  {{> rule}}\\nB", {"rule": "be fair\\n"}, engine="jinja2")
    'A\\n  be fair\\nB'
    """
    def body(name: str) -> str:
        if name in _stack:
            raise ConfigError(f"fragment cycle {' -> '.join((*_stack, name))}")
        return expand_fragment_refs(fragments[name], fragments, engine=engine, _stack=(*_stack, name))

    def ref(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        if name not in fragments:
            raise ConfigError(f"unknown fragment {name!r} in {{{{ _fragments.{name} }}}}; known: "
                              f"{', '.join(sorted(fragments)) or '(none)'}")
        inlined = body(name)
        return inlined[:-1] if inlined.endswith("\n") else inlined

    if "_fragments" in text:
        text = _FRAGMENT_REF.sub(ref, text)
    if engine != "jinja2" or "{{>" not in text:
        return text
    out, pos = [], 0
    for tag in _compile(text)[2]:
        if tag.kind != "partial" or tag.rest or tag.name not in fragments:
            continue
        inlined, start, end = body(tag.name), tag.start, tag.end
        if tag.standalone:   # the tag's whole line is the fragment, indented like the tag
            (start, end), inlined = tag.line(text), indent_lines(inlined, tag.indent)
        out += [text[pos:start], inlined]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def is_language_slug(text: str) -> bool:
    """A language slug: lowercase letters and digits, parts joined by ``-`` or ``_``."""
    return bool(_LANG.match(text))


def source_dir(root: Path, language: str) -> Path:
    return Path(root) / ("prompts" if language == "en" else f"prompts.{language}")


def bundle_path(root: Path, language: str) -> Path:
    return Path(root) / f"bundle.{language}.json"


def discover_languages(root: Path = TEMPLATES_DIR) -> list[str]:
    """``["en", *translations]``: English first, then every ``prompts.<lang>/`` folder, sorted
    (one whose ``<lang>`` is not a language slug is an error)."""
    langs = []
    for p in sorted(Path(root).glob("prompts.*")):
        if not p.is_dir():
            continue
        slug = p.name.split(".", 1)[1]
        if not is_language_slug(slug):
            raise ConfigError(f"{p}: {slug!r} is not a language slug (lowercase letters and "
                              f"digits, e.g. fr, pt_br, hindi); rename the folder")
        langs.append(slug)
    return ["en", *[lang for lang in langs if lang != "en"]]


def read_sources(folder: Path) -> tuple[dict[tuple[str, str, str], str], dict[str, str]]:
    """``({(section, class, method): text}, {fragment: text})`` of ``folder``'s sources (sorted
    by path). Names must be identifiers; anything else under ``folder`` is refused."""
    prompts: dict[tuple[str, str, str], str] = {}
    fragments: dict[str, str] = {}
    folder = Path(folder)
    for path in sorted(folder.rglob("*") if folder.is_dir() else []):
        if path.is_dir() or path.name.startswith(".") or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(folder)
        if path.suffix != ".txt" or len(rel.parts) != 2:
            raise ConfigError(f"{path}: prompt sources are <GraderClass>/<method>.txt, "
                              f"<GraderClass>/<method>.multimodal.txt or "
                              f"{FRAGMENTS_DIR}/<name>.txt; move or remove this file")
        group, stem = rel.parts[0], path.stem
        section = "prompts"
        if stem.endswith("." + MULTIMODAL) and group != FRAGMENTS_DIR:
            stem, section = stem[:-len(MULTIMODAL) - 1], MULTIMODAL
        if not _NAME.match(stem) or (group != FRAGMENTS_DIR and not _NAME.match(group)):
            raise ConfigError(f"{path}: class and method names must be identifiers")
        text = path.read_text(encoding="utf-8")
        if group == FRAGMENTS_DIR:
            fragments[stem] = text
        else:
            prompts[(section, group, stem)] = text
    return prompts, fragments


def entry_key(section: str, cls: str, method: str) -> str:
    """``Class/method``, or ``Class/method.multimodal`` for a multimodal variant."""
    return f"{cls}/{method}" + (f".{MULTIMODAL}" if section == MULTIMODAL else "")


def bundle_text(bundle: dict[str, Any], section: str, cls: str, method: str) -> str | None:
    return ((bundle.get(section) or {}).get(cls) or {}).get(method)


def bundle_entries(bundle: dict[str, Any] | None) -> Iterator[tuple[str, str, str, str]]:
    """``(section, class, method, text)`` for every prompt of a bundle."""
    for section in SECTIONS:
        for cls, methods in ((bundle or {}).get(section) or {}).items():
            for method, text in methods.items():
                yield section, cls, method, text


def fragment_cycle(fragments: dict[str, str]) -> list[str] | None:
    """A cycle among fragments using each other (``["a", "b", "a"]``), or None."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name):], name]
        found = None
        if name not in done:
            uses = [*partial_names(fragments[name]), *fragment_refs(fragments[name])]
            found = next(filter(None, (visit(u, [*path, name]) for u in uses if u in fragments)), None)
            done.add(name)
        return found

    return next(filter(None, (visit(name, []) for name in sorted(fragments))), None)


def _check_prompt(where: str, text: str, fragments: dict[str, str]) -> Template:
    """A bundle text as its template (``{{ _fragments.x }}`` expanded, the fragments its partials);
    ``ConfigError`` saying ``where`` when it is invalid."""
    try:
        text = expand_fragment_refs(text, fragments)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    try:
        return Template(text, name=where, strict=False, partials=fragments)
    except TemplateError as exc:
        used = re.search(r"uses partial '([^']+)', which is not defined", str(exc))
        if used:
            raise ConfigError(f"{where}: unknown fragment {used.group(1)!r}; known: "
                              f"{', '.join(sorted(fragments)) or '(none)'}") from None
        raise ConfigError(f"{where}: not a valid Handlebars template: {exc}") from None


def _ordered(new: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """``new``'s items, keys already in ``previous`` first in their old order, new keys after."""
    out = {k: new[k] for k in (previous or {}) if k in new}
    out.update((k, v) for k, v in new.items() if k not in out)
    return out


def build_bundle(root: Path = TEMPLATES_DIR, language: str = "en",
                 previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """Compile one language's sources into a bundle dict (nothing written); ``previous`` (the
    bundle on disk) fixes the order of known keys. A translation may use the English fragments.
    Raises ``ConfigError`` for a bad layout, an unknown fragment, a cycle or an invalid template."""
    folder = source_dir(root, language)
    prompts, own = read_sources(folder)
    fragments = {**(read_sources(source_dir(root, "en"))[1] if language != "en" else {}), **own}
    cycle = fragment_cycle(fragments)
    if cycle:
        raise ConfigError(f"{folder.name}: fragment cycle {' -> '.join(cycle)}")
    for name, text in fragments.items():
        _check_prompt(f"fragment {name!r}", text, fragments)
    sections: dict[str, dict[str, dict[str, str]]] = {s: {} for s in SECTIONS}
    for (section, cls, method), text in prompts.items():
        _check_prompt(f"{folder.name}/{entry_key(section, cls, method)}.txt", text, fragments)
        sections[section].setdefault(cls, {})[method] = text
    prev = previous or {}
    out: dict[str, Any] = {"format": BUNDLE_FORMAT, "language": language,
                           "fragments": _ordered(dict(sorted(own.items())), prev.get("fragments"))}
    for section in SECTIONS:
        prev_sec = prev.get(section) or {}
        out[section] = {cls: _ordered(methods, prev_sec.get(cls))
                        for cls, methods in _ordered(sections[section], prev_sec).items()}
    return out


def merge_bundles(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    """``high`` over ``low``, per fragment and per prompt (``format`` and ``language`` from ``high``)."""
    out = {"format": high.get("format"), "language": high.get("language"),
           "fragments": {**low.get("fragments", {}), **high.get("fragments", {})}}
    for section in SECTIONS:
        lo, hi = low.get(section) or {}, high.get(section) or {}
        out[section] = {c: {**lo.get(c, {}), **hi.get(c, {})} for c in {**lo, **hi}}
    return out


def render_bundle(bundle: dict[str, Any]) -> str:
    return json.dumps(bundle, indent=2, ensure_ascii=False) + "\n"


def load_bundle(path: Path) -> dict[str, Any]:
    """Read and shape-check a bundle file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"no prompt bundle at {path}; run `rewardjudge templates compile`") from None
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); run `rewardjudge templates compile`") from None
    if isinstance(data, dict) and "fragments" not in data and isinstance(data.get("_fragments"), dict):
        data["fragments"] = data.pop("_fragments")
    if isinstance(data, dict) and data.get(ENGINE_KEY, "handlebars") not in ENGINES:
        raise ConfigError(f"{path}: \"engine\" is \"handlebars\" (the default) or \"jinja2\", "
                          f"got {data.get(ENGINE_KEY)!r}")
    if not (isinstance(data, dict) and data.get("format") == BUNDLE_FORMAT
            and isinstance(data.get("prompts"), dict) and isinstance(data.get("fragments"), dict)
            and isinstance(data.get(MULTIMODAL, {}), dict)):
        raise ConfigError(f"{path} is not a format-{BUNDLE_FORMAT} prompt bundle; "
                          f"run `rewardjudge templates compile`")
    data.setdefault(MULTIMODAL, {})
    return data


def _keys(bundle: dict[str, Any] | None) -> dict[str, str]:
    return {entry_key(section, cls, method): text for section, cls, method, text in bundle_entries(bundle)}


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
    bundle: dict[str, Any] = field(default_factory=dict, repr=False)   # what was compiled

    def summary(self) -> str:
        state = "written" if self.written else ("STALE" if self.stale else "up to date")
        parts = [f"{self.language}: {self.prompts} prompts, {self.fragments} fragments -> "
                 f"{self.path.name} ({state})"]
        parts += [f"  {label}: {', '.join(keys)}" for label, keys in
                  (("added", self.added), ("removed", self.removed), ("changed", self.changed)) if keys]
        return "\n".join(parts)


def compile_bundles(root: Path = TEMPLATES_DIR, languages: list[str] | None = None, *,
                    write: bool = True) -> list[BundleReport]:
    """Compile every language's sources; write the bundles that changed. With ``write=False``
    nothing is written and each report's ``stale`` says whether the file on disk differs."""
    root = Path(root)
    reports = []
    for language in languages or discover_languages(root):
        path = bundle_path(root, language)
        old_text = path.read_text(encoding="utf-8") if path.is_file() else None
        previous = None
        with contextlib.suppress(ValueError):
            previous = json.loads(old_text) if old_text else None
        previous = previous if isinstance(previous, dict) else None
        bundle = build_bundle(root, language, previous)
        text = render_bundle(bundle)
        new_keys, old_keys = _keys(bundle), _keys(previous)
        report = BundleReport(language, path, len(new_keys), len(bundle["fragments"]),
                              added=sorted(set(new_keys) - set(old_keys)),
                              removed=sorted(set(old_keys) - set(new_keys)),
                              changed=sorted(k for k in set(new_keys) & set(old_keys)
                                             if new_keys[k] != old_keys[k]),
                              stale=text != old_text, bundle=bundle)
        if write and report.stale:
            path.write_text(text, encoding="utf-8")
            report.written = True
        if write and language == "en" and root.resolve() == TEMPLATES_DIR and methods_module_stale(root, bundle):
            (root / METHODS_MODULE).write_text(render_methods_module(bundle), encoding="utf-8")
        reports.append(report)
    return reports


METHODS_MODULE = "_methods.py"


def render_methods_module(bundle: dict[str, Any]) -> str:
    """The text of ``_methods.py``: one ``Literal`` of prompt method names per class of ``bundle``
    (``<Class>Method``) and ``PromptMethod``, all of them, for editors to complete and flag typos."""
    classes: dict[str, set[str]] = {}
    for _, cls, method, _ in bundle_entries(bundle):
        classes.setdefault(cls, set()).add(method)
    names = sorted(classes)

    def wrapped(head: str, items: list[str], tail: str) -> list[str]:
        return [head + ", ".join(items) + tail] if len(head + ", ".join(items)) < 100 else [
            head.rstrip(), *textwrap.wrap(", ".join(items), 96, initial_indent="    ",
                                          subsequent_indent="    "), tail.strip()]

    lines = ['"""Prompt method names per class, generated from bundle.en.json by',
             '``rewardjudge templates compile``; do not edit (a test fails when stale)."""', "",
             "from typing import Literal, get_args", "",
             *wrapped("__all__ = [", [f'"{n}"' for n in ["PROMPT_METHODS", "PromptMethod",
                                                          *(f"{c}Method" for c in names)]], "]"), ""]
    for cls in names:
        lines += wrapped(f"{cls}Method = Literal[", [f'"{m}"' for m in sorted(classes[cls])], "]")
    lines += ["#: every prompt method name",
              *wrapped("PromptMethod = Literal[", [f"{c}Method" for c in names], "]"),
              "", "#: class name -> its prompt method names", "PROMPT_METHODS = {",
              *(f'    "{c}": get_args({c}Method),' for c in names), "}"]
    return "\n".join(lines) + "\n"


def methods_module_stale(root: Path = TEMPLATES_DIR, bundle: dict[str, Any] | None = None) -> bool:
    """Whether ``root/_methods.py`` differs from what the English sources (``bundle``) generate."""
    path = Path(root) / METHODS_MODULE
    want = render_methods_module(bundle or build_bundle(root, "en"))
    return not path.is_file() or path.read_text(encoding="utf-8") != want


def check_bundles(root: Path = TEMPLATES_DIR) -> list[str]:
    """Problems with the shipped bundles, as messages ([] when all is well): a stale or unreadable
    bundle, a translation key with no English original or reading a variable the English lacks."""
    root = Path(root)
    try:
        reports = compile_bundles(root, write=False)
    except ConfigError as exc:
        return [str(exc)]
    english = reports[0].bundle   # discover_languages puts English first
    methods_stale = root.resolve() == TEMPLATES_DIR and methods_module_stale(root, english)
    problems = [f"{METHODS_MODULE} is stale; run `rewardjudge templates compile`"] if methods_stale else []
    problems += [f"{r.path.name} is stale (added: {r.added or '-'}, removed: {r.removed or '-'}, "
                 f"changed: {r.changed or '-'}); run `rewardjudge templates compile`" for r in reports if r.stale]
    for r in reports[1:]:
        problems += compare_to_english(r.bundle, english)
    return problems


def compare_to_english(bundle: dict[str, Any], english: dict[str, Any]) -> list[str]:
    """A translation's keys without an English original, and variables the English lacks."""
    problems = []
    language = bundle.get("language", "?")
    en_fragments = english.get("fragments") or {}
    fragments = {**en_fragments, **(bundle.get("fragments") or {})}
    for section, cls, method, text in bundle_entries(bundle):
        key = entry_key(section, cls, method)
        original = bundle_text(english, section, cls, method)
        if original is None:
            problems.append(f"{language}: {key} has no English original")
            continue
        # the variables each reads, its fragments' included
        extra = (set(_check_prompt(key, text, fragments).variables)
                 - set(_check_prompt(key, original, en_fragments).variables))
        if extra:
            problems.append(f"{language}: {key} reads {sorted(extra)}, which the English "
                            f"prompt does not use (the grader may not provide them)")
    return problems
