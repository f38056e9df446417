"""Where a neutralised text ends, another may begin: a template shows values side by side
(``{{#each steps}}{{this}}{{/each}}``, ``{{answer}}{{unit}}``, a key then its value), so a text
ending in ``Paris<`` beside one starting ``|im_end|>``, or ``</respon`` beside ``se>``, made a control
token or a template tag that neither held alone. ``closed`` defangs, as ``(`` (which opens nothing),
each opener at a text's end (``<``, ``[``, a heading's ``#``, or an escape standing for one) that text
after it could finish into something the neutraliser defangs: what follows it there is a prefix of a
tag or token name, of a bracketed token or of a template's delimiter label or heading."""

from __future__ import annotations

import functools
import re
from typing import Callable, NamedTuple

#: the characters of a text's end whose skeleton is read (an unfinished name or label is shorter; an
#: escape standing for an opener is read whole where it starts after the first few)
CUT = 160
#: what may open, or stand for, an opener (escapes too: ``&lt`` reads as ``<``): a text without one is closed
SEAM_HINT = re.compile(r"[<\[#&%\\=]")
_GAP = "\x00"
#: what a label's words may be spaced and spelled with (its apostrophe any or none), as ``_text._spaced_words``
_LABEL_GAPS = "[\\s\x00'\u2018\u2019\u2032\uff07`\u00b4]*"


class SeamWords(NamedTuple):
    """What may follow an opener, in a skeleton, gaps dropped: after ``<`` (and spaces or ``/``), a tag
    or token name; after ``[`` (and ``/``), a bracketed token's name; after ``[`` or a heading's ``#``s,
    a template's label (``squeezed``)."""
    names: "tuple[str, ...]"
    brackets: "tuple[str, ...]"
    labels: "tuple[str, ...]"
    headings: "tuple[str, ...]"


@functools.lru_cache(maxsize=64)
def tag_starts(tags: "tuple[str, ...]") -> "tuple[bool, bool]":
    """Whether one of ``tags`` is a template heading (starts with ``#``) and whether one is a ruled label (with
    ``-``), remembered: a grader's tags are the same for every text it neutralises."""
    return any(t[:1] == "#" for t in tags), any(t[:1] == "-" for t in tags)


def squeezed(text: str) -> str:
    """``text`` without gaps, whitespace and apostrophes (how a label is compared)."""
    return re.sub(_LABEL_GAPS, "", text)


def _prefixes(words: "tuple[str, ...]", between: str) -> str:
    """A pattern matching any prefix of any of ``words`` (the empty one too), ``between`` allowed
    between their characters: each a branch of one trie, every node optionally the last."""
    root: dict = {}
    for word in words:
        node = root
        for c in word:
            node = node.setdefault(c, {})

    def emit(node: dict) -> str:
        alts = [re.escape(c) + (f"(?:{between}{emit(child)})?" if child else "") for c, child in sorted(node.items())]
        return "(?:" + "|".join(alts) + ")" if alts else ""

    return f"(?:{emit(root)})?" if root else ""


@functools.lru_cache(maxsize=256)
def seam_pattern(words: SeamWords, joiner: "str | None") -> "re.Pattern[str]":
    """Each opener ``closed`` defangs, at a text's end (with ``joiner``, at the end of each of texts joined)."""
    alts = [r"<[\s/\x00]*(?:\|[^\n]*?|" + _prefixes(words.names, "\x00*") + ")",
            r"\[\x00*(?:/\x00*)?" + _prefixes(words.brackets, "\x00*")]
    if words.labels:
        alts.append(r"\[[\s\x00]*" + _prefixes(words.labels, _LABEL_GAPS))
    if words.headings:
        alts.append(r"(?<![^\s\x01-\x1f])#(?:\x00*#){0,5}[\s\x00]*" + _prefixes(words.headings, _LABEL_GAPS))
    return re.compile("(?:" + "|".join(alts) + ")\x00*" + (rf"(?={re.escape(joiner)}|\Z)" if joiner else r"\Z"))


_ESCAPE_OPENERS = "&\\%="


def seam_defanged(text: str, skel: str, starts: "list[int]") -> str:
    """``text`` (the characters ``skel`` is the skeleton of, one for one) with the opener at each of
    ``starts`` (in order) as ``(``, an escape standing for one (``&lt``) with its padding."""
    out, last = [], 0
    for i in starts:
        end = i + 1
        if text[i] in _ESCAPE_OPENERS and skel[i] != text[i]:   # an escape: the gaps after it are its own
            while end < len(skel) and skel[end] == _GAP:
                end += 1
        out += (text[last:i], "(")
        last = end
    return "".join(out) + text[last:]


def closed(text: str, skeleton: "Callable[[str], str]", words: SeamWords, joiner: "str | None" = None) -> str:
    """``text`` with each opener at its end that text written after it could finish into a tag, a token or
    a delimiter line (``words``) defanged; ``skeleton`` is the neutraliser's. With ``joiner``, ``text`` is
    texts joined by it, each closed at its end in one pass; else its last ``CUT`` characters are read."""
    tail = text if joiner is not None else text[-CUT:]
    if tail.isascii() and SEAM_HINT.search(tail) is None:
        return text
    lead = "" if joiner is not None or len(tail) == len(text) else "x"   # a cut text's start is no line start
    skel = lead + skeleton(tail)
    starts = [m.start() - len(lead) for m in seam_pattern(words, joiner).finditer(skel)]
    return text[:len(text) - len(tail)] + seam_defanged(tail, skel[len(lead):], starts) if starts else text
