"""Hunt 38: master keys written in a Caesar shift other than ROT13 (``Wkrxjkw surfhvv:`` is ``Thought process:``
shifted by 3) or in Atbash (``Gslftsg kilxvhh:``, the alphabet read backwards), any shift of it too, as a judge undoes
them as it reads. The content-free screen (``_guards``) reads a text's letters so where a shift reads as master keys
and filler. No shift is tried letter by letter: a shift moves every letter alike, so the differences between a
text's first three letters (mod 26) are those of the words it stands for, and they tell the shifts that may read as
the keys' starts (``_tables``: each difference pair, the first letters its starts have), the last three letters the
same for the keys' ends (``_turned._ends``' tables). A reading is made only for a shift both ends allow, and kept, as
ROT13 is (``_turned``), for a text of two words or a colon, or a lone word of ``_LONE`` letters that reads as one key.
ROT13 and no shift at all are ``_turned``'s and the screen's own. Alone, a few steps in Python; in a batch, a few
passes in numpy over each text's ends."""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Iterator

import numpy as np

from ..readouts._fold import _codes
from ._joined import _BITS
from ._keys import _key_forms
from ._turned import _LONE, _ends

_A = ord("a")
_ALL = (1 << 26) - 1
#: the shifts read elsewhere (as written, ROT13), left out of Caesar's; Atbash's are all read here
_CAESAR_DONE = 1 << 0 | 1 << 13
#: the fewest letters a text read shifted holds
_FEWEST = 5
#: the texts a batch reads one by one before it reads each distinct one once
_FEW = 64
#: each shift's translation back, Caesar's then Atbash's (``_reading``)
_BACK = tuple(str.maketrans({_A + c: _A + (c - k) % 26 for c in range(26)}) for k in range(26))
_ATBASH_BACK = tuple(str.maketrans({_A + c: _A + (25 - c - k) % 26 for c in range(26)}) for k in range(26))


@functools.lru_cache(maxsize=64)
def _tables(keys: "tuple[str, ...]") -> "tuple[np.ndarray, np.ndarray]":
    """For the starts of a text of master keys and filler (``_turned._ends``: its first three characters) and for its
    ends (its last three, from the end): by the differences of the second and third letters from the first (mod 26),
    a mask of the shifts that would make a text's three letters one, given its first letter as 0 (bit ``-first``;
    a text whose first letter is ``h`` shifts by ``h - first``: the mask rotated by ``h``), at ``26 * first difference
    + second``. Latin letters only."""
    tables = []
    for packed in _ends(keys)[2:]:   # in numpy: 90,000 starts
        c = np.stack([packed >> (_BITS * i) & (1 << _BITS) - 1 for i in (2, 1, 0)]) - _A
        c = c[:, ((c >= 0) & (c < 26)).all(axis=0)]
        table = np.zeros(26 * 26, dtype=np.int32)
        np.bitwise_or.at(table, (c[1] - c[0]) % 26 * 26 + (c[2] - c[0]) % 26, 1 << (-c[0]) % 26)
        tables.append(table)
    return tables[0], tables[1]


def _rotated(mask: "np.ndarray | int", by: "np.ndarray | int") -> "np.ndarray | int":
    return (mask << by | mask >> (26 - by)) & _ALL


@functools.lru_cache(maxsize=64)
def _lists(keys: "tuple[str, ...]") -> "tuple[list[int], list[int]]":
    """``_tables`` as lists, for one text (``_one_shifts``: a step on numpy's scalars costs ten on Python's ints)."""
    return _tables(keys)[0].tolist(), _tables(keys)[1].tolist()


def _shifts(head: list, back: list, tables: tuple) -> tuple:
    """The masks of the Caesar and Atbash shifts (``_reading``) under which a text whose first letters are ``head``
    and last ones, from the end, ``back`` (arrays of each text's letters, 0-25) may read as master keys and filler
    (``_tables``)."""
    starts, ends = tables
    out = []
    for h, b in ((head, back), ([25 - x for x in head], [25 - x for x in back])):
        out.append(_rotated(starts[(h[1] - h[0]) % 26 * 26 + (h[2] - h[0]) % 26], h[0])
                   & _rotated(ends[(b[1] - b[0]) % 26 * 26 + (b[2] - b[0]) % 26], b[0]))
    return out[0] & ~_CAESAR_DONE, out[1]


def _one_shifts(found: str, tables: "tuple[list[int], list[int]]") -> "tuple[int, int]":
    """``_shifts`` of one text's letters ``found`` (Latin at both ends), in ints: a few steps (one grade's screen)."""
    starts, ends = tables
    h0, h1, h2 = map(ord, found[:3])
    b0, b1, b2 = map(ord, found[:-4:-1])
    start, end = starts[(h1 - h0) % 26 * 26 + (h2 - h0) % 26], ends[(b1 - b0) % 26 * 26 + (b2 - b0) % 26]
    caesar = _rotated(start, h0 - _A) & _rotated(end, b0 - _A) & ~_CAESAR_DONE if start and end else 0
    start, end = starts[(h0 - h1) % 26 * 26 + (h0 - h2) % 26], ends[(b0 - b1) % 26 * 26 + (b0 - b2) % 26]
    return caesar, _rotated(start, 25 - h0 + _A) & _rotated(end, 25 - b0 + _A) if start and end else 0


