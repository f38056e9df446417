"""The guard on a structured completion: its free-text fields (told from choices and formatted values
by its model's JSON schema, or every string without one) screened as ``_guards`` screens a plain
text; where all are empty or content-free, it is penalized without a judge call, and where some
carry content, the copy with those blanked that a grader renders to learn whether the judge sees
any. Every walk is iterative and linear in the value's size."""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Any, Callable, Iterable

from ._guards import _UNITS, _content_free_flags, _doubled_units, _foreign, content_free_reason

@functools.lru_cache(maxsize=256)
def _schema_of(model: Any) -> "tuple[dict, dict, dict] | None":
    """``model``'s JSON schema (as ``model_dump(mode="json")`` writes it), its
    ``$defs`` and the ``_Field`` of each of its nodes met so far (by the node's
    id: the schema keeps them alive); None when it has no schema."""
    try:   # its names as the dump writes them: an alias (``Field(alias="conf")``) is no property there
        schema = model.model_json_schema(by_alias=bool(model.model_config.get("serialize_by_alias")),
                                         mode="serialization")
    except Exception:   # a field type without a JSON schema: every string is free text
        return None
    return (schema, schema.get("$defs") or {}, {}) if isinstance(schema, dict) else None


_MAX_BRANCHES = 64   # schema steps followed for one node ($ref, anyOf): a recursive model loops


def _branches(node: Any, defs: dict) -> list[dict]:
    """The alternatives a schema node allows, with ``$ref``, ``anyOf``/``oneOf``
    and a one-item ``allOf`` followed (at most ``_MAX_BRANCHES`` steps)."""
    out: list[dict] = []
    todo = [node]
    for _ in range(_MAX_BRANCHES):
        if not todo:
            break
        node = todo.pop()
        if not isinstance(node, dict):
            out.append({})
        elif isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/$defs/"):
            target = defs.get(node["$ref"][len("#/$defs/"):])
            todo.append({**(target if isinstance(target, dict) else {}),
                         **{k: v for k, v in node.items() if k != "$ref"}})
        elif isinstance(node.get("anyOf") or node.get("oneOf"), list):
            todo.extend(reversed(node.get("anyOf") or node.get("oneOf")))
        elif isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1 and isinstance(node["allOf"][0], dict):
            todo.append({**{k: v for k, v in node.items() if k != "allOf"}, **node["allOf"][0]})
        else:
            out.append(node)
    return out or [{}]


def _types(branch: dict) -> set:
    t = branch.get("type")
    return set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()


def _choices(branches: "list[dict]") -> frozenset:
    """The strings an enum or a const of ``branches`` allows."""
    return frozenset(v for b in branches if "enum" in b or "const" in b
                     for v in (b["enum"] if isinstance(b.get("enum"), list) else [b.get("const")]) if isinstance(v, str))


def _free_keys(branches: "list[dict]") -> bool:
    """Whether ``branches`` hold an object whose keys the policy names (``dict[str, str]``): its keys are
    text it wrote."""
    return any((b.get("additionalProperties") is True or isinstance(b.get("additionalProperties"), dict))
               and not _named_keys(b.get("propertyNames")) for b in branches)


