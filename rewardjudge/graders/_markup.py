"""Markup that shows no text of its own, set aside before the content-free screen reads a text
(``_unmarked``): a code fence, tags that pair, other languages' markup (BBCode, terminal codes,
org-mode, XML declarations, RTF, LaTeX's style and structure commands), empty list items; and
``_trie``, one pattern for many words (the screen's master keys, LaTeX's command names)."""

from __future__ import annotations

import functools
import re
from typing import Iterable

from ..readouts._blocks import sub_blocks
from ._hidden import _HIDE, _VOID, _WHITE, hidden_out

# Markdown that is no answer by itself: a code fence and its language (three characters written out, not
# ``{3,}``: the engine then searches for them, where it tried a repeat at every character, 5x slower)
_MARKUP = re.compile(r"```+[^`\x00-\x1f]*|~~~+[^~\x00-\x1f]*")
# Markup of other languages that shows no text (hunt 21): a terminal's escape sequences (``\x1b[1m``, an
# OSC title), an org-mode block line and keyword (``#+BEGIN_SRC python``), an XML declaration or processing
# instruction, a document type and CDATA's brackets (``<?xml version="1.0"?>``, ``<![CDATA[]]>``)
_TERMINAL = re.compile(r"\x1b(?:\[[0-?]{0,32}[ -/]{0,8}[@-~]|\][^\x07\x1b\n]{0,256}(?:\x07|\x1b\\)?|[@-Z\\-_])")
_DECLARATION = re.compile(r"<\?[^<>]{0,256}\?>|<!doctype[^<>]{0,256}>|<!\[cdata\[|\]\]>", re.I)
# A list item with nothing after its marker (``1.``, ``b)``, ``iv.``, ``- [ ]``): markup where two or more stand
_EMPTY_ITEM = re.compile(r"(?m)^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)]|[A-Za-z][.)]|[ivxIVX]{1,6}[.)])[ \t]*(?:\[[ xX]?\][ \t]*)?$")
_items = _EMPTY_ITEM.search
# Text a reader never sees (hunt 27): an HTML comment; a Markdown comment, a link definition to ``#`` or ``<>`` with its
# text as the title (``[//]: # (Paris)``); LaTeX's ``\phantom`` (``_latex``)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_MD_COMMENT = re.compile(r"\[[^\]\n]{1,64}\]:[ \t]*(?:#|<>)(?:[ \t]+(?:\([^)\n]{0,4096}\)|\"[^\"\n]{0,4096}\""
                         r"|'[^'\n]{0,4096}'))?[ \t]*(?![^\n])")
# An element hidden by its attributes (hunt 28; ``_hidden._HIDE``, ``_hidden._WHITE``), with its text, to its close (a
# tag of another name inside, not one of its own: each character is read from one start at most; one of its own name
# inside, a stylesheet or an element never rendered: ``_hidden.hidden_out``)
# (one scan of the attributes for any of them, a look-behind only after a word's first letter: 54 -> 20 ms in 256 KiB)
_HIDDEN_TAG = re.compile(rf"<([A-Za-z][\w-]{{0,31}})(?=\s)(?=[^<>]{{0,256}}?(?:{_HIDE}|{_WHITE}))"
                         rf"(?:(?![^<>]{{0,256}}?background)|(?=[^<>]{{0,256}}?(?:{_HIDE})))[^<>]{{0,256}}>"
                         r"(?:[^<]|<(?!/?\1[\s/>])){0,4096}</\1\s{0,8}>", re.I)
# RTF's control words and the tables a document opens with (font names): in a text that opens as RTF
_RTF = re.compile(r"\{\\(?:\*\\)?(?:fonttbl|colortbl|stylesheet|info|generator)(?:[^{}]|\{[^{}]*\}){0,4096}\}"
                  r"|\\[a-z]{1,32}-?\d{0,10} ?")
# BBCode's tags (``[b]``, ``[/b]``, ``[url=...]``): markup where their name both opens and closes, as ``_TAG``
_BRACKET_TAG = re.compile(r"\[(/?)([A-Za-z][\w*]{0,31})(?:=[^\[\]\n]{0,256})?\]")
# A tag; the tags of a name both opened and closed in the text are markup too (``<think></think>``
# alone, ``<b>Answer</b>``, reached the judge); a lone one (``<br>``, ``</candidate>``) may be the answer,
# but where some tag pairs, a self-closed or void one is markup too (``<p></p><br/><hr>``)
_TAG = re.compile(r"<(/?)([A-Za-z_][\w:.-]{0,63})(?:\s[^<>]{0,256})?(/?)>")
#: a ``_TAG``'s name, after its slash if it closes: the same tags, no groups of the rest (87,000 tags: 17 -> 11 ms)
_TAG_NAME = re.compile(r"<(/?[A-Za-z_][\w:.-]{0,63})(?=(?:\s[^<>]{0,256})?/?>)")
#: the characters one ``_TAG`` search takes (``_unmarked``): 87,360 tags in one call held the GIL for 45 ms,
#: 21,840 (32 KiB) still 10-40
_TAG_SPAN = 8_192


