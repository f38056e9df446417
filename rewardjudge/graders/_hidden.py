"""Text a reader never sees because of the element it stands in (hunts 28, 30 and 33), set aside with that element by
the content-free screen (``_markup._unmarked``): an element hidden by its attributes (``_HIDE``, ``_WHITE``), by a zero
size where what overflows is clipped or the element is hidden from screen readers too (``aria-hidden``), by a rule of
the text's own stylesheet (``<style>.x{display:none}</style><span class=x>``), or that no browser renders
(``<template>``, ``<noscript>``, ``<style>``, ``<script>``, ``<datalist>``); each to its own close, elements of its own
name inside it (``<div hidden><div>..</div>..</div>``) counted. One pass over the tags with a stack: linear."""

from __future__ import annotations

import re

#: an element hidden by its attributes (hunt 28): ``hidden``, ``display:none``, ``visibility:hidden``, a zero font
#: size or opacity, a screen reader's class, clipping or a place far off the page (hunt 30), or white or transparent
#: text where no background is set (``_WHITE``)
_HIDE = (r"\shidden[\s=/>]|display\s{0,8}:\s{0,8}none|visibility\s{0,8}:\s{0,8}(?:hidden|collapse)"
         r"|(?:f(?<![\w-]f)ont-size|o(?<![\w-]o)pacity)\s{0,8}:\s{0,8}(?:0(?:\.0{1,8})?|\.0{1,8})(?:[a-z%]{1,4})?"
         r"\s{0,8}[;\"'>]"
         # hunt 30: a screen reader's class (``sr-only``), clipped to nothing, moved far off the page; each led by a
         # character rare in attributes (``-``, ``(``), its name read behind it (written with no space or one)
         r"|-(?:(?:(?<=[^\w-]sr-)only|(?<=[^\w-]screen-)reader-text|(?<=[^\w-]visually-)hidden)(?![\w-])|(?:"
         + "|".join(f"(?<=[^\\w-]{p}{sp}-)" for p in ("left:", "top:", "text-indent:") for sp in ("", " ")) + r")\d{4})"
         r"|\((?:(?:" + "|".join(f"(?<=[^\\w-]clip:{sp}rect\\()" for sp in ("", " "))
         + r")\s{0,8}(?:0|1px)(?:\s{0,8}[\s,]\s{0,8}(?:0|1px)){3}\s{0,8}\)|(?:"
         + "|".join(f"(?<=clip-path:{sp}inset\\()" for sp in ("", " ")) + r")\s{0,8}(?:50|100)%)")
_WHITE = r"c(?<![\w-]c)olor\s{0,8}[:=]\s{0,8}[\"']?\s{0,8}(?:white|#fff(?:fff)?|transparent)(?![\w-])"

#: HTML's void elements (never closed): markup beside a tag that pairs
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})
#: a zero width or height, and what makes it hide: its overflow clipped, or the element hidden from screen readers
_ZERO_SIZE = re.compile(r"(?<![\w-])(?:max-)?(?:width|height)\s{0,8}:\s{0,8}0(?:\.0{1,8})?"
                        r"(?:px|em|rem|%|vw|vh)?(?![\w.])",
                        re.I)
_CLIPPED = re.compile(r"overflow\s{0,8}:\s{0,8}(?:hidden|clip)|aria-hidden\s{0,8}=\s{0,8}[\"']?true", re.I)
#: elements no browser renders (``<noscript>`` where scripts run), and never shown in a code fence's text (``_unmarked``
#: sets them aside only outside one: ``<style>`` in a fence is code shown)
_UNRENDERED = frozenset({"template", "noscript", "style", "script", "datalist"})
_HIDING = re.compile(f"(?:{_HIDE})", re.I)
_WHITE_TEXT = re.compile(f"(?:{_WHITE})", re.I)
#: a hint that an element may hide (one search of the text before the pass over its tags)
_HINT = re.compile(rf"<(?:template|noscript|style|script|datalist)[\s>]|<[A-Za-z][\w-]{{0,31}}(?=\s)[^<>]{{0,256}}?"
                   rf"(?:{_HIDE}|{_WHITE}|(?<![\w-])(?:max-)?(?:width|height)\s{{0,8}}:\s{{0,8}}0)", re.I)