class _Field:
    """What a schema node says about the strings at its place: choices (an enum,
    a const), free text (a str, or a value the schema does not describe) or a
    formatted value (a date, a UUID); and the nodes of its children."""

    __slots__ = ("node", "branches", "choices", "free", "free_none", "formatted", "uniform", "free_keys")

    def __init__(self, node: Any, defs: dict):
        self.node = node   # kept alive: fields are looked up by the node's id
        self.branches = _branches(node, defs)
        plain = [b for b in self.branches if "enum" not in b and "const" not in b]
        strings = [b for b in plain if "string" in _types(b)]
        self.choices = _choices(self.branches)
        # None stands for unset free text, where a string or a value the schema does not describe goes
        # (hunt 24: ``answer: Any`` given null, as ``{"answer": null}`` written as a plain answer)
        self.free = any("format" not in b for b in strings) or any(not _types(b) for b in plain)
        # hunt 26: a null where a model with a free-text property goes is that text left unset too
        self.free_none = self.free or any(_free_property(b, defs) for b in plain if "object" in _types(b))
        self.formatted = any("format" in b for b in strings)
        self.uniform = not any(isinstance(b.get("prefixItems"), list) for b in self.branches)
        self.free_keys = _free_keys(self.branches)

    def key_free(self, key: str) -> bool:
        """Whether ``key`` of an object at this place is free text (not a property the schema names)."""
        return self.free_keys and not any(isinstance(b.get("properties"), dict) and key in b["properties"]
                                          for b in self.branches)

    def kind(self, text: "str | None") -> str:
        """``"free"`` text, a ``"choice"``, a ``"value"`` (a formatted string), or
        ``"none"`` (None where no free text goes)."""
        if text is None:
            return "free" if self.free_none else "none"
        if text in self.choices:
            return "choice"
        return self.other_text

    @property
    def other_text(self) -> str:
        """The kind of a text that is none of the choices."""
        return "free" if self.free or not (self.formatted or self.choices) else \
            "value" if self.formatted else "choice"

    def free_texts(self, texts: "Iterable[str]") -> "list[str]":
        """Those of ``texts`` whose kind is ``"free"``, in order (``kind`` of each, in one pass)."""
        if self.other_text != "free":
            return []
        return [t for t in texts if t not in self.choices] if self.choices else list(texts)

    def empty(self, fields: dict, defs: dict, mapping: bool) -> "_Field":
        """The place an empty list (or, ``mapping``, object) here stands at: its items', or a free key's."""
        if not mapping:
            return _field(fields, self.child(0), defs)
        if self.free_keys:
            return _KEY
        named = any(isinstance(b.get("properties"), dict) for b in self.branches)
        return _NONE if named else _field(fields, self.child(""), defs)

    def child(self, key: Any) -> Any:
        """The schema node of ``key`` (a property name or an item index)."""
        for b in self.branches:
            if isinstance(key, str):
                props, extra = b.get("properties"), b.get("additionalProperties")
                if isinstance(props, dict) and key in props:
                    return props[key]
                if isinstance(extra, dict):
                    return extra
            else:
                prefix, items = b.get("prefixItems"), b.get("items")
                if isinstance(prefix, list) and key < len(prefix):
                    return prefix[key]
                if isinstance(items, dict):
                    return items
        return _ANY


def _free_property(branch: dict, defs: dict) -> bool:
    """Whether an object schema names a property where free text goes (one level: a string without
    a format, or a value the schema does not describe)."""
    props = branch.get("properties")
    return isinstance(props, dict) and any(
        ("string" in _types(b) and "format" not in b or not _types(b)) and "enum" not in b and "const" not in b
        for node in props.values() for b in _branches(node, defs))


def _named_keys(node: Any) -> bool:
    """Whether a ``propertyNames`` schema restricts keys to choices or formatted values."""
    return isinstance(node, dict) and any(k in node for k in ("enum", "const", "format"))


#: the place of a key the policy names: free text
_KEY = _Field({"type": "string"}, {})

#: the place of an empty object of named properties: no text goes there (``_Field.empty``)
_NONE = _Field({"type": "object"}, {})

#: the node of a value the schema does not describe (and the root without a schema)
_ANY: dict = {}
_NO_SCHEMA: "tuple[dict, dict, dict]" = (_ANY, {}, {})