#: LaTeX that shows no text of its own: font and style commands (``\\text{Thought process:}`` shows
#: ``Thought process:``), spacing (``$\\quad$``), sizing, an environment's frame; a command that
#: is a symbol (``\\pi``, ``\\infty``) may be the answer and stays (the pattern: ``_latex``)
_LATEX_COMMANDS = (
    "text", "textbf", "textit", "textrm", "texttt", "textsf", "textup", "textsc", "textsl", "textmd", "textnormal",
    "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "mathnormal", "emph", "underline", "bold", "boldsymbol", "bm",
    "mbox", "hbox", "fbox", "textstyle", "displaystyle", "scriptstyle", "quad", "qquad", "enspace", "thinspace",
    "left", "right", "big", "bigl", "bigr", "Big", "Bigl", "Bigr", "bigg", "biggl", "biggr", "Bigg", "Biggl", "Biggr",
    "newline", "linebreak", "noindent", "par", "hfill", "vfill", "medskip", "smallskip", "bigskip", "centering",
    "large", "Large", "LARGE", "huge", "Huge", "small", "footnotesize", "normalsize", "tiny", "bfseries", "itshape",
    "rmfamily", "ttfamily", "sffamily",
    # hunt 21: a document's structure (``\\section*{Solution}`` shows ``Solution``)
    "section", "subsection", "subsubsection", "paragraph", "subparagraph", "chapter", "part", "item",
    "maketitle", "tableofcontents")
#: a backslash before a letter (a command may start there: the pattern tried only where one stands)
_LATEX_HINT = re.compile(r"\\[A-Za-z]")


def _unmarked(text: str, tags: bool = True, joiner: str = "") -> str:
    """``text`` with its markup (``_MARKUP``, ``_org``'s lines, ``_LATEX_COMMANDS``; unless not ``tags``, a
    text's own: two or more ``_EMPTY_ITEM``-s, ``_TERMINAL`` sequences, ``_DECLARATION``-s and paired
    ``_TAG``-s and ``_BRACKET_TAG``-s) set aside as spaces. ``joiner``: ``text`` is texts joined by it (with
    ``tags`` False), each one's lines set aside as its own (a line starts after a ``joiner`` too, and ends at
    one); a text that opens as RTF is left to be read alone."""
    fenced = "```" in text or "~~~" in text   # a fence is three or more
    if fenced:
        text = _MARKUP.sub(" ", text)
    if "#" in text and "#+" in text:   # a character first: a two-character search costs 100x memchr's
        text = _org_out(text, joiner)
    if not joiner and text.lstrip().startswith("{\\rtf"):
        text = _RTF.sub(" ", text)
    if "\\" in text and _LATEX_HINT.search(text):
        text = sub_blocks(_latex(), " ", text)   # a block a call: 256 KiB of "\\n" held the GIL 20 ms
    return _own_markup_out(text, fenced) if tags else text


def _own_markup_out(text: str, fenced: bool = False) -> str:
    """``text`` with the markup that is a text's own (``_unmarked`` with ``tags``) set aside as spaces."""
    if "\n" in text:
        items, n = _EMPTY_ITEM.subn(" ", text)
        text = items if n >= 2 else text
    if "\x1b" in text:
        text = _TERMINAL.sub(" ", text)
    if "[" in text and "[/" in text:
        text = _bracket_tags_out(text)
    if "]:" in text:
        text = _MD_COMMENT.sub(" ", text)
    if "<!--" in text:   # to the last close only: each comment opened before it closes (a match, no scan to the end)
        end = text.rfind("-->") + 3
        text = _COMMENT.sub(" ", text[:end]) + text[end:] if end >= 3 else text
    if "</" in text:
        text = hidden_out(_HIDDEN_TAG.sub(" ", text), fenced)
    declared = "<" in text and ("<?" in text or "<!" in text) and _DECLARATION.search(text) is not None
    if declared:   # a declaration makes the text a document: a self-closed tag in it is markup too
        text = _DECLARATION.sub(" ", text)
    return _paired(text, declared) if "<" in text else text


