"""Texts joined for one pass (``_guards._free_flags``: 43,000 short strings read as one), looked at in
numpy: which texts hold a character (``holding``), which texts start as a word of a trie may
(``opening``). Each a few passes over the joined text's code points, no Python step per text."""

from __future__ import annotations

import functools
import itertools

import numpy as np

from ..readouts._fold import _codes, _text_of
from ..readouts._text import _JOINERS, free_joiner

OVERRIDE = np.array([0x202E], dtype=np.uint32)
COLONS = np.array([ord(":"), 0xFF1A], dtype=np.uint32)
#: two characters in a row (``holding``): a closing tag; a declaration, a bracket tag closing, a Markdown comment,
#: a terminal code
CLOSING = np.array([[ord("<"), ord("/")]], dtype=np.uint32)
OWN_RARER = np.array([[ord("<"), ord("?")], [ord("<"), ord("!")], [ord("["), ord("/")], [ord("]"), ord(":")], [0x1B, -1]],
                     dtype=np.int64)
NEWLINE = np.array([ord("\n")], dtype=np.uint32)


def table(chars: str) -> "np.ndarray":
    """``chars`` as a table for ``holding``: True at each one's code point, False at the last."""
    out = np.zeros(max(map(ord, chars)) + 2, dtype=bool)
    out[[ord(c) for c in chars]] = True
    return out


def leading(joined: str, joiner: str, codes: "np.ndarray") -> "list[int]":
    """The indices of the texts ``joined`` by ``joiner`` whose first character is one of ``codes`` (a table of
    booleans, as ``holding`` reads one; ``joiner`` none of them), in order, in numpy."""
    chars = np.append(_codes(joined), ord(joiner))
    first = chars[np.concatenate(([0], np.flatnonzero(chars[:-1] == ord(joiner)) + 1))]
    return np.flatnonzero(codes[np.minimum(first, len(codes) - 1)] & (first != ord(joiner))).tolist()


def holding(joined: str, joiner: str, codes: "np.ndarray | range", flags: "list[bool] | None") -> "list[int]":
    """The indices of the texts ``joined`` by ``joiner`` that hold one of the characters ``codes`` (or,
    where ``codes`` are rows, the two characters of a row in a row, -1 for any; a ``range``, one of its
    code points; a table of booleans, a code point below its length where it is True; ``joiner`` none of these)
    and are not ``flags``-ed,
    in order, in numpy: each character's text is the count of joiners before it (a regex call per
    text: 10 ms for 43,000)."""
    chars = _codes(joined)
    if isinstance(codes, range):
        marks = (chars >= codes.start) & (chars < codes.stop) & (chars != ord(joiner))
    elif codes.dtype == bool:   # a table (its last code point none: every one past it reads that one)
        marks = codes[np.minimum(chars, len(codes) - 1)] & (chars != ord(joiner))
    elif codes.ndim == 2:
        marks = np.zeros(len(chars), dtype=bool)
        for first, second in codes.tolist():
            marks[:-1] |= (chars[:-1] == first) & ((chars[1:] == second) if second >= 0 else True)
            marks[-1:] |= (chars[-1:] == first) & (second < 0)
        marks &= chars != ord(joiner)   # a joiner (``\x1b`` may be one) is no text's character
    else:
        marks = functools.reduce(np.logical_or, [chars == c for c in codes.tolist()])
    if not marks.any():
        return []
    held = np.zeros(joined.count(joiner) + 1, dtype=bool)
    held[np.cumsum(chars == ord(joiner))[marks]] = True
    return np.flatnonzero(held if flags is None else held & ~np.frombuffer(bytes(flags), dtype=bool)).tolist()


#: the characters a text base64 (``_encoded``) or spelled out (``_spelled``) from end to end may start with
#: (``leading``): a letter or digit, ``+`` or ``/``, whitespace, and the four that a case-blind ASCII letter
#: matches (the NATO words are matched so)
CODE_STARTS = table("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/\u0130\u0131\u017f\u212a"
                    + "".join(c for c in map(chr, range(0x3001)) if c.isspace()))


#: what a text that may be a document (``_guards._document``) holds: one of these, or a line break and one of ``_LINE_MARKS``
_DOCUMENT_MARKS, _LINE_MARKS = table("{[`~&%<"), table(":=|,;\t")


def may_be_documents(texts: "list[str]", flags: "list[bool]") -> "list[int]":
    """The indices of the texts not ``flags``-ed that may be documents (``_DOCUMENT_MARKS``, ``_LINE_MARKS``), in
    order, found in numpy (a call of ``_document`` per text cost 30 ms over 30,000 texts of commas and lines)."""
    joiner = free_joiner(texts)
    if joiner is None:
        return [i for i, flag in enumerate(flags) if not flag]
    joined = joiner.join(texts)
    lines = holding(joined, joiner, NEWLINE, flags)
    marked = set(holding(joined, joiner, _DOCUMENT_MARKS, flags))
    return sorted(marked.union(set(lines).intersection(holding(joined, joiner, _LINE_MARKS, flags))) if lines else marked)


def after_last(joined: str, joiner: str, codes: "np.ndarray") -> str:
    """``joined`` (texts joined by ``joiner``) with each text cut to what follows the last of its characters
    ``codes`` (a text holding none whole), in numpy (a substitution of each text's start to its last colon
    took 30 ms over 43,000 texts outside Latin-1)."""
    chars = _codes(joined)
    at = np.flatnonzero(functools.reduce(np.logical_or, [chars == c for c in codes.tolist()]))
    if not len(at):
        return joined
    ends = np.flatnonzero(chars == ord(joiner))
    text = np.searchsorted(ends, at)   # the text of each: the joiners before it
    last = np.append(text[1:] != text[:-1], True)   # the last of its text
    starts = np.concatenate(([0], ends + 1))[text[last]]
    cut = np.zeros(len(chars) + 1, dtype=np.int8)   # +1 where a text's cut begins, -1 after it ends
    cut[starts] += 1
    cut[at[last] + 1] -= 1
    return _text_of(chars[np.cumsum(cut[:-1], dtype=np.int8) == 0])


