"""Text written in an encoding a judge undoes as it reads (hunt 30), read as the judge reads it by the content-free
screen (``_guards``): a text that is base64 from end to end (``e30=`` is ``{}``, ``VGhvdWdodCBwcm9jZXNzOg==`` is
``Thought process:``), and a data document written with HTML's character references or percent escapes
(``{&quot;answer&quot;: &quot;&quot;}``). Where the decoding is not text (invalid UTF-8, control characters) the
text is read as written. Linear."""

from __future__ import annotations

import base64
import binascii
import html
import re
import urllib.parse
from typing import Callable

#: a text of base64 from end to end (whitespace at its ends aside): padded, or of two groups of four or more (a word
#: of four letters may decode to punctuation: ``Lyon`` is ``/*'``). Possessive: a text that is almost one fails in
#: a step per group
_B = "[A-Za-z0-9+/]"
_BASE64 = rf"(?=[A-Za-z0-9+/]{{2}})(?:(?:{_B}{{4}}){{2,}}+(?:{_B}{{2}}==|{_B}{{3}}=)?|(?:{_B}{{4}})*+(?:{_B}{{2}}==|{_B}{{3}}=))"
_WHOLE = re.compile(rf"\s*({_BASE64})\s*")
#: control characters no text holds (a line break or a tab aside): bytes decoded that are no text
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def base64_text(text: str) -> "str | None":
    """The text ``text`` stands for where it is base64 from end to end and decodes to UTF-8 text, else None."""
    found = _WHOLE.fullmatch(text)
    return _text_of(found.group(1)) if found is not None else None


def _text_of(encoded: str) -> "str | None":
    try:
        plain = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):   # UnicodeDecodeError is a ValueError
        return None
    return None if _CONTROL.search(plain) else plain


def base64_texts(joined: str, joiner: str) -> "dict[int, str]":
    """``base64_text`` of each text of ``joined`` (texts joined by ``joiner``, a control character), by index, where it
    is one (``whole_texts``)."""
    return whole_texts(joined, joiner, _BASE64, _text_of)


def whole_texts(joined: str, joiner: str, pattern: str, decoded: "Callable[[str], str | None]") -> "dict[int, str]":
    """``decoded`` of each text of ``joined`` (texts joined by ``joiner``) that is ``pattern`` from end to end (whitespace
    at its ends aside), by index, where it decodes: the texts found by one search led by the joiner (a scan for it),
    their indices by counting joiners."""
    j, led = re.escape(joiner), joiner + joined
    found: "dict[int, str]" = {}
    seen = at = 0
    for m in re.finditer(rf"{j}[^\S{j}]*({pattern})[^\S{j}]*(?={j}|\Z)", led):
        seen, at = seen + led.count(joiner, at, m.start() + 1), m.start() + 1
        plain = decoded(m.group(1))
        if plain is not None:
            found[seen - 1] = plain
    return found


#: Unicode's tag characters for printable ASCII (U+E0020-U+E007E), as those characters: a ``str.translate`` table
#: (a reader does not see them; a judge may decode them: ``\U000e0041nswer:`` shows ``nswer:``)
ASCII_TAGS = {0xE0000 + c: c for c in range(0x20, 0x7F)}
#: a decimal character reference: its digits past its leading zeros (over 7 of them stand for no character)
_DECIMAL_REF = re.compile(r"&#0*([0-9]+)")


def html_unescaped(text: str) -> str:
    """``html.unescape``, which reads a decimal reference's digits with ``int`` and raises past 4,300 of them, leading
    zeros too (``&#111...``: a policy's text then ended the screen with an error): each decimal reference is first
    written without its leading zeros, and one of more than 7 digits, which stands for no character, as one of 8 that
    ``html.unescape`` reads as U+FFFD, as it reads the long one."""
    if "&#" in text:
        text = _DECIMAL_REF.sub(lambda m: "&#" + (m[1] if len(m[1]) < 8 else "99999999"), text)
    return html.unescape(text)


def unescaped(text: str) -> "str | None":
    """``text`` with its HTML character references and percent escapes decoded, where it holds one that stands for a
    character; else None."""
    plain = html_unescaped(text) if "&" in text else text
    plain = urllib.parse.unquote(plain) if "%" in plain else plain
    return plain if plain != text else None
