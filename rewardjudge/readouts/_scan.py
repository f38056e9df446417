"""The one JSON-object scanner, and the quote test every readout uses.

``json_objects`` finds every JSON object in a text by trying a decode at
every ``{"`` that is not inside an object already found, so no text before
an object (a lone ``{``, an unclosed string, a code fence, deep nesting) can
hide it: a depth-counting scanner would let one stray brace in an echoed
completion swallow the judge's own verdict. Objects nest at most
``MAX_DEPTH`` deep; one longer than ``MAX_SPAN`` characters is decoded in
wider windows within a budget linear in the text; NaN and infinities are
refused.

``PromptIndex.quote_level`` says whether a span of a judge reply is a copy of the prompt
that was sent (which holds the policy's text): its folded text occurs in the
folded prompt with matching text on either side. A verdict the judge wrote
itself is not surrounded by copied prompt text, so a policy that writes the
judge's likely verdict verbatim does not turn it into a quote.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ._text import fold, unescape_lines

__all__ = ["JsonSpan", "MAX_DEPTH", "MAX_SPAN", "PromptIndex", "json_objects"]

MAX_SPAN = 16_384      # characters decoded first from each start (wider windows follow)
MAX_DEPTH = 32         # nesting levels: a verdict object is never deeper
_START = re.compile(r'\{\s*"')
_HEAD = 48             # folded characters of a message's opening that make an echo


@dataclass(frozen=True)
class JsonSpan:
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


# strict=False: a raw line break or tab inside a string is read as itself. llama.cpp's
# schema grammar (json_object mode) lets the judge write one there; a strict reader would
# refuse the whole verdict for it
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float, strict=False)


def _too_deep(value: Any) -> bool:
    """Whether a decoded value nests deeper than MAX_DEPTH (iterative)."""
    if type(value) is dict:   # a flat object (a verdict): one level
        for v in value.values():
            if isinstance(v, (dict, list)):
                break
        else:
            return MAX_DEPTH < 1
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False


_RAW_DEPTH = 64        # brace nesting (strings not told apart) a start may reach before closing


def _viable_starts(text: str, starts: list[int]) -> list[int]:
    """The starts that do not nest deeper than _RAW_DEPTH within MAX_SPAN
    characters, counting every brace and bracket (a cheap, vectorised bound:
    a deep run of openings is never decoded from each of its starts)."""
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


def json_objects(text: str, keys: "tuple[str, ...] | None" = None) -> list[JsonSpan]:
    """Every JSON object in ``text`` that decodes, outermost first, in order.

    ``keys`` (the field names of the model expected) narrows the starts to
    objects whose first key is one of them.

    >>> [s.value for s in json_objects('x {"a": 1} {" {"b": "}"}')]
    [{'a': 1}, {'b': '}'}]
    """
    if not isinstance(text, str) or "{" not in text:
        return []
    pattern = _START if not keys else _start_for(tuple(keys))
    starts = [m.start() for m in pattern.finditer(text)]
    # a short text cannot hide much nesting: the vectorised depth bound pays
    # off on long ones only
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
    """The object decoded at ``text[i]``, if any. A bounded window is decoded
    (a decode error's cost grows with the offset it reports, so the whole text
    is never handed over at once); an object longer than the window (a verdict
    whose reasoning quotes a long completion) is decoded again in windows 8
    times wider while ``budget[0]`` lasts, so long text cannot hide it."""
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
    if not isinstance(value, dict) or _too_deep(value):
        return None
    return JsonSpan(i, i + end, value)


_SECOND_TRIES = 64
_SHORT = 4096


def _second_chance(text: str, skipped: list[int], found: list[JsonSpan]) -> list[JsonSpan]:
    """Decode starts the depth bound skipped, last first, within a budget.

    The bound counts braces inside strings too, so an object whose string
    holds many braces (a judge's verdict whose reasoning quotes a deeply
    nested completion) is skipped by it; the judge's verdict comes last, so
    the last skipped starts are tried, at most ``_SECOND_TRIES`` of them and
    within a budget linear in the text."""
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


_STARTS: dict[tuple[str, ...], re.Pattern[str]] = {}


def _start_for(keys: tuple[str, ...]) -> re.Pattern[str]:
    pattern = _STARTS.get(keys)
    if pattern is None:
        names = "|".join(re.escape(json.dumps(k)[1:-1]) for k in sorted(keys, key=len, reverse=True))
        pattern = re.compile(r'\{\s*"(?:' + names + r')"\s*:')
        if len(_STARTS) < 256:
            _STARTS[keys] = pattern
    return pattern


def value_key(value: Any) -> str:
    """A decoded JSON value's comparison form: canonical JSON, folded."""
    return fold(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str))


