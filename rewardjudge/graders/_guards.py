"""Guards that run before a judge sees a completion: an empty or content-free one (blank
fillers, punctuation, a lone code fence, "master key" openers such as "Thought process:"),
or a structured one whose free-text fields all are, is penalized without a judge call.
Every check is linear in the text's length."""

from __future__ import annotations

import functools
import re
import weakref
from typing import Any, Iterable, Iterator

from ..readouts._text import free_joiner, letters

# Openers that carry no answer; matched on their letters and digits (``letters``)
MASTER_KEYS: frozenset[str] = frozenset({
    "thought process", "let's solve this problem step by step", "let's think step by step",
    "solution", "answer", "the answer is", "step 1", "reasoning", "explanation", "response",
    "final answer", "here is the answer", "here's the answer", "i think", "sure",
    "boxed",                                   # an empty \boxed{}
    # the multilingual master keys of "One Token to Fool LLM-as-a-Judge" (2025), and kin
    "解", "解答", "答案", "答", "かいせつ", "解説", "respuesta", "solución", "réponse", "antwort",
    "lösung", "ответ", "решение",
})

# Nothing a reader sees: whitespace, fillers that render blank, zero-width characters
_BLANK = re.compile("[\\s\u3164\u2800\u115f\u1160\uffa0\u17b4\u17b5\u034f\u180e\u00ad"
                    "\u200b-\u200f\u2028-\u202f\u205f-\u206f\ufeff\ufe00-\ufe0f]*")

# Markdown that is no answer by itself: a code fence and its language (tags are content here)
_MARKUP = re.compile(r"`{3,}[^`\x00-\x1f]*|~{3,}[^~\x00-\x1f]*")

#: the longest text quoted in a reason
_SHOWN = 40


@functools.lru_cache(maxsize=64)
def _keys_pattern(extra_keys: tuple[str, ...]) -> "re.Pattern[str]":
    """Master keys (and ``extra_keys``) in ``letters`` form, longest first."""
    forms = {letters(k) for k in (*MASTER_KEYS, *extra_keys) if isinstance(k, str)} - {""}
    return re.compile("|".join(re.escape(f) for f in sorted(forms, key=lambda f: (-len(f), f))))


def _only_keys(found: str, extra_keys: tuple[str, ...]) -> bool:
    """Whether ``found`` (``letters`` of a text) is one master key or several in a row."""
    pattern = _keys_pattern(extra_keys)
    return pattern.match(found) is not None and not pattern.sub("", found)


def _all_content_free(texts: "list[str]", keys: tuple[str, ...]) -> bool:
    """Whether every text is empty or content-free (``content_free_reason``), in one pass
    over them joined (30,000 short strings cost one pass, not 30,000 calls)."""
    joiner = free_joiner(texts)
    if joiner is not None:
        joined = joiner.join(texts)
        if "`" in joined or "~" in joined:
            joined = _MARKUP.sub(" ", joined)
        found = letters(joined, keep=joiner)
        if found.count(joiner) == len(texts) - 1:
            # each text's letters between joiners: all of them master keys or nothing
            return not _keys_pattern(keys).sub("", found).replace(joiner, "")
    return all(content_free_reason(t, keys) is not None for t in texts)


def content_free_reason(text: str, extra_keys: Iterable[str] = ()) -> str | None:
    """Why ``text`` carries no content (empty: nothing visible; content-free: no letter or
    digit once code fences are set aside, or nothing but master keys), or None if it does.

    >>> content_free_reason("  \\u200b\\u3164 ")
    'empty completion'
    >>> content_free_reason("Thought  process:")
    "content-free completion: 'Thought  process:'"
    >>> content_free_reason("Paris.") is None
    True
    """
    if not isinstance(text, str):
        return "completion is not text"
    if _BLANK.fullmatch(text):
        return "empty completion"
    text_letters = letters(_MARKUP.sub(" ", text) if "`" in text or "~" in text else text)
    if not text_letters or _only_keys(text_letters, tuple(extra_keys)):
        return f"content-free completion: {text.strip()[:_SHOWN]!r}"
    return None


