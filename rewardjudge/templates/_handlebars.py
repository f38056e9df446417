"""Handlebars templates on pybars3, rendered as handlebars.js renders them (docs/templates.md).
Truthiness: ``{{#if}}`` uses Python's (``{}`` and ``0`` are false); sections follow handlebars.js
(``{{#x}}`` renders for ``""`` and ``0``). Renders whose inputs repeat are remembered per template,
a text read only as ``{{x}}`` / ``{{#if x}}`` at the root as a hole in pybars3's own render
(``_memo_reads``): the same values but such texts render once with markers, then the texts go
where pybars3 wrote the markers."""

from __future__ import annotations

import functools
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from pybars import PybarsError

from ..errors import TemplateError, TemplateVariableError
from ._hbs_syntax import Tag, locate_parse_error, rewrite, scan
from ._plain import _MISSING, PlainContext, _is_plain, _lookup, lookup_steps, to_plain, to_plain_context
from ._pybars_overrides import Helpers, builtin_names, compile_canonical, parse, truthy as _truthy, unless as _unless

__all__ = ["HELPERS", "PlainContext", "Template", "compile_template", "root_reads",
           "template_variables", "to_plain", "to_plain_context"]


def _num(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(v) if "." in v else int(v)
        except ValueError:
            return v
    return v


def _join(this, items, sep=", ", *args):
    if items is None:
        return ""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        return str(items)
    return str(sep).join("" if i is None else str(i) for i in items)


def _eq(this, a, b, *args):
    return a == b or _num(a) == _num(b) and not isinstance(_num(a), str)


HELPERS: dict[str, Callable[..., Any]] = Helpers({
    "eq": _eq, "ne": lambda this, a, b, *r: not _eq(this, a, b),
    "gt": lambda this, a, b, *r: _num(a) > _num(b), "lt": lambda this, a, b, *r: _num(a) < _num(b),
    "ge": lambda this, a, b, *r: _num(a) >= _num(b), "le": lambda this, a, b, *r: _num(a) <= _num(b),
    "and": lambda this, *args, **kw: all(_truthy(a) for a in args),
    "or": lambda this, *args, **kw: any(_truthy(a) for a in args),
    "not": lambda this, a, *r: not _truthy(a),
    "json": lambda this, value, *a, **kw: json.dumps(value, ensure_ascii=False, indent=kw.get("indent")),
    "join": _join,
    "default": lambda this, value, fallback, *a: fallback if value is None or value == "" else value,
    "unless": _unless,
    "add": lambda this, a, b, *r: _num(a) + _num(b),
})
"""Helpers every template gets (``unless`` fixed to honour ``{{else}}``)."""
_HELPERS_AS_SHIPPED = dict(HELPERS)   # remembered renders assume these helpers


def helpers_as_shipped() -> bool:
    """No helper registered or replaced since import: a template reads only the names it names."""
    return not HELPERS.touched or HELPERS == _HELPERS_AS_SHIPPED   # type: ignore[attr-defined] (``Helpers``)


_ABSENT = ("absent",)                 # a name the context lacks, in a memo key
_HOLE = ("hole",)                     # a text the remembered render takes where pybars3 put it
_ONCE = ("once",)                     # a key with holes seen once, not yet remembered
_TEXT_ONLY = {str}                    # the types of a list of texts

#: remembered renders per template, misses in a row before the memo rests, renders it rests for
_MEMO_SIZE = 16
_MEMO_PROBES = 8
_MEMO_REST = 1024


_BUILTIN_BLOCKS = frozenset({"if", "unless", "each", "with"})
# blocks whose body always renders in a new scope, where ``this`` is never the root context
_SCOPED_BLOCKS = frozenset({"each", "with"})
_BUILTIN_HELPERS = _BUILTIN_BLOCKS | {"lookup", "log"}


def _known_helpers() -> set[str]:
    return set(HELPERS) | _BUILTIN_HELPERS


def _compile(source: str, prepare_fn: Callable[[Any, bool], Any] | None = None
             ) -> tuple[Callable[..., Any], tuple, tuple[Tag, ...]]:
    """``(render_fn, parse tree, tags)`` of ``source``, compiled once (per ``prepare_fn``)."""
    if not isinstance(source, str):
        raise TemplateError(f"template source must be a str, got {type(source).__name__}")
    return _compiled(source, prepare_fn)


@functools.lru_cache(maxsize=512)
def _compiled(source: str, prepare_fn: Callable[[Any, bool], Any] | None
              ) -> tuple[Callable[..., Any], tuple, tuple[Tag, ...]]:
    tags = scan(source, _known_helpers())
    canonical = rewrite(source, tags)
    tree, pos = parse(canonical)
    if pos < len(canonical):
        raise locate_parse_error(source, tags)
    try:
        fn = compile_canonical(canonical, prepare_fn)
    except PybarsError as exc:
        raise locate_parse_error(source, tags) from exc
    return fn, tuple(tree), tuple(tags)


def compile_template(source: str, prepare_fn: Callable[[Any, bool], Any] | None = None
                     ) -> tuple[Callable[..., Any], tuple]:
    """Validate and compile ``source`` once (cached, thread-safe); return ``(render_fn, parse_tree)``,
    ``render_fn(context, helpers=..., partials=...)`` (``partials``: name -> compiled function).
    ``prepare_fn(value, should_escape)`` turns each ``{{x}}`` / ``{{{x}}}`` value into text
    (default: as it is, no HTML escaping); a typed question JSON-escapes with it."""
    return _compile(source, prepare_fn)[:2]


def partial_names(source: str) -> list[str]:
    """The partials ``source`` uses (``{{> name}}``), in first-use order."""
    return list(dict.fromkeys(t.name for t in _compile(source)[2] if t.kind == "partial"))


def _parents(segments: list[str]) -> tuple[int, list[str]]:
    """``(how many leading ../, the rest of the path)``."""
    ups = 0
    while ups < len(segments) and segments[ups] == "@_parent":
        ups += 1
    return ups, list(segments[ups:])


def _path_of(segments: list[str], depth: int) -> str | None:
    """The top-level dotted path a path node refers to, or None if scoped."""
    if segments and segments[0] == "@root":
        return ".".join(s for s in segments[1:] if s) or None
    ups, segs = _parents(segments)
    if depth - ups != 0:
        return None
    segs = [s for s in segs if s and s != "this"]
    if not segs or segs[0].startswith("@"):
        return None
    return ".".join(segs)


class _Unknown(Exception):
    """What a template reads cannot be told from its parse tree."""


def _read_of(segments: list[str], pushed: bool) -> str | None:
    """The top-level name a path can read at any depth (``../x`` and ``@root.x`` as ``x``), None
    for block data (``@index``); ``_Unknown`` when it may be the whole context (``{{this}}`` at
    the root, ``@root`` alone). ``pushed``: inside a block whose ``this`` is never the root."""
    ups, segs = _parents(segments)
    if segs and segs[0] == "@root":
        rest = [x for x in segs[1:] if x and x != "this"]
        if not rest or rest[0][0] == "@":
            raise _Unknown
        return rest[0]
    real = [x for x in segs if x and x != "this"]
    if not real:
        if ups or not pushed:
            raise _Unknown
        return None
    if any(x[0] == "@" for x in real[1:]):
        raise _Unknown
    return None if real[0][0] == "@" else real[0]   # @index, @key, @../index: no read


# pure helpers: their output depends on their arguments only (``log`` prints)
_PURE_HELPERS = frozenset(HELPERS) | _BUILTIN_BLOCKS | {"lookup", "_section", "_inverted", "_lb"}
_TEXT_NODES = frozenset({"literal", "newline", "whitespace", "comment"})


class _Walk:
    """One walk over a parse tree for both questions: ``variables``, the top-level paths read at
    the root scope in first-use order (through partials whose sources are given), and ``reads``,
    every top-level name readable at any depth, or None once that cannot be told (a partial, a
    helper that is not pure, the whole context read)."""

    def __init__(self, partials: Mapping[str, str] | None):
        self.partials = partials or {}
        self.variables: dict[str, None] = {}
        self.reads: set[str] | None = set()
        self.helpers = _known_helpers()
        self.seen: set[str] = set()

    def nodes(self, nodes, depth: int, pushed: bool) -> None:
        for node in nodes:
            if not isinstance(node, tuple) or not node:
                continue
            kind = node[0]
            if kind in ("expand", "escapedexpand"):
                segs, args = node[1][1], node[2]
                name = segs[0] if len(segs) == 1 else None
                if args and name not in _PURE_HELPERS:
                    self.reads = None
                if not (name == "_lb" or name in self.helpers and (args or name in HELPERS)):
                    self.path(segs, depth, pushed)
                self.args(args, depth, pushed)
            elif kind in ("block", "invertedblock"):
                self.block(kind, node[1], node[2], node[3], node[4], depth, pushed)
            elif kind not in _TEXT_NODES:
                self.reads = None

    def block(self, kind, name, args, body, alt, depth: int, pushed: bool) -> None:
        body = body[1:] if body else []
        alt = alt[1:] if alt else []
        if name not in _PURE_HELPERS:
            self.reads = None   # _partial, log, a helper added later
        if name == "_partial":
            pname = args[0][1][1:-1] if args and args[0][0] == "literalparam" else None
            rest = [a for a in args[1:] if a[0] != "kwparam"]
            self.args(args[1:], depth, pushed)
            src = self.partials.get(pname) if pname else None
            if src is not None and not rest and pname not in self.seen:
                self.seen.add(pname)
                self.nodes(_compile(src)[1][1:], depth, pushed)
                self.seen.discard(pname)
            return
        self.args(args, depth, pushed)
        scoped = name in _SCOPED_BLOCKS and kind == "block"
        self.nodes(body, depth + 1 if scoped or name == "_section" else depth, pushed or scoped)
        self.nodes(alt, depth, pushed)

    def path(self, segs, depth: int, pushed: bool) -> None:
        p = _path_of(segs, depth)
        if p:
            self.variables[p] = None
        if self.reads is not None:
            try:
                name = _read_of(segs, pushed)
            except _Unknown:
                self.reads = None
            else:
                if name:
                    self.reads.add(name)

    def args(self, args, depth: int, pushed: bool) -> None:
        for arg in args:
            if arg[0] == "path":
                self.path(arg[1], depth, pushed)
            elif arg[0] == "subexpr":
                helper = arg[1][1] if isinstance(arg[1], tuple) else None
                if not helper or helper[0] not in _PURE_HELPERS:
                    self.reads = None
                self.args(arg[2], depth, pushed)
            elif arg[0] == "kwparam":
                self.args([arg[2]], depth, pushed)
            elif arg[0] != "literalparam":
                self.reads = None


def _walk(tree: Any, partials: Mapping[str, str] | None = None) -> _Walk:
    walk = _Walk(partials)
    walk.nodes(tree[1:], 0, False)
    return walk


def template_variables(source: str, partials: Mapping[str, str] | None = None) -> list[str]:
    """The top-level variable paths ``source`` reads, in first-use order (``../x`` and ``@root.x``
    inside blocks included, item paths not; and those of top-level partials whose sources are given).

    >>> template_variables("{{#each items}}{{this.name}} {{../sep}}{{/each}}{{json meta.k}}")
    ['items', 'sep', 'meta.k']
    """
    return list(_walk(compile_template(source)[1], partials).variables)


def root_reads(tree: Any) -> frozenset[str] | None:
    """Every top-level name a compiled template can read (a superset: every path's first name at
    any depth, ``../x`` and ``@root.x`` as ``x``); None when it can read the whole context
    (``{{this}}`` at the root, ``@root`` alone), uses partials, or a helper that is not pure.

    >>> sorted(root_reads(compile_template("{{#each xs}}{{this}} {{../sep}}{{/each}}")[1]))
    ['sep', 'xs']
    """
    reads = _walk(tree).reads
    return None if reads is None else frozenset(reads)


def _path_name(segs: Sequence[str]) -> str | None:
    """The top-level name a path reads, as ``_read_of`` finds it at any depth; None for none."""
    real = [x for x in segs if x and x not in ("this", "@root", "@_parent")]
    return real[0] if real and real[0][0] != "@" else None


def _memo_reads(tree: Any, reads: Sequence[str], helpers: "set[str] | frozenset[str]"
                ) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    """What a remembered render is keyed on: ``(name, steps, hole)`` for each read, sorted (``steps``:
    the path's steps after the name). A name
    read only as root paths (``{{a.b}}``, ``{{#if a.b}}``: no block over a scope, no helper's
    argument) is keyed path by path, each on its value alone; a path read only that way, no
    other path's prefix and no helper's name, is a ``hole``: a non-empty text there is keyed as
    one and put where pybars3 writes it (``{{x}}`` prints a text as it is, ``{{#if x}}`` takes
    every non-empty one alike). Any other name is keyed on its whole value."""
    paths: dict[str, set[tuple[str, ...]]] = {}
    whole: set[str] = set()

    def note(segs: Sequence[str], plain: bool) -> None:
        name = _path_name(segs)
        if name is None:
            return
        steps = tuple(x for x in segs if x)
        if plain and all(x[0] != "@" and x != "this" for x in steps):
            paths.setdefault(name, set()).add(steps)
        else:
            whole.add(name)

    def args(items: Sequence[Any]) -> None:
        for arg in items:
            if arg[0] == "path":
                note(arg[1], False)
            elif arg[0] == "subexpr":
                args(arg[2])
            elif arg[0] == "kwparam":
                args([arg[2]])

    def nodes(items: Sequence[Any], plain: bool) -> None:
        for node in items:
            if not isinstance(node, tuple) or not node:
                continue
            if node[0] in ("expand", "escapedexpand"):
                note(node[1][1], plain and not node[2])
                args(node[2])
            elif node[0] in ("block", "invertedblock"):
                _, name, given, body, alt = node
                test = node[0] == "block" and name in ("if", "unless") and len(given) == 1 \
                    and given[0][0] == "path"
                if test:
                    note(given[0][1], plain)
                else:
                    args(given)
                nodes(body[1:] if body else (), plain and test)   # if/unless keep the scope
                nodes(alt[1:] if alt else (), plain and test)

    nodes(tree[1:], True)
    out: list[tuple[str, tuple[str, ...], bool]] = []
    for name in sorted(reads):
        mine = paths.get(name)
        if name in whole or not mine:
            out.append((name, (), False))
            continue
        for steps in sorted(mine):
            prefix = any(len(o) > len(steps) and o[:len(steps)] == steps for o in mine)
            out.append((name, steps[1:], not prefix and steps[0] not in helpers))
    return tuple(out)


def _named_reads(reads: Sequence[str]) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    return tuple((name, (), False) for name in reads)


def _as_template(name: str, value: Any, strict: bool) -> "Template":
    if isinstance(value, Template):
        return value
    if isinstance(value, str):
        return Template(value, name=f"partial {name!r}", strict=strict)
    raise TemplateError(f"partial {name!r} must be a template source (str) or a Template, "
                        f"got {type(value).__name__}")


def _kept_as_is(value: Any) -> bool:
    """Whether ``to_plain_context`` keeps ``value`` (given, not a text) as it is: a list of texts or plain data."""
    return value is not _MISSING and (type(value) is list and {*map(type, value)} <= _TEXT_ONLY or _is_plain(value))


def _given(context: Any, reads: "Sequence[str] | None") -> "bool | None":
    """Whether ``context`` is a ``dict`` as given (True) or a ``PlainContext`` none of whose conversions the
    template ``reads`` (False); None where it is neither (no memo key)."""
    if type(context) is PlainContext:
        changed = context.changed   # type: ignore[attr-defined]
        return None if changed and not changed.isdisjoint(reads or ()) else False
    return True if type(context) is dict else None


def _key_part(value: Any, hole: bool, holes: "list[str]") -> Any:
    """``value``'s part of a memo key, type-exact (a hole's non-empty text is ``_HOLE`` and goes to
    ``holes``); None where it has none (its repr recurses too deep)."""
    if value is _MISSING:
        return _ABSENT
    t = type(value)
    if t is str:
        if hole and value:
            holes.append(value)
            return _HOLE
        return value
    if t is list and (not value or {*map(type, value)} == _TEXT_ONLY):
        return ("list", *value)
    try:   # exact plain types (unchanged by to_plain_context): repr tells them apart
        return ("repr", repr(value))
    except RecursionError:
        return None


def _put(context: dict, steps: Sequence[str], value: str) -> None:
    """``value`` at the path ``steps`` of ``context``, each mapping or list on the way copied."""
    where: Any = context
    for step in steps[:-1]:
        inner = where[int(step) if type(where) is list else step]
        inner = dict(inner) if isinstance(inner, dict) else list(inner)
        where[int(step) if type(where) is list else step] = inner
        where = inner
    where[int(steps[-1]) if type(where) is list else steps[-1]] = value


class Template:
    """A validated, compiled Handlebars template (see docs/templates.md); ``partials`` (name -> source
    or ``Template``): every one used must be given, and their variables join ``variables``.

    >>> Template("Q: {{q}} <{{a}}>").render({"q": "1 < 2?", "a": "yes & no"})
    'Q: 1 < 2? <yes & no>'"""

    __slots__ = ("source", "name", "strict", "_fn", "variables", "partials", "_partial_fns",
                 "_reads", "_keyed", "_memo", "_memo_misses", "_memo_rest")

    engine = "handlebars"

    def __init__(self, source: str, *, name: str = "template", strict: bool = True,
                 partials: Mapping[str, Any] | None = None):
        self.source = source
        self.name = name
        self.strict = strict
        try:
            self._fn, tree = compile_template(source)
        except TemplateError as exc:
            exc.args = (f"{name}: {exc.args[0]}",)
            raise
        self.partials: dict[str, Template] = {
            str(k): _as_template(str(k), v, strict) for k, v in (partials or {}).items()}
        if partials is not None:
            self._check_partials()
        self._partial_fns = {k: t._fn for k, t in self.partials.items()}
        walk = _walk(tree, {k: t.source for k, t in self.partials.items()})
        self.variables: list[str] = list(walk.variables)
        self._reads: tuple[str, ...] | None = (
            None if walk.reads is None or self.partials else tuple(sorted(walk.reads)))
        #: what a remembered render is keyed on (``_memo_reads``)
        self._keyed = None if self._reads is None else _memo_reads(
            tree, self._reads, builtin_names() | set(HELPERS))
        self._memo: dict[tuple, Any] = {}
        self._memo_misses = self._memo_rest = 0

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

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None) -> str:
        """Render ``context``. A ``PlainContext`` (``to_plain_context``) is used as it is (one
        conversion, many templates)."""
        text = self.remembered(context)
        if text is not None:
            return text
        plain = to_plain_context(context)
        key = holes = None
        if self._keyed is not None:
            if self._memo_rest:
                self._memo_rest -= 1
            else:
                key, holes = self._memo_key(plain)
        if self.strict if strict is None else strict:
            missing = self.missing(plain)
            if missing:
                raise TemplateVariableError(missing, plain)
        try:
            text = str(self._fn(plain, helpers=HELPERS, partials=self._partial_fns))
        except TemplateError as exc:
            raise TemplateError(f"{self.name}: {exc.args[0]}") from None
        except RecursionError:
            raise TemplateError(f"{self.name}: render failed: partials recurse without end") from None
        except Exception as exc:  # a helper met values it cannot handle
            raise TemplateError(f"{self.name}: render failed: {type(exc).__name__}: {exc}") from exc
        if key is not None:
            self._remember(key, holes, text, plain)
        return text

    def remembered(self, context: Mapping[str, Any]) -> str | None:
        """The remembered render of ``context`` (a ``dict`` as given, or a ``PlainContext``), or None."""
        if self._keyed is None or self._memo_rest:
            return None
        key, holes = self._memo_key(context)
        hit = None if key is None else self._memo.get(key)
        if hit is None or hit is _ONCE:
            return None
        self._memo_misses = 0
        if type(hit) is str:
            return hit
        pieces, order = hit   # the texts where pybars3 wrote them
        pieces = [*pieces]
        pieces[1::2] = [holes[i] for i in order]   # type: ignore[index]
        return "".join(pieces)

    def _memo_key(self, context: Mapping[str, Any]) -> tuple[tuple | None, list[str] | None]:
        """``(key, texts)``: the values the template reads (``_keyed``), type-exact (``1``,
        ``1.0``, ``True`` and ``"1"`` differ), a hole's non-empty text as ``_HOLE`` and in
        ``texts``; ``(None, None)`` when one was converted (``plain.changed``) or the helpers
        changed. A ``dict`` not yet converted: each value read must be one ``to_plain_context``
        keeps as it is (a text, a list of texts, plain data), every name present (else None)."""
        given = _given(context, self._reads)
        if given is None:
            return None, None
        get = context.get
        parts: list[Any] = []
        holes: list[str] = []
        for name, steps, hole in self._keyed:
            value = get(name, _MISSING)
            if not steps and type(value) is str:   # _key_part's text, in place (a call per name cost 1k)
                if hole and value:
                    holes.append(value)
                    value = _HOLE
                parts.append(value)
                continue
            if not steps and type(value) is list and {*map(type, value)} <= _TEXT_ONLY:   # texts: typed once
                parts.append(("list", *value))   # as _kept_as_is, then _key_part, take it
                continue
            if given and type(value) is not str and not _kept_as_is(value):   # as to_plain_context would keep it
                return None, None
            if steps and value is not _MISSING:
                value = lookup_steps(value, steps)
            part = _key_part(value, hole, holes)
            if part is None:
                return None, None
            parts.append(part)
        if not helpers_as_shipped():
            return None, None
        return tuple(parts), holes

    def _remember(self, key: tuple, holes: list[str], text: str, plain: PlainContext) -> None:
        self._memo_misses += 1
        if self._memo_misses >= _MEMO_PROBES:   # renders that never repeat: rest a while
            self._memo_misses = 0
            self._memo_rest = _MEMO_REST
        if self.missing(plain):   # a lenient render of missing values: a strict one must raise
            return
        memo = self._memo
        entry: Any = text
        if holes:   # the render with markers is made when the key comes again
            entry = _ONCE if memo.get(key) is not _ONCE else self._with_holes(key, holes, text, plain)
            if entry is None:
                return
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[key] = entry

    def _with_holes(self, key: tuple, holes: list[str], text: str, plain: PlainContext
                    ) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
        """``(pieces, order)``: pybars3's render of ``plain`` with a marker in each hole, cut at
        the markers (every other piece a hole, for the texts in ``order``); it must give ``text``
        back with the texts, else the template is keyed on whole values from now on (None)."""
        token = secrets.token_hex(8)
        probe = PlainContext(plain)
        probe.changed = plain.changed
        k = 0
        for (name, steps, _), part in zip(self._keyed, key):
            if part is _HOLE:
                _put(probe, (name, *steps), f"\x00{token}:{k}\x00")
                k += 1
        try:
            marked = str(self._fn(probe, helpers=HELPERS, partials=self._partial_fns))
        except Exception:  # noqa: BLE001 - the render with the texts did not fail: no holes then
            marked = ""
        pieces = re.split(f"\x00{token}:(\\d+)\x00", marked)
        order = tuple(int(i) for i in pieces[1::2])
        pieces[1::2] = [holes[i] for i in order]
        if not marked or "".join(pieces) != text:
            self._keyed = _named_reads(self._reads or ())
            self._memo.clear()
            return None
        pieces[1::2] = [""] * len(order)
        return tuple(pieces), order

    def __getstate__(self) -> dict[str, Any]:   # the compiled function cannot pickle: recompile
        return {"source": self.source, "name": self.name, "strict": self.strict,
                "partials": dict(self.partials) or None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"], name=state["name"], strict=state["strict"],
                      partials=state["partials"])

    def __repr__(self) -> str:
        return f"Template(name={self.name!r}, variables={self.variables!r})"