_LINE_MARKS = " \t>*_`#\"'-\u2013\u2014\u2022.!:;"


def line_key(folded_line: str) -> str:
    """A folded line without the marks a judge adds when it quotes or lists it."""
    return folded_line.strip(_LINE_MARKS)


#: prompt texts folded once are remembered, by their text, when seen a second
#: time (a system prompt is the same for every sample; a user prompt that holds
#: the sample never repeats, and is not kept)
_FOLD_MEMO: dict[str, str] = {}
_FOLD_SEEN: dict[int, None] = {}
_FOLD_MEMO_SIZE = 64
_FOLD_SEEN_SIZE = 4096
_FOLD_MEMO_CHARS = 16_384


def fold_prompt(text: str) -> str:
    """``fold(text)``, remembered for prompt texts that repeat."""
    hit = _FOLD_MEMO.get(text)
    if hit is not None:
        return hit
    folded = fold(text)
    if len(text) <= _FOLD_MEMO_CHARS:
        h = hash(text)
        if h in _FOLD_SEEN:
            if len(_FOLD_MEMO) >= _FOLD_MEMO_SIZE:
                _FOLD_MEMO.clear()
            _FOLD_MEMO[text] = folded
        else:
            if len(_FOLD_SEEN) >= _FOLD_SEEN_SIZE:
                _FOLD_SEEN.clear()
            _FOLD_SEEN[h] = None
    return folded


def _no_brace_after_fold(text: str) -> bool:
    """True when ``fold(text)`` certainly holds no ``{``: ASCII text without
    one and without anything an escape could hide one in (``\\u007b``,
    ``&#123;``, ``%7b``); folding ASCII text only lowers and respaces it."""
    return ("{" not in text and text.isascii() and "\\" not in text and "&" not in text
            and "%" not in text)


def _line_counts(texts: "list[str]") -> "Counter[str]":
    """How many lines of ``texts`` fold to each key: lines as written, and
    (the larger count) as a judge that decodes escapes while repeating them
    writes them (``PASS%0A`` or ``&#10;PASS`` is a line of its own there)."""
    counts: Counter[str] = Counter()
    for t in texts:
        lines = Counter(line_key(fold(line)) for line in t.splitlines())
        decoded = unescape_lines(t)
        if decoded != t:
            lines |= Counter(line_key(fold(line)) for line in decoded.splitlines())
        counts += lines
    return counts


