"""The one JSON-object scanner (completions parsed into pydantic models, scorer
variables bound to completion fields): a decode is tried at every ``{"`` outside
an object already found, so no stray brace, unclosed string or deep nesting
before an object hides it; the work stays linear in the text. Judge replies are
read only where sealed (``readouts._seal``)."""

from __future__ import annotations

import bisect
import json
import math
import re
import threading
from typing import Any, Callable, NamedTuple

import numpy as np

from ._fold import _codes

__all__ = ["JsonSpan", "MAX_DEPTH", "MAX_SPAN", "MAX_TRIES", "Nested", "SURROGATE_ESCAPE", "decode_object",
           "decode_within", "json_objects", "lone_surrogates_out", "scan_objects", "too_deep"]

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


def _first_at(pos: np.ndarray, level: np.ndarray, after: np.ndarray, want: np.ndarray, none: int) -> np.ndarray:
    """For each query, the first of ``pos`` (ascending, below ``none``) past ``after`` whose
    ``level`` is ``want``; ``none`` where there is none. Vectorised: one sort, one search."""
    found = np.full(len(after), none, dtype=np.int64)
    if not len(pos):
        return found
    stride = none + 1
    keys = np.sort(level.astype(np.int64) * stride + pos)
    at = np.searchsorted(keys, want.astype(np.int64) * stride + after + 1)
    hit = keys[np.minimum(at, len(keys) - 1)]
    ok = (at < len(keys)) & (hit // stride == want)
    found[ok] = hit[ok] % stride
    return found


def _viable_starts(text: str, starts: np.ndarray) -> np.ndarray:
    """Whether each of ``starts`` does not nest deeper than _RAW_DEPTH within MAX_SPAN
    characters, counting every brace and bracket (a cheap, vectorised bound)."""
    if not len(starts):
        return np.ones(0, dtype=bool)
    codes = _codes(text)
    n = len(codes)
    opens = (codes == 0x7B) | (codes == 0x5B)
    closes = (codes == 0x7D) | (codes == 0x5D)
    depth = np.cumsum(opens.astype(np.int32) - closes.astype(np.int32))   # after each character
    st = np.asarray(starts, dtype=np.int64)
    base = depth[st].astype(np.int64) - 1                                 # depth before the '{'

    def first_after(mask: np.ndarray, level: np.ndarray) -> np.ndarray:
        idx = np.flatnonzero(mask)
        return _first_at(idx, depth[idx], st, level, n)

    close_at = first_after(closes, base)
    deep_at = first_after(opens, base + _RAW_DEPTH + 1)
    keep = (deep_at == n) | (deep_at > close_at) | (deep_at - st > MAX_SPAN)
    return keep


#: whether ``\\s`` matches a character in a ``str`` pattern (``str.isspace``), by code point up to
#: U+3000 (none above is a space), then False
_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3001)] + [False])


def _starts(text: str) -> np.ndarray:
    """Where ``_START`` matches in ``text`` (a ``{``, whitespace, a ``"``), in numpy: a match
    object per start cost 20 ms for the 52,000 of 256 KiB of ``{""} ``."""
    if len(text) <= _SHORT:
        return np.array([m.start() for m in _START.finditer(text)], dtype=np.int64)
    codes = _codes(text)
    n = len(codes)
    # the first character at or after each place that is no whitespace (n where none is)
    solid = np.where(_IS_SPACE[np.minimum(codes, len(_IS_SPACE) - 1)], n, np.arange(n))
    solid = np.append(np.minimum.accumulate(solid[::-1])[::-1], n)
    braces = np.flatnonzero(codes == 0x7B)
    after = solid[braces + 1]
    return braces[(after < n) & (codes[np.minimum(after, n - 1)] == 0x22)]


def json_objects(text: str) -> list[JsonSpan]:
    """Every JSON object in ``text`` that decodes, outermost first, in order, among the first
    ``MAX_TRIES`` starts decoded (``scan_objects`` says whether some were left).

    >>> [s.value for s in json_objects('x {"a": 1} {" {"b": "}"}')]
    [{'a': 1}, {'b': '}'}]
    """
    return scan_objects(text)[0]


#: starts decoded at most in one text: each decode costs a few microseconds in Python, more where
#: it fails (an exception), and 256 KiB hold 29,000 objects side by side or 52,000 broken ones
#: (``{""} ``): 100-300 ms. A completion holds a few objects; one that opens thousands is no answer
MAX_TRIES = 4096