_SCHEMAS: "weakref.WeakKeyDictionary[type, tuple[dict, dict] | None]" = weakref.WeakKeyDictionary()
_MAX_BRANCHES = 64   # schema steps followed for one node ($ref, anyOf): a recursive model loops


def _schema_of(model: Any) -> "tuple[dict, dict] | None":
    """``model``'s JSON schema (as ``model_dump(mode="json")`` writes it) and
    its ``$defs``, made once per class; None when it has none."""
    if model is None:
        return None
    try:
        return _SCHEMAS[model]
    except KeyError:
        pass
    except TypeError:   # not a class that can be weakly referenced
        return None
    try:
        schema = model.model_json_schema(mode="serialization")
        found = (schema, schema.get("$defs") or {}) if isinstance(schema, dict) else None
    except Exception:   # a field type without a JSON schema: every string counts as free text
        found = None
    _SCHEMAS[model] = found
    return found


def _branches(node: Any, defs: dict) -> list[dict]:
    """The alternatives a schema node allows: ``$ref``, ``anyOf``/``oneOf`` and
    a one-item ``allOf`` followed (at most ``_MAX_BRANCHES`` steps: a
    recursive model's references loop)."""
    out: list[dict] = []
    todo = [node]
    steps = 0
    while todo and steps < _MAX_BRANCHES:
        steps += 1
        node = todo.pop()
        if not isinstance(node, dict):
            out.append({})
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref[len("#/$defs/"):])
            rest = {k: v for k, v in node.items() if k != "$ref"}
            todo.append({**(target if isinstance(target, dict) else {}), **rest})
            continue
        alts = node.get("anyOf") or node.get("oneOf")
        if isinstance(alts, list):
            todo.extend(reversed(alts))
            continue
        alls = node.get("allOf")
        if isinstance(alls, list) and len(alls) == 1 and isinstance(alls[0], dict):
            todo.append({**{k: v for k, v in node.items() if k != "allOf"}, **alls[0]})
            continue
        out.append(node)
    return out or [{}]


def _types(branch: dict) -> set:
    t = branch.get("type")
    return set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()


class _Field:
    """What a schema node says about the values at its place: which strings are choices,
    whether a string is free text or a formatted value (``format``), and its children."""

    __slots__ = ("node", "choices", "free", "formatted", "branches", "uniform")

    def __init__(self, node: Any, defs: dict):
        self.node = node   # kept alive: fields are cached by the node's id
        self.branches = _branches(node, defs)
        choice = [b for b in self.branches if "enum" in b or "const" in b]
        plain = [b for b in self.branches if "enum" not in b and "const" not in b]
        values: list[Any] = []
        for b in choice:
            values.extend(b["enum"] if isinstance(b.get("enum"), list) else [b.get("const")])
        self.choices = frozenset(v for v in values if isinstance(v, str))
        # a str field, or one the schema does not describe (Any): free text
        self.free = any(not _types(b) or "string" in _types(b) and "format" not in b for b in plain)
        self.formatted = any("string" in _types(b) and "format" in b for b in plain)
        self.uniform = not any(isinstance(b.get("prefixItems"), list) for b in self.branches)

    def kind(self, text: "str | None") -> str:
        """``"free"`` text, a ``"choice"``, a ``"value"`` (a formatted string),
        or ``"none"`` (None where no free text goes)."""
        if text is None:   # an unset field: empty free text where a str may stand
            return "free" if any("string" in _types(b) and "format" not in b and "enum" not in b
                                 and "const" not in b for b in self.branches) else "none"
        if text in self.choices:
            return "choice"
        if self.free:
            return "free"
        if self.formatted:
            return "value"
        return "choice" if self.choices else "free"

    def child(self, key: Any) -> Any:
        """The schema node of ``key`` (a property name or an item index)."""
        for b in self.branches:
            if isinstance(key, str):
                props = b.get("properties")
                if isinstance(props, dict) and key in props:
                    return props[key]
                extra = b.get("additionalProperties")
                if isinstance(extra, dict):
                    return extra
            else:
                prefix = b.get("prefixItems")
                if isinstance(prefix, list) and key < len(prefix):
                    return prefix[key]
                items = b.get("items")
                if isinstance(items, dict):
                    return items
        return _ANY


_ANY: dict = {}


class _At:
    """A place in a list found by its text (written out only for a reason)."""

    __slots__ = ("items", "text")

    def __init__(self, items: list, text: str):
        self.items, self.text = items, text


def _free_texts(value: Any, schema: "tuple[dict, dict] | None", counts: list[int]
                ) -> "Iterator[tuple[Any, str | None]]":
    """The free-text fields of ``value``, as (path, text or None), each text of a list once;
    ``counts`` gets how many choice strings and how many other values it holds. A path is a
    chain ``(parent path, key)`` (``_path``). Iterative: nesting cannot exhaust the stack."""
    root, defs = schema if schema is not None else (_ANY, {})
    fields: dict[int, _Field] = {}

    def field(node: Any) -> _Field:
        return fields.get(id(node)) or fields.setdefault(id(node), _Field(node, defs))

    stack: list[tuple[Any, Any, Any]] = [(value, root, None)]
    while stack:
        node, sch, path = stack.pop()
        if isinstance(node, dict):
            f = field(sch)
            stack.extend(reversed([(v, f.child(k), (path, k)) for k, v in node.items()]))
        elif isinstance(node, list):
            yield from _list_texts(node, field(sch), field, path, stack, counts)
        elif isinstance(node, str) or node is None:
            if _counted(field(sch).kind(node), counts):
                yield path, node
        else:
            counts[1] += 1


def _list_texts(node: list, f: _Field, field: Any, path: Any, stack: list, counts: list[int]
                ) -> "Iterator[tuple[Any, str | None]]":
    """``_free_texts`` of a list: with one schema for every item, the strings in
    bulk (each distinct one once); the other items go on ``stack``."""
    if f.uniform:
        strings = [v for v in node if type(v) is str]
        if strings:
            of = field(f.child(0))
            for text in dict.fromkeys(strings):
                if _counted(of.kind(text), counts):
                    yield (path, _At(node, text)), text
        if len(strings) == len(node):
            return
        rest = [(v, f.child(i), (path, i)) for i, v in enumerate(node) if type(v) is not str]
    else:
        rest = [(v, f.child(i), (path, i)) for i, v in enumerate(node)]
    stack.extend(reversed(rest))


def _counted(kind: str, counts: list[int]) -> bool:
    """Whether ``kind`` is free text; a choice or a value is counted."""
    if kind == "choice":
        counts[0] += 1
    elif kind == "value":
        counts[1] += 1
    return kind == "free"


def _path(chain: Any) -> str:
    keys = []
    while chain is not None:
        chain, key = chain
        keys.append(key.items.index(key.text) if isinstance(key, _At) else key)
    out = ""
    for key in reversed(keys):
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if out else str(key)
    return out or "completion"


def content_free_fields(value: Any, extra_keys: Iterable[str] = (), model: Any = None) -> str | None:
    """Why a parsed structured completion (``value``: its ``model_dump(mode="json")``; ``model``:
    its class, which tells free-text fields from choices) carries no content, or None: every
    free-text field is empty or content-free, or without one, it holds no value at all.
    Without ``model`` every string counts as free text."""
    keys = tuple(extra_keys)
    schema = _schema_of(model)
    counts = [0, 0]
    first: "tuple[Any, str | None] | None" = None
    texts: dict[str, None] = {}
    for path, text in _free_texts(value, schema, counts):
        if first is None:
            first = (path, text)
        if text:
            texts[text] = None
    if first is None:   # no free-text field
        return None if counts[0] or counts[1] else "structured completion holds no value"
    if texts and not _all_content_free(list(texts), keys):
        return None
    path, text = first
    reason = content_free_reason(text, keys) if text else "empty"
    which = "free-text" if schema is not None else "text"
    return f"every {which} field is empty or content-free ({_path(path)}: {reason})"