class _Texts:
    """What ``_free_texts`` finds: the path and text of the first free-text field, every
    distinct non-empty text, whether a choice or another value stands beside them, whether
    one of them is empty."""

    def __init__(self) -> None:
        self.first: "tuple[tuple, str | None] | None" = None
        self.texts: dict[str, None] = {}
        self.other = self.blank = False

    def take(self, f: _Field, text: "str | None", path: "Callable[[], tuple]") -> None:
        kind = f.kind(text)
        if kind == "free":
            self.first = self.first or (path(), text)
            if text:
                self.texts[text] = None
            else:
                self.blank = True
        elif kind != "none":
            self.other = True

    def take_all(self, f: _Field, texts: "dict[str, None]", path: "Callable[[str], tuple]") -> None:
        """``take`` of each of ``texts`` (distinct strings, a dict's keys), in one pass: a list may hold
        40,000. The first texts, all free, are kept as they come (no second dict of them)."""
        if texts and not self.texts and f.other_text == "free" and not f.choices:
            first = next(iter(texts))
            self.first = self.first or (path(first), first)
            self.texts = texts
            free: "list[str] | dict[str, None]" = texts
        else:
            free = f.free_texts(list(texts))
            self.other = self.other or len(free) < len(texts)
            if free:
                self.first = self.first or (path(free[0]), free[0])
                self.texts.update(dict.fromkeys(free))
        if free:
            if "" in self.texts:
                del self.texts[""]
                self.blank = True


def _field(fields: dict, sch: Any, defs: dict) -> _Field:
    return fields.get(id(sch)) or fields.setdefault(id(sch), _Field(sch, defs))


def _list_items(node: list, f: _Field, path: tuple, fields: dict, defs: dict, found: _Texts) -> list:
    """The items of a list to walk; the strings of a list with one schema for every item
    are taken here, once each."""
    strings = (node if set(map(type, node)) == {str} else [v for v in node if type(v) is str]) if f.uniform else []
    if strings:
        found.take_all(_field(fields, f.child(0), defs), dict.fromkeys(strings),
                       lambda t: (*path, node.index(t)))
    if len(strings) == len(node):
        return []
    return [(v, f.child(i), (*path, i)) for i, v in enumerate(node) if not (strings and type(v) is str)]


