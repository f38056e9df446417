"""``split`` of a long text a block at a time: the same pieces as one ``pattern.split(text)``, each
call of the regex engine over a block of ``BLOCK`` characters and a margin, so no call holds the
interpreter lock for a whole 256 KiB text (one over 131,072 tags held it 30-60 ms, and an event loop
whose grade went to a worker thread waited that long).

Why a block gives the pieces of the whole: ``_plan`` reads the pattern's parse and bounds how many
characters an attempt at one position can examine, but for runs of the characters its unbounded
repeats take (``\\x00*``, ``[\\s/\\x00]*``: the *free* characters). An attempt examines at most
``reach`` characters that are not free, so where the text past a block's end holds ``reach`` of
them, every attempt that starts in the block ends before the margin does: it matches, or fails, as
over the whole text. A match that starts in the block is kept (it may end past the block), and the
next block starts where the last one kept ends, or at the block's end. A look-behind (one or two
characters) sees before a block's start only in the whole text: the first attempts of each block
are made again there (``match`` with a start) and, where they differ, the block is scanned by
``finditer`` over the whole text. A pattern whose parse holds anything else (anchors, references,
case folding, an unbounded repeat of anything but single characters) is split in one call."""

from __future__ import annotations

import functools
import re
from typing import Iterator, NamedTuple

try:   # Python 3.11 on
    from re import _constants as _c, _parser
except ImportError:   # pragma: no cover - Python 3.10
    import sre_constants as _c   # type: ignore[no-redef]
    import sre_parse as _parser   # type: ignore[no-redef]

__all__ = ["BLOCK", "split_chunks", "splitter", "sub_blocks"]

#: the characters one call of the engine starts attempts in (about 4-8 ms of the densest patterns here)
BLOCK = 1 << 15

_CONSUMING = {_c.LITERAL, _c.NOT_LITERAL, _c.IN, _c.ANY}
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT} | ({_c.POSSESSIVE_REPEAT} if hasattr(_c, "POSSESSIVE_REPEAT") else set())
_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)
_CATEGORIES = {_c.CATEGORY_SPACE: r"\s", _c.CATEGORY_DIGIT: r"\d", _c.CATEGORY_WORD: r"\w",
               _c.CATEGORY_UNI_SPACE: r"\s", _c.CATEGORY_UNI_DIGIT: r"\d", _c.CATEGORY_UNI_WORD: r"\w"}


class _Whole(Exception):
    """The pattern holds what ``_plan`` does not bound: it is split in one call."""


class _Plan(NamedTuple):
    margin: "re.Pattern[str]"   # matches at a block's end through ``reach`` characters that are not free
    behind: int                 # the widest look-behind


def _char(code: int) -> str:
    return f"\\U{code:08x}"


def _free(items, out: "list[str]") -> None:
    """Add to ``out`` the class pieces of what the repeated ``items`` may take; ``_Whole`` where
    that is not single characters of known classes."""
    for op, av in items:
        if op is _c.LITERAL:
            out.append(_char(av))
        elif op is _c.IN:
            for kind, arg in av:
                if kind is _c.LITERAL:
                    out.append(_char(arg))
                elif kind is _c.RANGE:
                    out.append(_char(arg[0]) + "-" + _char(arg[1]))
                elif kind is _c.CATEGORY and arg in _CATEGORIES:
                    out.append(_CATEGORIES[arg])
                else:
                    raise _Whole(kind)
        elif op is _c.SUBPATTERN and not av[1] & _c.SRE_FLAG_IGNORECASE:
            _free(av[-1], out)
        elif op in _REPEATS:
            _free(av[2], out)
        elif op is _c.BRANCH:
            for alt in av[1]:
                _free(alt, out)
        else:
            raise _Whole(op)


def _reach(items, free: "list[str]", behind: "list[int]") -> int:
    """How many characters an attempt through ``items`` examines, not counting those its unbounded
    repeats take (their classes added to ``free``); the widths of look-behinds added to ``behind``."""
    total = 0
    for op, av in items:
        if op in _CONSUMING:
            total += 1
        elif op is _c.BRANCH:
            total += max(_reach(alt, free, behind) for alt in av[1])
        elif op is _c.SUBPATTERN and not av[1] & _c.SRE_FLAG_IGNORECASE:
            total += _reach(av[-1], free, behind)
        elif op is _ATOMIC:
            total += _reach(av, free, behind)
        elif op in _REPEATS and av[1] is _c.MAXREPEAT:
            _free(av[2], free)
        elif op in _REPEATS:
            total += av[1] * _reach(av[2], free, behind)
        elif op in (_c.ASSERT, _c.ASSERT_NOT) and av[0] == 1:
            total += _reach(av[1], free, behind)   # a look-ahead: counted as if taken
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            behind.append(av[1].getwidth()[1])
        else:
            raise _Whole(op)
    return total


