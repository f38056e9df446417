"""Master keys written turned, as a judge undoes them as it reads (hunt 33): in ROT13 (``Gubhtug cebprff:``),
reversed (``:ssecorp thguohT``), upside down (``ssǝɔoɹd ʇɥƃnoɥʇ``) or with letters as Unicode tag characters, which a
reader does not see and a judge may decode (``\U000e0041nswer:`` shows ``nswer:``). The content-free screen (``_guards``) reads a
text's letters (``letters``) in each of these ways too; a text is content-free where one reading is master keys
and filler only. Each reading is a translation or a slice of the letters, in C: linear."""

from __future__ import annotations

import functools
import itertools
import operator
import re
from typing import Callable, Iterator

import numpy as np

from ..readouts._text import letters
from ._encoded import ASCII_TAGS
from ..readouts._fold import _codes
from ._joined import _BITS, _END, _WIDTH, _starts, heads, holding, starting
from ._keys import _chars, _key_forms, _start_words
from ._markup import _unmarked

#: ROT13 over the letters (``letters`` are lower case)
_ROT13 = str.maketrans("abcdefghijklmnopqrstuvwxyz", "nopqrstuvwxyzabcdefghijklm")
#: the letters written upside down, as the letters they stand for (then read from the end); the Latin letters
#: that are another turned (``b``/``q``, ``d``/``p``, ``n``/``u``) swapped; the rest stand for themselves
_FLIP = str.maketrans("ɐɔǝɟƃɥıᴉɾʞןꞁɯɹᴚʇʌʍʎbqdpnu", "acefghiijkllmrrtvwyqbpdun")
_FLIPPED = re.compile("[ɐɔǝɟƃɥıᴉɾʞןꞁɯɹᴚʇʌʍʎ]")
_FLIPPED_CODES = np.array([ord(c) for c in "ɐɔǝɟƃɥıᴉɾʞןꞁɯɹᴚʇʌʍʎ"], dtype=np.uint32)
#: a text read reversed: two words or more, or one led by a sentence's last mark (``:rewsnA``): a lone word is read
#: as it is written (``Togas`` is no ``sagot``)
_REVERSED_SHAPE = re.compile(r"\s*[^\w\s]|\S+\s+\S")
#: hunt 36: a lone word of this many letters or more is read reversed and in ROT13 too, where it reads as one master
#: key (``rewsna``, ``Nafjre``): of 250,465 distinct words in the false-positive bench's answers, none of six letters or
#: more does; shorter ones do (``fine`` is ``svar`` in ROT13, ``princ`` ``cevap``, ``togas`` ``sagot`` reversed), and
#: one of six reads as a key and filler in ROT13 (``finery``, ``svar el``)
_LONE = 6
#: a text read in ROT13: two words or more, or a colon in it (``Nafjre:``): a lone word is read as it is written
#: (``fine`` is no ``svar``); a search, so one character each side of the space, the space possessive: linear (``\S+``
#: tried from every place of a long word was quadratic, 4.6 s over 32 KiB of ``<div>``)
_ROT13_SHAPE = re.compile(r"\S\s++\S|[:\uff1a]")
#: Unicode's tag characters for printable ASCII (``_encoded.ASCII_TAGS``)
_TAGGED = re.compile("[\U000e0020-\U000e007e]")


def _words(keys: "tuple[str, ...]") -> "list[list[str]]":
    """Every word the content-free screen's opener (``_guards._opener_pattern``) is made of, as character patterns
    (``_keys._start_words``), a step header with one to three digits. A text the opener takes whole is these one after
    another (its lookaheads only forbid), so it starts as they may and ends as they may."""
    steps = [_chars("step") + ["[0123456789]"] * n for n in (1, 2, 3)]
    return [*_start_words(keys), *steps]


