"""A judge's own verdict as the sealed readers take it where it does not read as written: the wrapping around
it (emphasis, cell borders, quotes, a full stop: ``unwrap``), markup that only styles it (``unstyled``), brackets
the whole line opens and closes around it (``unclosed``, ``without_closers``), marks that show nothing and other
scripts' forms (``folded``). Only a verdict the seal or a candidate id binds is read
through these views, so nothing the policy wrote is read this way."""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["EMPHASIS", "ZERO_WIDTH", "as_seal", "folded", "json_string_rest", "unclosed", "unstyled", "unwrap",
           "without_closers", "without_note"]

#: spaces and markdown emphasis tolerated around a sealed line's verdict
EMPHASIS = " \t*_`~"
#: what ``unwrap`` strips around a verdict: emphasis, a markdown table's cell borders, quotes
_WRAPPING = EMPHASIS + "|\"'\u201c\u201d\u2018\u2019\u00ab\u00bb"


#: markup that only styles or holds the text it holds: LaTeX's math delimiters and text commands around a verdict
#: (``\\(``, ``$\\boxed{...}$``, ``\\text{...}``, as reasoning models box a final answer), an HTML or XML element
#: of any name (``<strong>``, ``<answer>``, ``<li>``: a judge told to answer in tags); never one that changes or
#: strikes it out (``\\sqrt``, ``\\cancel``, ``<s>``, ``<strike>``, ``<del>``)
_STYLE_COMMAND = re.compile(r"\\(?:boxed|fbox|mbox|emph|bm|text(?:bf|it|rm|sf|tt|sc|up|normal)?"
                            r"|math(?:bf|rm|it|sf|tt|normal))[ \t]{0,2}\{([^{}]*)\}")
_MATH_DELIMITER = re.compile(r"\${1,2}|\\[()\[\]]")
_ELEMENT_TAG = re.compile(r"</?(?!(?:s|strike|del)(?![\w:.-]))[a-z][\w:.-]{0,32}(?:[ \t][^<>]{0,64})?>", re.IGNORECASE)
#: an element that holds nothing: HTML's line break and rule (``<br>``, ``<hr/>``), any element closed in its tag
_VOID_TAG = re.compile(r"<(?:(?:br|hr|wbr)(?![\w:.-])[^<>]{0,64}|[a-z][\w:.-]{0,32}(?:[ \t][^<>]{0,64})?/)>",
                       re.IGNORECASE)


def unstyled(s: str) -> str:
    """``s`` (a judge's own sealed verdict, bound by the seal or an id) without ``_STYLE_COMMAND``'s commands
    (their text kept, inner ones first), math delimiters and, where one of them closes (``<B>`` alone is a label
    in the instruction's brackets), element tags: ``$\\boxed{PASS}$``, ``<strong>PASS</strong>``, ``PASS</answer>``
    (the element opened before the seal, around the whole line)."""
    if "\\" in s or "$" in s:
        for _ in range(4):
            s, n = _STYLE_COMMAND.subn(r"\1", s)
            if not n:
                break
        s = _MATH_DELIMITER.sub("", s)
    if "</" in s and any(tag.startswith("</") for tag in _ELEMENT_TAG.findall(s)):
        s = _ELEMENT_TAG.sub(" ", s)   # a space: ``1</b><b>0`` is no ``10``
    return _VOID_TAG.sub(" ", s) if "<" in s else s


def unwrap(s: str) -> str:
    """``s`` without whitespace, markdown emphasis, table cell borders and quotes around it and
    final full stops (``**PASS**.``, ``*[[8]].*``, ``FAIL |``, ``FAIL\u3002``, ``"FAIL"``): a sealed
    line's verdict as written."""
    s = s.strip()
    for _ in range(2):
        s = s.strip(_WRAPPING).rstrip(".\u3002").strip()
    return s.strip(_WRAPPING)


def unclosed(head: str) -> int:
    """How many brackets ``head`` (a sealed line up to its colon) leaves open: ``\\boxed{VERDICT <seal>:``,
    ``[VERDICT <seal>:``, ``\u300cVERDICT <seal>:`` (opening and closing punctuation, Unicode's Ps and Pe)."""
    n = 0
    for ch in head:
        if ch.isalnum() or ch.isspace():
            continue
        cat = unicodedata.category(ch)
        n = n + 1 if cat == "Ps" else n - 1 if cat == "Pe" and n else n
    return n


def without_closers(rest: str, n: int) -> str:
    """``rest`` (a sealed line's verdict) without up to ``n`` closing brackets at its end, emphasis between: the line
    opened them before the seal (``unclosed``), so they close around the whole line, its verdict too."""
    for _ in range(n):
        end = rest.rstrip(EMPHASIS)
        if not end or unicodedata.category(end[-1]) != "Pe":
            break
        rest = end[:-1]
    return rest


#: zero-width spaces, joiners and bidi marks, a byte-order mark: also allowed beside a seal (``_seal._AROUND_SEAL``)
ZERO_WIDTH = "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"
#: what shows nothing on a judge's line: ``ZERO_WIDTH``, bidi controls, a soft hyphen, variation selectors, tag
#: characters and other format characters (a judge carries them over from the policy's text)
_INVISIBLE = re.compile("[" + ZERO_WIDTH + "\u00ad\u061c\u180e\u202a-\u202e\u2061-\u206f\ufe00-\ufe0f"
                        "\U000e0000-\U000e007f"
                        # and enclosing marks that frame the character before them (a keycap ``4\ufe0f\u20e3``, a
                        # circle), not U+20E0's slashed circle, which says "no" to it
                        "\u0488\u0489\u1abe\u20dd-\u20df\u20e2-\u20e4\ua670-\ua672]+")