def scan_objects(text: str) -> "tuple[list[JsonSpan], bool]":
    """``json_objects``' objects, and whether starts were left untried past ``MAX_TRIES``."""
    if not isinstance(text, str) or "{" not in text:
        return [], False
    starts = _starts(text)
    # the vectorised depth bound pays off on long texts only
    keep = None if len(text) <= _SHORT else _viable_starts(text, starts)
    viable = starts if keep is None else starts[keep]
    found: list[JsonSpan] = []
    covered = tries = 0
    n = cut = len(text)
    # characters that may be decoded again in wider windows: linear in the text
    budget = [8 * n + 4 * MAX_SPAN]
    for i in viable.tolist():
        if i < covered:
            continue
        if tries == MAX_TRIES:
            cut = i
            break
        tries += 1
        span = _decode_at(text, i, budget)
        if span is not None:
            found.append(span)
            covered = span.end
    if len(viable) < len(starts):
        skipped = starts[~keep]   # type: ignore[operator]
        skipped = skipped[skipped < cut][::-1].tolist()
        found = _second_chance(text, skipped, found)
    return found, cut < n


def _decode_at(text: str, i: int, budget: list[int]) -> JsonSpan | None:
    """The object decoded at ``text[i]`` (``decode_within``: wider windows while ``budget[0]``
    lasts), if any, and not nested deeper than ``MAX_DEPTH``."""
    try:
        value, end = decode_within(_DECODER.raw_decode, text, i, budget=budget)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or ((text.find("{", i + 1, end) >= 0 or text.find("[", i, end) >= 0)
                                       and too_deep(value)):
        return None   # (no brace or bracket inside: flat, as a verdict is)
    return JsonSpan(i, end, value)


#: characters decoded first from each start, then ``MAX_SPAN`` where that fails by the window's cut:
#: most objects are short, and a copy of ``MAX_SPAN`` characters per start cost more than its decode
#: (29,000 objects in 256 KiB: 480 MB copied)
_FIRST_SPAN = 512

#: characters past a decode error's offset that the decoder may have looked at (``-Infinity``,
#: a number's ``e+``, a ``\uXXXX`` escape) without the error telling which: with this many
#: more in the window, the window's error is the whole text's
_LOOKAHEAD = 32


def decode_within(raw_decode: Callable[[str], "tuple[Any, int]"], text: str, i: int,
                  stop: int | None = None, fails_at: int | None = None,
                  budget: "list[int] | None" = None) -> "tuple[Any, int]":
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
    to ``stop`` as without it.

    ``budget``: characters the wider windows may take from ``budget[0]``, a ValueError past it
    (starts tried everywhere in a text, ``json_objects``, stay linear in it). The first window is
    ``_FIRST_SPAN`` characters (free, as the ``MAX_SPAN`` one after it: no budget is taken before
    it, so what the budget allows is what it allowed from ``MAX_SPAN`` on)."""
    stop = len(text) if stop is None else stop
    if fails_at is not None and i < fails_at < stop:
        decoded = _decode_before(raw_decode, text, i, fails_at, budget)
        if decoded is not None:
            return decoded
    size = min(_FIRST_SPAN, MAX_SPAN)
    while True:
        last = i + size >= stop
        window = text[i:stop] if last else text[i:i + size]
        try:
            value, end = raw_decode(window)
            return value, i + end
        except ValueError as exc:
            wider = None if last else _wider_window(exc, text, i, stop, size, len(window))
            if wider is None:
                raise
        if size >= MAX_SPAN:   # the first window and the MAX_SPAN one after it take no budget
            _spend(budget, wider)
        size = wider


def _decode_before(raw_decode: Callable[[str], "tuple[Any, int]"], text: str, i: int, fails_at: int,
                   budget: "list[int] | None") -> "tuple[Any, int] | None":
    """``decode_within``'s value at ``text[i]`` ending by ``fails_at``, or None where the decode by
    ``stop`` must still be tried; a failure ``Expecting`` something, outside a string, is raised."""
    try:
        return decode_within(raw_decode, text, i, fails_at, budget=budget)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Expecting"):
            raise
    except (ValueError, RecursionError):
        pass
    return None


def _wider_window(exc: ValueError, text: str, i: int, stop: int, size: int, length: int) -> "int | None":
    """The size of the window decoded after one of ``size`` characters (``length`` of them: it is
    not the last) failed with ``exc``, or None where that error is the whole text's."""
    if not isinstance(exc, json.JSONDecodeError):   # an integer too long to read: its digits may go on
        return MAX_SPAN if size < MAX_SPAN else 8 * size
    if size < MAX_SPAN:   # the first, short window: its error stands if a MAX_SPAN one's would
        if not exc.msg.startswith("Unterminated") and exc.pos + _LOOKAHEAD < length:
            return None
        return MAX_SPAN
    if exc.msg.startswith("Unterminated"):
        quote = text.find('"', i + size, stop)
        return None if quote < 0 else max(2 * size, quote + _LOOKAHEAD - i)
    return None if exc.pos + _LOOKAHEAD < length else 8 * size


