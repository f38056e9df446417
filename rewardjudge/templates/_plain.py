"""Template contexts as plain data: what a Handlebars template may read.

``to_plain`` converts a context value (mappings, sequences, pydantic models,
dataclasses) into plain data and refuses callables (pybars3 would call
them); ``to_plain_context`` does it once per context, keeping values that
are plain data already instead of copying them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from ..errors import TemplateContextError

__all__ = ["PlainContext", "to_plain", "to_plain_context"]


class PlainContext(dict):
    """A context turned into plain data by ``to_plain_context``; ``changed`` names the top-level
    keys whose values were converted or hold a subclass of ``str``, ``int`` or ``float`` (the
    others are the caller's own objects, plain data of exact types, not copied)."""

    __slots__ = ("changed",)


def to_plain_context(context: Mapping[str, Any]) -> PlainContext:
    """``context`` converted once (see ``to_plain``), to render several templates with; values
    that are plain data of exact types already are kept, not copied."""
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
            raise _refused(found, f"context.{k}") from None
        if p is not v or t not in _EXACT_TYPES:   # converted, or kept as a subclass
            changed.append(key)
        out[key] = p
    out.changed = frozenset(changed)
    return out


def to_plain(value: Any, _path: str = "context") -> Any:
    """A context value as plain data (mappings, sequences, pydantic models and dataclasses
    converted recursively); callables raise ``TemplateContextError`` (pybars3 would call them)."""
    try:
        return _plain(value)
    except _CallableFound as found:
        raise _refused(found, _path) from None


def _refused(found: "_CallableFound", path: str) -> TemplateContextError:
    return TemplateContextError(f"{path}{''.join(reversed(found.steps))} is callable "
                                f"({found.value!r:.60}); templates take data only")


class _CallableFound(Exception):
    # carries the path up the recursion; built only on error (this runs per render)
    def __init__(self, value: Any):
        self.value = value
        self.steps: list[str] = []


def _plain(value: Any) -> Any:
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict or isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            try:
                out[k if type(k) is str else str(k)] = v if type(v) is str else _plain(v)
            except _CallableFound as found:
                found.steps.append(f".{k}")
                raise
        return out
    if t is list or t is tuple or isinstance(value, (list, tuple)):
        return _each(_plain, enumerate(value), "[{}]")[0]
    return _plain_leaf(value)


def _plain_leaf(value: Any) -> Any:
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


def _view(value: Any) -> Any:
    """``_plain(value)``, but ``value`` itself (not a copy) where it is plain data of exact types
    already; raises ``_CallableFound`` at the same (first) callable as ``_plain``."""
    t = type(value)
    if t is dict:
        return _view_dict(value)
    if t is list:
        return _view_list(value)
    if t in _EXACT_LEAVES or (t is float and math.isfinite(value)):
        return value
    return _plain(value)


def _view_dict(value: dict) -> dict:
    try:
        for k, v in value.items():
            tv = type(v)
            if type(k) is not str or not (tv in _EXACT_LEAVES or (tv is dict or tv is list)
                                          and _view(v) is v or tv is float and math.isfinite(v)):
                break
        else:
            return value
    except _CallableFound:
        pass   # found below an item: convert again from the start, so the error names the whole path
    views, same = _each(_view, value.items(), ".{}")
    if same and all(type(k) is str for k in value):
        return value
    return {k if type(k) is str else str(k): p for k, p in zip(value, views)}


def _view_list(value: list) -> list:
    try:
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
            if not ((tv is dict or tv is list) and _view(v) is v or tv is float and math.isfinite(v)):
                break
        else:
            return value
    except _CallableFound:
        pass   # as in _view_dict
    views, same = _each(_view, enumerate(value), "[{}]")
    return value if same else views


def _each(convert: Any, pairs: Iterable[tuple[Any, Any]], step: str) -> tuple[list[Any], bool]:
    """``convert`` of each value of ``(label, value)`` pairs, and whether every one is the value
    itself; a callable's path gets ``step`` formatted with its label."""
    views: list[Any] = []
    same = True
    for label, v in pairs:
        try:
            p = convert(v)
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
