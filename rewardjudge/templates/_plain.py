"""Template contexts as plain data, what a template may read (``to_plain``, ``to_plain_context``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..errors import TemplateContextError

__all__ = ["PlainContext", "to_plain", "to_plain_context"]


class PlainContext(dict):
    """A context turned into plain data by ``to_plain_context``; ``changed`` names the top-level
    keys whose values were converted (a subclass of ``str``, ``int`` or ``float`` too: to its exact
    type; the others are the caller's own objects, plain data of exact types, not copied)."""

    __slots__ = ("changed",)


def to_plain_context(context: Mapping[str, Any]) -> PlainContext:
    """``context`` converted once (see ``to_plain``), to render several templates with; values
    that are plain data of exact types already are kept, not copied."""
    if isinstance(context, PlainContext):
        return context
    out = PlainContext()
    changed: list[str] = []
    leaves = _EXACT_LEAVES
    for k, v in context.items():
        key = k if type(k) is str else str(k)
        if type(v) in leaves or _is_plain(v):
            out[key] = v
        else:   # converted, or kept as a subclass of str, int or float
            out[key] = to_plain(v, f"context.{k}")
            changed.append(key)
    out.changed = frozenset(changed)
    return out


def to_plain(value: Any, _path: str = "context") -> Any:
    """A context value as plain data (mappings, sequences, pydantic models and dataclasses
    converted recursively; numpy arrays and scalars as lists and numbers, bytes as UTF-8 text (a
    trainer's data: verl's object arrays); a subclass of ``str``, ``int`` or ``float`` as its value,
    of the exact type; any other object as ``str(object)``, never a repr such as ``['4' 'four']`` or
    ``b'4'``); callables (pybars3 would call them) and bytes that are not UTF-8 raise
    ``TemplateContextError`` naming the path."""
    try:
        return _plain(value)
    except _NotData as found:
        raise TemplateContextError(f"{_path}{''.join(reversed(found.steps))} {found.why} "
                                   f"({found.value!r:.60}); templates take data only") from None


class _NotData(Exception):
    # carries the path up the recursion; built only on error (this runs per render)
    def __init__(self, value: Any, why: str):
        self.value, self.why = value, why
        self.steps: list[str] = []


def _plain(value: Any) -> Any:
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict or isinstance(value, Mapping):
        pairs, out = value.items(), {}
        step = ".{}"
    elif t is list or t is tuple or isinstance(value, (list, tuple)):
        pairs, out = enumerate(value), []
        step = "[{}]"
    else:
        return _plain_leaf(value)
    for k, v in pairs:
        try:
            p = v if type(v) is str else _plain(v)
        except _NotData as found:
            found.steps.append(step.format(k))
            raise
        if type(out) is list:
            out.append(p)
        else:
            out[k if type(k) is str else str(k)] = p
    return out


def _plain_leaf(value: Any) -> Any:
    # a subclass of str, int or float as its own value, of the exact type: its __str__ (what the
    # template would print) may be anything, text no neutraliser has seen (an Enum mixin's name)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        value = float.__float__(value)
        return value if math.isfinite(value) else str(value)
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _NotData(value, "holds bytes that are not UTF-8 text") from None
    if callable(value):
        raise _NotData(value, "is callable")
    return str(value)


_EXACT_LEAVES = frozenset({str, int, bool, type(None)})


def _is_plain(value: Any) -> bool:
    """Whether ``value`` is plain data of exact types all the way down (``_plain`` would copy it
    unchanged): a context value that needs no conversion."""
    t = type(value)
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or type(v) not in _EXACT_LEAVES and not _is_plain(v):
                return False
        return True
    if t is list:
        for v in value:
            if type(v) not in _EXACT_LEAVES and not _is_plain(v):
                return False
        return True
    return t in _EXACT_LEAVES or t is float and math.isfinite(value)


_MISSING = object()


def _lookup(ctx: Any, path: str) -> Any:
    """The value at a dotted ``path`` as a template reads it (keys, list indices, ``length`` of a
    list or text), or ``_MISSING``: what strict rendering checks before it renders."""
    return lookup_steps(ctx, path.split("."))


def lookup_steps(ctx: Any, steps: "list[str] | tuple[str, ...]") -> Any:
    """``_lookup`` of a path already cut into its steps."""
    cur = ctx
    for part in steps:
        if isinstance(cur, dict):
            if part not in cur:
                return _MISSING
            cur = cur[part]
        elif isinstance(cur, (list, str)) and part == "length":
            cur = len(cur)
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur
