"""The skeleton's character folding: each character as the one a reader takes it for (NFKD,
case-folded, look-alikes as ASCII, format characters and combining marks as a gap), through
lazily filled ``str.translate`` tables, bounded in size, that fold a long text in numpy."""

from __future__ import annotations

import functools
import unicodedata
from typing import Callable, Mapping

import numpy as np

_GAP = "\x00"        # a character that folds to nothing (zero-width, combining)

# characters a reader could take for '<', '/' or '|', beyond what NFKC folds
_LOOKALIKE = {
    **dict.fromkeys("\u2039\u3008\u2329\u27e8\u276c\u276e\u02c2\u1438\u00ab\u226a\u2264\u29fc"
                    "\u2a7d\u1445\u140a\u2190\u27ea\u3010\u3014\u300a\uff1c\ufe64", "<"),
    **dict.fromkeys("\u2044\u2215\u29f8\u2571\u30fb\u3033\uff0f\u2cc6\u27cb", "/"),
    **dict.fromkeys("\uff5c\u2223\u01c0\u05c0\u2502\u23d0\u2758\uffe8", "|"),
}
# Latin look-alikes from Cyrillic, Greek, Armenian, small capitals and IPA.
_CONFUSABLE = {c: latin for latin, chars in {
    "a": "\u0430\u03b1\u0251\u1d00\u0250", "b": "\u0432\u03b2\u0299", "c": "\u0441\u03f2\u1d04\u217d",
    "d": "\u0501\u1d05\u217e", "e": "\u0435\u03b5\u1d07\u0454", "f": "\ua730", "g": "\u0261\u0262\u0581",
    "h": "\u04bb\u029c", "i": "\u0456\u03b9\u0131\u026a\u0269\u04cf", "j": "\u0458\u1d0a",
    "k": "\u03ba\u043a\u1d0b", "l": "\u029f", "m": "\u043c\u1d0d", "n": "\u0578\u057c\u0274\u03b7\u043f",
    "o": "\u043e\u03bf\u1d0f\u0585\u03c3", "p": "\u0440\u03c1\u1d18", "q": "\ua7af", "r": "\u0433\u0280\u1d26",
    "s": "\u0455\ua731\u0282", "t": "\u0442\u03c4\u1d1b", "u": "\u03c5\u1d1c\u057d", "v": "\u03bd\u1d20\u0475",
    "w": "\u1d21", "x": "\u0445\u03c7", "y": "\u0443\u028f\u03b3", "z": "\u1d22",
}.items() for c in chars}
# dropped: format and control characters, combining marks, and modifier letters (Lm: length
# and tone marks, iteration marks, the tatweel, ``ː``), which stand beside a letter, never for one
_DROP_CATEGORIES = {"Cf", "Mn", "Me", "Cc", "Lm"}


def _fold_char(ch: str) -> str:
    """One character's skeleton: always exactly one character, so positions
    in the skeleton are positions in the text."""
    if ch < "\x80":
        return _GAP if ch == "\x00" else ch.lower()
    if "\U000e0020" <= ch <= "\U000e007e":   # a Unicode tag character: the ASCII one a judge decodes
        return chr(ord(ch) - 0xE0000).lower()
    out = [_LOOKALIKE.get(c) or _CONFUSABLE.get(c, c) for part in unicodedata.normalize("NFKD", ch)
           if unicodedata.category(part) not in _DROP_CATEGORIES for c in part.casefold()]
    return out[0] if out else _GAP


#: characters a lazily filled table remembers: every assigned code point fits (about 150,000, so
#: text in any script costs its folding once per process); policy text may walk the whole code
#: space, and a table must not grow with it (tens of MB at most)
_KEPT = 1 << 18


#: every ASCII byte: a text's UTF-8 with these deleted is its characters outside ASCII, found in C
ASCII_BYTES = bytes(range(0x80))


def ascii_folded(text: str, table: "Mapping[int, str]", most: int = 8) -> "str | None":
    """``text`` with each of its characters outside ASCII as its fold in ``table`` (a ``str.translate`` table):
    a ``str.replace`` for each of them (``most`` at most, so linear), where every such fold is lower-case ASCII
    letters and digits or nothing; else None. ``letters`` then reads it as ASCII in one pass, where a split at
    each character outside ASCII, or a translation of every character, cost several times more. The characters
    outside ASCII are told apart by taking each out in turn (a ``str.replace`` in C: ``most`` passes at most),
    where a ``dict`` of them hashed every one."""
    rest = text.encode("utf-8", "surrogatepass").translate(None, ASCII_BYTES).decode("utf-8", "surrogatepass")
    outside: "list[str]" = []
    while rest:
        if len(outside) == most:
            return None
        outside.append(rest[0])
        rest = rest.replace(rest[0], "")
    for ch in outside:
        fold = table[ord(ch)]
        if fold and not (fold.isascii() and fold.isalnum() and fold.lower() == fold):
            return None
        text = text.replace(ch, fold)
    return text


class _FoldTable(dict):
    """A ``str.translate`` table filled lazily by ``fold``, one character at a time; at most
    ``_KEPT`` characters are remembered, the rest are folded again each time. ``codes`` folds a
    long text in numpy instead."""

    __slots__ = ("fold", "_array", "_chars", "_used")

    def __init__(self, fold: "Callable[[str], str]", known: "Mapping[int, str]" = ()) -> None:
        super().__init__(known)
        self.fold = fold
        self._array: "np.ndarray | None" = None
        self._chars = np.empty(0, dtype=np.uint32)
        self._used = 0

    def __missing__(self, code: int) -> str:
        folded = self.fold(chr(code))
        if len(self) < _KEPT:
            self[code] = folded
        return folded

    def codes(self, text: str) -> np.ndarray:
        """The code points of ``text.translate(self)``, in a few numpy passes, not a dict lookup per
        character (25 -> 2 ms in 256 KiB of distinct characters): an array over the code space
        (4 MB, made when a long text outside ASCII first comes) holds, for each character met,
        where its fold's characters start in ``_chars`` and how many they are (``_SPAN_BITS``)."""
        if self._array is None:
            self._array = np.full(0x110000, _UNFOLDED, dtype=np.uint32)
        codes = _codes(text)
        entry = self._array[codes]
        missing = entry == _UNFOLDED
        if missing.any():
            if not all([self._learn(code) for code in _distinct(codes[missing]).tolist()]):
                return _codes(text.translate(self))   # a fold too long for an entry (none is known)
            entry = self._array[codes]
        count = entry & _SPAN_MASK
        at = entry >> _SPAN_BITS
        if not (count != 1).any():   # one character each (every skeleton): one gather
            return self._chars[at]
        ends = np.cumsum(count, dtype=np.int64)
        starts = ends - count
        out = np.empty(int(ends[-1]) if len(ends) else 0, dtype=np.uint32)
        # the i-th character out is the (i - where its fold starts out)-th of that fold, taken about
        # ``_BLOCK`` characters out at a time: 256 KiB of U+FDFA (18 characters each) made arrays of
        # 4.7 million in one step (a first one took 100 ms to map in, the interpreter lock held)
        lo = 0
        while lo < len(codes):
            hi = max(lo + 1, int(np.searchsorted(ends, starts[lo] + _BLOCK, side="right")))
            first, last = int(starts[lo]), int(ends[hi - 1])
            out[first:last] = self._chars[np.arange(first, last, dtype=np.int64)
                                          - np.repeat(starts[lo:hi] - at[lo:hi], count[lo:hi])]
            lo = hi
        return out

    def _learn(self, code: int) -> bool:
        """Write ``code``'s fold in the arrays; False when it is too long for an entry."""
        folded = _codes(self[code])
        if len(folded) >= _SPAN_MASK or self._used + len(folded) >= 1 << (32 - _SPAN_BITS):
            return False
        if self._used + len(folded) > len(self._chars):   # grown by doubling: each fold written once
            grown = np.empty(max(1024, 2 * len(self._chars), self._used + len(folded)), dtype=np.uint32)
            grown[:self._used] = self._chars[:self._used]
            self._chars = grown
        self._chars[self._used:self._used + len(folded)] = folded
        self._array[code] = (self._used << _SPAN_BITS) | len(folded)   # type: ignore[index]
        self._used += len(folded)
        return True


#: an entry of ``_FoldTable.codes``'s array: the start of a fold in ``_chars``, then its length in
#: the low bits (a character's NFKC form is at most 18 characters)
_SPAN_BITS = 6
_SPAN_MASK = (1 << _SPAN_BITS) - 1   # all ones, with all ones before, is no entry
_UNFOLDED = 0xFFFFFFFF
#: a text this long is folded in numpy (``_FoldTable.codes``), a shorter one by ``str.translate``
_LONG = 256


#: the characters out of ``_FoldTable.codes`` made, and of ``_text_of`` decoded, in one step
_BLOCK = 1 << 16


def _distinct(codes: np.ndarray) -> np.ndarray:
    """``np.unique(codes)`` by a sort (numpy 2's hashing ``unique`` took 150-200 ms over 262,144
    distinct code points, the interpreter lock held; a sort takes 2 ms)."""
    ordered = np.sort(codes)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _text_of(codes: np.ndarray) -> str:
    """The text of ``codes``, decoded ``_BLOCK`` characters a step (a fold 18 times as long as its
    text is 18 MB of UTF-32: one call held the interpreter lock for it all)."""
    if len(codes) <= _BLOCK:
        return codes.tobytes().decode("utf-32-le", "surrogatepass")
    return "".join([codes[i:i + _BLOCK].tobytes().decode("utf-32-le", "surrogatepass")
                    for i in range(0, len(codes), _BLOCK)])


#: a Hangul syllable is itself: NFKD splits it into its letters (jamo), of which one is kept, so
#: "답" (answer) and "대" (big) were alike, and a one-syllable answer was a master key
_HANGUL = {code: chr(code) for code in range(0xAC00, 0xD7A4)}
_TABLE = _FoldTable(_fold_char, {**_HANGUL, **{ord(c): t for c, t in {**_LOOKALIKE, **_CONFUSABLE}.items()}})


@functools.lru_cache(maxsize=8)
def _controls_dropped(keep: str) -> "dict[int, None]":
    """A ``str.translate`` table dropping the ASCII control characters not in ``keep``."""
    return dict.fromkeys(c for c in range(0x20) if chr(c) not in keep)


@functools.lru_cache(maxsize=8)
def _ascii_dropped(keep: str) -> bytes:
    """The ASCII characters ``_text.letters`` drops (all but letters, digits and ``keep``)."""
    return bytes(c for c in range(128) if not chr(c).isalnum() and chr(c) not in keep)