#: the longest text ``folded`` folds (a verdict, not a paragraph: NFKC reorders runs of combining marks slowly)
_FOLD_MAX = 256


class _Digits(dict):
    """A ``str.translate`` table: every decimal digit of any script (Arabic-Indic ``٣``, Devanagari ``३``)
    as its ASCII digit, any other character as itself; filled as characters are met."""

    def __missing__(self, cp: int) -> "int | str":
        digit = unicodedata.decimal(chr(cp), None)
        self[cp] = out = cp if digit is None else str(digit)
        return out


_DIGITS = _Digits()


def folded(s: str) -> str:
    """``s`` (the rest of a sealed line, a candidate's grade) as a judge's own verdict is read where it does not
    read as written: invisible characters dropped, then NFKC (fullwidth letters, digits and brackets, a no-break
    or ideographic space) and any script's decimal digits as ASCII ones (a judge writing Arabic or Hindi). The
    seal or the id binds it, so nothing the policy wrote is read this way."""
    if s.isascii() or len(s) > _FOLD_MAX:
        return s
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", s)).translate(_DIGITS)


#: a note after a verdict that ends in its own closing bracket (``[[2]] (poor)``): words in parentheses, no digit and
#: no bracket in it, so it holds no second verdict of a form in brackets
_NOTE = re.compile(r"[ \t]{1,4}\([^\W\d_][^()\[\]{}<>\d\r\n]{0,62}\)[ \t.]{0,4}\Z")


def without_note(rest: str) -> str:
    """``rest`` (a sealed line's verdict) without a note in parentheses after it, where the verdict before the note
    ends in a closing bracket (``Rating: [[2]] (poor)``): the form's own delimiters end the verdict there."""
    m = _NOTE.search(rest, max(0, len(rest) - 72))
    head = rest[:m.start()].rstrip(EMPHASIS) if m is not None else ""
    return head if head and unicodedata.category(head[-1]) == "Pe" else rest


#: a sealed line opened inside a JSON string: ``{"verdict": "VERDICT <seal>:`` (the text before the seal)
_JSON_STRING_HEAD = re.compile(r'(?:[{,]|\A)[ \t]{0,16}"[^"\\\r\n]{1,64}"[ \t]{0,16}:[ \t]{0,16}"[ \t*_]{0,8}(?i:verdict)'
                               r'[^"\\\r\n]{0,40}\Z')
#: the rest of that string's object after its closing quote: another field (its key, or the line's end) or the
#: object's end
_JSON_AFTER = re.compile(r'"[ \t]{0,16}(?:,[ \t]{0,16}(?:"|\Z)|\})')


def json_string_rest(head: str, rest: str) -> "str | None":
    """Where ``head`` (a sealed line up to its separator, from the line's start) opens a JSON string holding the line, ``rest`` up to that
    string's closing quote, which more fields or the object's end follow (``{"verdict": "VERDICT <seal>: FAIL",
    "confidence": 0.9}``): a string ends at its first unescaped quote, so the verdict is what it holds; else None."""
    if '"' not in rest or _JSON_STRING_HEAD.search(head) is None:
        return None
    end = rest.find('"')
    return rest[:end] if "\\" not in rest[:end] and _JSON_AFTER.match(rest, end) else None


#: what a judge may carry into a seal that shows nothing: zero-width characters, a soft hyphen (as UTF-8)
_SPLIT_MARKS = "[" + ZERO_WIDTH + "\u00ad]*"
#: ASCII's capitals as small letters, and every byte of a character past ASCII deleted (``bytes.translate``'s
#: table and delete set: one pass in C that joins a seal across its marks)
_LOWER, _NON_ASCII = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz"), bytes(range(128, 256))


@functools.lru_cache(maxsize=16)
def _spelled(seal: str) -> "re.Pattern[str]":
    """The seal in any case, with zero-width marks between its digits."""
    return re.compile(_SPLIT_MARKS.join(f"[{ch}{ch.upper()}]" if ch.isalpha() else ch for ch in seal))


def as_seal(text: str, seal: str) -> str:
    """``text`` with the ``seal`` (lower-case hex) written in capitals, in mixed case or with zero-width characters
    inside it written as the seal, a zero-width space after it for each mark taken out (every offset holds). Looked
    for in the text's UTF-8 with ASCII letters in lower case and every character past ASCII taken out (a pass in C),
    then, only where that holds more seals than the text as written (a policy cannot make it: it never knows the
    seal), with a pattern of the seal's spellings."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:   # a lone surrogate: the error handler's path, ten times slower
        raw = text.encode("utf-8", "surrogatepass")
    sealed, exact = seal.encode("ascii"), raw.count(seal.encode("ascii"))
    if raw.translate(_LOWER, _NON_ASCII).count(sealed) == exact:   # the pattern reads only marks between digits
        return text
    return _spelled(seal).sub(lambda m: seal + "\u200b" * (len(m.group()) - len(seal)), text)
