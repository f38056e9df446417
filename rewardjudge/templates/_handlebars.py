"""Handlebars templates on pybars3, rendered as handlebars.js renders them.

pybars3 0.9.7 stays the engine (its parser and code generator); this module
puts a front end before it and patches the compiled module after it.

**Front end** (``_scan`` + ``_rewrite``): the source is tokenised here, with
real line and column numbers, and rewritten into a canonical form pybars3
parses exactly:

* standalone lines, as the Handlebars and Mustache specifications define
  them: a line holding only a block tag (``{{#x}}``, ``{{^x}}``, ``{{/x}}``,
  ``{{else}}``), a comment or a partial, plus spaces or tabs, is removed with
  its line ending; every other newline is kept (pybars3's own regexes drop
  the newline before a final ``{{/each}}`` and keep most standalone lines);
* ``{{~`` / ``~}}`` whitespace control;
* padded tags (``{{# boolean }}``, ``{{/ boolean }}``), dotted and implicit
  section names (``{{#a.b.c}}``, ``{{^a.b.c}}``, ``{{#.}}``): a section over a
  value is rewritten to an internal ``_section`` / ``_inverted`` helper with
  handlebars.js's ``blockHelperMissing`` semantics;
* ``{{else if ...}}`` chains (unsupported by pybars3) become nested blocks;
* comments are removed here, so ``{{!-- a }} b --}}`` no longer leaks;
* partials (``{{> name}}``, ``{{> name ctx key=value}}``) are resolved at
  render time from the template's ``partials``; a standalone partial is
  indented like its line, as handlebars.js does.

**Back end**: each compiled module gets its own ``prepare`` (no HTML
escaping: prompts are not HTML, our one deliberate deviation from
handlebars.js), a ``resolve`` with mustache-style lookup into enclosing
contexts (handlebars.js's ``compat`` mode: ``{{name}}`` inside a section or
``{{#each}}`` falls back to the enclosing contexts; ``this.name``,
``./name`` and ``../name`` do not) and helpers that keep the context chain.

The pybars3 traps stay closed (see the tests for each): an unclosed block or
mustache is an error with its real position (pybars3 silently drops the
rest, and reports the last line); ``{{#unless}}...{{else}}`` honours the else;
missing variables fail under ``strict=True`` naming both the missing and the
available ones; callables in the context are refused; compiles run one at a
time under a lock (pybars3 corrupts concurrent compiles), are cached by
source, and leave no module in ``sys.modules``.

Rendering is one pass: values are never re-read as template text, so policy
output containing ``{{...}}`` stays literal.

Truthiness: ``{{#if}}`` / ``{{#unless}}`` use Python's (``{}`` and ``0`` are
false); sections follow handlebars.js (``{{#x}}`` renders for ``""`` and
``0``, not for ``False``, ``None`` or ``[]``; ``{{^x}}`` is its exact
complement). Numbers print as Python prints them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable

from pybars import Compiler, PybarsError
from pybars import _compiler as _pyb
from pydantic import BaseModel

from ..errors import TemplateContextError, TemplateError, TemplateVariableError

__all__ = ["HELPERS", "Template", "compile_template", "template_variables"]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _truthy(v: Any) -> bool:
    return bool(v) and v != ""


def _num(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(v) if "." in v else int(v)
        except ValueError:
            return v
    return v


def _unless(this, options, value):
    # pybars' own unless drops the {{else}} branch.
    return options["inverse"](this) if _truthy(value) else options["fn"](this)


def _json(this, value, *args, **kwargs):
    return json.dumps(value, ensure_ascii=False, indent=kwargs.get("indent"))


def _join(this, items, sep=", ", *args):
    if items is None:
        return ""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        return str(items)
    return str(sep).join("" if i is None else str(i) for i in items)


def _default(this, value, fallback, *args):
    return fallback if value is None or value == "" else value


HELPERS: dict[str, Callable[..., Any]] = {
    "eq": lambda this, a, b, *r: a == b or _num(a) == _num(b) and not isinstance(_num(a), str),
    "ne": lambda this, a, b, *r: not (a == b or _num(a) == _num(b) and not isinstance(_num(a), str)),
    "gt": lambda this, a, b, *r: _num(a) > _num(b),
    "lt": lambda this, a, b, *r: _num(a) < _num(b),
    "ge": lambda this, a, b, *r: _num(a) >= _num(b),
    "le": lambda this, a, b, *r: _num(a) <= _num(b),
    "and": lambda this, *args, **kw: all(_truthy(a) for a in args),
    "or": lambda this, *args, **kw: any(_truthy(a) for a in args),
    "not": lambda this, a, *r: not _truthy(a),
    "json": _json,
    "join": _join,
    "default": _default,
    "unless": _unless,
    "add": lambda this, a, b, *r: _num(a) + _num(b),
}
"""Helpers every template gets: comparisons (``eq ne gt lt ge le``), logic
(``and or not``), ``json value``, ``join list sep``, ``default value fallback``,
``add a b``; ``unless`` is fixed to honour ``{{else}}``."""
_HELPERS_AS_SHIPPED = dict(HELPERS)   # remembered renders assume these helpers
_ABSENT = ("absent",)                 # a name the context lacks, in a memo key

#: remembered renders per template, misses in a row before the memo rests,
#: and renders it then rests for
_MEMO_SIZE = 16
_MEMO_PROBES = 8
_MEMO_REST = 1024


_BUILTIN_BLOCKS = {"if", "unless", "each", "with"}
_SCOPED_BLOCKS = {"each", "with"}
_BUILTIN_HELPERS = _BUILTIN_BLOCKS | {"lookup", "log"}


def _known_helpers() -> set[str]:
    return set(HELPERS) | _BUILTIN_HELPERS


# --------------------------------------------------------------------------
# runtime: context chain, sections, partials (installed in each compiled module)
# --------------------------------------------------------------------------
_Scope = _pyb.Scope
_DATA_NAMES = ("@root", "@_parent", "@index", "@key", "@first", "@last")


def _step(value: Any, seg: str) -> Any:
    """One path step over plain data: keys and list indices, never attributes
    (pybars3 reads attributes, so ``{{items}}`` could find ``dict.items``)."""
    if type(value) is _Scope:
        if seg[0] == "@":
            return value.get(seg) if seg in _DATA_NAMES else None
        if seg == "this":
            return value.context
        if value.overrides and seg in value.overrides:
            return value.overrides[seg]
        value = value.context
    if isinstance(value, dict):
        return value.get(seg)
    if isinstance(value, (list, tuple, str)):
        if seg == "length":
            return len(value)
        if isinstance(value, str) or not seg.isdigit():
            return None
        i = int(seg)
        return value[i] if i < len(value) else None
    return None


def _resolve_path(context: Any, segments: tuple[str, ...]) -> Any:
    carry = False
    for seg in segments:
        if carry:  # pybars3 spells @../index as "@@_parent", "index"
            carry, seg = False, "@" + seg
        if seg[:2] == "@@":
            seg, carry = seg[1:], True
        if context is None:
            return None
        if seg:  # "" is this / .
            context = _step(context, seg)
    return context.context if type(context) is _Scope else context


def _compat_resolve(context, *segments):
    """pybars3's ``resolve``, with mustache-style lookup of the first segment.

    A plain name (``name``, ``a.b``) is looked up in the current context,
    then in each enclosing one, and the first context where it is not null
    answers (handlebars.js ``compat`` mode). ``this.x`` / ``./x`` (first
    segment ``""``), ``../x`` and ``@data`` names stay explicit.
    """
    first = segments[0] if segments else ""
    if not first or first[0] == "@" or first == "this" or type(context) is not _Scope:
        return _resolve_path(context, segments)
    scope = context
    while True:
        value = _step(scope, first)
        if value is not None:   # the rest of the path from there (_resolve_path's walk)
            if len(segments) == 1 and type(value) is not _Scope:
                return value
            return _resolve_path(value, segments[1:])
        parent = scope.parent if type(scope) is _Scope else None
        if parent is None or parent is scope or parent is getattr(scope, "context", None):
            return None
        scope = parent


def _lookup_helper(this, value, key, *args):
    return None if value is None else _step(value, str(key))


def _child(value, this, options):
    return _Scope(value, this, options["root"])


def _section(this, options, value):
    """``{{#name}}`` over a value: handlebars.js ``blockHelperMissing``."""
    if value is True:
        return options["fn"](this)
    if value is False or value is None:
        return options["inverse"](this)
    if isinstance(value, (list, tuple)):
        if not value:
            return options["inverse"](this)
        return _pyb._each(this, options, value)
    return options["fn"](_child(value, this, options))


def _inverted(this, options, value):
    """``{{^name}}``: the exact complement of ``_section``."""
    if value is False or value is None or (isinstance(value, (list, tuple)) and not value):
        return options["fn"](this)
    return options["inverse"](this)


def _with(this, options, value):
    if value is None or value is False or value == "" or (isinstance(value, (list, tuple))
                                                          and not value):
        return options["inverse"](this)
    return options["fn"](_child(value, this, options))


def _partial(this, options, name, *args, **hash_):
    partials = options.get("partials") or {}
    fn = partials.get(name)
    if fn is None:
        raise TemplateError(f"partial {name!r} is not defined; defined: "
                            f"{', '.join(sorted(partials)) or '(none)'}")
    indent = hash_.pop("__indent", "")
    if args or hash_:
        context = args[0] if args else this
        if type(context) is _Scope:
            context = context.context
        this = _Scope(context, this, options["root"], overrides=hash_ or None)
    out = str(fn(this, helpers=options["helpers"], partials=partials, root=options["root"]))
    if indent:
        lines = out.split("\n")
        out = "\n".join(indent + line if (line or i + 1 < len(lines)) else line
                        for i, line in enumerate(lines))
    return _pyb.strlist([out])


def _no_escape_prepare(value, should_escape):
    # pybars3's prepare without escaping
    if value is None:
        return ""
    t = type(value)
    if t is str or t is _pyb.strlist:
        return value
    if t is bool:
        return "true" if value else "false"
    return str(value)


_RUNTIME_HELPERS = {
    **_pyb._pybars_["helpers"],
    "with": _with,
    "unless": _unless,
    "blockHelperMissing": _section,
    "_section": _section,
    "_inverted": _inverted,
    "_partial": _partial,
    "lookup": _lookup_helper,
    "_lb": lambda this, *a, **k: "{",
}
_RUNTIME = {"helpers": _RUNTIME_HELPERS}


def _install_runtime(fn) -> None:
    g = fn.__globals__
    g["prepare"] = _no_escape_prepare
    g["resolve"] = _compat_resolve
    g["_pybars_"] = _RUNTIME


# --------------------------------------------------------------------------
# front end: scan (validate) and rewrite
# --------------------------------------------------------------------------
_NAME_RE = re.compile(r"\s*(\S+?)(?=\s|$)(.*)", re.S)
_PARTIAL_NAME = re.compile(r"""\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_][A-Za-z0-9_.\-/]*))(.*)""", re.S)
_JINJA_STATEMENT = re.compile(r"\{%[-+]?\s*([A-Za-z_]\w*)")
_STANDALONE_KINDS = {"comment", "open", "inverse", "close", "else", "chain", "partial"}


@dataclasses.dataclass
class _Tag:
    start: int                 # span in the source
    end: int
    kind: str                  # comment open inverse close else chain partial expr amp triple
    name: str = ""             # block / partial name
    rest: str = ""             # the arguments after the name
    inner: str = ""            # the tag's text inside its delimiters, trimmed
    strip_before: bool = False  # {{~
    strip_after: bool = False   # ~}}
    standalone: bool = False
    indent: str = ""           # a standalone partial's line indentation
    emit_name: str = ""        # the block name pybars3 sees (open / inverse / chain)
    chain: list = dataclasses.field(default_factory=list)  # closers owed by {{else x}} (open tags)
    section: bool = False      # a section over a value, not a helper call


def _line_col(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    col = pos - (source.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _error(msg: str, source: str, pos: int) -> TemplateError:
    line, col = _line_col(source, pos)
    return TemplateError(msg, line=line, column=col, source=source)


def _refuse_jinja(source: str) -> None:
    m = _JINJA_STATEMENT.search(source)
    if m:
        raise _error(f"'{{% {m.group(1)} %}}' is Jinja2 syntax, and this template is Handlebars "
                     f"(write {{{{#if x}}}}...{{{{/if}}}}, {{{{#each xs}}}}...{{{{/each}}}}, or use "
                     f"engine='jinja2')", source, m.start())


def _scan(source: str) -> list[_Tag]:
    """Tokenise and check ``source``; return its tags in order.

    Raises ``TemplateError`` at the first unclosed mustache or comment,
    unclosed, unopened or mismatched block, misplaced ``{{else}}``, Jinja2
    statement or unsupported form, with the real line and column.
    """
    _refuse_jinja(source)
    tags: list[_Tag] = []
    stack: list[_Tag] = []
    known = _known_helpers()
    i = 0
    while True:
        start = source.find("{{", i)
        if start < 0:
            break
        if source.startswith("{{{{", start):
            raise _error("raw blocks ({{{{...}}}}) are not supported", source, start)
        p = start + 2
        strip_before = source.startswith("~", p)
        if strip_before:
            p += 1
        if source.startswith("!--", p):
            m = re.compile(r"--(~?)\}\}").search(source, p + 3)
            if not m:
                raise _error("unclosed comment: '{{!--' has no matching '--}}'", source, start)
            i = m.end()
            tags.append(_Tag(start, i, "comment", strip_before=strip_before,
                             strip_after=bool(m.group(1))))
            continue
        if source.startswith("!", p):
            end = source.find("}}", p + 1)
            if end < 0:
                raise _error("unclosed comment: '{{!' has no matching '}}'", source, start)
            i = end + 2
            tags.append(_Tag(start, i, "comment", strip_before=strip_before,
                             strip_after=source[end - 1] == "~" and end - 1 > p))
            continue
        triple = source.startswith("{", p)
        close = "}}}" if triple else "}}"
        body_start = p + 1 if triple else p
        end = source.find(close, body_start)
        nxt = source.find("{{", body_start)
        if end < 0 or (0 <= nxt < end):
            what = "'{{{' has no matching '}}}'" if triple else "'{{' has no matching '}}'"
            raise _error(f"unclosed mustache: {what}", source, start)
        i = end + len(close)
        inner = source[body_start:end]
        strip_after = inner.endswith("~")
        if strip_after:
            inner = inner[:-1]
        inner = inner.strip()
        tag = _Tag(start, i, "triple" if triple else "expr", inner=inner,
                   strip_before=strip_before, strip_after=strip_after)
        tags.append(tag)
        if not inner:
            raise _error("empty mustache '{{}}'", source, start)
        if triple:
            continue
        lead = inner[0]
        if lead in "#^" and inner != "^":
            body = inner[1:]
            if body[:1] in ("*", ">"):
                raise _error(f"unsupported block '{{{{{inner}}}}}' (decorators and partial "
                             f"blocks are not supported)", source, start)
            m = _NAME_RE.match(body)
            if not m:
                raise _error(f"block tag '{{{{{inner}}}}}' has no name", source, start)
            tag.kind = "open" if lead == "#" else "inverse"
            tag.name, tag.rest = m.group(1), m.group(2).strip()
            tag.section = tag.name not in known
            if tag.section and tag.rest:
                raise _error(f"'{{{{{inner}}}}}': {tag.name!r} is not a helper, and a section "
                             f"over a value takes no arguments (helpers: "
                             f"{', '.join(sorted(known))})", source, start)
            tag.emit_name = ("_section" if lead == "#" else "_inverted") if tag.section else tag.name
            stack.append(tag)
        elif lead == "/":
            tag.kind = "close"
            tag.name = inner[1:].strip()
            if not stack:
                raise _error(f"'{{{{/{tag.name}}}}}' closes a block that was never opened",
                             source, start)
            opened = stack.pop()
            if opened.name != tag.name:
                ol, oc = _line_col(source, opened.start)
                raise _error(f"'{{{{/{tag.name}}}}}' does not match the open block "
                             f"'{{{{#{opened.name}}}}}' from line {ol}, column {oc}", source, start)
            tag.emit_name = opened.emit_name
            tag.chain = opened.chain
        elif inner in ("else", "^"):
            tag.kind = "else"
            if not stack:
                raise _error("'{{else}}' outside any block", source, start)
        elif re.match(r"else\s", inner):
            if not stack:
                raise _error("'{{else ...}}' outside any block", source, start)
            m = _NAME_RE.match(inner[4:])
            tag.kind = "chain"
            tag.name, tag.rest = m.group(1), m.group(2).strip()
            tag.section = tag.name not in known
            if tag.section and tag.rest:
                raise _error(f"'{{{{{inner}}}}}': {tag.name!r} is not a helper", source, start)
            tag.emit_name = "_section" if tag.section else tag.name
            stack[-1].chain.append(tag.emit_name)
        elif lead == ">":
            tag.kind = "partial"
            m = _PARTIAL_NAME.match(inner[1:])
            if not m or (m.group(4) and not m.group(4)[:1].isspace()):
                raise _error(f"partial '{{{{{inner}}}}}': give the partial's name, e.g. "
                             f"'{{{{> header}}}}' (dynamic partials are not supported)", source, start)
            tag.name = m.group(1) or m.group(2) or m.group(3)
            tag.rest = m.group(4).strip()
        elif lead == "&":
            tag.kind = "amp"
            tag.rest = inner[1:].strip()
            if not tag.rest:
                raise _error("empty mustache '{{&}}'", source, start)
    if stack:
        opened = stack[-1]
        raise _error(f"unclosed block '{{{{#{opened.name}}}}}': no matching "
                     f"'{{{{/{opened.name}}}}}'", source, opened.start)
    _mark_standalone(source, tags)
    return tags


def _mark_standalone(source: str, tags: list[_Tag]) -> None:
    """Flag tags alone on their line (spaces and tabs aside), as the specs define it."""
    for tag in tags:
        if tag.kind not in _STANDALONE_KINDS:
            continue
        line_start = source.rfind("\n", 0, tag.start) + 1
        prefix = source[line_start:tag.start]
        if prefix.strip(" \t"):
            continue
        line_end = source.find("\n", tag.end)
        suffix = source[tag.end:len(source) if line_end < 0 else line_end]
        if suffix.rstrip("\r").strip(" \t"):
            continue
        tag.standalone = True
        tag.indent = prefix


def _emit_tag(tag: _Tag) -> str:
    k = tag.kind
    if k == "comment":
        return ""
    if k == "expr":
        return "{{" + tag.inner + "}}"
    if k == "amp":
        return "{{&" + tag.rest + "}}"
    if k == "triple":
        return "{{{" + tag.inner + "}}}"
    if k in ("open", "inverse", "chain"):
        prefix = "{{else}}" if k == "chain" else ""
        if tag.section:
            return prefix + "{{#" + tag.emit_name + " " + tag.name + "}}"
        mark = "^" if k == "inverse" else "#"
        return prefix + "{{" + mark + tag.name + (" " + tag.rest if tag.rest else "") + "}}"
    if k == "close":
        return "".join("{{/" + n + "}}" for n in reversed(tag.chain)) + "{{/" + tag.emit_name + "}}"
    if k == "else":
        return "{{else}}"
    if k == "partial":
        args = " " + json.dumps(tag.name)
        if tag.rest:
            args += " " + tag.rest
        if tag.standalone and tag.indent:
            args += " __indent=" + json.dumps(tag.indent)
        return "{{#_partial" + args + "}}{{/_partial}}"
    raise AssertionError(k)  # pragma: no cover


def _rewrite(source: str, tags: list[_Tag]) -> str:
    """The canonical source pybars3 compiles (see the module doc)."""
    out: list[str] = []
    pos = 0
    prev: _Tag | None = None
    for tag in tags + [None]:
        lo = pos
        if prev is not None and prev.standalone:
            line_end = source.find("\n", prev.end)
            lo = len(source) if line_end < 0 else line_end + 1
        hi = len(source) if tag is None else tag.start
        if tag is not None and tag.standalone:
            hi = source.rfind("\n", 0, tag.start) + 1
        text = source[lo:hi] if hi > lo else ""
        if prev is not None and prev.strip_after:
            text = text.lstrip()
        if tag is not None and tag.strip_before:
            text = text.rstrip()
        if tag is not None and text.endswith("{"):
            # a brace right before a tag would turn it into a triple stash
            bare = text.rstrip("{")
            text = bare + "{{_lb}}" * (len(text) - len(bare))
        out.append(text)
        if tag is None:
            break
        out.append(_emit_tag(tag))
        pos = tag.end
        prev = tag
    return "".join(out)


# --------------------------------------------------------------------------
# compile cache
# --------------------------------------------------------------------------
class _Compiler(Compiler):
    # the front end has done standalone lines and ~ already; pybars3's own
    # regexes would remove the wrong newlines
    def whitespace_control(self, source):
        return source


_COMPILE_LOCK = threading.Lock()
_CACHE: dict[str, tuple[Callable[..., Any], tuple, tuple[_Tag, ...]]] = {}
_CACHE_MAX = 512
_PARSER = _Compiler()
_JINJA_HINT = re.compile(r"\||\w\(|\s[-+*/%]\s|==|!=|\bis\s+defined\b")


def _parse(canonical: str):
    tree, (pos, _) = _PARSER._handlebars(canonical).apply("template")
    return tree, pos


def _locate_parse_error(source: str, tags: list[_Tag]) -> TemplateError:
    """pybars3 reports the wrong line: parse tag by tag to find the culprit."""
    for tag in tags:
        if tag.kind in ("close", "else", "comment"):
            continue
        probe = _emit_tag(tag)
        if tag.kind == "chain":
            probe = probe[len("{{else}}"):]
        if tag.kind in ("open", "inverse", "chain"):
            probe += "{{/" + tag.emit_name + "}}"
        try:
            _, end = _parse(probe)
        except Exception:
            end = -1
        if end < len(probe):
            text = source[tag.start:tag.end]
            hint = (" (filters, calls and operators are Jinja2 syntax; this template is "
                    "Handlebars: use helpers such as (eq a b), or engine='jinja2')"
                    if _JINJA_HINT.search(tag.inner) else "")
            return _error(f"invalid tag {text!r}{hint}", source, tag.start)
    return TemplateError("template could not be parsed")


def _compile(source: str) -> tuple[Callable[..., Any], tuple, tuple[_Tag, ...]]:
    if not isinstance(source, str):
        raise TemplateError(f"template source must be a str, got {type(source).__name__}")
    hit = _CACHE.get(source)
    if hit is not None:
        return hit
    tags = _scan(source)
    canonical = _rewrite(source, tags)
    with _COMPILE_LOCK:
        hit = _CACHE.get(source)
        if hit is not None:
            return hit
        before = set(sys.modules)
        try:
            tree, pos = _parse(canonical)
            if pos < len(canonical):
                raise _locate_parse_error(source, tags)
            fn = _PARSER.compile(canonical)
        except TemplateError:
            raise
        except PybarsError as exc:
            raise _locate_parse_error(source, tags) from exc
        finally:
            # pybars registers one module per compile; the function keeps its
            # globals, so the registry entry is only a leak.
            for name in set(sys.modules) - before:
                if name.startswith("pybars._templates."):
                    del sys.modules[name]
        _install_runtime(fn)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        entry = (fn, tuple(tree), tuple(tags))
        _CACHE[source] = entry
        return entry


def compile_template(source: str) -> tuple[Callable[..., Any], tuple]:
    """Validate and compile ``source`` once; return ``(render_fn, parse_tree)``.

    ``render_fn(context, helpers=..., partials=...)`` renders as
    handlebars.js does (see the module doc), without HTML escaping;
    ``partials`` maps names to other compiled functions. Thread-safe:
    compiles run one at a time (pybars3 corrupts concurrent compiles) and each
    source is compiled once per process.
    """
    fn, tree, _ = _compile(source)
    return fn, tree


def partial_names(source: str) -> list[str]:
    """The partials ``source`` uses (``{{> name}}``), in first-use order."""
    _, _, tags = _compile(source)
    return list(dict.fromkeys(t.name for t in tags if t.kind == "partial"))


# --------------------------------------------------------------------------
# variables
# --------------------------------------------------------------------------
def _path_of(segments: list[str], depth: int) -> str | None:
    """The top-level dotted path a path node refers to, or None if scoped."""
    segs = list(segments)
    if segs and segs[0] == "@root":
        return ".".join(s for s in segs[1:] if s) or None
    ups = 0
    while segs and segs[0] == "@_parent":
        ups += 1
        segs.pop(0)
    if depth - ups != 0:
        return None
    segs = [s for s in segs if s and s != "this"]
    if not segs or segs[0].startswith("@"):
        return None
    return ".".join(segs)


class _Walk:
    def __init__(self, partials: Mapping[str, str] | None):
        self.partials = partials or {}
        self.out: dict[str, None] = {}
        self.helpers = _known_helpers()
        self.seen: set[str] = set()

    def nodes(self, nodes, depth: int) -> None:
        for node in nodes:
            if not isinstance(node, tuple) or not node:
                continue
            kind = node[0]
            if kind in ("expand", "escapedexpand"):
                path, args = node[1], node[2]
                segs = path[1]
                is_helper = len(segs) == 1 and (segs[0] == "_lb" or segs[0] in self.helpers and (
                    args or segs[0] in HELPERS))
                if not is_helper:
                    self.path(segs, depth)
                self.args(args, depth)
            elif kind in ("block", "invertedblock"):
                self.block(kind, node[1], node[2], node[3], node[4], depth)

    def block(self, kind, name, args, body, alt, depth: int) -> None:
        body = body[1:] if body else []
        alt = alt[1:] if alt else []
        if name == "_partial":
            pname = args[0][1][1:-1] if args and args[0][0] == "literalparam" else None
            rest = [a for a in args[1:] if a[0] != "kwparam"]
            self.args(args[1:], depth)
            src = self.partials.get(pname) if pname else None
            if src is not None and not rest and pname not in self.seen:
                self.seen.add(pname)
                _, tree, _ = _compile(src)
                self.nodes(tree[1:], depth)
                self.seen.discard(pname)
            return
        if name in ("_section", "_inverted"):
            self.args(args, depth)
            self.nodes(body, depth + 1 if name == "_section" else depth)
            self.nodes(alt, depth)
            return
        if name in self.helpers:
            self.args(args, depth)
            inner = depth + 1 if name in _SCOPED_BLOCKS and kind == "block" else depth
            self.nodes(body, inner)
            self.nodes(alt, depth)
            return
        self.path([name], depth)  # pragma: no cover - sections are rewritten to _section

    def path(self, segs, depth: int) -> None:
        p = _path_of(segs, depth)
        if p:
            self.out[p] = None

    def args(self, args, depth: int) -> None:
        for arg in args:
            if arg[0] == "path":
                self.path(arg[1], depth)
            elif arg[0] == "subexpr":
                self.args(arg[2], depth)
            elif arg[0] == "kwparam":
                self.args([arg[2]], depth)


def template_variables(source: str, partials: Mapping[str, str] | None = None) -> list[str]:
    """The top-level variable paths ``source`` reads, in first-use order.

    Paths inside ``{{#each}}``/``{{#with}}``/sections that refer to the item
    are not listed; ``../x`` and ``@root.x`` inside them are. The variables
    of partials used at the top level are listed when their sources are given.

    >>> template_variables("{{#each items}}{{this.name}} {{../sep}}{{/each}}{{json meta.k}}")
    ['items', 'sep', 'meta.k']
    """
    _, tree = compile_template(source)
    walk = _Walk(partials)
    walk.nodes(tree[1:], 0)
    return list(walk.out)


# pure helpers: their output depends on their arguments only (``log`` prints)
_PURE_HELPERS = frozenset(HELPERS) | {"if", "unless", "each", "with", "lookup", "_section",
                                       "_inverted", "_lb"}
# blocks whose body always renders in a new scope (an item, a value): there,
# ``this`` is never the root context (a section over ``true`` keeps the scope)
_PUSHING_BLOCKS = frozenset({"each", "with"})


class _Unknown(Exception):
    """What a template reads cannot be told from its parse tree."""


def root_reads(tree: Any) -> frozenset[str] | None:
    """Every top-level name a compiled template can read, a superset: every
    path's first name, at any depth (inside a block a plain name falls back
    to the enclosing contexts, up to the root), ``../x`` and ``@root.x`` as
    ``x``. None when the template can read more than named paths or renders
    more than a function of them: the whole context (``{{this}}``, ``{{.}}``,
    ``{{../this}}`` where that can be the root, ``@root`` alone), partials,
    or a helper outside the built-in pure ones (``log``, helpers added to
    ``HELPERS`` later).

    >>> sorted(root_reads(compile_template("{{#each xs}}{{this}} {{../sep}}{{/each}}")[1]))
    ['sep', 'xs']
    """
    names: set[str] = set()

    def path(segs: Any, pushed: bool) -> None:
        segs = list(segs)
        ups = 0
        while segs and segs[0] == "@_parent":
            ups += 1
            segs.pop(0)
        if segs and segs[0] == "@root":
            rest = [x for x in segs[1:] if x and x != "this"]
            if not rest or rest[0][0] == "@":
                raise _Unknown
            names.add(rest[0])
            return
        real = [x for x in segs if x and x != "this"]
        if not real:
            if ups or not pushed:
                raise _Unknown   # this / ../ : maybe the whole root context
            return
        if any(x[0] == "@" for x in real[1:]):
            raise _Unknown
        if real[0][0] != "@":   # @index, @key, @../index: data of the block, no read
            names.add(real[0])

    def args(items: Any, pushed: bool) -> None:
        for arg in items:
            kind = arg[0]
            if kind == "path":
                path(arg[1], pushed)
            elif kind == "subexpr":
                helper = arg[1][1] if isinstance(arg[1], tuple) else None
                if not helper or helper[0] not in _PURE_HELPERS:
                    raise _Unknown
                args(arg[2], pushed)
            elif kind == "kwparam":
                args([arg[2]], pushed)
            elif kind != "literalparam":
                raise _Unknown

    def nodes(items: Any, pushed: bool) -> None:
        for node in items:
            if not isinstance(node, tuple) or not node:
                continue
            kind = node[0]
            if kind in ("expand", "escapedexpand"):
                segs, node_args = node[1][1], node[2]
                if node_args and (len(segs) != 1 or segs[0] not in _PURE_HELPERS):
                    raise _Unknown
                if not node_args or segs[0] not in _PURE_HELPERS:
                    path(segs, pushed)
                args(node_args, pushed)
            elif kind in ("block", "invertedblock"):
                name, node_args, body, alt = node[1], node[2], node[3], node[4]
                if name not in _PURE_HELPERS:
                    raise _Unknown   # _partial, log, a helper added later
                args(node_args, pushed)
                nodes(body[1:] if body else [],
                      pushed or (name in _PUSHING_BLOCKS and kind == "block"))
                nodes(alt[1:] if alt else [], pushed)
            elif kind not in ("literal", "newline", "whitespace", "comment"):
                raise _Unknown

    try:
        nodes(tree[1:], False)
    except _Unknown:
        return None
    return frozenset(names)


# --------------------------------------------------------------------------
# flat templates: rendered without pybars3
# --------------------------------------------------------------------------
# A template made only of text, ``{{name}}`` / ``{{name.path}}`` (also triple
# and ``&``) and ``{{#if name}}`` / ``{{#unless name}}`` blocks (``{{else}}``
# and ``{{else if}}`` included) over such paths renders in the root context
# alone, where the compiled pybars3 code comes down to: look the path up
# (``_step`` from the root), ``prepare`` it, join. ``flat_program`` compiles
# such a template to a tuple of steps; anything else (sections, ``each``,
# ``with``, helpers, ``this``, ``../``, ``@data``, partials) is None and
# renders through pybars3.
_LIT, _VAR, _IF, _UNLESS = "lit", "var", "if", "unless"


def flat_program(tree: Any) -> tuple | None:
    """The steps of a flat template (see above), or None."""
    helper_names = set(_RUNTIME_HELPERS) | set(_HELPERS_AS_SHIPPED)

    def path(segs: Any) -> tuple | None:
        if not segs:
            return None
        first = segs[0]
        if not first or first == "this" or first[0] == "@":
            return None
        rest = []
        for seg in segs[1:]:
            if seg == "" or seg == "this":   # compiled as '' and skipped by the lookup
                continue
            if seg[0] == "@":
                return None
            rest.append(seg)
        return first, tuple(rest)

    def nodes(items: Any) -> tuple | None:
        ops: list[tuple] = []
        for node in items:
            if not isinstance(node, tuple) or not node:
                return None
            kind = node[0]
            if kind in ("literal", "newline", "whitespace"):
                if ops and ops[-1][0] == _LIT:
                    ops[-1] = (_LIT, ops[-1][1] + node[1])
                else:
                    ops.append((_LIT, node[1]))
            elif kind in ("expand", "escapedexpand"):
                segs = node[1][1]
                if node[2] or (len(segs) == 1 and segs[0] in helper_names):
                    return None   # a helper call (or a name a helper answers)
                p = path(segs)
                if p is None:
                    return None
                ops.append((_VAR, p))
            elif kind == "block":
                name, args, body, alt = node[1], node[2], node[3], node[4]
                if name not in ("if", "unless") or len(args) != 1 or args[0][0] != "path":
                    return None
                p = path(args[0][1])
                then = nodes(body[1:] if body else [])
                other = nodes(alt[1:] if alt else [])
                if p is None or then is None or other is None:
                    return None
                ops.append((_IF if name == "if" else _UNLESS, p, then, other))
            elif kind != "comment":
                return None
        return tuple(ops)

    return nodes(tree[1:])


def _run_flat(ops: tuple, plain: dict, out: list[str]) -> None:
    for op in ops:
        kind = op[0]
        if kind is _LIT:
            out.append(op[1])
            continue
        first, rest = op[1]
        value = plain.get(first)
        for seg in rest:
            if value is None:
                break
            value = _step(value, seg)
        if kind is _VAR:
            out.append(_no_escape_prepare(value, False))
        elif kind is _IF:   # pybars3's if: Python truthiness
            _run_flat(op[2] if value else op[3], plain, out)
        else:               # our unless
            _run_flat(op[3] if _truthy(value) else op[2], plain, out)


# --------------------------------------------------------------------------
# context
# --------------------------------------------------------------------------
class PlainContext(dict):
    """A context already turned into plain data by ``to_plain_context``.

    ``changed`` names the top-level keys whose values had to be converted or
    hold a subclass of ``str``, ``int`` or ``float``; every other value is the
    caller's own object, plain data of exact types and not copied (templates
    only read it)."""

    __slots__ = ("changed",)


def to_plain_context(context: Mapping[str, Any]) -> PlainContext:
    """``context`` converted once (see ``to_plain``), to render several templates with.

    Values that are plain data already (exact ``dict`` with ``str`` keys,
    ``list``, ``str``, ``int``, ``bool``, ``None``, finite ``float``) are kept
    as they are instead of copied; everything else is converted as
    ``to_plain`` converts it, and a callable anywhere is refused."""
    if isinstance(context, PlainContext):
        return context
    src = context if type(context) is dict else dict(context)
    out = PlainContext()
    changed: list[str] = []
    for k, v in src.items():
        key = k if type(k) is str else str(k)
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            out[key] = v
            continue
        try:
            p = _view(v)
        except _CallableFound as found:
            found.steps.append(f".{k}")
            path = "context" + "".join(reversed(found.steps))
            raise TemplateContextError(
                f"{path} is callable ({found.value!r:.60}); templates take data only") from None
        if p is not v or t not in _EXACT_TYPES:   # converted, or kept as a subclass
            changed.append(key)
        out[key] = p
    out.changed = frozenset(changed)
    return out


def to_plain(value: Any, _path: str = "context") -> Any:
    """Turn a context value into plain data a template can read safely.

    Mappings, sequences, pydantic models and dataclasses are converted
    recursively; callables are refused (pybars3 would call them).
    """
    try:
        return _plain(value)
    except _CallableFound as found:
        path = _path + "".join(reversed(found.steps))
        raise TemplateContextError(
            f"{path} is callable ({found.value!r:.60}); templates take data only") from None


class _CallableFound(Exception):
    # carries the path up the recursion; built only on error (this runs per render)
    def __init__(self, value: Any):
        self.value = value
        self.steps: list[str] = []


def _plain(value: Any) -> Any:
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict or (t is not str and isinstance(value, Mapping)):
        out = {}
        for k, v in value.items():
            if type(v) is str:  # most values: skip the call
                out[k if type(k) is str else str(k)] = v
                continue
            try:
                out[k if type(k) is str else str(k)] = _plain(v)
            except _CallableFound as found:
                found.steps.append(f".{k}")
                raise
        return out
    if t is list or t is tuple or isinstance(value, (list, tuple)):
        items = []
        for i, v in enumerate(value):
            try:
                items.append(_plain(v))
            except _CallableFound as found:
                found.steps.append(f"[{i}]")
                raise
        return items
    if isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if callable(value):
        raise _CallableFound(value)
    return str(value)


_EXACT_LEAVES = frozenset({str, int, bool, type(None)})
_EXACT_TYPES = _EXACT_LEAVES | {float, dict, list}


def _leaf(v: Any) -> bool:
    t = type(v)
    return t in _EXACT_LEAVES or (t is float and math.isfinite(v))


def _view(value: Any) -> Any:
    """``_plain(value)``, but ``value`` itself (not a copy) where it is plain
    data already: an exact ``dict`` with ``str`` keys or an exact ``list``,
    holding only exact ``str``, ``int``, ``bool``, ``None``, finite ``float``
    or such containers. Raises ``_CallableFound`` at the same (first) callable
    as ``_plain``."""
    t = type(value)
    try:
        if t is dict:
            for k, v in value.items():
                tv = type(v)
                if type(k) is str and (tv in _EXACT_LEAVES or (tv is dict or tv is list)
                                       and _view(v) is v or tv is float and math.isfinite(v)):
                    continue
                return _view_dict(value)
            return value
        if t is list:
            for v in value:
                tv = type(v)
                if tv in _EXACT_LEAVES:
                    continue
                if tv is dict:   # a list of flat records ({role, content} turns): checked here
                    for k2, v2 in v.items():
                        if type(k2) is not str or type(v2) not in _EXACT_LEAVES:
                            break
                    else:
                        continue
                if (tv is dict or tv is list) and _view(v) is v \
                        or tv is float and math.isfinite(v):
                    continue
                return _view_list(value)
            return value
    except _CallableFound:
        # found below an item: convert again from the start, so that the
        # error names the whole path to it
        return _view_dict(value) if t is dict else _view_list(value)
    if t in _EXACT_LEAVES or (t is float and math.isfinite(value)):
        return value
    return _plain(value)


def _view_dict(value: dict) -> dict:
    views, same = _view_each(value.items(), ".{}")
    if same and all(type(k) is str for k in value):
        return value
    return {k if type(k) is str else str(k): p for k, p in zip(value, views)}


def _view_list(value: list) -> list:
    views, same = _view_each(enumerate(value), "[{}]")
    return value if same else views


def _view_each(pairs: Iterable[tuple[Any, Any]], step: str) -> tuple[list[Any], bool]:
    """``_view`` of each value of ``(label, value)`` pairs, and whether every
    one is the value itself (plain, of an exact type); a callable's path gets
    ``step`` formatted with its label."""
    views: list[Any] = []
    same = True
    for label, v in pairs:
        try:
            p = _view(v)
        except _CallableFound as found:
            found.steps.append(step.format(label))
            raise
        if p is not v or type(v) not in _EXACT_TYPES:   # converted, or a subclass kept
            same = False
        views.append(p)
    return views, same


_MISSING = object()


def _lookup(ctx: Any, path: str) -> Any:
    cur = ctx
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def _as_template(name: str, value: Any, strict: bool) -> "Template":
    if isinstance(value, Template):
        return value
    if isinstance(value, str):
        return Template(value, name=f"partial {name!r}", strict=strict)
    raise TemplateError(f"partial {name!r} must be a template source (str) or a Template, "
                        f"got {type(value).__name__}")


class Template:
    """A validated, compiled Handlebars template.

    Construction validates and compiles (errors carry the real line and
    column); ``render`` never HTML-escapes. With ``strict=True`` a variable the
    template reads but the context lacks raises ``TemplateVariableError``.
    ``partials`` (name -> source or ``Template``) are what ``{{> name}}``
    renders; given at construction, every partial the template uses (and
    theirs) must be among them, and their top-level variables join
    ``variables``.

    >>> Template("Q: {{q}} <{{a}}>").render({"q": "1 < 2?", "a": "yes & no"})
    'Q: 1 < 2? <yes & no>'
    >>> Template("{{#each steps}}- {{this}}\\n{{/each}}").render({"steps": ["a", "b"]})
    '- a\\n- b\\n'
    """

    __slots__ = ("source", "name", "strict", "_fn", "variables", "partials", "_partial_fns",
                 "_reads", "_memo", "_memo_misses", "_memo_rest", "_flat")

    engine = "handlebars"

    def __init__(self, source: str, *, name: str = "template", strict: bool = True,
                 partials: Mapping[str, Any] | None = None):
        self.source = source
        self.name = name
        self.strict = strict
        try:
            self._fn, _ = compile_template(source)
        except TemplateError as exc:
            exc.args = (f"{name}: {exc.args[0]}",)
            raise
        self.partials: dict[str, Template] = {
            str(k): _as_template(str(k), v, strict) for k, v in (partials or {}).items()}
        if partials is not None:
            self._check_partials()
        self._partial_fns = {k: t._fn for k, t in self.partials.items()}
        self.variables: list[str] = template_variables(
            source, {k: t.source for k, t in self.partials.items()})
        # renders are remembered by the values of the names the template reads
        # (a system prompt is the same for every sample); None: not knowable
        tree = compile_template(source)[1]
        reads = None if self.partials else root_reads(tree)
        #: the steps of a flat template (rendered without pybars3), else None
        self._flat = flat_program(tree)
        self._reads: tuple[str, ...] | None = None if reads is None else tuple(sorted(reads))
        self._memo: dict[tuple, str] = {}
        self._memo_misses = 0
        self._memo_rest = 0

    def _check_partials(self) -> None:
        todo, seen = [(self.name, self.source)], set()
        while todo:
            where, src = todo.pop()
            for used in partial_names(src):
                if used not in self.partials:
                    raise TemplateError(f"{where}: uses partial {used!r}, which is not defined "
                                        f"(defined: {', '.join(sorted(self.partials)) or '(none)'})")
                if used not in seen:
                    seen.add(used)
                    todo.append((f"partial {used!r}", self.partials[used].source))

    def missing(self, context: Mapping[str, Any]) -> list[str]:
        """Variables the template reads that ``context`` does not hold."""
        if isinstance(context, dict):
            return [p for p in self.variables
                    if (p not in context if "." not in p else _lookup(context, p) is _MISSING)]
        return [p for p in self.variables if _lookup(context, p) is _MISSING]

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None,
               partials: Mapping[str, Any] | None = None) -> str:
        """Render ``context``; ``partials`` add to (or replace) the template's own.
        A ``PlainContext`` (``to_plain_context``) is used as it is: one
        conversion serves every template of a prompt."""
        plain = to_plain_context(context)
        key = None
        if self._reads is not None and not partials:
            if self._memo_rest:
                self._memo_rest -= 1
            else:
                key = self._memo_key(plain)
                if key is not None:
                    hit = self._memo.get(key)
                    if hit is not None:
                        self._memo_misses = 0
                        return hit
        if self.strict if strict is None else strict:
            missing = self.missing(plain)
            if missing:
                raise TemplateVariableError(missing, list(plain))
        fns = self._partial_fns
        if partials:
            fns = {**fns, **{str(k): _as_template(str(k), v, self.strict)._fn
                             for k, v in partials.items()}}
        try:
            if self._flat is not None and HELPERS == _HELPERS_AS_SHIPPED:
                out: list[str] = []
                _run_flat(self._flat, plain, out)
                text = "".join(out)
            else:
                text = str(self._fn(plain, helpers=HELPERS, partials=fns))
        except TemplateError as exc:
            raise TemplateError(f"{self.name}: {exc.args[0]}") from None
        except RecursionError:
            raise TemplateError(f"{self.name}: render failed: partials recurse without end") from None
        except Exception as exc:  # a helper met values it cannot handle
            raise TemplateError(f"{self.name}: render failed: {type(exc).__name__}: {exc}") from exc
        if key is not None:
            self._remember(key, text, plain)
        return text

    def _memo_key(self, plain: PlainContext) -> tuple | None:
        """What a render of ``plain`` is a function of: the values of the
        names the template reads, in a type-exact form (``1``, ``1.0``,
        ``True`` and ``"1"`` differ). None when they are not all plain data
        of exact types as given (a converted value may hold a ``str``
        subclass that prints otherwise) or the helpers were changed."""
        changed = plain.changed
        parts: list[Any] = []
        for name in self._reads:
            if name not in plain:
                parts.append(_ABSENT)
                continue
            if name in changed:
                return None
            value = plain[name]
            t = type(value)
            if t is str:
                parts.append(value)
            elif t is list and all(type(v) is str for v in value):
                parts.append(("list", *value))
            else:   # exact plain types (unchanged by to_plain_context): repr tells them apart
                try:
                    parts.append(("repr", repr(value)))
                except RecursionError:
                    return None
        if HELPERS != _HELPERS_AS_SHIPPED:
            return None
        return tuple(parts)

    def _remember(self, key: tuple, text: str, plain: PlainContext) -> None:
        self._memo_misses += 1
        if self._memo_misses >= _MEMO_PROBES:
            # renders that never repeat (a prompt holding the sample): stop
            # computing keys for a while
            self._memo_misses = 0
            self._memo_rest = _MEMO_REST
        if self.missing(plain):   # a lenient render of missing values: a strict one must raise
            return
        memo = self._memo
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[key] = text

    def __getstate__(self) -> dict[str, Any]:
        # the compiled render function cannot pickle (trainers send reward
        # functions to worker processes): keep the source, compile on unpickle
        return {"source": self.source, "name": self.name, "strict": self.strict,
                "partials": dict(self.partials) or None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"], name=state["name"], strict=state["strict"],
                      partials=state["partials"])

    def __repr__(self) -> str:
        return f"Template(name={self.name!r}, variables={self.variables!r})"
