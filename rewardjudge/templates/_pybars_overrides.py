"""The one place that reaches past pybars3's public API (pybars3 is pinned).

Set in each compiled template's own namespace, so nothing global changes: ``prepare`` (no HTML
escaping), ``resolve`` (names fall back to enclosing contexts; keys and indices, never
attributes) and built-in helpers with handlebars.js semantics; ``whitespace_control`` is left to
``_hbs_syntax``. Compiles run one at a time (pybars3's code builder is shared class state) and
register no module in ``sys.modules``.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from pybars import Compiler, Scope, strlist

from ..errors import TemplateError

__all__ = ["BUILTIN_HELPERS", "Helpers", "Scope", "builtin_names", "compile_canonical", "indent_lines", "parse",
           "prepare", "step", "strlist", "truthy", "unless"]


def prepare(value: Any, should_escape: bool) -> Any:
    """pybars3's ``prepare`` without escaping."""
    if value is None:
        return ""
    t = type(value)
    if t is str or t is strlist:
        return value
    if t is bool:
        return "true" if value else "false"
    return str(value)


_DATA_NAMES = ("@root", "@_parent", "@index", "@key", "@first", "@last")


def step(value: Any, seg: str) -> Any:
    """One path step over plain data: keys and list indices, never attributes."""
    if type(value) is Scope:
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
            context = step(context, seg)
    return context.context if type(context) is Scope else context


def resolve(context: Any, *segments: str) -> Any:
    """pybars3's ``resolve``, a plain first name looked up in the current context, then in each
    enclosing one: the first where it is not null answers."""
    first = segments[0] if segments else ""
    if not first or first[0] == "@" or first == "this" or type(context) is not Scope:
        return _resolve_path(context, segments)
    inner = context.context
    if isinstance(inner, dict) and not context.overrides:   # the common case (a PlainContext too), in short
        value = inner.get(first)
        if value is not None and type(value) is not Scope:
            return value if len(segments) == 1 else _resolve_path(value, segments[1:])
    scope = context
    while True:
        value = step(scope, first)
        if value is not None:   # the rest of the path from there
            if len(segments) == 1 and type(value) is not Scope:
                return value
            return _resolve_path(value, segments[1:])
        parent = scope.parent if type(scope) is Scope else None
        if parent is None or parent is scope or parent is getattr(scope, "context", None):
            return None
        scope = parent


def truthy(v: Any) -> bool:
    return bool(v) and v != ""


def unless(this, options, value):
    """``{{#unless}}``, honouring ``{{else}}`` (pybars3's drops it)."""
    return options["inverse"](this) if truthy(value) else options["fn"](this)


def _lookup(this, value, key, *args):
    return None if value is None else step(value, str(key))


def _child(value, this, options):
    return Scope(value, this, options["root"])


def _section(this, options, value):
    """``{{#name}}`` over a value: handlebars.js ``blockHelperMissing``."""
    if value is True:
        return options["fn"](this)
    if value is False or value is None:
        return options["inverse"](this)
    if isinstance(value, (list, tuple)):
        return options["helpers"]["each"](this, options, value) if value else options["inverse"](this)
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
        if type(context) is Scope:
            context = context.context
        this = Scope(context, this, options["root"], overrides=hash_ or None)
    out = str(fn(this, helpers=options["helpers"], partials=partials, root=options["root"]))
    return strlist([indent_lines(out, indent) if indent else out])


def indent_lines(text: str, indent: str) -> str:
    """``indent`` before every line of ``text`` but an empty last one (a standalone partial's)."""
    lines = text.split("\n")
    return "\n".join(indent + line if (line or i + 1 < len(lines)) else line for i, line in enumerate(lines))


#: the built-in helpers every compiled template starts from, over pybars3's own
BUILTIN_HELPERS: dict[str, Callable[..., Any]] = {
    "with": _with, "unless": unless, "blockHelperMissing": _section, "_section": _section,
    "_inverted": _inverted, "_partial": _partial, "lookup": _lookup, "_lb": lambda this, *a, **k: "{"}


def builtin_names() -> frozenset[str]:
    """The helper names every compiled template starts from: pybars3's and ``BUILTIN_HELPERS``."""
    from pybars._compiler import _pybars_
    return frozenset(_pybars_["helpers"]) | frozenset(BUILTIN_HELPERS)


class _Compiler(Compiler):
    def whitespace_control(self, source):
        return source   # done by the source rewrite; pybars3's regexes remove the wrong newlines


_COMPILER = _Compiler()
_LOCK = threading.Lock()


def parse(canonical: str) -> tuple[Any, int]:
    """``(parse tree, end position)``: an end short of ``len(canonical)`` is a syntax error there."""
    with _LOCK:
        tree, (pos, _) = _COMPILER._handlebars(canonical).apply("template")
    return tree, pos


def compile_canonical(canonical: str,
                      prepare_fn: Callable[[Any, bool], Any] | None = None) -> Callable[..., Any]:
    """The render function of a rewritten source, with the overrides above (``PybarsError``);
    ``prepare_fn(value, should_escape)`` (true for ``{{x}}``) replaces ``prepare``."""
    with _LOCK:
        code = _COMPILER.precompile(canonical)
    namespace: dict[str, Any] = {"__name__": "rewardjudge.templates._compiled"}
    exec(compile(code, "<handlebars template>", "exec", dont_inherit=True), namespace)
    base = dict(namespace["_pybars_"]["helpers"])
    namespace.update(prepare=prepare_fn or prepare, resolve=resolve,
                     _pybars_={"helpers": {**base, **BUILTIN_HELPERS}})
    return namespace["render"]


def _noting(name: str) -> Callable[..., Any]:
    method = getattr(dict, name)

    def changing(self: "Helpers", *args: Any, **kw: Any) -> Any:
        self.touched = True
        return method(self, *args, **kw)
    return changing


class Helpers(dict):
    """A ``dict`` that notes a change made through its methods (``touched``): ``_handlebars.HELPERS``, compared
    whole with the helpers as shipped only once changed (the comparison cost ~2.5k instructions, three a grade)."""

    touched = False
    __setitem__, __delitem__, __ior__, clear, pop, popitem, setdefault, update = map(
        _noting, ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault", "update"))
