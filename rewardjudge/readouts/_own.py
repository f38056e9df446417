"""A judge's own verdict as the sealed readers take it where it does not read as written: the wrapping around
it (emphasis, cell borders, quotes, a full stop: ``unwrap``), markup that only styles it (``unstyled``), brackets
the whole line opens and closes around it (``unclosed``, ``without_closers``), marks that show nothing and other
scripts' forms (``folded``). Only a verdict the seal or a candidate id binds is read
through these views, so nothing the policy wrote is read this way."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any, Callable, Iterator, Sequence

from ._copies import inside_copy, policy_copies

__all__ = ["EDGE", "EMPHASIS", "FULLWIDTH_ASCII", "LINE_END", "PICTOGRAPHS", "ZERO_WIDTH", "as_seal", "folded",
           "json_string_rest", "line_stop", "pasted", "read_noted", "relaxed_object", "seal_after", "sealed_row",
           "unclosed", "unstyled", "unwrap", "value_start", "without_closers"]

#: emoji and arrows (and the marks that join or present them) a judge writes beside its verdict
PICTOGRAPHS = "\ufe0e\ufe0f\u200d\u20e3\u2190-\u21ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff"
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


#: a note in parentheses at a sealed line's end (``PASS (good)``, ``[[2]] (2 out of 10)``): words, numbers, no bracket
_NOTE = re.compile(r"[ \t]{1,4}\(([^\W_][^()\[\]{}<>\r\n]{0,62})\)[ \t.]{0,4}\Z")
#: a number in a note, maybe after ``out of``, ``of`` or ``/`` (the scale it is over)
_NOTE_NUMBER = re.compile(r"(\bout of|\bof|/)?[ \t]*[+-]?(\d+(?:\.\d+)?)", re.IGNORECASE)


def read_noted(rest: str, read_line: "Callable[[str], Any]") -> Any:
    """The verdict ``rest`` (a sealed line's verdict) holds before a note in parentheses at its end, where the note
    leaves the line exactly one verdict: each number in it is the value, or the top of the form's scale it is over
    (``2 out of 10``, ``2/10``: the verdict over it reads, ``2/5`` does not), no word of it reads as a verdict (``PASS
    (not FAIL)``), nor does the line with it joined to the verdict (``Yes (partially)`` for ``Yes, partially``)."""
    m = _NOTE.search(rest, max(0, len(rest) - 72))
    head = rest[:m.start()].rstrip(EMPHASIS) if m is not None else ""
    value = read_line(head) if head else None
    note = m.group(1) if value is not None else ""
    if value is None or not all(_restates(n, value, read_line) for n in _NOTE_NUMBER.finditer(note)):
        return None
    words_read = any(read_line(word) is not None for word in re.findall(r"[^\W\d_]+", note))
    return None if words_read or any(read_line(f"{head}{sep}{note}") is not None for sep in (" ", ", ")) else value


def _restates(n: "re.Match[str]", value: "float | str", read_line: "Callable[[str], Any]") -> bool:
    """Whether the number ``n`` (a ``_NOTE_NUMBER``) in a note restates the score ``value``: the value itself, or after
    ``out of``, ``of`` or ``/`` the top of the scale the form reads the value over."""
    if isinstance(value, str):
        return False
    return (read_line(f"{value:g}/{n.group(2)}") if n.group(1) else float(n.group(2))) == value


#: emphasis, quotes, emoji, markup tags and LaTeX's commands and delimiters before a verdict's value
#: (a tag only where text with a letter or digit follows it inside its element: ``<FAIL>`` is a label in brackets)
_VALUE_LEAD = re.compile(r"(?:[\s*_`~|\"'\u201c\u201d\u2018\u2019\u00ab\u00bb${}]"
                         r"|<[^<>]{0,100}>(?=[^<>]*?[^\W_][^<>]*<)|\\[a-zA-Z]{1,16}|[%s])*" % PICTOGRAPHS)


def value_start(s: str) -> int:
    """Where the value of a verdict ``s`` (a sealed line's rest, a grade element's text) begins, past what only
    leads or styles it (``✅ PASS``, ``<b>1</b>``, ``$\\boxed{1}$``): the expected value is weighed there."""
    return _VALUE_LEAD.match(s).end()   # type: ignore[union-attr]


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
#: what a judge may write between a seal's digits: those marks, a space or tab (``0123 4567 89ab cdef``), a hyphen
#: (``0123-4567-89ab-cdef``) or a line break and an indent (a seal wrapped across lines), marks again
_SPLIT = _SPLIT_MARKS + "(?:(?:[ \t-]|\r?\n[ \t]{0,8})" + _SPLIT_MARKS + ")?"
#: ASCII's capitals as small letters, and every byte of a character past ASCII, every space and every hyphen deleted
#: (``bytes.translate``'s table and delete set: one pass in C that joins a seal across its marks and spaces)
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_JOINED = bytes(range(128, 256)) + b" \t\r\n-"


@functools.lru_cache(maxsize=16)
def _spelled(seal: str) -> "re.Pattern[str]":
    """The seal in any case, with ``_SPLIT`` between its digits, maybe written as a hex number (``0x``)."""
    return re.compile("(?:0[xX])?" + _SPLIT.join(f"[{ch}{ch.upper()}]" if ch.isalpha() else ch for ch in seal))


def as_seal(text: str, seal: str) -> str:
    """``text`` with the ``seal`` (lower-case hex) written in capitals, in mixed case, with zero-width characters,
    spaces, hyphens or a line break inside it, or after ``0x``, written as the seal, a zero-width space after it for
    each character taken out (every offset holds; a line break inside it is gone, so its line is one). Looked for in
    the text's UTF-8 with ASCII letters in lower case and every space, hyphen and character past ASCII taken out (a
    pass in C),
    then, only where that holds more seals than the text as written, or one after ``0x`` (a policy cannot make it:
    it never knows the seal), with a pattern of the seal's spellings."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:   # a lone surrogate: the error handler's path, ten times slower
        raw = text.encode("utf-8", "surrogatepass")
    sealed, joined = seal.encode("ascii"), raw.translate(_LOWER, _JOINED)
    if joined.count(sealed) == raw.count(sealed) and b"0x" + sealed not in joined:
        return text   # the pattern reads only what stands between digits, or a ``0x`` before them
    return _spelled(seal).sub(lambda m: seal + "\u200b" * (len(m.group()) - len(seal)), text)