_ANY_TAG = re.compile(r"<(/?)([A-Za-z][\w-]{0,31})((?:\s[^<>]{0,256}?)?)(/?)>")
#: a stylesheet's rule that hides (``_HIDING``): its selectors, then each selector's last part's class, id or name
_STYLE = re.compile(r"<style(?:\s[^<>]{0,256})?>([^<]{0,65536})</style\s{0,8}>", re.I)
_COMBINATOR = re.compile(r"[\s>+~]+")
_SUBJECT = re.compile(r"([.#]?)([A-Za-z_][\w-]{0,63})\s*$")
_CLASSES = re.compile(r"(?<![\w-])class\s{0,8}=\s{0,8}(?:\"([^\"]{0,256})\"|'([^']{0,256})'|([^\s\"'>]{1,256}))", re.I)
_ID = re.compile(r"(?<![\w-])id\s{0,8}=\s{0,8}[\"']?([^\s\"'>]{1,256})", re.I)


def _sheet(text: str) -> "set[str]":
    """The selectors (``.x``, ``#a``, ``span``) the stylesheets of ``text`` hide: each rule's selectors' last part."""
    hidden: "set[str]" = set()
    for sheet in set(_STYLE.findall(text)):   # each once: a text repeats its stylesheet
        for rule in sheet.split("}"):   # ``selectors{declarations``: a split, no pattern tried at each character
            selectors, _, declarations = rule.partition("{")
            if _HIDING.search(declarations + ";") is not None:
                hidden.update("".join(m.groups()).casefold() for s in selectors.split(",")
                              if (m := _SUBJECT.search(_COMBINATOR.split(s.strip())[-1].split(":")[0][-128:])))
    return hidden


def _hides(name: str, attributes: str, sheet: "set[str]", fenced: bool) -> bool:
    """Whether an element of ``name`` and ``attributes`` shows none of its text."""
    attributes += ">"
    if (name in _UNRENDERED and not fenced) or _HIDING.search(attributes) is not None:
        return True
    if _WHITE_TEXT.search(attributes) is not None and "background" not in attributes.casefold():
        return True
    if _ZERO_SIZE.search(attributes) is not None and _CLIPPED.search(attributes) is not None:
        return True
    if not sheet:
        return False
    if name in sheet or any(f"#{i.casefold()}" in sheet for i in _ID.findall(attributes)):
        return True
    return any(f".{c.casefold()}" in sheet for m in _CLASSES.findall(attributes) for c in "".join(m).split())


def may_hide(text: str) -> bool:
    """Whether an element of ``text`` may hide (``_HINT``): one search."""
    return _HINT.search(text) is not None


def hidden_out(text: str, fenced: bool = False) -> str:
    """``text`` with each element that hides (``_hides``) set aside as a space, with what it holds, to its own close
    (the elements of its name opened inside it closed first; one closed by an element around it closes there); one
    left open stays. ``fenced``: the text was in a code fence (its ``<style>`` is code shown, no stylesheet)."""
    if "<" not in text or not may_hide(text):
        return text
    sheet = set() if fenced else _sheet(text)
    stack: "list[tuple[str, int, bool]]" = []   # (name, start, whether it or one around it hides)
    opened: "dict[str, int]" = {}   # the elements of each name on the stack
    spans: "list[tuple[int, int]]" = []
    hides: "dict[tuple[str, str], bool]" = {}   # ``_hides`` of each tag, once: a text repeats its few tags
    for m in _ANY_TAG.finditer(text):
        slash, name, attributes, closed = m.groups()
        name = name.casefold()
        if not slash:
            if not closed and name not in _VOID:
                around = bool(stack) and stack[-1][2]
                if not around and (name, attributes) not in hides:
                    hides[name, attributes] = _hides(name, attributes, sheet, fenced)
                stack.append((name, m.start(), around or hides[name, attributes]))
                opened[name] = opened.get(name, 0) + 1
        elif opened.get(name):   # a close with no open of its name ends none
            _close(stack, opened, name, m, spans)
    return _spaced(text, spans)   # one left open stays (hunt 28: ``<span style="display:none">unclosed Paris``)


def _close(stack: "list[tuple[str, int, bool]]", opened: "dict[str, int]", name: str, m: "re.Match[str]",
           spans: "list[tuple[int, int]]") -> None:
    """The elements on ``stack`` closed by ``m`` (a close of ``name``): each that hides with none around it hiding
    is a span, to the close (an element closed by one around it: to where that one closes)."""
    while True:
        top, start, hides = stack.pop()
        opened[top] -= 1
        if hides and not (stack and stack[-1][2]):   # the outermost element that hides
            spans.append((start, m.end() if top == name else m.start()))
        if top == name:
            return


def _spaced(text: str, spans: "list[tuple[int, int]]") -> str:
    """``text`` with each of ``spans`` (in order, apart) set aside as a space."""
    if not spans:
        return text
    out, at = [], 0
    for start, end in spans:
        out.append(text[at:start])
        out.append(" ")
        at = end
    out.append(text[at:])
    return "".join(out)
