"""The disguised readings of a text's letters the content-free screen (``_guards``) tries, in one place: turned
(``_turned``: ROT13, reversed, upside down, tag characters), hunt 38's shifted (``_shifted``: Caesar, Atbash) and
look-alike letters of other scripts (``_lookalikes``: Cherokee, Lisu, Canadian syllabics)."""

from __future__ import annotations

from ._turned import turned_flags as _turned_flags, turned_readings as _turned_readings
from ._lookalikes import lookalike_flags, lookalike_reading
from ._shifted import shifted_flags, shifted_readings


def turned_readings(text: str, found: str, keys: "tuple[str, ...]" = ()) -> "list[str]":
    """``_turned.turned_readings``, ``shifted_readings`` and ``lookalike_reading``: what ``_guards._bare`` tries."""
    reads = _turned_readings(text, found, keys)
    if found[-1:].isalpha() and found[:1].isalpha():   # a shift reads letters at both ends: a digit there, no call
        reads += shifted_readings(text, found, keys)
    if text.isascii():
        return reads
    looks = lookalike_reading(text, found)
    return reads if looks is None else [*reads, looks]


def turned_flags(texts: "list[str]", found: str, joiner: str, flags: "list[bool]", keys_only, keys=(),
                 pieces: "list[str] | None" = None) -> None:
    """``_turned.turned_flags``, then ``shifted_flags`` and ``lookalike_flags`` over the texts left: the batch step."""
    _turned_flags(texts, found, joiner, flags, keys_only, keys, pieces)
    shifted_flags(texts, found, joiner, flags, keys_only, keys)
    lookalike_flags(texts, found, joiner, flags, keys_only)