@functools.lru_cache(maxsize=64)
def _plan(pattern: "re.Pattern[str]") -> "_Plan | None":
    """How ``split_chunks`` cuts texts for ``pattern``; None when it splits them whole."""
    if pattern.flags & (re.IGNORECASE | re.MULTILINE) or not isinstance(pattern.pattern, str):
        return None
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        free: "list[str]" = []
        behind = [0]
        reach = _reach(parsed, free, behind)
    except _Whole:
        return None
    if parsed.getwidth()[0] == 0 or max(behind) > 8:
        return None   # a pattern matching nothing splits otherwise; a long look-behind: not worth it
    # past the block's end: ``reach`` + 2 characters that are not free, each after its run of free
    # ones, and the shortest match's length more (the engine tries no start that many from the end)
    kept = "".join(sorted(set(free)))
    step = rf"[{kept}]*[^{kept}]" if free else r"(?s:.)"
    return _Plan(re.compile(rf"(?:{step}){{{reach + parsed.getwidth()[0] + 2}}}"), max(behind))


@functools.lru_cache(maxsize=256)
def splitter(pattern: "re.Pattern[str]") -> "re.Pattern[str] | None":
    """``pattern`` as one capturing group, for ``split`` (None where it has groups of its own)."""
    return re.compile("(" + pattern.pattern + ")", pattern.flags) if pattern.groups == 0 else None


def sub_blocks(pattern: "re.Pattern[str]", by: str, text: str) -> str:
    """``pattern.sub(by, text)`` for a ``by`` with no backslash, a chunk (``split_chunks``) a call."""
    split = splitter(pattern)
    if split is None or len(text) <= 2 * BLOCK or _plan(split) is None:
        return pattern.sub(by, text)
    out = []
    for parts in split_chunks(split, text):
        parts[1::2] = [by] * (len(parts) // 2)
        out.append("".join(parts))
    return "".join(out)


def split_chunks(splitter: "re.Pattern[str]", text: str, block: "int | None" = None) -> "Iterator[list[str]]":
    """``splitter.split(text)`` (``splitter``: one capturing group around a pattern) in chunks whose
    concatenation is that list: each of texts and matches alternating, starting with a text and
    ending with a match, the last with the text after the last match. A text of a few blocks, or a
    pattern ``_plan`` cannot bound, is one chunk (one call). ``block``: ``BLOCK`` unless given."""
    block = block or BLOCK
    plan = _plan(splitter) if len(text) > 2 * block else None
    if plan is None:
        yield splitter.split(text)
        return
    start, pending = 0, ""   # pending: the text after the last match kept, before ``start``
    while True:
        cut = start + block
        found = plan.margin.match(text, cut) if cut < len(text) else None
        end = len(text) if found is None else found.end()
        parts = splitter.split(text[start:end])
        if start and plan.behind and not _agrees(splitter, text, start, end, parts, plan.behind):
            parts = _scanned(splitter, text, start, end)
        if end == len(text):
            parts[0] = pending + parts[0]
            yield parts
            return
        kept, stop = _kept(parts, end - start, cut - start)
        if kept:
            parts[0] = pending + parts[0]
            yield parts[:2 * kept]
            pending = ""
        pending += text[start + stop:max(cut, start + stop)]
        start = max(cut, start + stop)


def _kept(parts: "list[str]", size: int, cut: int) -> "tuple[int, int]":
    """How many matches of ``parts`` (a split of ``size`` characters) start before ``cut``, and where the
    last of them ends (0 for none): read from the end, through the few pieces past ``cut``."""
    at, j = size, len(parts) - 1
    while j > 0:
        at -= len(parts[j])   # where parts[j] starts
        if j % 2 and at < cut:
            return (j + 1) // 2, at + len(parts[j])
        j -= 1
    return 0, 0


def _agrees(splitter: "re.Pattern[str]", text: str, start: int, end: int, parts: "list[str]", behind: int) -> bool:
    """Whether the attempts ``parts`` (``split`` of ``text[start:end]``) made in their first ``behind``
    characters found what they find in the whole text, where a look-behind sees before ``start``."""
    at, i = 0, 1   # at: an offset in the block; parts[i]: the next match of the block
    before = len(parts[0])
    while at < behind:
        whole = splitter.match(text, start + at, end)
        here = i < len(parts) and before == at
        if whole is None and not here:
            at += 1
            continue
        if whole is None or not here or whole.end() - start != at + len(parts[i]):
            return False
        at += len(parts[i])
        before = at + len(parts[i + 1])
        i += 2
    return True


def _scanned(splitter: "re.Pattern[str]", text: str, start: int, end: int) -> "list[str]":
    """``split`` of ``text[start:end]`` as the whole text's scan finds it (look-behinds see before
    ``start``): a Match object each, for a block where the first attempts differed."""
    parts, last = [], start
    for m in splitter.finditer(text, start, end):
        parts += [text[last:m.start()], m.group()]
        last = m.end()
    parts.append(text[last:end])
    return parts