def _spend(budget: "list[int] | None", wider: int) -> None:
    """Take a window of ``wider`` characters from ``budget[0]``; a ValueError where too few are left."""
    if budget is not None:
        if budget[0] < wider:
            raise ValueError("no budget left for a wider window")
        budget[0] -= wider


def decode_object(text: str, start: int, stop: "int | None" = None, fails_at: "int | None" = None,
                  nested: "Nested | None" = None) -> "tuple[Any, int, str | None]":
    """The JSON value at ``start`` ending by ``stop`` (None where none decodes), its end, and the
    first key an object of it repeats (None where none does); decoded in windows (``decode_within``,
    with ``fails_at``: a later start none decodes at by the same ``stop``), so a failed decode
    costs what the decoder read, not the offset of its start. ``nested``: what the decodes of the
    same text have learned, for starts tried from its end (``Nested``)."""
    hit = None if nested is None else nested.get(start, stop)
    if hit is not None:
        return hit
    recorder = _recorder()
    try:
        obj, end = decode_within(recorder.raw_decode, text, start, stop, fails_at)
    except (ValueError, RecursionError):
        recorder.clear()
        return None, start, None
    repeats = recorder.repeats
    repeated = repeats[0][1] if repeats else None
    recorder.clear()
    if nested is not None and type(obj) is dict and end - start >= _LONG:
        nested.around(start)
    return obj, end, repeated


class _Recorder:
    """A decoder that appends each object it closes to ``closed``, and its index there and the
    first key it repeats to ``repeats`` where one does; a raw line break inside a string is read
    as itself (llama.cpp's schema grammars let one through). One per thread (``_recorder``): a
    decode runs to its end without yielding, so a thread runs one at a time."""

    __slots__ = ("closed", "repeats", "raw_decode")

    def __init__(self) -> None:
        closed: list[dict[str, Any]] = []
        repeats: list[tuple[int, str]] = []

        def pairs(items: "list[tuple[str, Any]]") -> "dict[str, Any]":
            out = dict(items)   # in C; the scan below runs only when a key repeats
            if len(out) != len(items):
                seen: set[str] = set()
                repeats.append((len(closed), next(k for k, _ in items if k in seen or seen.add(k))))  # type: ignore[func-returns-value]
            closed.append(out)
            return out

        self.closed, self.repeats = closed, repeats
        self.raw_decode = json.JSONDecoder(object_pairs_hook=pairs, strict=False).raw_decode

    def clear(self) -> None:
        """Empty the lists: before a decode (one that raised may have left objects), and after it
        (a long reply's objects are not kept alive until the thread's next decode)."""
        self.closed.clear()
        self.repeats.clear()


_LOCAL = threading.local()


def _recorder() -> _Recorder:
    """This thread's recording decoder, its lists empty: built once per thread, not per decode."""
    try:
        recorder = _LOCAL.recorder
    except AttributeError:
        recorder = _LOCAL.recorder = _Recorder()
    recorder.clear()
    return recorder


#: an object this long, decoded from a text's end, has the objects around it decoded once (``Nested``)
_LONG = 4096


