"""Hunt 36: a text spelled out from end to end in a code a judge reads letter by letter, read as the letters it spells
by the content-free screen (``_guards``), as base64 is (hunt 30): hex bytes (``416e737765723a`` is ``Answer:``), bytes
in binary (``01000001 01101110 ...``) and the NATO spelling alphabet (``Alfa November Sierra Whiskey Echo Romeo``);
hunt 38: A1Z26 (``1 14 19 23 5 18``).
A decoding that holds no letter is read as written: ``2020`` is a year, not two spaces, and ``deadbeef`` no text."""

from __future__ import annotations

import re

from ._encoded import _CONTROL, whole_texts

_NATO = ("alfa alpha bravo charlie delta echo foxtrot golf hotel india juliett juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey whisky xray x-ray yankee zulu").split()
#: each code from end to end, possessive (a text that almost is one fails in a step per group); two units or more
_HEX = r"(?:[0-9A-Fa-f]{2}[ \t]?+){2,}+"
_BINARY = r"(?:[01]{8}[ \t]?+){2,}+"
_SPELLING = rf"(?i:(?:(?:{'|'.join(sorted(map(re.escape, _NATO), key=len, reverse=True))})\b[ \t,.;/-]*+){{2,}}+)"
#: hunt 38: A1Z26, each letter its place in the alphabet (``20 8 15 21 7 8 20``, ``1-14-19-23-5-18``): five numbers or
#: more, apart (a list of fewer may answer), read only where each is 1 to 26 and hex and binary read none
_NUMBERS = r"[0-9]{1,2}+(?:[-,./ \t]++[0-9]{1,2}+){4,}+"
_PATTERN = f"{_HEX}|{_BINARY}|{_SPELLING}|{_NUMBERS}"
_WHOLE = re.compile(rf"\s*({_PATTERN})\s*")


def _spelled(code: str) -> "str | None":
    """The text ``code`` (one of the codes, whole) spells, where it holds a letter and no control character."""
    plain = _bytes_spelled(code)
    if plain is None and re.fullmatch(_NUMBERS, code):   # hunt 38: A1Z26
        places = list(map(int, re.findall("[0-9]+", code)))
        plain = "".join(chr(0x60 + n) for n in places) if all(1 <= n <= 26 for n in places) else None
    return plain


def _bytes_spelled(code: str) -> "str | None":
    """``_spelled`` of hex, binary bytes and the NATO alphabet."""
    if code[:1].isalpha() and not all(c in "0123456789abcdefABCDEF \t" for c in code):   # the NATO words' initials
        plain = "".join(w[0] for w in re.findall(r"[A-Za-z]+(?:-ray)?", code))
    else:
        digits = re.sub(r"\s", "", code)
        binary = set(digits) <= {"0", "1"} and len(digits) % 8 == 0
        try:
            raw = int(digits, 2).to_bytes(len(digits) // 8, "big") if binary else bytes.fromhex(digits)
            plain = raw.decode("utf-8")
        except ValueError:   # odd hex, or no UTF-8 (UnicodeDecodeError is a ValueError)
            return None
    return plain if any(c.isalpha() for c in plain) and _CONTROL.search(plain) is None else None


def spelled_text(text: str) -> "str | None":
    """The text ``text`` spells where it is one of the codes from end to end, else None."""
    found = _WHOLE.fullmatch(text) if len(text) <= 65_536 else None
    return _spelled(found.group(1)) if found is not None else None


def spelled_texts(joined: str, joiner: str) -> "dict[int, str]":
    """``spelled_text`` of each text of ``joined`` (texts joined by ``joiner``), by index, where it is one."""
    return whole_texts(joined, joiner, _PATTERN, _spelled)
