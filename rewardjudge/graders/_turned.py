"""Master keys written turned, as a judge undoes them as it reads (hunt 33): in ROT13 (``Gubhtug cebprff:``),
reversed (``:ssecorp thguohT``), upside down (``ssǝɔoɹd ʇɥƃnoɥʇ``) or with letters as Unicode tag characters, which a
reader does not see and a judge may decode (``\U000e0041nswer:`` shows ``nswer:``). The content-free screen (``_guards``) reads a
text's letters (``letters``) in each of these ways too; a text is content-free where one reading is master keys
and filler only. Each reading is a translation or a slice of the letters, in C: linear."""

from __future__ import annotations

import itertools
import re
from typing import Callable

from ..readouts._text import letters
from ._encoded import ASCII_TAGS
from ._markup import _unmarked

#: ROT13 over the letters (``letters`` are lower case)
_ROT13 = str.maketrans("abcdefghijklmnopqrstuvwxyz", "nopqrstuvwxyzabcdefghijklm")
#: the letters written upside down, as the letters they stand for (then read from the end); the Latin letters
#: that are another turned (``b``/``q``, ``d``/``p``, ``n``/``u``) swapped; the rest stand for themselves
_FLIP = str.maketrans("ɐɔǝɟƃɥıᴉɾʞןꞁɯɹᴚʇʌʍʎbqdpnu", "acefghiijkllmrrtvwyqbpdun")
_FLIPPED = re.compile("[ɐɔǝɟƃɥıᴉɾʞןꞁɯɹᴚʇʌʍʎ]")
#: a text read reversed: two words or more, or one led by a sentence's last mark (``:rewsnA``): a lone word is read
#: as it is written (``Togas`` is no ``sagot``)
_REVERSED_SHAPE = re.compile(r"\s*[^\w\s]|\S+\s+\S")
#: a text read in ROT13: two words or more, or a colon in it (``Nafjre:``): a lone word is read as it is written
#: (``fine`` is no ``svar``); a search, so one character each side of the space, the space possessive: linear (``\S+``
#: tried from every place of a long word was quadratic, 4.6 s over 32 KiB of ``<div>``)
_ROT13_SHAPE = re.compile(r"\S\s++\S|[:\uff1a]")
#: Unicode's tag characters for printable ASCII (``_encoded.ASCII_TAGS``)
_TAGGED = re.compile("[\U000e0020-\U000e007e]")


def _untagged(text: str) -> "str | None":
    """The letters of ``text`` with its tag characters read as the ASCII they stand for, where it holds one."""
    return letters(_unmarked(text.translate(ASCII_TAGS))) if _TAGGED.search(text) is not None else None


def _rot13(text: str, found: str) -> "str | None":
    return found.translate(_ROT13) if found.isascii() and _ROT13_SHAPE.search(text) is not None else None


def _upside_down(found: str) -> "str | None":
    return found.translate(_FLIP)[::-1] if _FLIPPED.search(found) is not None else None


def turned_readings(text: str, found: str) -> "list[str]":
    """The readings of ``found`` (``letters`` of ``text``) as ROT13, upside down, with ``text``'s tag characters
    decoded, and reversed, where each applies (Latin letters only, and a text of ``_ROT13_SHAPE`` or
    ``_REVERSED_SHAPE``, for ROT13 and reversed)."""
    reads = [r for r in (_rot13(text, found), _upside_down(found), _untagged(text)) if r is not None and r != found]
    if found.isascii() and _REVERSED_SHAPE.match(text) is not None and found[::-1] != found:
        reads.append(found[::-1])
    return reads


def turned_flags(texts: "list[str]", found: str, joiner: str, flags: "list[bool]",
                 keys_only: "Callable[[list[str]], list[bool]]") -> None:
    """Flags (in place) the texts (``found``: their letters joined by ``joiner``) that a turned reading shows as
    master keys and filler only (``keys_only``), as ``turned_readings`` reads one: the letters in ROT13 and reversed,
    each one translation of the whole; upside down only where a turned letter stands; the texts holding a tag
    character one by one. Each a pass of ``keys_only`` over the texts."""
    if all(flags):
        return
    if _TAGGED.search("".join(texts)) is not None:   # tag characters: those texts read one by one
        tagged = [i for i, t in enumerate(texts) if not flags[i] and _TAGGED.search(t) is not None]
        for i, only in zip(tagged, keys_only([_untagged(texts[i]) or "" for i in tagged])):
            flags[i] = only
    pieces = found.split(joiner)
    readings = [(found.translate(_ROT13).split(joiner), False), (found[::-1].split(joiner)[::-1], True)]
    if _FLIPPED.search(found) is not None:
        readings.append((found.translate(_FLIP)[::-1].split(joiner)[::-1], None))
    for reading, reversed_ in readings:
        for i in itertools.compress(range(len(pieces)), keys_only(reading)):   # the few that read as keys
            latin = pieces[i].isascii() and ((_REVERSED_SHAPE.match(texts[i]) if reversed_ else
                                              _ROT13_SHAPE.search(texts[i])) is not None)
            if reading[i] != pieces[i] and (latin if reversed_ is not None else _FLIPPED.search(pieces[i])):
                flags[i] = True
