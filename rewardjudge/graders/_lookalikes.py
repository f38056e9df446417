"""Hunt 38: master keys written in the letters of another script that look like Latin ones, beyond the Cyrillic,
Greek and Armenian ones every text is folded from (``readouts._fold._CONFUSABLE``): Cherokee (``Ꭲhought``, ``ᏚᏙᎪᎡ``), Lisu,
which has a look-alike of nearly every Latin capital (``ꓔꓧꓳꓴꓖꓧꓔ ꓑꓣꓳꓚꓰꓢꓢ``), and Canadian syllabics (``ᗅ``, ``ᑭ``).
A judge reads them as the Latin letters they look like; the content-free screen (``_guards``) reads a text holding one
so too (the look-alikes of Unicode's confusables list, ``confusables.txt``), as a reading beside the text as written
(a real Cherokee or Lisu word is its own letters), only where one stands: in numpy, linear."""

from __future__ import annotations

import functools
import itertools

import numpy as np

from ..readouts._fold import _codes, _text_of
from ._joined import holding

#: each Latin letter and the letters of those scripts that look like it (the capitals; ``letters`` folds a small
#: Cherokee letter to its capital, and keeps these as they are)
_LOOKS = {
    "a": "\u13aa\u15c5\ua4ee", "b": "\u13cf\u13f4\u15af\u15f7\ua4d0", "c": "\u13df\ua4da",
    "d": "\u13a0\u13e7\u146f\u15de\u15ea\ua4d2\ua4d3", "e": "\u13ac\ua4f0", "f": "\u15b4\ua4dd",
    "g": "\u13c0\u13f3\ua4d6", "h": "\u13bb\u13c2\u157c\ua4e7", "i": "\u13a5\ua4f2", "j": "\u13ab\u148d\ua4d9",
    "k": "\u13e6\ua4d7", "l": "\u13de\u14aa\ua4e1", "m": "\u13b7\u15f0\ua4df", "n": "\ua4e0", "o": "\ua4f3",
    "p": "\u13e2\u146d\ua4d1", "r": "\u13a1\u13d2\u1587\ua4e3", "s": "\u13d5\u13da\ua4e2", "t": "\u13a2\ua4d4",
    "u": "\u144c\ua4f4", "v": "\u13d9\u142f\ua4e6", "w": "\u13b3\u13d4\ua4ea", "x": "\u166d\ua4eb",
    "y": "\u13a9\u13bd\ua4ec", "z": "\u13c3\ua4dc",
}
_TOP = 0xAC00
_MAP = np.arange(_TOP, dtype=np.uint32)
for _latin, _chars in _LOOKS.items():
    _MAP[[ord(c) for c in _chars]] = ord(_latin)
#: where a look-alike stands in a text as written, a Cherokee one in either case (``_joined.holding``'s table: True at
#: each, False at the last)
_HELD = np.zeros(_TOP + 1, dtype=bool)
_HELD[[ord(c) for chars in _LOOKS.values() for c in {*chars, *chars.lower()}]] = True
#: the same over UTF-16 code units (a character past U+FFFF is two surrogates, none a look-alike)
_HELD16 = np.zeros(1 << 16, dtype=bool)
_HELD16[:_TOP] = _HELD[:_TOP]


def _read(found: str) -> str:
    """``found`` with each look-alike as its Latin letter, in numpy (a translation looked up every character of a text
    outside ASCII cost 20 ms in 256 KiB)."""
    codes = _codes(found).copy()
    low = codes < _TOP
    codes[low] = _MAP[codes[low]]
    return _text_of(codes)


def lookalike_reading(text: str, found: str) -> "str | None":
    """``found`` (``letters`` of ``text``) read with its look-alikes as Latin letters, where ``text`` holds one as
    written (found in numpy, over its UTF-16: a text's letters may be many more, ``ﷺ`` is 18)."""
    if text.isascii() or not _HELD16[np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)].any():
        return None
    return _read(found)


def lookalike_flags(texts: "list[str]", found: str, joiner: str, flags: "list[bool]", keys_only) -> None:
    """Flags (in place) the texts not flagged yet (``found``: their letters joined by ``joiner``) holding a look-alike
    as written (found in numpy) whose reading (``lookalike_reading``) is master keys and filler only (``keys_only``):
    one pass."""
    if found.isascii() or all(flags):
        return
    which = holding(joiner.join(texts), joiner, _HELD, flags)
    if not which:
        return
    pieces = found.split(joiner)
    reading = _read(joiner.join([pieces[i] for i in which])).split(joiner)
    for i, _ in itertools.compress(zip(which, reading), keys_only(reading)):
        flags[i] = True