@functools.lru_cache(maxsize=64)
def _ends(keys: "tuple[str, ...]") -> "tuple[tuple, tuple, np.ndarray, np.ndarray]":
    """Part A of hunt 36, the gate of a turned reading: the words a text of master keys is made of (``_words``), the
    words reversed (a text's end read from the end), and the starts of each (``_joined._starts``' sorted tables)."""
    words = tuple(tuple(w) for w in _words(keys))
    backs = tuple(w[::-1] for w in words)
    return words, backs, _starts(words), _starts(backs)


def _starting(head: str, table: np.ndarray) -> bool:
    """Whether ``head`` (a text's first ``_WIDTH`` characters, all of a shorter text) is one of the starts ``table``:
    packed as ``_joined._starts`` packs a start, looked up in the sorted table."""
    key = 0
    for c in head[:_WIDTH]:
        key = key << _BITS | ord(c)
    for _ in range(_WIDTH - len(head[:_WIDTH])):
        key = key << _BITS | _END
    at = table.searchsorted(key)
    return bool(at < len(table) and table[at] == key)


def may_be_keys(head: str, back: str, keys: "tuple[str, ...]") -> bool:
    """Whether a reading whose first ``_WIDTH`` characters are ``head`` and last ones, read from the end, ``back`` may be
    master keys and filler (``_guards._only_keys``): a necessary condition, never false where that is true."""
    _, _, starts, ends = _ends(keys)
    return _starting(head, starts) and _starting(back, ends)


def _may_each(joined: str, joiner: str, keys: "tuple[str, ...]") -> "tuple[np.ndarray, np.ndarray]":
    """``may_be_keys`` of the ROT13 and of the reversed reading of each text of ``joined`` (texts joined by ``joiner``),
    in numpy, from each text's first and last ``_WIDTH`` code points (``_joined.heads``), read by one pass over its
    codes: a reading's start and end are those of the text, turned (each reading made whole, split and looked at
    twice cost 16 ms over 43,000 texts)."""
    _, _, starts, ends = _ends(keys)
    codes = _codes(joined)
    head, tail = heads(codes, joiner), heads(codes[::-1], joiner)[::-1]
    rot13, back = starting(_rot13_codes(head), starts), starting(tail, starts)
    rot13[rot13] = starting(_rot13_codes(tail[rot13]), ends)   # the ends looked up where the start may be one
    back[back] = starting(head[back], ends)
    return rot13, back


def _rot13_codes(rows: "np.ndarray") -> "np.ndarray":
    """``rows`` of code points in ROT13 (``_ROT13``: lower-case letters)."""
    return np.where((rows >= 0x61) & (rows <= 0x7A), (rows - 0x54) % 26 + 0x61, rows)


def _untagged(text: str) -> "str | None":
    """The letters of ``text`` with its tag characters read as the ASCII they stand for, where it holds one."""
    return letters(_unmarked(text.translate(ASCII_TAGS))) if _TAGGED.search(text) is not None else None


def _rot13(text: str, found: str, keys: "tuple[str, ...]") -> "str | None":
    if not (found.isascii() and may_be_keys(found[:_WIDTH].translate(_ROT13), found[-_WIDTH:][::-1].translate(_ROT13),
                                            keys)):
        return None
    reading = found.translate(_ROT13)
    return reading if _ROT13_SHAPE.search(text) is not None or _lone_key(reading, keys) else None


def _reversed(text: str, found: str, keys: "tuple[str, ...]") -> "str | None":
    if not (found.isascii() and may_be_keys(found[-_WIDTH:][::-1], found[:_WIDTH], keys)):
        return None
    return found[::-1] if _REVERSED_SHAPE.match(text) is not None or _lone_key(found[::-1], keys) else None


def _lone_key(reading: str, keys: "tuple[str, ...]") -> bool:
    """Whether a turned reading of a text of neither shape is one master key of ``_LONE`` letters or more (hunt 36)."""
    return len(reading) >= _LONE and reading in _key_forms(keys)


def _upside_down(found: str) -> "str | None":
    return found.translate(_FLIP)[::-1] if _FLIPPED.search(found) is not None else None


