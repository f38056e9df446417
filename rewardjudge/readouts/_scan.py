"""The one JSON-object scanner (completions parsed into pydantic models, scorer
variables bound to completion fields): a decode is tried at every ``{"`` outside
an object already found, so no stray brace, unclosed string or deep nesting
before an object hides it; the work stays linear in the text. Judge replies are
read only where sealed (``readouts._seal``)."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, NamedTuple

import numpy as np

__all__ = ["JsonSpan", "MAX_DEPTH", "MAX_SPAN", "decode_within", "json_objects", "too_deep"]

MAX_SPAN = 16_384      # characters decoded first from each start (wider windows follow)
MAX_DEPTH = 32         # nesting levels: a verdict object is never deeper
_START = re.compile(r'\{\s*"')


class JsonSpan(NamedTuple):   # a tuple: 29,000 objects in 256 KiB are made 4x faster than a dataclass's
    start: int
    end: int
    value: dict[str, Any]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


# strict=False: a raw line break or tab inside a string (llama.cpp's grammars allow one) is read as itself
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float, strict=False)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a decoded value nests lists and objects deeper than ``limit`` (iterative)."""
    if type(value) is dict and not any(isinstance(v, (dict, list)) for v in value.values()):
        return limit < 1   # a flat object (a verdict): one level
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        kids = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((v, depth + 1) for v in kids if isinstance(v, (dict, list)))
    return False


_RAW_DEPTH = 64        # brace nesting (strings not told apart) a start may reach before closing