@functools.lru_cache(maxsize=16)
def _org(joiner: str) -> "tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]":
    """An org-mode block line or keyword line (``#+BEGIN_SRC python``, ``#+TITLE:``) at a text's start, and
    one led by the line break (or ``joiner``) before it: a search for that character, where ``^`` in a
    multi-line pattern was tried at every character (256 KiB holding "#+": 10 ms); and its ``#+`` and
    keyword anywhere, which each line holds (a search for ``#``: 43,000 texts joined, each a line's
    start, 2 ms where a line never stands, not 10)."""
    j = re.escape(joiner)
    keyword = rf"#\+(?:(?:begin|end)_\w{{1,32}}[^\n{j}]*|\w{{1,32}}:)"
    line = rf"[ \t]*{keyword}"
    return re.compile("(?i)" + line), re.compile(rf"(?i)([\n{j}]){line}"), re.compile("(?i)" + keyword)


def _org_out(text: str, joiner: str = "") -> str:
    """``text`` with its org-mode lines (``_org``) set aside as a space each (the line break before kept)."""
    first, after, keyword = _org(joiner)
    if keyword.search(text) is None:   # no line's ``#+`` and keyword: none to set aside
        return text
    found = first.match(text)
    if found is not None:
        text = " " + text[found.end():]
    return after.sub(r"\1 ", text)


def _rtf_texts(texts: "list[str]", joined: str) -> "set[int]":
    """The indices of ``texts`` (``joined``: them joined) that may open as RTF once their fences and org
    lines are set aside (they hold ``{\\rtf``): ``_unmarked`` with a joiner leaves them to be read alone."""
    return {i for i, t in enumerate(texts) if "{\\rtf" in t} if "{\\rtf" in joined else set()


#: what every kind of markup ``_unmarked`` sets aside holds: a fence's, a heading's, a command's or RTF's
#: first character, a tag's or a bracket tag's end, a declaration's opening, a terminal code, a line break
_MAY_MARK = re.compile(r"[`~#\\>\]\x1b\n]|<!")


def _may_mark(text: str) -> bool:
    """False where ``_unmarked`` (with or without ``tags``) leaves ``text`` as it is, found by one search."""
    return _MAY_MARK.search(text) is not None


def _bracket_tags_out(text: str) -> str:
    """``text`` with its ``_BRACKET_TAG``-s of a name both opened and closed in it set aside (one
    substitution by a pattern of those names: no Python step per tag)."""
    found: "tuple[set[str], set[str]]" = (set(), set())
    for slash, name in set(_BRACKET_TAG.findall(text)):
        found[bool(slash)].add(name.casefold())
    paired = found[0] & found[1]
    if not paired:
        return text
    names = "|".join(map(re.escape, sorted(paired, key=len, reverse=True)))
    return re.sub(rf"\[/?(?i:{names})(?:=[^\[\]\n]{{0,256}})?\]", " ", text)


def _paired(text: str, declared: bool) -> str:
    """``text`` with the ``_TAG``-s of a name both opened and closed in it set aside, and where one
    pairs (or ``declared``) its self-closed and void ones."""
    found: "tuple[set[str], set[str]]" = (set(), set())
    ascii_names, start = True, 0
    while start < len(text):   # a call per ``_TAG_SPAN`` characters, cut at a "<" (no tag holds one past its start)
        cut = text.find("<", start + _TAG_SPAN)
        end = len(text) if cut < 0 else cut
        for name in set(_TAG_NAME.findall(text, start, end)):   # a text repeats its few tags
            found[name[0] == "/"].add(name.lstrip("/").casefold())
            ascii_names = ascii_names and name.isascii()   # as written (``\u212a`` folds to ``k``)
        start = end
    paired = found[0] & found[1]
    if not paired and not declared:
        return text
    if len(paired) <= _NAMED_MOST and ascii_names:   # a pattern of the names, in C
        return _named_tags(frozenset(paired | _VOID)).sub(" ", text)
    return _TAG.sub(lambda m: " " if m.group(3) or m.group(2).casefold() in paired
                   or m.group(2).casefold() in _VOID else m.group(), text)


#: the most names ``_paired`` writes in one pattern (``_named_tags``): a text of many names of tags takes a call a tag
_NAMED_MOST = 64