def turned_readings(text: str, found: str, keys: "tuple[str, ...]" = ()) -> "list[str]":
    """The readings of ``found`` (``letters`` of ``text``) as ROT13, upside down, with ``text``'s tag characters
    decoded, and reversed, where each applies (Latin letters only, and a text of ``_ROT13_SHAPE`` or
    ``_REVERSED_SHAPE``, for ROT13 and reversed) and, for ROT13 and reversed, where its ends may be master keys
    (``may_be_keys`` with ``keys``, the extra ones: hunt 36, a reading that cannot match is not made)."""
    reads = (_rot13(text, found, keys), _upside_down(found), _untagged(text), _reversed(text, found, keys))
    return [r for r in reads if r is not None and r != found]


def turned_flags(texts: "list[str]", found: str, joiner: str, flags: "list[bool]",
                 keys_only: "Callable[[list[str]], list[bool]]", keys: "tuple[str, ...]" = (),
                 pieces: "list[str] | None" = None) -> None:
    """Flags (in place) the texts (``found``: their letters joined by ``joiner``) that a turned reading shows as
    master keys and filler only (``keys_only``), as ``turned_readings`` reads one: the letters in ROT13 and reversed,
    each one translation of the texts it may flag (``_readings``); upside down only where a turned letter stands; the
    texts holding a tag character one by one. Each a pass of ``keys_only`` over those texts."""
    if all(flags):
        return
    whole = "".join(texts)
    if not whole.isascii() and _TAGGED.search(whole) is not None:   # tag characters: those texts read one by one
        tagged = [i for i, t in enumerate(texts) if not flags[i] and _TAGGED.search(t) is not None]
        for i, only in zip(tagged, keys_only([_untagged(texts[i]) or "" for i in tagged])):
            flags[i] = only
    pieces = found.split(joiner) if pieces is None else pieces   # ``pieces``: ``found`` split, where a caller has it
    for which, reading, reversed_ in _readings(found, pieces, joiner, flags, keys):
        for i, read in itertools.compress(zip(which, reading), keys_only(reading)):   # the few that read as keys
            latin = pieces[i].isascii() and ((_REVERSED_SHAPE.match(texts[i]) if reversed_ else
                                              _ROT13_SHAPE.search(texts[i])) is not None or _lone_key(read, keys))
            if read != pieces[i] and (latin if reversed_ is not None else _FLIPPED.search(pieces[i])):
                flags[i] = True


def _readings(found: str, pieces: "list[str]", joiner: str, flags: "list[bool]", keys: "tuple[str, ...]"
              ) -> "Iterator[tuple[list[int], list[str], bool | None]]":
    """The readings ``turned_flags`` tries: (the texts it may flag, in order; their readings; whether read from the
    end, None upside down). Only the texts not flagged yet: ROT13 and reversed of Latin letters, where the reading's
    ends may be master keys (``_may_each``: hunt 36), upside down where a turned letter stands (found in numpy)."""
    unflagged = list(range(len(pieces))) if True not in flags else \
        list(itertools.compress(range(len(pieces)), map(operator.not_, flags)))
    latin = unflagged if found.isascii() else \
        list(itertools.compress(unflagged, map(str.isascii, map(pieces.__getitem__, unflagged))))
    if latin:
        every = len(latin) == len(pieces)
        rot13, back = _may_each(found if every else joiner.join(map(pieces.__getitem__, latin)), joiner, keys)
        for may, reversed_ in ((rot13, False), (back, True)):
            which = latin if may.all() else list(itertools.compress(latin, may.tolist()))
            if which:
                joined = found if len(which) == len(pieces) else joiner.join(map(pieces.__getitem__, which))
                yield which, (joined[::-1].split(joiner)[::-1] if reversed_ else
                              joined.translate(_ROT13).split(joiner)), reversed_
    if not found.isascii() and _FLIPPED.search(found) is not None:
        which = holding(found, joiner, _FLIPPED_CODES, flags)
        if which:
            joined = found if len(which) == len(pieces) else joiner.join(map(pieces.__getitem__, which))
            yield which, joined.translate(_FLIP)[::-1].split(joiner)[::-1], None