class PromptIndex:
    """The folded prompt that was sent, for ``quote_level``.

    ``min_context`` folded characters matching on one side of a span make it
    a quote; a span alone on its line of the reply with the whole reply
    copied around it is a quote too (an echo), a span with no copied
    neighbourhood is the judge's own.

    Texts are folded when a question needs them (``folded``, ``holds_value``,
    ``echoed_in``...), not before: a reply whose verdict cannot be in a text
    (a JSON object, and a text that holds no brace once folded) never folds it.
    """

    # slots, and containers made when first needed: an index lives while its
    # request is in flight, beside hundreds of others
    __slots__ = ("texts", "policy_texts", "min_context", "_folds", "_folded", "_heads", "_lines",
                 "_policy_lines", "_values", "_objects", "_where", "_levels")

    def __init__(self, prompt_texts: list[str], min_context: int = 12, *,
                 policy_texts: "list[str] | None" = None):
        self.texts = [t for t in prompt_texts if isinstance(t, str) and t]
        #: the policy's own text as it went into the prompt (its lines are
        #: compared one by one: a template may put a prefix before them)
        self.policy_texts = [t for t in policy_texts or () if isinstance(t, str) and t]
        self.min_context = min_context
        self._folds: "list[str | None] | None" = None
        self._folded: "str | None" = None
        self._heads: "list[str] | None" = None
        self._lines: "Counter[str] | None" = None
        self._policy_lines: "Counter[str] | None" = None
        self._values: "dict[tuple[str, ...], set[str]] | None" = None
        self._objects: "bool | None" = None
        self._where: "str | None" = None
        self._levels: "dict[tuple[str, str, str], int] | None" = None

    def _fold_of(self, i: int) -> str:
        folds = self._folds
        if folds is None:
            folds = self._folds = [None] * len(self.texts)
        folded = folds[i]
        if folded is None:
            folded = folds[i] = fold_prompt(self.texts[i])
        return folded

    @property
    def folded(self) -> str:
        """Every prompt text folded, joined by ``"\\n\\x01\\n"`` (no fold holds a line break)."""
        if self._folded is None:
            self._folded = "\n\x01\n".join(self._fold_of(i) for i in range(len(self.texts)))
        return self._folded

    def holds(self, needle: str) -> bool:
        """``needle in self.folded``, folding only the texts that can hold it."""
        if self._folded is not None or "\n" in needle:
            return needle in self.folded
        brace = "{" in needle
        folds = self._folds
        for i, text in enumerate(self.texts):
            if brace and (folds is None or folds[i] is None) and _no_brace_after_fold(text):
                continue
            if needle in self._fold_of(i):
                return True
        return False

    def holds_value(self, value: Any) -> bool:
        """Whether a JSON object of the prompt decodes to ``value`` (compared
        folded and canonical): a judge may re-serialise what it quotes
        (pretty-printed, keys reordered), so text equality alone misses it."""
        if not isinstance(value, dict) or not value:
            return False
        if self._objects is None:
            # objects of the policy's text (else the prompt): none without a brace
            texts = self.policy_texts or self.texts
            self._objects = not all(_no_brace_after_fold(t) for t in texts) and \
                "{" in self._objects_text()
        if not self._objects:
            return False
        keys = tuple(sorted(fold(str(k)) for k in value))
        if self._values is None:
            self._values = {}
        held = self._values.get(keys)
        if held is None:   # objects of the policy's text (else the prompt) starting with these keys
            held = self._values[keys] = {value_key(s.value)
                                         for s in json_objects(self._objects_text(), keys)}
        return value_key(value) in held

    def _objects_text(self) -> str:
        if self._where is None:
            self._where = ("\n\x01\n".join(fold(t) for t in self.policy_texts) if self.policy_texts
                           else self.folded)
        return self._where

    def copies(self, folded: str) -> int:
        """How many times the folded text ``folded`` occurs in the folded prompt."""
        return self.folded.count(folded) if folded else 0

    def line_copies(self, folded_line: str) -> int:
        """How many lines of the prompt fold to ``folded_line`` (both without
        quoting marks and list bullets: ``> Verdict: PASS`` is a copy of
        ``Verdict: PASS``)."""
        if self._lines is None:
            self._lines = _line_counts(self.texts)
            self._policy_lines = _line_counts(self.policy_texts)
        key = line_key(folded_line)
        return max(self._lines.get(key, 0), self._policy_lines.get(key, 0))

    def echoed_in(self, reply: str) -> bool:
        """Whether ``reply`` repeats the opening of a prompt message (the
        judge echoed its prompt, which a policy's text alone cannot make)."""
        if self._heads is None:
            # the opening of each message: template text, never policy text
            self._heads = [f[:_HEAD] for f in map(self._fold_of, range(len(self.texts)))
                           if len(f) >= _HEAD // 2]
        if not self._heads:
            return False
        folded = fold(reply)
        return any(h in folded for h in self._heads)

    def occurrences(self, needle: str, limit: int = 64) -> Iterator[int]:
        start = 0
        for _ in range(limit):
            at = self.folded.find(needle, start)
            if at < 0:
                return
            yield at
            start = at + 1

    def quote_level(self, reply: str, start: int, end: int) -> int:
        """How surely ``reply[start:end]`` is a copy of the prompt: 0, its
        folded text is not in the prompt (the judge's own); 1, it is, with no
        copied text around it (a short quote, or the judge's own words that
        the policy happened to write too); 2, it is, with at least
        ``min_context`` matching folded characters on one side (a quote)."""
        k = self.min_context
        memo_key = (reply[max(0, start - 8 * k):start], reply[start:end], reply[end:end + 8 * k])
        levels = self._levels
        if levels is None:
            levels = self._levels = {}
        level = levels.get(memo_key)   # a reply may repeat one span in one setting
        if level is None:
            level = levels[memo_key] = self._quote_level(reply, start, end)
        return level

    def _quote_level(self, reply: str, start: int, end: int) -> int:
        needle = fold(reply[start:end])
        if not needle or not self.holds(needle):
            return 0
        k = self.min_context
        # the folded neighbourhood of the span in the reply (folding may
        # shorten text, so take a generous raw margin)
        left = fold(reply[max(0, start - 8 * k):start])[-k:]
        right = fold(reply[end:end + 8 * k])[:k]
        for at in self.occurrences(needle):
            before = self.folded[max(0, at - len(left) - 1):at].rstrip()
            after = self.folded[at + len(needle):at + len(needle) + len(right) + 1].lstrip()
            if len(left) >= k and before.endswith(left):
                return 2
            if len(right) >= k and after.startswith(right):
                return 2
        return 1