def _free_texts(value: Any, schema: "tuple[dict, dict, dict] | None"
                ) -> "tuple[tuple[tuple, str | None] | None, list[str], bool, bool]":
    """The free-text fields of ``value``: ``(path and text of the first one, every
    distinct non-empty text, whether a choice or another value stands beside
    them, whether one of them is empty)``. The strings of a list with one schema
    for every item are looked at once each. Iterative: nesting cannot exhaust the stack."""
    root, defs, fields = schema if schema is not None else _NO_SCHEMA
    found = _Texts()
    stack: list[tuple[Any, Any, tuple]] = [(value, root, ())]
    while stack:
        node, sch, path = stack.pop()
        f = _field(fields, sch, defs)
        if isinstance(node, (dict, list)) and not node:   # hunt 24: an empty list or object of free text is none
            found.take(f.empty(fields, defs, isinstance(node, dict)), None, lambda p=path: p)
        elif isinstance(node, dict):
            if f.free_keys:
                for k in node:
                    if isinstance(k, str) and f.key_free(k):
                        found.take(_KEY, k, lambda p=path, k=k: (*p, k))
            stack.extend(reversed([(v, f.child(k), (*path, k)) for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed(_list_items(node, f, path, fields, defs, found)))
        elif isinstance(node, str) or node is None:
            found.take(f, node, lambda p=path: p)
        else:
            found.other = True
    return found.first, list(found.texts), found.other, found.blank


def _path(keys: tuple) -> str:
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if out else str(key)
    return out or "completion"


def content_free_fields(value: Any, extra_keys: Iterable[str] = (), model: Any = None) -> str | None:
    """Why a parsed structured completion (``value``: its ``model_dump(mode="json")``; ``model``:
    its class, which tells free-text fields from choices) carries no content, or None: every
    free-text field is empty or content-free, or without one, it holds no value at all.
    Without ``model`` every string counts as free text.

    >>> content_free_fields({"answer": "", "confidence": "high"}) is None   # "high" is text too
    True
    """
    return screen_fields(value, extra_keys, model)[0]


def screen_fields(value: Any, extra_keys: Iterable[str] = (), model: Any = None, whole: Any = None,
                  question: str = "") -> "tuple[str | None, Any]":
    """``(content_free_fields(...), blank)``: ``blank`` is None unless the free-text fields are
    mixed, some carrying content and some empty or content-free; then it is ``value`` with every
    free-text field (or key of a free mapping) that carries content blanked to ``"-"``-s, which a
    grader renders to learn whether the judge is shown any content (a master key in the field
    shown, the content in one never shown or only tested). ``whole``: the value ``value`` is part
    of (the completion's JSON object, of which a binding reads the fields ``value``), blanked
    instead (its texts equal to one of ``value`` that carries content). ``question``: a field that only
    repeats it carries no content (``content_free_reason``).

    >>> screen_fields({"answer": "Let's think step by step.", "notes": "Paris"})[1]
    {'answer': "Let's think step by step.", 'notes': '-----'}
    """
    keys = tuple(extra_keys)
    schema = _schema_of(model) if isinstance(model, type) else None
    first, texts, other, blank = _free_texts(value, schema)
    if first is None:   # no free-text field
        return (None if other else "structured completion holds no value"), None
    flags = _content_free_flags(texts, keys, question) if texts else []
    if not all(flags):
        if not blank and not any(flags):
            return None, None   # every free-text field carries content: the common case
        if whole is None and not any(flags):   # every text carries content: no set of them made
            return None, _blanked(value, schema, _EVERY)
        rich = set(itertools.compress(texts, map(operator.not_, flags)))
        return None, _blanked(value, schema, rich) if whole is None else _blanked(whole, None, rich)
    path, text = first
    reason = content_free_reason(text, keys, question) if text else "empty"
    which = "free-text" if schema is not None else "text"
    return f"every {which} field is empty or content-free ({_path(path)}: {reason})", None


class _Every:
    """``rich`` for ``_blanked`` where every free text carries content: it holds every text but the
    empty one (which ``_free_texts`` leaves out)."""

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and text != ""


_EVERY: "Any" = _Every()


#: what a free-text field that carries content is blanked to, once per character: no content, but
#: as long, so a template's test of the field (``{{#if notes}}``, ``{% if notes|length > 20 %}``)
#: takes the same branch
_PLACEHOLDER = "-"


def _blanked(value: Any, schema: "tuple[dict, dict, dict] | None", rich: "set[str]") -> Any:
    """A copy of ``value`` with each free-text string in ``rich`` (a value, or a key the policy
    names) blanked to ``_PLACEHOLDER``-s (as many as it has characters; a key, one and its
    position, as keys stay distinct). Iterative."""
    root, defs, fields = schema if schema is not None else _NO_SCHEMA
    holder = [value]
    stack: list[tuple[Any, Any, Any]] = [(holder, 0, root)]
    blanks: "dict[int, dict[str, str]]" = {}   # a list item's field (by id: ``fields`` keeps it) -> texts blanked
    while stack:
        parent, key, sch = stack.pop()
        node = parent[key]
        f = _field(fields, sch, defs)
        if isinstance(node, dict):
            copy: Any = _blanked_dict(node, f, rich, stack)
        elif isinstance(node, list):
            copy = _blanked_list(node, f, rich, stack, (fields, defs, blanks))
        else:
            copy = _PLACEHOLDER * len(node) if isinstance(node, str) and node in rich and f.kind(node) == "free" \
                else node
        parent[key] = copy
    return holder[0]


def _blanked_dict(node: dict, f: _Field, rich: "set[str]", stack: list) -> dict:
    """``_blanked``'s copy of an object: its free keys in ``rich`` blanked (keys stay distinct), each
    value put on ``stack`` to be walked in its copy."""
    copy: dict = {}
    for k, v in node.items():
        if isinstance(k, str) and k in rich and f.key_free(k):
            shown = _PLACEHOLDER + str(len(copy))   # keys stay distinct
            while shown in node or shown in copy:
                shown += _PLACEHOLDER
            copy[shown] = v
            stack.append((copy, shown, f.child(k)))
        else:
            copy[k] = v
            stack.append((copy, k, f.child(k)))
    return copy


def _blanked_list(node: list, f: _Field, rich: "set[str]", stack: list,
                  walk: "tuple[dict, dict, dict[int, dict[str, str]]]") -> list:
    """``_blanked``'s copy of a list, its items put on ``stack`` to be walked in it; with one schema for
    every item, its strings are blanked here (40,000 of them), the texts blanked per item field kept in
    ``walk`` (``fields``, ``defs``, ``blanks``)."""
    copy = list(node)
    if not (f.uniform and copy):
        stack.extend((copy, i, f.child(i)) for i in range(len(copy)))
        return copy
    fields, defs, blanks = walk
    item_sch = f.child(0)
    item = _field(fields, item_sch, defs)
    if rich is _EVERY:   # every free text: the strings of the item's kind free (40,000 of them: no set)
        if item.other_text != "free":
            strings: "list[Any]" = copy
        elif set(map(type, copy)) == {str} and not item.choices:
            return _dashes(copy)
        else:
            strings = [_PLACEHOLDER * len(v) if isinstance(v, str) and v not in item.choices else v for v in copy]
        stack.extend((strings, i, item_sch) for i, v in enumerate(strings) if isinstance(v, (dict, list)))
        return strings
    shown = blanks.get(id(item))
    if shown is None:   # each text blanked, as it is shown
        free = item.free_texts(rich)
        shown = blanks[id(item)] = dict(zip(free, _dashes(free)))
    if set(map(type, copy)) == {str}:   # strings only (40,000 of them): each looked up in C
        return list(map(shown.get, copy, copy))
    copy = [shown[v] if isinstance(v, str) and v in shown else v for v in copy]
    stack.extend((copy, i, item_sch) for i, v in enumerate(copy) if isinstance(v, (dict, list)))
    return copy


def _dashes(texts: "list[str]") -> "list[str]":
    """``_PLACEHOLDER`` once per character of each of ``texts``, one string for each length (a string made per text
    cost 4 ms over 43,000)."""
    lengths = list(map(len, texts))
    shown = {n: _PLACEHOLDER * n for n in set(lengths)}
    return list(map(shown.__getitem__, lengths))


#: the second placeholder: a field whose content the template only tests or compares with a text
#: (``{% if notes == "none" %}``) renders the same with either, a field shown does not
_OTHER_PLACEHOLDER = "_"


def blanked_again(value: Any, blank: Any) -> Any:
    """``blank`` (``screen_fields``' blanking of ``value``) with what was blanked written with
    ``_OTHER_PLACEHOLDER`` instead: the judge is shown content where the two requests differ.
    Rendered against ``value`` itself, a field compared with a text flipped its branch when
    blanked (``"none"`` is not ``"----"``), and the master key beside it reached the judge."""
    holder = [blank]
    stack: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while stack:
        orig, parent, key = stack.pop()
        node = parent[key]
        if isinstance(node, dict) and isinstance(orig, dict) and len(node) == len(orig):
            copy: Any = {}
            for (k0, v0), (k, v) in zip(orig.items(), node.items()):
                if k != k0 and isinstance(k, str):   # a key blanked: keys stay distinct
                    k = k.replace(_PLACEHOLDER, _OTHER_PLACEHOLDER)
                    while k in copy or k in orig:
                        k += _OTHER_PLACEHOLDER
                copy[k] = v
                stack.append((v0, copy, k))
        elif isinstance(node, list) and isinstance(orig, list) and len(node) == len(orig):
            copy = list(node)
            stack.extend((o, copy, i) for i, o in enumerate(orig))
        else:
            copy = _OTHER_PLACEHOLDER * len(node) if isinstance(node, str) and node != orig else node
        parent[key] = copy
    return holder[0]


def warm_screen(keys: tuple[str, ...]) -> None:
    """Compile the screen's patterns and tables for ``keys`` now (a grader's construction) rather than in its first
    grade, where they held the event loop about 0.6 s: a text and a batch of texts screened, each step reached."""
    content_free_reason("Gubhtug cebprff: rewsna", keys)
    _content_free_flags(["Gubhtug cebprff:", "Thought process:"] * 4, keys)
    _doubled_units(keys, _UNITS), _foreign(keys)   # a long text's run (``_opener_end``)