def _viable_starts(text: str, starts: list[int]) -> list[int]:
    """The starts that do not nest deeper than _RAW_DEPTH within MAX_SPAN characters,
    counting every brace and bracket (a cheap, vectorised bound)."""
    if not starts:
        return starts
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    n = len(codes)
    opens = (codes == 0x7B) | (codes == 0x5B)
    closes = (codes == 0x7D) | (codes == 0x5D)
    depth = np.cumsum(opens.astype(np.int32) - closes.astype(np.int32))   # after each character
    st = np.asarray(starts, dtype=np.int64)
    base = depth[st].astype(np.int64) - 1                                 # depth before the '{'
    stride = n + 1

    def first_after(mask: np.ndarray, level: np.ndarray) -> np.ndarray:
        """For each start, the first index > start where ``mask`` holds and depth == level."""
        idx = np.nonzero(mask)[0].astype(np.int64)
        found = np.full(len(st), n, dtype=np.int64)
        if not len(idx):
            return found
        keys = np.sort(depth[idx].astype(np.int64) * stride + idx)
        q = level * stride + st + 1
        pos = np.searchsorted(keys, q)
        ok = pos < len(keys)
        hit = keys[np.minimum(pos, len(keys) - 1)]
        ok &= (hit // stride) == level
        found[ok] = hit[ok] % stride
        return found

    close_at = first_after(closes, base)
    deep_at = first_after(opens, base + _RAW_DEPTH + 1)
    keep = (deep_at == n) | (deep_at > close_at) | (deep_at - st > MAX_SPAN)
    return [int(i) for i in st[keep]]


def json_objects(text: str) -> list[JsonSpan]:
    """Every JSON object in ``text`` that decodes, outermost first, in order.

    >>> [s.value for s in json_objects('x {"a": 1} {" {"b": "}"}')]
    [{'a': 1}, {'b': '}'}]
    """
    if not isinstance(text, str) or "{" not in text:
        return []
    starts = [m.start() for m in _START.finditer(text)]
    # the vectorised depth bound pays off on long texts only
    viable = starts if len(text) <= _SHORT else _viable_starts(text, starts)
    found: list[JsonSpan] = []
    covered = 0
    n = len(text)
    # characters that may be decoded again in wider windows: linear in the text
    budget = [8 * n + 4 * MAX_SPAN]
    for i in viable:
        if i < covered:
            continue
        span = _decode_at(text, i, budget)
        if span is not None:
            found.append(span)
            covered = span.end
    if len(viable) < len(starts):
        found = _second_chance(text, sorted(set(starts) - set(viable), reverse=True), found)
    return found


def _decode_at(text: str, i: int, budget: list[int]) -> JsonSpan | None:
    """The object decoded at ``text[i]``, if any, from a bounded window (a decode
    error costs as much as the offset it reports); a longer object is decoded
    again in windows 8 times wider while ``budget[0]`` lasts."""
    n = len(text)
    size = MAX_SPAN
    while True:
        window = text[i:i + size] if n - i > size else text[i:] if i else text
        try:
            value, end = _DECODER.raw_decode(window)
            break
        except (ValueError, RecursionError):
            if len(window) == n - i or budget[0] < 8 * size:
                return None
            budget[0] -= 8 * size
            size *= 8
    if not isinstance(value, dict) or ((text.find("{", i + 1, i + end) >= 0 or text.find("[", i, i + end) >= 0)
                                       and too_deep(value)):
        return None   # (no brace or bracket inside: flat, as a verdict is)
    return JsonSpan(i, i + end, value)


#: characters past a decode error's offset that the decoder may have looked at (``-Infinity``,
#: a number's ``e+``, a ``\uXXXX`` escape) without the error telling which: with this many
#: more in the window, the window's error is the whole text's
_LOOKAHEAD = 32


def decode_within(raw_decode: Callable[[str], "tuple[Any, int]"], text: str, i: int,
                  stop: int | None = None, fails_at: int | None = None) -> "tuple[Any, int]":
    """``raw_decode`` of the value at ``text[i]`` whose end is at most ``stop`` (default: the
    text's end), as decoding ``text[i:stop]`` reads it: its value and end (an offset in ``text``),
    or the decoder's error raised. A failed decode of the whole text counts its lines from the
    text's start (``JSONDecodeError``), a cost of its offset: windows from ``i``, 8 times wider
    each, are decoded instead, and a window's error ends the tries where the window also holds
    what the decoder looked at past it (an unterminated string looks to the window's end: the
    next window holds the string's next quote, and none before ``stop`` ends the tries).

    ``fails_at``: a ``{`` after ``i`` (before ``stop``) whose object, decoded by ``stop``, is known
    to fail (``decode_within`` raised there). ``text[i:fails_at]`` is decoded first: an object
    that ends there is the value; one that fails ``Expecting`` something, the decoder outside a
    string, fails by ``stop`` too (before ``fails_at``, or where it reads that ``{`` outside a
    string: a syntax error or the object known to fail, nested), and the error is raised without
    reading past ``fails_at`` (256 nested starts before a long string are not each decoded
    through it). Any other error (inside a string: unterminated, or an escape cut short) decodes
    to ``stop`` as without it."""
    stop = len(text) if stop is None else stop
    if fails_at is not None and i < fails_at < stop:
        try:
            return decode_within(raw_decode, text, i, fails_at)
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Expecting"):
                raise
        except (ValueError, RecursionError):
            pass
    size = MAX_SPAN
    while True:
        last = i + size >= stop
        window = text[i:stop] if last else text[i:i + size]
        try:
            value, end = raw_decode(window)
            return value, i + end
        except json.JSONDecodeError as exc:
            if last:
                raise
            if exc.msg.startswith("Unterminated"):
                quote = text.find('"', i + size, stop)
                if quote < 0:
                    raise
                size = max(2 * size, quote + _LOOKAHEAD - i)
                continue
            if exc.pos + _LOOKAHEAD < len(window):
                raise
        except RecursionError:
            raise   # the window's decode nested as deep as the text's would, at the same place
        except ValueError:   # an integer too long to read: its digits may go on past the window
            if last:
                raise
        size *= 8


_SECOND_TRIES = 64
_SHORT = 4096


def _second_chance(text: str, skipped: list[int], found: list[JsonSpan]) -> list[JsonSpan]:
    """Decode starts the depth bound skipped (it counts brackets inside strings too: an object
    whose strings hold many ``[`` was skipped and one nested in it read in its place), last
    first: at most ``_SECOND_TRIES`` of them, within a budget linear in the text."""
    budget = [4 * len(text) + 4 * MAX_SPAN]
    tries = 0
    for i in skipped:
        if tries >= _SECOND_TRIES or budget[0] <= 0:
            break
        if any(s.start <= i < s.end for s in found):
            continue
        tries += 1
        budget[0] -= min(len(text) - i, MAX_SPAN)
        span = _decode_at(text, i, budget)
        if span is not None:
            found = sorted([s for s in found if not (span.start <= s.start and s.end <= span.end)]
                           + [span], key=lambda s: s.start)
    return found
