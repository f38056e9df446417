"""Data written as markup or as a table (hunt 33), read as ``_guards`` reads a JSON document written as a plain
answer: an XML document's texts and attribute values (``<answer></answer><score>10</score>``), a Markdown table's or
a CSV's cells under its header (``| Answer | Score |`` over ``| | 10 |``, ``answer,score`` over ``,10``). Each value
is a text (an empty element or cell an empty one) or a number or boolean; headers and element names are keys, no
text. A text that is not such a document from end to end is none. One tokenising pass, linear; no entity of a
document type is expanded (a text holding one is no document)."""

from __future__ import annotations

import re

from ._encoded import html_unescaped
from ._markup import _VOID

#: a value that is a number or a boolean (no text): a table's or an element's
_NUMBER = re.compile(r"[-+]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?|true|false|True|False|TRUE|FALSE")
_XML_TOKEN = re.compile(r"<(/?)([A-Za-z_][\w:.-]{0,63})((?:\s[^<>]{0,1024}?)?)(/?)>|<!\[CDATA\[(.*?)\]\]>"
                        r"|<\?[^<>]{0,256}\?>|<!--.*?-->|([^<]+)", re.S)
_ATTRIBUTE = re.compile(r"=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'=<>`]+))")


def _add(value: str, strings: "list[str]") -> bool:
    """``value`` (stripped) added to ``strings`` where it is text; True where it is a number or a boolean."""
    value = value.strip()
    if value and _NUMBER.fullmatch(value) is not None:
        return True
    strings.append(value)
    return False


def xml_strings(text: str) -> "tuple[list[str], bool] | None":
    """The texts of ``text`` read as XML elements from end to end (each empty element's, each leaf's text,
    mixed text, attribute values), and whether a number or boolean stands among them; None where it is no
    such document (a tag left open or closed out of turn, text outside every element). Token by token."""
    strings: "list[str]" = []
    stack: "list[list]" = []   # [name, has a child, its texts]
    other, pos = False, 0
    while pos < len(text):
        m = _XML_TOKEN.match(text, pos)
        if m is None:
            return None
        pos = m.end()
        slash, name, attributes, closed, cdata, words = m.groups()
        if words is not None or cdata is not None:
            if not stack:
                if words is not None and not words.isspace():
                    return None
                continue
            stack[-1][2].append(html_unescaped(words) if words is not None else cdata)
        elif name is None:   # a declaration, an instruction or a comment
            continue
        elif slash:
            if not stack or stack[-1][0] != name.casefold():
                return None
            other |= _close(stack.pop(), strings)
        else:
            other |= _open(name.casefold(), attributes, bool(closed), stack, strings)
    return (strings, other) if not stack and (strings or other) else None


def _open(name: str, attributes: str, closed: bool, stack: "list[list]", strings: "list[str]") -> bool:
    """An element of ``name`` opened (onto ``stack``, or ``closed`` at once: an empty one, ``<answer/>``, as ""), its
    attribute values added to ``strings``; True where one is a number or a boolean."""
    if stack:
        stack[-1][1] = True
    other = any([_add(html_unescaped("".join(quoted)), strings) for quoted in _ATTRIBUTE.findall(attributes)])
    if not closed:
        stack.append([name, False, []])
    elif not _ATTRIBUTE.search(attributes) and name not in _VOID:
        strings.append("")
    return other


def _close(element: list, strings: "list[str]") -> bool:
    """``element``'s texts added to ``strings`` as it closes (a leaf's as one value, empty or not; the mixed texts
    of one with children where not blank); True where one is a number or a boolean."""
    _, parent, texts = element
    if not parent:
        return _add("".join(texts), strings)
    return any([_add(t, strings) for t in texts if not t.isspace()])


#: a Markdown table's delimiter row (``|---|:---:|``)
_DELIMITER = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")
_CSV_CELL = {sep: re.compile(rf'[ {pad}]*(?:"(?:[^"]|"")*+"|[^"{sep}\n]*)[ {pad}]*')
             for sep, pad in ((",", "\t"), (";", "\t"), ("\t", ""))}


def _cells(line: str, sep: str) -> "list[str] | None":
    """``line``'s cells between ``sep``-s (a CSV's quotes undone), None where a quote is left open."""
    if '"' not in line or sep == "|":   # no quote: a split, in C
        return [c.strip() for c in line.split(sep)]
    cells, pos, cell = [], 0, _CSV_CELL[sep]
    while True:
        m = cell.match(line, pos)
        value = m.group().strip()
        cells.append(value[1:-1].replace('""', '"') if value[:1] == '"' and len(value) > 1 else value)
        pos = m.end()
        if pos == len(line):
            return cells
        if line[pos] != sep:
            return None
        pos += 1


def _markdown_rows(lines: "list[str]") -> "list[list[str]] | None":
    """``lines`` (a header, then a delimiter row) as a Markdown table's rows, its delimiter row taken out: as many
    cells in the delimiter row as in the header, and a row under them (a header alone is a template's), else None."""
    rows = [_cells(line.strip().strip("|"), "|") for line in lines]
    same = len(rows[0]) == len(rows[1]) and ("|" in lines[1] or lines[0].lstrip()[:1] == "|")
    return [rows[0], *rows[2:]] if same and len(rows) > 2 and all("|" in line for line in lines[2:]) else None


def _rows(lines: "list[str]") -> "list[list[str]] | None":
    """``lines`` as a Markdown table's rows (its delimiter row second, taken out) or a CSV's (``,``, ``;`` or a tab
    between cells, as many on every line), or None."""
    if len(lines) >= 2 and "|" in lines[0] and _DELIMITER.fullmatch(lines[1]) is not None and "-" in lines[1]:
        return _markdown_rows(lines)
    sep = next((s for s in (",", ";", "\t") if s in lines[0]), None)
    if sep is None or len(lines) < 2:
        return None
    rows = [_cells(lines[0], sep)]
    for line in lines[1:]:   # to the first line of another count (prose ends there, at its second line mostly)
        row = _cells(line, sep)
        if row is None or rows[0] is None or len(row) != len(rows[0]):
            return None
        rows.append(row)
    return rows



def table_strings(text: str) -> "tuple[list[str], bool] | None":
    """The texts of ``text`` read as a Markdown table or a CSV from end to end: each cell under the header (a header
    of no blank or numeric cell; a CSV without one is all rows), empty or not, and whether a number or boolean stands
    among them. None where it is no table, or a template's shape: a Markdown table of its header alone, or any table
whose rows under its header are blank (its header is what it shows, read as text by the screen)."""
    rows = _rows([line for line in text.strip().splitlines() if line.strip()])
    if rows is None:
        return None
    header = rows[0]
    if "|" not in text and not all(c and _NUMBER.fullmatch(c) is None for c in header):
        header = []   # a CSV of no header: every row is data
    strings: "list[str]" = []
    other = False
    for row in rows[1:] if header else rows:
        for cell in row:
            other |= _add(cell, strings)
    # rows of blank cells alone under a header are a template's (``Design a template table for ...``): its header
    # is what it shows, read as text by the screen
    return (strings, other) if other or any(strings) else None