#: fullwidth ASCII forms (U+FF01-FF5E) and the ideographic space as ASCII (a judge writing Japanese text writes them)
FULLWIDTH_ASCII = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}
_HEX = b"0123456789abcdef"
#: bytes that are no lower-case hex digit, taken out
_NOT_HEX = bytes(b for b in range(256) if b not in _HEX and not 0x41 <= b <= 0x46)


#: what stands right before a seal that binds no verdict of its own: a key-value ``seal_end`` (a table's, a line's), the
#: seal instruction's own words echoed (``the code <seal>``, ``the value "<seal>"``)
_UNBINDING = re.compile(r'(?:seal_end\W{0,8}|the code |the value ")$')


def _unbinding(text: str, at: int) -> bool:
    """Whether the seal at ``at`` binds no verdict of its own (``_UNBINDING``)."""
    return _UNBINDING.search(text[max(0, at - 24):at].casefold()) is not None


def seal_after(text: str, seal: str, ats: "Sequence[int]", taken: "Sequence[bool]") -> bool:
    """Whether a seal stands after the last verdict read (``taken``: whether the seal at each of ``ats`` bound one):
    written as the seal, passed over, or in any other spelling (its hex digits with anything else between them taken
    out, fullwidth, in capitals) after the last seal accounted for. After a draft the judge quoted, such a seal may
    bind its own verdict in a form not read. A policy never knows the seal; 16 digits come in order by chance once in
    2**64."""
    read = used = loose = 0
    for at, took in zip(ats, taken):
        if took:
            read = used = at + len(seal)
        elif _unbinding(text, at):
            used = at + len(seal)
        else:
            loose = at + len(seal)
    if loose > read:
        return True
    tail = text[used:]
    if "\uff01" <= max(tail, default=" "):
        tail = tail.translate(FULLWIDTH_ASCII)
    return seal.encode("ascii") in tail.encode("ascii", "ignore").translate(_LOWER, _NOT_HEX)