class Nested:
    """What decodes of one text from its end (its last ``last`` ``{``) learn: a start nested N deep
    in a long object was decoded through it N times. After an object of ``_LONG`` characters, the
    outermost untried start around it (a root), found by a scan of the braces (inside or outside a
    string by the parity of the unescaped quotes before them), is decoded once, and every start
    inside that its decode closed is known: value (a copy), end, repeated key. The decode must
    close as many objects as the scan has braces before where it ended or failed, or nothing is
    learned; a failed root bars roots before where it failed; roots read at most 4 times the text."""

    def __init__(self, text: str, last: int) -> None:
        self.text, self.last = text, last
        self.known: "dict[int, tuple[Any, int, str | None]]" = {}
        self.tried: "dict[int, tuple[int, int]]" = {}   # a root -> its brace's match, where its decode ended
        self.budget = 4 * len(text) + 4 * MAX_SPAN
        self._scan: "tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]] | None" = None

    def get(self, start: int, stop: "int | None") -> "tuple[Any, int, str | None] | None":
        hit = self.known.get(start)
        if hit is None or stop is None or hit[1] <= stop:
            return hit and (dict(hit[0]), hit[1], hit[2])   # a check may change its own copy
        return None, start, None

    def braces(self) -> "tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]":
        """The starts (the last ``last`` ``{``), their parities and matching ``}`` (the text's
        length where none), and the ``}`` of each parity: one vectorised scan, on first use."""
        if self._scan is None:
            codes = _codes(self.text)
            n = len(codes)
            quotes = np.flatnonzero(codes == 0x22)
            other = np.maximum.accumulate(np.where(codes == 0x5C, -1, np.arange(n)))   # last non-backslash
            run = quotes - 1 - np.concatenate(([-1], other))[quotes]   # backslashes right before a quote
            at = np.flatnonzero((codes == 0x7B) | (codes == 0x7D))
            parity = np.searchsorted(quotes[run % 2 == 0], at) & 1
            opening = codes[at] == 0x7B
            first = np.flatnonzero(opening)[-self.last:]   # the starts' indices in ``at``
            starts, side = at[first], parity[first]
            match = np.full(len(starts), n, dtype=np.int64)
            closes = []
            for p in (0, 1):
                mine = np.flatnonzero(parity == p)
                depth = np.cumsum(np.where(opening[mine], 1, -1))   # after each brace of parity p
                shut = ~opening[mine]
                closes.append(at[mine][shut])
                ask = side == p
                level = depth[np.searchsorted(mine, first[ask])] - 1
                match[ask] = _first_at(closes[p], depth[shut], starts[ask], level, n)
            self._scan = (starts, side, match, closes)
        return self._scan

    def around(self, start: int) -> None:
        """After a long object decoded at ``start``: decode the outermost untried start the scan
        puts around it, past the barriers, and learn every start inside that its decode closed."""
        starts, side, match, closes = self.braces()
        i = int(np.searchsorted(starts, start))
        if i == len(starts) or starts[i] != start:
            return
        barrier = max([end for root, (shut, end) in self.tried.items() if root < start < shut], default=-1)
        ok = np.flatnonzero((starts > barrier) & (starts < start) & (side == side[i]) & (match > start))
        root = next((int(starts[j]) for j in ok if int(starts[j]) not in self.tried), None)
        if root is None:
            return
        shut = int(match[np.searchsorted(starts, root)])
        window = self.text[root:shut + 1]
        if len(window) > self.budget:
            return
        self.budget -= len(window)
        recorder = _recorder()
        closed, repeats = recorder.closed, recorder.repeats
        try:
            end = root + recorder.raw_decode(window)[1]
        except json.JSONDecodeError as exc:
            end = root + exc.pos
        except (ValueError, RecursionError):   # no place to tell: nothing learned, no barrier
            end = root
        self.tried[root] = shut, end
        shuts = closes[side[i]]
        before = int(np.searchsorted(shuts, root))
        if end == root or int(np.searchsorted(shuts, end)) - before != len(closed):
            recorder.clear()
            return   # the decode did not read the braces as the scan did
        marks = [k for k, _ in repeats]
        inside = np.flatnonzero((starts >= root) & (side == side[i]) & (match < end))
        for at, last in zip(starts[inside].tolist(), match[inside].tolist()):
            k = int(np.searchsorted(shuts, last)) - before         # its object, closed k-th
            r = bisect.bisect_left(marks, int(np.searchsorted(shuts, at)) - before)
            self.known[at] = closed[k], last + 1, repeats[r][1] if r < len(marks) and marks[r] <= k else None
        recorder.clear()


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


#: an escape of a surrogate code point (``\\ud800``): the one way a decoded verdict can hold a lone one
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
#: read left to right: escaped backslashes (the ``\\ud800`` after them is text), an escaped pair, a lone one
_SURROGATE_TOKENS = re.compile(r"((?:\\\\)+)|(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|"
                               + SURROGATE_ESCAPE.pattern)


def lone_surrogates_out(text: str) -> str:
    """``text`` with each JSON escape of a lone surrogate (a judge quoting the policy's ``\\ud800``;
    no text field validates one) written ``\\ufffd``: the same length, so every offset holds, and
    one pass however many objects around it are decoded; an escaped pair and ``\\\\ud800`` stay."""
    if SURROGATE_ESCAPE.search(text) is None:
        return text
    return _SURROGATE_TOKENS.sub(lambda m: m.group() if m.lastindex else "\\ufffd", text)