def _matched(piece: str) -> "list[int]":
    """The code points a character pattern of ``_guards._chars`` matches (a class of plain characters, a
    character maybe escaped)."""
    if len(piece) > 2 and piece[0] == "[" and piece[-1] == "]" and "\\" not in piece:
        return [ord(c) for c in piece[1:-1]]
    body = piece[1:] if len(piece) == 2 and piece[0] == "\\" else piece
    if len(body) != 1:
        raise ValueError(f"not one character: {piece!r}")
    return [ord(body)]


#: the characters of a text's start ``opening`` looks up, and the code standing for where a text ends
_WIDTH = 3
_END = 0x110000
_BITS = 21   # a code point, or ``_END``


@functools.lru_cache(maxsize=64)
def _starts(words: "tuple[tuple[str, ...], ...]") -> np.ndarray:
    """The ``_WIDTH`` characters a text made of ``words`` (character patterns) one after another starts
    with, where shorter, the text's end (``_END``) after it, each packed in one integer; sorted."""
    ends = (_END,) * _WIDTH
    by_width: "dict[int, set[tuple[int, ...]]]" = {0: {()}}
    for width in range(1, _WIDTH + 1):
        found: "set[tuple[int, ...]]" = {ends[:width]}   # the text ended: nothing after
        for word in words:
            for head in itertools.product(*map(_matched, word[:width])):
                found.update([head] if len(head) == width else (head + rest for rest in by_width[width - len(head)]))
        by_width[width] = found
    return np.array(sorted(functools.reduce(lambda key, c: key << _BITS | c, t, 0) for t in by_width[_WIDTH]),
                    dtype=np.int64)


def heads(codes: "np.ndarray", joiner: str) -> "np.ndarray":
    """For each text of ``codes`` (the code points of texts joined by ``joiner``): its first ``_WIDTH`` code points,
    ``_END`` past its end, a row each (``heads(codes[::-1], joiner)[::-1]``: each text's last ones, read from its end)."""
    stop = ord(joiner)
    at = np.concatenate(([0], np.flatnonzero(codes == stop) + 1))   # each text's first character
    codes = np.concatenate((codes, np.full(_WIDTH, stop, dtype=np.uint32)))
    rows = np.empty((len(at), _WIDTH), dtype=np.int64)
    ended = np.zeros(len(at), dtype=bool)
    for i in range(_WIDTH):   # after a text's end, the end again (not the next text)
        chars = codes[at + i]
        ended |= chars == stop
        rows[:, i] = np.where(ended, _END, chars)
    return rows


def starting(rows: "np.ndarray", table: "np.ndarray") -> "np.ndarray":
    """For each row of ``heads``: whether it is one of the starts ``table`` (``_starts``), packed as it packs one."""
    key = functools.reduce(lambda key, i: key << _BITS | rows[:, i], range(1, _WIDTH), rows[:, 0])
    found = np.searchsorted(table, key)
    return table[np.minimum(found, len(table) - 1)] == key


def opening(joined: str, joiner: str, table: "np.ndarray", ends: "np.ndarray | None" = None) -> "np.ndarray":
    """For each text ``joined`` by ``joiner``: whether it may be words (lists of character patterns) one after another,
    by its first ``_WIDTH`` characters, looked up in numpy in ``table`` (``_starts`` of the words, which a caller
    keeps by its keys: the words' tuple hashed as a cache's key cost 1 ms a call); with ``ends`` (``_starts`` of the
    words reversed), by its last ones read from its end too, where the first may be (master keys at random cut in 6
    letters: half of the texts that start as keys do not end as one), its digits outside ASCII read as ``0``: a step
    header's ``\\d`` (``_keys._STEP``) takes them, the words' ``[0123456789]`` not. A look-ahead of a trie of the
    words' first two characters, tried at each text's start, took about 300 alternatives a text: 43,000 texts, 8 ms;
    the opener then tried, twice as many."""
    codes = _codes(joined)
    may = starting(heads(codes, joiner), table)
    if ends is not None:
        back = heads(codes[::-1], joiner)[::-1][may]
        digits = _non_ascii_digits()
        may[may] = starting(np.where(digits[np.minimum(back, len(digits) - 1)], ord("0"), back), ends)
    return may


@functools.lru_cache(maxsize=1)
def _non_ascii_digits() -> "np.ndarray":
    """A table of the decimal digits outside ASCII (Unicode's Nd, which ``\\d`` matches; none past U+1FBF9), by code
    point; False at its last."""
    out = np.zeros(0x1FC01, dtype=bool)
    out[[c for c in range(0x80, 0x1FC00) if chr(c).isdecimal()]] = True
    return out


def _first_joiner(pieces: "list[str]", joiner: str) -> str:
    """The first of the joiners where none of ``pieces`` holds it (``letters`` never hold one), else ``joiner``:
    ``_guards._whole_openers`` is compiled for it once, where a text's control character that moved the texts'
    joiner on compiled it again (0.45 s in the event loop for each)."""
    first = _JOINERS[0]
    return joiner if joiner == first or first in "".join(pieces) else first