#: what ends a sealed line: a line break, or another line boundary a judge may write (``str.splitlines``')
LINE_END = re.compile("[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def line_stop(text: str, at: int, end: int) -> int:
    """Where the line holding ``at`` ends (``LINE_END``) before ``end``, else ``end``."""
    m = LINE_END.search(text, at, end)
    return end if m is None else m.start()


#: the most rows looked at around a sealed table row (for the header above it, a key-value table's rows), and the
#: most characters of each
_ROWS_MAX, _ROW_MAX = 16, 256
#: what may stand around the seal alone in its cell
EDGE = EMPHASIS + ZERO_WIDTH
_NO_ROW = (-1, -1, "")


#: a line's key and its colon, the key one word (``Verdict: FAIL``, ``- **Seal:** <seal>``, a bullet maybe before it)
_LINE_KEY = re.compile(r"[ \t]{0,8}(?:[-+*][ \t]{1,4})?[*_`]{0,4}([^\W\d]\w{0,31})[*_`]{0,4}[ \t]{0,4}:")


def _cells(text: str, start: int, end: int, lines: bool = False) -> "list[tuple[int, str]]":
    """The first two cells of the markdown table row from ``start`` to ``end`` with their offsets, where it has two
    (``| a | b |``, its last border maybe left out); else none. ``lines``: a ``_LINE_KEY`` line's key and the rest."""
    if lines:
        m = _LINE_KEY.match(text, start, end)
        return [] if m is None or "|" in text[start:end] else [(m.start(1), m.group(1)), (m.end(), text[m.end():end])]
    parts = text[start:end].split("|")
    if len(parts) not in (3, 4) or parts[0].strip(EDGE):
        return []
    first = start + len(parts[0]) + 1
    return [(first, parts[1]), (first + len(parts[1]) + 1, parts[2])]


def _rows(text: str, start: int, end: int, up: bool, lines: bool = False) -> "Iterator[tuple[int, int]]":
    """Where the rows of the markdown table above the row from ``start`` to ``end`` (``up``, nearest first) or below
    it start and end: ``_ROWS_MAX`` at most, ``_ROW_MAX`` characters of each (a bounded walk, row by row); ``lines``:
    the ``_LINE_KEY`` lines around the line."""
    for _ in range(_ROWS_MAX):
        if up:
            end, start = start - 1, text.rfind("\n", 0, max(0, start - 1)) + 1
        else:   # the next line, its end found in C (a ``\r`` before it stands outside its cells)
            end += text.startswith("\r\n", end)
            if text[end:end + 1] != "\n":
                return
            start, end = end + 1, text.find("\n", end + 1)
            end = len(text) if end < 0 else end
        row = text[start:min(end, start + _ROW_MAX)]
        if end <= 0 or start > len(text) or not (_LINE_KEY.match(row) if lines else row.lstrip(EMPHASIS)[:1] == "|"):
            return
        yield start, min(end, start + _ROW_MAX)


def _key(text: str, row: "tuple[int, int]", lines: bool) -> str:
    """A row's first cell, case folded (a key-value table's key)."""
    cells = _cells(text, *row, lines)
    return unwrap(cells[0][1]).casefold() if cells else ""


def _key_value(text: str, start: int, end: int, lines: bool = False) -> "tuple[int, int, str]":
    """A key-value table's row from ``start`` to ``end`` naming the seal: where it starts, and where the verdict's cell
    of the row right below or right above starts and what it holds, where that row is its table's one verdict row;
    else ``_NO_ROW``. ``lines``: key-value lines (``Seal: <seal>`` / ``Verdict: FAIL``), read as such a table's rows."""
    below, above = [*_rows(text, start, end, False, lines)], [*_rows(text, start, end, True, lines)]
    keys = [_key(text, row, lines) for row in (*below, *above)]
    if keys.count("verdict") != 1:
        return _NO_ROW
    row = below[0] if below and keys[0] == "verdict" else above[0] if above and keys[len(below)] == "verdict" else None
    cells = _cells(text, *row, lines) if row is not None else []
    return (start, *cells[1]) if cells else _NO_ROW


def _line_key_value(text: str, start: int, end: int, at: int, width: int) -> "tuple[int, int, str]":
    """``_key_value`` of the line from ``start`` to ``end`` where it is ``seal: <seal>`` (or ``code:``), the seal at
    ``at`` alone after the colon; else ``_NO_ROW``."""
    cells = _cells(text, start, end, True)
    if not cells or unwrap(cells[0][1]).casefold() not in ("seal", "code") or text[cells[1][0]:at].strip(EDGE) \
            or text[at + width:end].strip(EDGE):
        return _NO_ROW
    return _key_value(text, start, end, True)


def sealed_row(text: str, at: int, width: int) -> "tuple[int, int, str]":
    """Where the row of a markdown table starts whose first or last of two cells is the seal at ``at`` alone, and where
    its verdict's cell starts and what it holds (-1 and "" where the verdict follows the seal); ``_NO_ROW`` where it is
    no such row. A seal first (``| <seal> | FAIL |``) or after its verdict (``| FAIL | <seal> |``) needs one of the
    rows above to name the verdict (``| Code | Verdict |``). A seal after a key naming it (``| seal | <seal> |``) needs
    the row below to be its table's one verdict row (``| verdict | FAIL |``): a row of the policy's text in the table
    would make two; or the row right above it, so (``| verdict | FAIL |`` / ``| seal | <seal> |``). A long row of the
    policy's text between hides none of them."""
    if text[at - 1:at] in ('"', "'"):   # a quoted seal (a JSON verdict's) is alone in no cell: nothing to look for
        return _NO_ROW
    end = line_stop(text, at, len(text))
    start = text.rfind("\n", max(0, at - _ROW_MAX), at) + 1
    cells = _cells(text, start, end) if start or at <= _ROW_MAX else []
    if not cells:   # a colon right before the seal (no JSON string's quote): maybe a ``seal: <seal>`` line
        colon = (start or at <= _ROW_MAX) and text[max(start, at - 16):at].rstrip(EDGE)[-1:] == ":"
        return _line_key_value(text, start, end, at, width) if colon else _NO_ROW
    (first, key), (second, _) = cells
    after = text[at + width:end].strip(EDGE)
    if at < second:   # the first cell: the verdict after it
        alone, verdict = not text[first:at].strip(EDGE) and after[:1] == "|", (-1, "")
    else:
        alone, verdict = not text[second:at].strip(EDGE) and after in ("", "|"), (first, key)
        key = unwrap(key).casefold()
        if alone and key in ("seal", "code"):
            return _key_value(text, start, end)
        alone = alone and key not in ("verdict", "seal_end")   # a key-value table's own rows
    if alone and any("verdict" in row.casefold() and any(unwrap(c).casefold() == "verdict" for c in row.split("|"))
                     for row in (text[a:b] for a, b in _rows(text, start, end, True))):
        return (start, *verdict)
    return _NO_ROW


#: policy texts whose pasted copies are looked for beside a seal (``pasted``), and the shortest one looked for
_MAX_TEXTS, _MIN_COPY = 32, 8

def pasted(text: str, at: int, decision: Any, policy_texts: Sequence[str], copies: list) -> bool:
    """Whether the verdict of the seal at ``at`` is read off its line (a key-value table's row beside it, a verdict
    below an empty sealed line), where nothing but its place binds it, and its value lies in a verbatim copy of one of
    ``policy_texts``: the judge pasted the policy's text beside its seal (no verdict of its own). A pasted copy cut
    short, or decoded, is not found (docs/attacks.md, hunt 37). ``copies``: the copies, found once per reply."""
    at_value = getattr(decision, "value_at", -1) if decision.ok else -1
    if at_value >= 0 and not text.rfind("\n", 0, at) < at_value <= line_stop(text, at, len(text)):
        if not copies:
            copies.append(policy_copies(text, policy_texts[:_MAX_TEXTS], _MIN_COPY))
        return inside_copy(copies[0], at_value, at_value + 1)
    return False


#: JSON's whitespace
_JSON_WS = re.compile(r"[ \t\r\n]*")
#: from a closing seal's quote to its object's end: JSON's whitespace, a comma, comments holding no quote or brace
#: (``"<seal>",}``, ``"<seal>" // final`` / ``}``, ``"<seal>"  # done`` / ``}``: nothing the policy writes stands there)
_GAP = r'(?:[ \t\r\n]++|//[^\n"{}]*+|#[^\n"{}]*+|/\*(?:[^"{}*]|\*(?!/))*+\*/)*+'
_AFTER_SEAL = re.compile(r'"(%s,?%s)\}' % (_GAP, _GAP))
#: a JSON string, a comment to the line's end, a closed comment, an unclosed one
_JSON_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|/\*', re.DOTALL)
#: a Python dict's names as JSON's (each a fixed replacement: no call per match)
_PY_NAMES = [(name, re.compile(rf"\b{name}\b"), json) for name, json in (("True", "true"), ("False", "false"),
                                                                         ("None", "null"))]
#: stand-ins for ``\\\\``, ``\\'``, ``\\"`` and between the parts outside strings while the quotes change (control
#: characters, so an ASCII text stays one byte a character)
_PY_MARKS = "\x00\x01\x02\x03"
#: a sealed object's closing seal field in single quotes (``'seal_end': '``), before its seal
_PY_CLOSING = re.compile(r"'seal_end'[ \t\r\n]*:[ \t\r\n]*'\Z")


def _json_of_dict(text: str, start: int, seal: str) -> "str | None":
    """``text`` with the object at ``start`` written in single quotes, to its closing seal, turned into JSON: each
    string in single quotes in double ones (``\\'`` as ``'``, ``"`` as ``\\"``), Python's ``True``, ``False`` and
    ``None`` outside strings as JSON's; None where it has no closing seal, or a string holds a
    line break or is in double quotes (policy text quoted by the judge could open one that hides the judge's fields up
    to a quote of its own: one string grammar). Strings side by side (``'a' 'b'``, a triple quote) are no JSON:
    Python's reading and JSON's are the same. Each step is a pass in C, however many strings the policy's text makes."""
    at = text.find(seal, start) + len(seal)
    while (at := text.find(seal, at)) >= 0 and not _PY_CLOSING.search(text, max(start, at - 64), at):
        at += len(seal)   # the seal in a string (the judge quoting its line): not the closing one
    end = text.find("'", at + len(seal)) + 1 if at >= 0 else 0   # past zero-width spaces ``as_seal`` put after it
    region = text[start:end]
    if not end or text[at + len(seal):end - 1].strip("\u200b") or any(mark in region for mark in _PY_MARKS):
        return None
    parts = region.replace("\\\\", "\x00").replace("\\'", "\x01").replace('\\"', "\x02").split("'")
    outside = "\x03".join(parts[0::2])
    if len(parts) % 2 == 0 or '"' in outside or "\n" in "".join(parts[1::2]):
        return None
    for name, pattern, json in _PY_NAMES:
        outside = pattern.sub(json, outside) if name in outside else outside
    parts[0::2] = outside.split("\x03")
    out = "'".join(parts).replace('"', '\\"').replace("'", '"')
    if "\\" in region:
        out = out.replace("\x00", "\\\\").replace("\x01", "'").replace("\x02", '\\"')
    return text[:start] + out + text[end:]


def relaxed_object(text: str, start: int, seal: str, end_field: str) -> "str | None":
    """``text`` with what json5-ish judges write in the sealed object at ``start`` blanked (the same offsets): before
    its closing ``end_field``, comments that hold no quote (``// the code``, ``/* mine */``; one holding a quote may be
    policy text closing a string to hide the judge's own fields, so the object stays broken); after the closing seal, a
    comma and comments (``"<seal>", // final`` / ``}``). An object opened in single quotes, a Python dict, is first
    written as JSON (``_json_of_dict``: the offsets after it move). None where there is nothing to change."""
    written = text
    if text[_JSON_WS.match(text, start + 1).end():][:1] == "'":
        text = _json_of_dict(text, start, seal)
        if text is None:
            return None
    key = text.find(f'"{end_field}"', start)
    if key < 0:
        return None
    parts, at = [], start
    for m in _JSON_COMMENT.finditer(text, start) if text.find("/", start, key) >= 0 else ():
        if m.start() >= key:
            break
        if m.group()[0] == "/":
            if '"' in m.group() or m.group() == "/*":
                return None
            parts += [text[at:m.start()], " " * len(m.group())]
            at = m.end()
    out = text[:start] + "".join(parts) + text[at:] if parts else text
    i = _JSON_WS.match(out, key + len(end_field) + 2).end()
    i = _JSON_WS.match(out, i + 1).end() if out[i:i + 1] == ":" else -1
    m = _AFTER_SEAL.match(out, i + len(seal) + 1) if i >= 0 and out[i:i + len(seal) + 2] == f'"{seal}"' else None
    if m is not None and m.group(1).strip(" \t\r\n"):
        out = out[:m.start(1)] + re.sub(r"[^\n]", " ", m.group(1)) + out[m.end(1):]
    return None if out is written else out