@functools.lru_cache(maxsize=64)
def _named_tags(names: "frozenset[str]") -> "re.Pattern[str]":
    """The ``_TAG``-s ``_paired`` sets aside where every tag's name is ASCII: one of ``names`` (in any case: each
    letter a class of its two cases, so no other character matches as ``re.I`` would match ``\u212a`` for ``k``), or
    self-closed as ``_TAG`` reads one (its attributes take a ``/`` before the ``>`` but the 258th); each a whole
    name, as ``_TAG`` reads a tag's name to the end of its run of name characters. A call per tag (87,000 in
    256 KiB) cost 50 ms."""
    def cased(name: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in name)

    alternatives = "|".join(map(cased, sorted(names, key=len, reverse=True)))
    return re.compile(rf"</?(?:(?:{alternatives})(?![\w:.-])(?:\s[^<>]{{0,256}})?/?"
                      rf"|[A-Za-z_][\w:.-]{{0,63}}(?:\s[^<>]{{256}})?/)>")


def _tree(words: "Iterable[list[str]]") -> dict:
    """``words`` (lists of character patterns) as a tree of nested dicts, ``""`` where a word ends."""
    root: dict = {}
    for word in words:
        node = root
        for c in word:
            node = node.setdefault(c, {})
        node[""] = {}
    return root


def _begun(roots: "Iterable[dict]") -> "dict[str, list[tuple[str, dict]]]":
    """The words of ``roots`` (``_tree``-s) begun by each first character, and by a letter written as is (``_key_chars``)
    those begun by its class: each as its first character's pattern and the tree after it."""
    begun: "dict[str, list[tuple[str, dict]]]" = {}
    for root in roots:
        for c, child in root.items():
            for at in {c, c[1]} if len(c) == 4 and c[0] == "[" else {c} if c else ():
                begun.setdefault(at, []).append((c, child))
    return begun


def _trie(words: "Iterable[list[str]]", beside: "Iterable[list[str]]" = (), doubled: bool = False) -> str:
    """One pattern matching any of ``words`` (lists of character patterns), the longest where
    several match but where a whole word (of ``words``, or of ``beside``: the words read after them) begins after
    the shorter; shared prefixes are tried once (a text's every position tries a few characters, not every word).
    ``doubled``: the same pattern over the text with each character written twice (``_doubled``), where a node
    of many children is tried a group of characters at a time (``_grouped``)."""
    root = _tree(words)
    # hunt 30: a filler word is not taken longer over a master key's first letter (``correcta`` in
    # ``correctanswer`` left ``nswer``, so ``Correct answer:`` was read as an answer)
    begun = _begun([root, _tree(beside)])
    twice = (lambda c: c + c) if doubled else (lambda c: c)   # a character pattern over a doubled text

    def emit(node: dict, guard: bool = True) -> str:
        # where a word ends and a longer one goes on with ``c``, and ``c`` also begins a word, the longer is
        # taken only where no whole word begins at ``c`` (``thoughtsolution``: ``thought`` then ``solution``,
        # not ``thoughts`` then ``olution``; a word, once taken, is never given back).
        # A node of many children: each class (``[o0]``) as one alternative per character, in its place:
        # an alternative led by a literal is skipped in a step of the engine, one led by a class is not
        # (262,144 one-character keys, the 47th of 55 first characters: 40 -> 25 ms)
        split = len(node) > _SPLIT_CHILDREN
        guarded = guard and "" in node
        alts = [(a, _led(a, "".join(f"(?!{twice(p)}{emit(after, False)})" for p, after in guards), doubled)
                 + emit(child, guard), _shortest(child) if doubled and split else 0)
                for c, child in sorted(node.items()) if c
                for guards in [begun[c] if guarded and c in begun else []]
                for a in (_one_each(c) if split else [c]) if not (doubled and _dead(a, guards))]
        if not alts:
            return ""
        # where a word may end, an empty alternative last, not ``(?:...)?``: a branch, no repeat (with
        # the classes split, 262,144 one-character keys: 40 -> 25 ms)
        return "(?:" + "|".join(a for _, a, _ in alts) + "|)" if "" in node else alts[0][1] if len(alts) == 1 \
            else _grouped(alts) if doubled and split else "(?:" + "|".join(a for _, a, _ in alts) + ")"

    return emit(root)


def _dead(a: str, guards: "list[tuple[str, dict]]") -> bool:
    """Whether an alternative of ``_trie`` led by the character pattern ``a`` never matches: one of its ``guards`` is
    a whole word of one character that ``a``'s every character begins (``解`` then ``答``: ``答`` is a key), so its
    lookahead always fails there; left out of a doubled text's pattern (its look-behind tried at every such place)."""
    return any("" in after and set(_one_each(a)) <= set(_one_each(p)) for p, after in guards)


