"""Data written in a notation other than JSON (a Python literal, JSON5, YAML or TOML ``key: value`` /
``key = value`` lines), read as ``_guards`` reads a JSON document written as a plain answer: its strings
(and comments) are text, a null or an empty container an empty text, keys no text, numbers and booleans
a value. ``{'answer': None, 'score': 10}`` or ``answer: ''`` over ``score: 10`` shows a judge no answer as
``{"answer": "", "score": 10}`` does not. One tokenising pass, linear; a text the notation does not
cover end to end is no document."""

from __future__ import annotations

import re
from typing import Callable

from ..readouts._text import letters
from ._markup import _unmarked

#: the longest text read so (a token a Python step: 64 KiB is a few ms); a longer one is read as JSON only
NOTATION_MAX = 65_536

_STR = r'"(?:[^"\\\n]|\\.)*+"|\'(?:[^\'\\\n]|\\.)*+\''
_TOKEN = re.compile(rf"""
   (?P<skip>[\s,;]+)
  |(?P<comment>(?:\#|//)[^\n]*)
  |(?P<section>(?<![^\s,;])\[\[?[^\W\d][\w.\- ]{{0,63}}\]\]?(?=[ \t]*(?:\n|\Z)))
  |(?P<key>(?:{_STR}|[^\W\d][\w$.\- ]{{0,63}}?)[ \t]*[:=](?![:=/]))
  |(?P<text>{_STR})
  |(?P<blank>(?:null|None|nil|undefined|~)(?![\w$])|\{{\s*\}}|\[\s*\]|\(\s*\))
  |(?P<value>(?:true|false|True|False|NaN|nan|[-+]?(?:Infinity|inf))(?![\w$])
     |[-+]?(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w$]))
  |(?P<open>[\[{{(])
  |(?P<close>[\]}})])
""", re.X)


def notation_strings(text: str) -> "tuple[list[str], bool] | None":
    """The texts of ``text`` read as data (strings and comments as written, a key with no value, a null
    or an empty container as ""), and whether a number or a boolean stands among its values; None where
    it is no data document: a token the notation does not hold, or neither bracketed nor two keys."""
    if len(text) > NOTATION_MAX:
        return None
    strings: "list[str]" = []
    other = pending = False
    kinds: "list[str]" = []
    pos = 0
    while pos < len(text):   # token by token from the start: the first that is none ends the reading
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return None
        pos, kind = m.end(), m.lastgroup
        if kind == "skip":
            continue
        kinds.append(kind)
        if kind in ("key", "close", "section") and pending:   # hunt 33: an INI or TOML section's header, no text
            strings.append("")   # a key with no value: an empty text
        if kind == "comment":
            strings.append(m.group()[1 if m.group()[0] == "#" else 2:])
        elif kind == "text":
            strings.append(m.group()[1:-1])
        elif kind == "blank":
            strings.append("")
        elif kind == "value":
            other = True
        pending = kind == "key"
    if not kinds:
        return None
    if pending:
        strings.append("")
    keys = kinds.count("key") + ("section" in kinds)   # hunt 33: a section and a key are a document
    return (strings, other) if keys >= 2 or (kinds[0] == "open" and kinds[-1] == "close") else None


#: a line opening a document of ``key: value`` or ``key = value`` lines (YAML, TOML), or an INI or TOML section's
#: header line before one (hunt 33)
_KEY_LINE = re.compile(r"\s*(?:\[\[?[^\W\d][\w.\- ]{0,63}\]\]?[ \t]*\n\s*)?(?:[\"'][^\n]{0,64}?[\"']|[^\W\d][\w$.\- ]{0,63}?)[ \t]*[:=](?![:=/])")
#: a quote's marker at a line's start (Markdown's ``> ``, an e-mail's ``>``)
_QUOTE_MARK = re.compile(r"(?m)^[ \t]*>[ \t]?")
#: a notation's name, at the start or end of a document's label's letters (``json``, ``Answer (JSON):``)
_NAMED = re.compile(r"^(?:json[5c]?|yaml|yml|toml|python|py|javascript|js)|(?:json[5c]?|yaml|yml|toml|python|py|js)$")
#: hunt 30: code that only names the document it holds (``const r = {...};``, ``return [...]``, ``callback({...})``,
#: ``JSON.stringify({...})``): a keyword, a name (dotted), then ``=`` or a call's ``(``; closed by ``)`` and ``;``
_CODE_LABEL = re.compile(r"\s*(?:(?:const|let|var|return|export\s+default|yield|await)\s+)?"
                         r"(?:[A-Za-z_$][\w$]{0,63}(?:\.[A-Za-z_$][\w$]{0,63}){0,4}\s*(?::?=|\()\s*)?")
_CODE_TAIL = re.compile(r"\s*\)?\s*;?\s*")
#: an empty object or array: an answer in code (``d = {}``), not read as a document after code
_EMPTY = re.compile(r"[{\[]\s*[}\]]")


def _first_open(text: str) -> int:
    """The offset of ``text``'s first ``{`` or ``[`` (-1 where none stands): two ``str.find``-s at memchr's speed,
    the second only before the first's offset (a character class searched a character at a time cost two
    thirds of a short answer's ``document_body``)."""
    brace = text.find("{")
    bracket = text.find("[", 0, brace if brace >= 0 else len(text))
    return bracket if bracket >= 0 else brace


def document_body(ends: str, label_free: "Callable[[str], bool]") -> "str | None":
    """The data document ``ends`` (a text, blank and invisible marks at its ends aside) may be, or None: a quote's
    markers set aside, bracketed or fenced from end to end; a bracketed span between a label and a tail whose letters
    (markup set aside, a notation's name too) ``label_free`` finds no content (``<pre>{...}</pre>``, ``json {...}``,
    ``Answer: [...]``), or code that only names it (``_CODE_LABEL``, ``_CODE_TAIL``; not an empty one); or (up to ``NOTATION_MAX`` characters) lines of which the first opens with a key. Linear."""
    if ends[:1] == ">":
        ends = _QUOTE_MARK.sub("", ends).strip()
    if ends[:1] in ("{", "[") and ends[-1:] in ("}", "]"):
        return ends
    if ends[:1] in ("`", "~") and ends[-1:] in ("`", "~"):
        fenced = _unmarked(ends, tags=False).strip()
        if fenced != ends:
            return fenced
    first, last = _first_open(ends), max(ends.rfind("}"), ends.rfind("]"))
    if first >= 0 and last > first:
        label, body, tail = ends[:first], ends[first:last + 1], ends[last + 1:]
        if (_CODE_LABEL.fullmatch(label) is not None and _CODE_TAIL.fullmatch(tail) is not None
                and _EMPTY.fullmatch(body) is None) or label_free(_NAMED.sub("", letters(_unmarked(label + "\n" + tail)),
                                                                         count=1)):
            return body
    if "\n" in ends and len(ends) <= NOTATION_MAX and _KEY_LINE.match(ends) is not None:
        return ends
    return ends if _may_be_table(ends) else None


def _may_be_table(ends: str) -> bool:
    """Hunt 33: whether ``ends`` may be an XML document, a Markdown table or a CSV (``_tables`` reads it as one
    where it is one)."""
    return len(ends) <= NOTATION_MAX and ((ends[:1] == "<" and ends[-1:] == ">") or (
        "\n" in ends.strip() and any(c in ends for c in "|,;\t")))