def _bits(mask: int) -> "Iterator[int]":
    """The places of ``mask``'s set bits, lowest first: a step per bit set."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _readings(found: str, caesar: int, atbash: int) -> "list[str]":
    """``found`` read back under each shift of the masks ``caesar`` and ``atbash``."""
    return [found.translate(back[k]) for mask, back in ((caesar, _BACK), (atbash, _ATBASH_BACK)) for k in _bits(mask)]


def _shaped(text: str) -> bool:
    """Whether ``text`` is of ``_turned._ROT13_SHAPE``, two words or a colon, in C (a search of the pattern took 3 ms
    over 256 KiB of no space)."""
    return ":" in text or "\uff1a" in text or len(text.split(None, 1)) == 2


@functools.lru_cache(maxsize=64)
def _longest(keys: "tuple[str, ...]") -> int:
    return max(map(len, _key_forms(keys)))


def shifted_readings(text: str, found: str, keys: "tuple[str, ...]" = ()) -> "list[str]":
    """The readings of ``found`` (``letters`` of ``text``) under a Caesar shift or Atbash that may be master keys
    and filler (``_shifts``), where the text is Latin letters at both ends, and counts so: two words or a colon
    (``_shaped``), or one master key of ``_LONE`` letters or more (a lone word is read as written: ``cheer`` is
    ``jolly`` shifted by 7)."""
    if len(found) < _FEWEST or not found.isascii() or not (found[:3] + found[-3:]).isalpha():
        return []
    shaped = _shaped(text)
    if not shaped and not _LONE <= len(found) <= _longest(keys):
        return []
    caesar, atbash = _one_shifts(found, _lists(keys))
    if not caesar | atbash:
        return []
    forms = _key_forms(keys)
    return _readings(found, caesar, atbash) if shaped else [r for r in _readings(found, caesar, atbash) if r in forms]


def shifted_flags(texts: "list[str]", found: str, joiner: str, flags: "list[bool]", keys_only, keys=()) -> None:
    """Flags (in place) the texts not flagged yet (``found``: their letters joined by ``joiner``) that a shifted
    reading (``shifted_readings``) shows as master keys and filler only (``keys_only``): the shifts each text's ends
    allow found in numpy (``_candidates``), then the few readings made (each distinct text once), a lone word's looked
    up in the keys, the rest matched in one pass; each copy of a text flagged with it."""
    rows = _candidates(texts, found, joiner, flags, keys) if not all(flags) and found else []
    which, reading, free, forms = [], [], set(), _key_forms(keys)
    for i, start, end, c, a in rows:
        piece, shaped = found[start:end], _shaped(texts[i])
        if not piece.isascii() or not (shaped or end - start >= _LONE):
            continue
        read = _readings(piece, c, a)
        if shaped:   # two words or a colon: matched below; a lone word: one key, or none
            which.extend([i] * len(read))
            reading.extend(read)
        elif not forms.isdisjoint(read):
            free.add(texts[i])
    free.update(texts[i] for i in itertools.compress(which, keys_only(reading) if reading else []))
    if free:   # each copy of a text flagged
        flags[:] = list(map(operator.or_, flags, map(free.__contains__, texts)))


def _candidates(texts: "list[str]", found: str, joiner: str, flags: "list[bool]", keys: "tuple[str, ...]") -> list:
    """(index, start, end, Caesar mask, Atbash mask) of each text of ``found`` (letters joined by ``joiner``) not
    ``flags``-ed, of ``_FEWEST`` letters or more, Latin at both ends, that a shift may read as master keys (``_shifts``),
    in numpy: its letters a byte each where ASCII; of many, each distinct text (``texts``) once."""
    codes = np.frombuffer(found.encode("ascii"), dtype=np.uint8) if found.isascii() else _codes(found)
    cuts = np.flatnonzero(codes == ord(joiner))
    first, last = np.concatenate(([0], cuts + 1)), np.concatenate((cuts, [len(codes)])) - 1
    at = np.flatnonzero((last - first + 1 >= _FEWEST) & ~np.frombuffer(bytes(flags), dtype=bool))
    head = [codes[first[at] + i].astype(np.int32) - _A for i in range(3)]
    back = [codes[last[at] - i].astype(np.int32) - _A for i in range(3)]
    latin = functools.reduce(np.logical_and, [(x >= 0) & (x < 26) for x in (*head, *back)])
    at, head, back = at[latin], [x[latin] for x in head], [x[latin] for x in back]
    caesar, atbash = _shifts(head, back, _tables(keys))
    some = np.flatnonzero(caesar | atbash)
    if len(some) > _FEW:   # each distinct text once (a batch of copies passes whole): its last copy, found in C
        cand = at[some].tolist()
        some = some[list(dict(zip(map(texts.__getitem__, cand), range(len(cand)))).values())]
    return list(zip(*(x[some].tolist() for x in (at, first[at], last[at] + 1, caesar, atbash))))