def _led(a: str, guards: str, doubled: bool) -> str:
    """An alternative of ``_trie`` up to its character ``a``: its ``guards`` (lookaheads), then ``a``; over a doubled
    text ``a`` twice, the guards read from a look-behind after the first copy (the same place), so that the
    alternative is led by ``a``, which the engine skips in a step where another character stands."""
    if not doubled:
        return guards + a
    return f"{a}(?<={guards}(?s:.)){a}" if guards else a + a


def _grouped(alts: "list[tuple[str, str, int]]") -> str:
    """Alternatives over a doubled text (``_trie``), each its character pattern, itself (led by that character
    twice) and the letters after it to the nearest word's end, as groups of characters next to each other in code
    points: the first copy read by the group's range, the second by each alternative's own character (the engine
    skips an alternative led by a literal or a range in a step, one at a time: a text of one-character keys tried
    about 100 at each character, now about 20). The characters of the shortest words first (a text of those holds
    the most words), the groups too. The ranges are apart, and an alternative is tried after those before it that
    its character leads, as in one alternation: the same match."""
    if not all(len(a) == 1 or (len(a) == 2 and a[0] == "\\") for a, _, _ in alts):
        return "(?:" + "|".join(a for _, a, _ in alts) + ")"   # a class no character splits: as it is
    shortest: "dict[str, int]" = {}
    for a, _, after in alts:
        shortest[a[-1]] = min(shortest.get(a[-1], after), after)
    chars = sorted(shortest)
    size = max(2, round(len(chars) ** 0.5))
    groups = sorted((sorted(chars[i:i + size], key=shortest.__getitem__) for i in range(0, len(chars), size)),
                    key=lambda group: shortest[group[0]])
    return "(?:" + "|".join(f"[{re.escape(min(group))}-{re.escape(max(group))}](?:"
                            + "|".join(body[len(a):] for c in group for a, body, _ in alts if a[-1] == c) + ")"
                            for group in groups) + ")"


def _shortest(node: dict) -> int:
    """The fewest characters from ``node`` (of a ``_tree``) to a word's end."""
    return 0 if "" in node else 1 + min(map(_shortest, node.values()), default=0)


#: a trie node with more children than this has each class split in its characters (``_trie``)
_SPLIT_CHILDREN = 4


def _one_each(c: str) -> "list[str]":
    """A character pattern of ``_chars`` (a class of plain characters, or one escaped) as one pattern
    per character it matches, in its order."""
    return list(c[1:-1]) if len(c) > 2 and c[0] == "[" and c[-1] == "]" and "\\" not in c else [c]


#: white in LaTeX: by name, or by a colour model (``[rgb]{1,1,1}``, ``[RGB]{255,255,255}``, ``[HTML]{FFFFFF}``)
_LATEX_WHITE = (r"(?:\{\s{0,8}[Ww]hite|\[\s{0,8}(?:rgb|gray)\s{0,8}\]\s{0,8}\{\s{0,8}1(?:\.0{1,8})?"
                r"(?:\s{0,8},\s{0,8}1(?:\.0{1,8})?){0,2}"
                r"|\[\s{0,8}RGB\s{0,8}\]\s{0,8}\{\s{0,8}255(?:\s{0,8},\s{0,8}255){2}"
                r"|\[\s{0,8}HTML\s{0,8}\]\s{0,8}\{\s{0,8}[Ff]{6})\s{0,8}\}")


@functools.lru_cache(maxsize=1)
def _latex() -> "re.Pattern[str]":
    """``_LATEX_COMMANDS`` (their names as one trie: a backslash tries a few characters, not every
    name), an environment's ``\\begin{...}``/``\\end{...}``, a space's ``\\hspace{...}``, a colour; white text
    (hunt 28: ``\\textcolor{white}{...}``, ``\\color{white}`` to its group's end), shown to no reader."""
    # hunt 21: any command given only empty arguments (``$\\frac{}{}$``, ``\\mathbb{}``) shows nothing
    return re.compile(r"\\(?:[A-Za-z]{1,32}\*?(?:\s{0,8}\{\s{0,8}\}){1,8}|[hv]?phantom\s{0,8}\{[^{}\x00-\x1f]{0,256}\}"
                      r"|(?:(?:begin|end)\s{0,8}\{[\w*]{1,32}\}"
                      r"|(?:text)?color\s{0,8}" + _LATEX_WHITE +
                      r"(?:\s{0,8}\{[^{}\x00-\x1f]{0,256}\}|[^{}$\x00-\x1f]{0,256})"
                      r"|[hv]space\*?\s{0,8}\{[\w.\-]{0,32}\}|color\s{0,8}\{\w{1,32}\}|"
                      + _trie(list(w) for w in _LATEX_COMMANDS) + r")(?![A-Za-z]))")
