"""Where a neutralised text ends, another may begin: a template shows values side by side
(``{{#each steps}}{{this}}{{/each}}``, ``{{answer}}{{unit}}``, a key then its value), so a text
ending in ``Paris<`` beside one starting ``|im_end|>``, or ``</respon`` beside ``se>``, made a control
token or a template tag that neither held alone. ``seam_starts`` finds, in a text end's skeleton,
each opener (``<``, ``[``, a heading's ``#``) that text after it could finish into something the
neutraliser defangs; ``seam_defanged`` defangs it as ``(``, which opens nothing."""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

#: the characters of a text's end whose skeleton is read, and the last of them an opener is sought in
#: (an unfinished tag name, token or delimiter label is shorter; an escape standing for an opener is
#: read whole where it starts within the first ``CUT - TAIL``)
CUT = 160
TAIL = 96
_OPENERS = re.compile(r"[<\[#]")
#: what may open, or stand for, an opener (escapes too: ``&lt`` reads as ``<``): a text without one is closed
SEAM_HINT = re.compile(r"[<\[#&%\\=]")
_GAP = "\x00"


class SeamWords(NamedTuple):
    """What may follow an opener, in a skeleton, gaps dropped: after ``<`` (and spaces or ``/``), a tag
    or token name; after ``[`` (and ``/``), a bracketed token's name; after ``[`` or a heading's ``#``s,
    a template's label (``squeezed``)."""
    names: "tuple[str, ...]"
    brackets: "tuple[str, ...]"
    labels: "tuple[str, ...]"
    headings: "tuple[str, ...]"


def squeezed(text: str) -> str:
    """``text`` without gaps, whitespace and apostrophes (how a label is compared: its words may be
    spaced any way, its apostrophe any or none)."""
    return re.sub(r"[\s\x00'\u2018\u2019\u2032\uff07`\u00b4]", "", text)


def seam_starts(skel: str, words: SeamWords, whole: bool) -> "list[int]":
    """The offsets in ``skel`` (the skeleton of a text's last ``CUT`` characters; ``whole`` where that is
    the whole text) of each opener in its last ``TAIL`` whose rest, to the end, begins some name or label
    of ``words``: text written after it could finish a tag, a control token or a delimiter line."""
    starts = []
    for m in _OPENERS.finditer(skel, max(0, len(skel) - TAIL)):
        i, rest = m.start(), skel[m.start() + 1:].replace(_GAP, "")
        if m.group() == "<":
            name = rest.lstrip(" \t\n\r\f\v/")
            hit = name[:1] == "|" or any(w.startswith(name) for w in words.names)
        elif m.group() == "[":
            hit = any(w.startswith(rest.lstrip("/")) for w in words.brackets) \
                or any(w.startswith(squeezed(rest)) for w in words.labels)
        else:   # a heading: the first '#' of a run at a line's start, up to six
            before = skel[:i].replace(_GAP, "")
            led = before[-1:].isspace() or (before == "" and whole) or ("\x01" <= before[-1:] <= "\x1f")
            run = len(rest) - len(rest.lstrip("#"))
            hit = led and run < 6 and any(h.startswith(squeezed(rest[run:])) for h in words.headings)
        if hit:
            starts.append(i)
    return starts


_ESCAPE_OPENERS = "&\\%="


def seam_defanged(text: str, skel: str, starts: "list[int]") -> str:
    """``text`` (the characters ``skel`` is the skeleton of, one for one) with the opener at each of
    ``starts`` as ``(``, an escape standing for one (``&lt``) with its padding."""
    out = list(text)
    for i in reversed(starts):
        end = i + 1
        if out[i] in _ESCAPE_OPENERS and skel[i] != out[i]:   # an escape: the gaps after it are its own
            while end < len(skel) and skel[end] == _GAP:
                end += 1
        out[i:end] = ["("]
    return "".join(out)


def closed(text: str, skeleton: "Callable[[str], str]", words: SeamWords) -> str:
    """``text`` with each opener at its end that text written after it could finish into a tag, a token or
    a delimiter line (``words``) defanged; ``skeleton`` is the neutraliser's. A few characters read at most."""
    tail = text[-CUT:]
    if tail.isascii() and SEAM_HINT.search(tail) is None:
        return text
    skel = skeleton(tail)
    starts = seam_starts(skel, words, len(tail) == len(text))
    return text[:len(text) - len(tail)] + seam_defanged(tail, skel, starts) if starts else text
