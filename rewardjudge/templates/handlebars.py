"""Handlebars templates on pybars3, made safe for judge prompts.

pybars3 0.9.7 has traps that this module closes (see the tests for each):

* ``{{x}}`` HTML-escapes; prompts are not HTML, so every template renders
  without escaping (``prepare`` is replaced in the compiled module).
* An unclosed block or mustache silently drops the rest of the template, and
  its error positions are wrong: ``_scan`` validates the source first and
  reports the real line and column.
* ``{{else if}}`` is unsupported, ``{{!-- a }} b --}}`` leaks, partials and
  raw blocks are outside what a prompt needs: all are refused up front.
* ``{{#unless}}...{{else}}`` drops the else: ``unless`` is re-registered.
* Missing variables render empty: ``strict=True`` fails and names both the
  missing variables and those available.
* Functions in the context are called: contexts are turned into plain data
  first, and a callable is refused.
* Compiling is slow, leaks a module per compile and is not thread-safe:
  compiled functions are cached by source under one lock, and the module is
  removed from ``sys.modules`` (the function keeps its globals alive).

Rendering is one pass: values are never re-read as template text, so policy
output containing ``{{...}}`` stays literal.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
import threading
from collections.abc import Mapping, Sequence
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

_BUILTIN_BLOCKS = {"if", "unless", "each", "with"}
_SCOPED_BLOCKS = {"each", "with"}
_KNOWN_HELPERS = set(HELPERS) | _BUILTIN_BLOCKS | {"lookup", "log"}


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
_TAG_NAME = re.compile(r"\s*([#^/]?)\s*([^\s}()]*)")


def _line_col(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    col = pos - (source.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _error(msg: str, source: str, pos: int) -> TemplateError:
    line, col = _line_col(source, pos)
    return TemplateError(msg, line=line, column=col, source=source)


def _scan(source: str) -> list[tuple[int, str]]:
    """Check the tag structure of ``source``; return ``(position, tag)`` pairs.

    Raises ``TemplateError`` at the first unclosed mustache, unclosed,
    unopened or mismatched block, misplaced ``{{else}}`` or unsupported form.
    """
    tags: list[tuple[int, str]] = []
    stack: list[tuple[str, int]] = []
    i = 0
    while True:
        start = source.find("{{", i)
        if start < 0:
            break
        if source.startswith("{{{{", start):
            raise _error("raw blocks ({{{{...}}}}) are not supported", source, start)
        if source.startswith("{{!--", start):
            end = source.find("--}}", start + 5)
            if end < 0:
                raise _error("unclosed comment: '{{!--' has no matching '--}}'", source, start)
            if "}}" in source[start + 5:end]:
                raise _error("a comment must not contain '}}' (pybars3 would end it there)", source, start)
            i = end + 4
            tags.append((start, source[start:i]))
            continue
        if source.startswith("{{!", start):
            end = source.find("}}", start + 3)
            if end < 0:
                raise _error("unclosed comment: '{{!' has no matching '}}'", source, start)
            i = end + 2
            tags.append((start, source[start:i]))
            continue
        triple = source.startswith("{{{", start)
        close = "}}}" if triple else "}}"
        body_start = start + (3 if triple else 2)
        end = source.find(close, body_start)
        nxt = source.find("{{", body_start)
        if end < 0 or (0 <= nxt < end):
            what = "'{{{' has no matching '}}}'" if triple else "'{{' has no matching '}}'"
            raise _error(f"unclosed mustache: {what}", source, start)
        inner = source[body_start:end].strip().strip("~").strip()
        i = end + len(close)
        tags.append((start, source[start:i]))
        if not inner:
            raise _error("empty mustache '{{}}'", source, start)
        if triple:
            continue
        kind, name = _TAG_NAME.match(inner).groups()
        if kind in ("#", "^") and name:
            if name in ("*", ">") or not name:
                raise _error(f"unsupported block '{inner}'", source, start)
            stack.append((name, start))
        elif kind == "/":
            if not stack:
                raise _error(f"'{{{{/{name}}}}}' closes a block that was never opened", source, start)
            open_name, open_pos = stack.pop()
            if open_name != name:
                ol, oc = _line_col(source, open_pos)
                raise _error(f"'{{{{/{name}}}}}' does not match the open block '{{{{#{open_name}}}}}' "
                             f"from line {ol}, column {oc}", source, start)
        elif inner == "else" or inner == "^":
            if not stack:
                raise _error("'{{else}}' outside any block", source, start)
        elif inner.startswith("else ") or inner.startswith("else\t"):
            raise _error("'{{else if ...}}' is not supported by pybars3; nest an {{#if}} inside {{else}}",
                         source, start)
        elif inner.startswith(">"):
            raise _error("partials ('{{> name}}') are not supported", source, start)
    if stack:
        name, pos = stack[-1]
        raise _error(f"unclosed block '{{{{#{name}}}}}': no matching '{{{{/{name}}}}}'", source, pos)
    return tags


# --------------------------------------------------------------------------
# compile cache
# --------------------------------------------------------------------------
_COMPILE_LOCK = threading.Lock()
_CACHE: dict[str, tuple[Callable[..., Any], tuple]] = {}
_CACHE_MAX = 512
_PARSER = Compiler()


def _no_escape_prepare(value, should_escape, _prepare=_pyb.prepare):
    return _prepare(value, False)


def _parse(source: str):
    tree, (pos, _) = _PARSER._handlebars(_PARSER.whitespace_control(source)).apply("template")
    return tree, pos


def _locate_parse_error(source: str, tags: list[tuple[int, str]]) -> TemplateError:
    """pybars3 reports the wrong line: parse tag by tag to find the culprit."""
    for pos, tag in tags:
        probe = tag
        inner = tag[2:-2].strip()
        if inner.startswith("#") or inner.startswith("^"):
            name = _TAG_NAME.match(inner).group(2)
            probe = f"{tag}{{{{/{name}}}}}"
        elif inner.startswith("/") or inner in ("else", "^"):
            continue
        try:
            _, end = _parse(probe)
        except Exception:
            end = -1
        if end < len(probe):
            return _error(f"invalid tag {tag!r}", source, pos)
    return TemplateError("template could not be parsed")


def compile_template(source: str) -> tuple[Callable[..., Any], tuple]:
    """Validate and compile ``source`` once; return ``(render_fn, parse_tree)``.

    Thread-safe: compiles run one at a time (pybars3 corrupts concurrent
    compiles) and each source is compiled once per process.
    """
    if not isinstance(source, str):
        raise TemplateError(f"template source must be a str, got {type(source).__name__}")
    hit = _CACHE.get(source)
    if hit is not None:
        return hit
    tags = _scan(source)
    with _COMPILE_LOCK:
        hit = _CACHE.get(source)
        if hit is not None:
            return hit
        before = set(sys.modules)
        try:
            tree, pos = _parse(source)
            if pos < len(_PARSER.whitespace_control(source)):
                raise _locate_parse_error(source, tags)
            fn = Compiler().compile(source)
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
        fn.__globals__["prepare"] = _no_escape_prepare
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[source] = (fn, tuple(tree))
        return fn, tuple(tree)


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


def _walk(nodes, depth: int, out: dict[str, None]) -> None:
    for node in nodes:
        if not isinstance(node, tuple) or not node:
            continue
        kind = node[0]
        if kind in ("expand", "escapedexpand"):
            path, args = node[1], node[2]
            segs = path[1]
            is_helper = len(segs) == 1 and segs[0] in _KNOWN_HELPERS and (args or segs[0] in HELPERS)
            if not is_helper:
                p = _path_of(segs, depth)
                if p:
                    out[p] = None
            _walk_args(args, depth, out)
        elif kind in ("block", "invertedblock"):
            name, args, body, alt = node[1], node[2], node[3], node[4]
            if name in _KNOWN_HELPERS:
                _walk_args(args, depth, out)
                inner = depth + 1 if name in _SCOPED_BLOCKS else depth
            else:
                p = _path_of([name], depth)
                if p:
                    out[p] = None
                inner = depth + 1
            _walk(body[1:] if body else [], inner, out)
            _walk(alt[1:] if alt else [], depth if name not in _SCOPED_BLOCKS else depth, out)


def _walk_args(args, depth: int, out: dict[str, None]) -> None:
    for arg in args:
        if arg[0] == "path":
            p = _path_of(arg[1], depth)
            if p:
                out[p] = None
        elif arg[0] == "subexpr":
            _walk_args(arg[2], depth, out)
        elif arg[0] == "kwparam":
            _walk_args([arg[2]], depth, out)


def template_variables(source: str) -> list[str]:
    """The top-level variable paths ``source`` reads, in first-use order.

    Paths inside ``{{#each}}``/``{{#with}}`` that refer to the item are not
    listed; ``../x`` and ``@root.x`` inside them are.

    >>> template_variables("{{#each items}}{{this.name}} {{../sep}}{{/each}}{{json meta.k}}")
    ['items', 'sep', 'meta.k']
    """
    _, tree = compile_template(source)
    out: dict[str, None] = {}
    _walk(tree[1:], 0, out)
    return list(out)


# --------------------------------------------------------------------------
# context
# --------------------------------------------------------------------------
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


class Template:
    """A validated, compiled Handlebars template.

    Construction validates and compiles (errors carry the real line and
    column); ``render`` never HTML-escapes. With ``strict=True`` a variable the
    template reads but the context lacks raises ``TemplateVariableError``.

    >>> Template("Q: {{q}} <{{a}}>").render({"q": "1 < 2?", "a": "yes & no"})
    'Q: 1 < 2? <yes & no>'
    """

    __slots__ = ("source", "name", "strict", "_fn", "variables")

    def __init__(self, source: str, *, name: str = "template", strict: bool = True):
        self.source = source
        self.name = name
        self.strict = strict
        try:
            self._fn, _ = compile_template(source)
        except TemplateError as exc:
            exc.args = (f"{name}: {exc.args[0]}",)
            raise
        self.variables: list[str] = template_variables(source)

    def missing(self, context: Mapping[str, Any]) -> list[str]:
        """Variables the template reads that ``context`` does not hold."""
        return [p for p in self.variables if _lookup(context, p) is _MISSING]

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None) -> str:
        plain = to_plain(dict(context))
        if self.strict if strict is None else strict:
            missing = self.missing(plain)
            if missing:
                raise TemplateVariableError(missing, list(plain))
        try:
            return str(self._fn(plain, helpers=HELPERS))
        except TemplateError:
            raise
        except Exception as exc:  # a helper met values it cannot handle
            raise TemplateError(f"{self.name}: render failed: {type(exc).__name__}: {exc}") from exc

    def __repr__(self) -> str:
        return f"Template(name={self.name!r}, variables={self.variables!r})"
