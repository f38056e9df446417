"""The one neutraliser of policy text: every sequence that could open or close a
tag or delimiter line the prompt or reply protocol uses (``<candidate``, ``</response>``,
a template's ``[The End of Assistant's Answer]`` or ``###Feedback:``) and every
chat-template control token (``<|im_end|>``, ``[INST]``) is defanged. Detection
works on a *skeleton* (NFKC, case-folded, look-alikes as ASCII, zero-width
characters as nothing, escapes as what they stand for: ``&lsqb;``, ``%5B`` as ``[``);
``letters`` (its letters and digits) serves the content-free screen. Linear, mostly in C."""

from __future__ import annotations

import functools
import html.entities
import re
import unicodedata
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import TemplateContextError
from ..grade import encodable
from ..templates._plain import to_plain
from ._blocks import split_chunks, splitter as split_by
from ._fold import (ASCII_BYTES, _GAP, _LONG, _TABLE, _FoldTable, _ascii_dropped, _codes, _controls_dropped,
                    _fold_char, _text_of, ascii_folded)
from ._seams import SeamWords, closed, squeezed, tag_starts

__all__ = ["PROTOCOL_TAGS", "contains_tag", "free_joiner", "letters", "neutralize",
           "neutralize_all", "neutralize_value", "template_tag_names"]

#: Tag names of the reply protocols: the candidate blocks, and the draft a reply may open
#: with (``<think>``, ``<thinking>``: blanked before reading, so a copy of one the policy
#: wrote would hide what the judge writes after it); any tag *starting* with one of these
#: (``<grades>``, ``<candidate-input>``) is neutralised in policy text.
PROTOCOL_TAGS: tuple[str, ...] = ("candidate", "grade", "reasoning", "think")

_DEFANG = "["        # what a defanged tag opener becomes

# Escapes a judge may decode as it reads or repeats policy text, on the skeleton: HTML character
# references (numeric, named, ``&amp;`` chains), backslash escapes (``\u003c``, ``\U0000005b``,
# ``\u{23}``, ``\x3c``, ``\074``, ``\N{...}``), percent and quoted-printable bytes. Each becomes
# its character's skeleton padded with gaps, so the length holds, whichever character it stands
# for (``&lsqb;`` is a '[', ``%23`` a '#', ``&#116;`` a 't'). A run of ``amp;``, ``25``, ``3d`` or
# backslashes is tried from its first (the look-behind): from every one would be quadratic. Every
# branch opens with its character (the look-behind after it), so the engine skips to the next
# '&', '\', '%' or '=' instead of trying each branch at every position (8x faster on prose).
# The backslashes after the first are taken possessively: what follows them is no backslash, so
# giving one back never matches (256 KiB of backslashes: 18 -> 2 ms).
_TEXT_ESCAPES = (
    r"&(?:amp;)*(?:#(?:x0*(?P<hx>[0-9a-f]{1,6})|0*(?P<dec>[0-9]{1,7}));?|(?P<name>[a-z][a-z0-9]{1,31});"
    r"|(?P<legacy>lt|gt))"
    r"|\\(?<!\\\\)\\*+(?:u\{0*(?P<hb>[0-9a-f]{1,6})\}|u(?P<hu>00(?:0[0-9a-f]|10)[0-9a-f]{4}|[0-9a-f]{4})"
    r"|x(?P<hh>[0-9a-f]{2})|(?P<oct>[0-7]{3})|n\{(?P<uname>[a-z][a-z0-9 -]{0,63})\})"
    r"|%(?:25)*(?P<hp>[0-9a-f]{2}(?:%(?:25)*[89ab][0-9a-f]){0,3})")
_ESCAPE = re.compile(_TEXT_ESCAPES + r"|=(?:3d)*(?P<hq>[0-9a-f]{2}(?:=(?:3d)*[89ab][0-9a-f]){0,3})")


def _splitter(pattern: str) -> "re.Pattern[str]":
    """``pattern`` as one capturing group, for ``split``: each escape found in C, no call per escape. Its repeats of a
    group (a chain's ``(?:25)*``, bytes' ``{0,3}``) as branches matching the same in the same order (``(?:25(?:25)*|)``):
    a repeat set up per escape costs more than a branch (256 KiB of ``%3c``: a split of 19 -> 15 ms)."""
    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    for unit in ("amp;", "25", "3d"):
        pattern = pattern.replace(f"(?:{unit})*", f"(?:{unit}(?:{unit})*|)")
    for byte in ("%(?:25(?:25)*|)[89ab][0-9a-f]", "=(?:3d(?:3d)*|)[89ab][0-9a-f]"):
        pattern = pattern.replace(f"(?:{byte}){{0,3}}", f"(?:{byte}(?:{byte}(?:{byte}|)|)|)")
    return re.compile("(" + pattern + ")")


_ESCAPES = _splitter(_ESCAPE.pattern)
#: the escapes ``letters`` reads: not quoted-printable, where "=10" is an answer, not a control character; where
#: one may open in a text in lower case (``\\`` aside): a search for each's first character, 10x faster than a split
_TEXT_ESCAPES_SPLIT = _splitter(_TEXT_ESCAPES)
_LETTER_ESCAPE_OPENINGS = (re.compile(r"&(?:amp;)*(?:#(?:x[0-9a-f]|[0-9])|[a-z])"), re.compile(r"%(?:25)*[0-9a-f]{2}"))
_BASES = {"hx": 16, "hb": 16, "hu": 16, "hh": 16, "dec": 10, "oct": 8}


def _entities() -> dict[str, str]:
    """HTML's named character references of one character, by lower-case name (``&LT;`` is
    ``&lt;``; of two names differing by case only, the one whose skeleton sorts first)."""
    by_name: dict[str, str] = {}
    for name, char in html.entities.html5.items():
        key = name[:-1].lower()
        if len(char) == 1 and name.endswith(";") and (key not in by_name or _fold_char(char) < _fold_char(by_name[key])):
            by_name[key] = char
    return by_name


_ENTITIES = _entities()
#: escapes already read (a bounded memo: policy text repeats the same few)
_ESCAPES_READ: dict[str, str] = {}


def _read_escapes(text: str, splitter: "re.Pattern[str]") -> str:
    """``text`` with each escape as the skeleton of the character it stands for, padded with
    gaps to its length, or as it is when it stands for none."""
    chunks = list(split_chunks(splitter, text))   # a chunk a call: no call over the whole text
    if len(chunks) > 1 or len(chunks[0]) > 1:
        text = "".join([_read_chunk(parts) for parts in chunks])
    return text


def _read_chunk(parts: "list[str]") -> str:
    """``parts`` (texts and escapes alternating, from ``split``) joined, each escape read."""
    read = list(map(_ESCAPES_READ.get, parts[1::2]))   # most were read before: a lookup each, in C
    if None in read:
        read = [r or _read_escape(e) for r, e in zip(read, parts[1::2])]
    parts[1::2] = read
    return "".join(parts)


def _read_escape(esc: str) -> str:
    m = _ESCAPE.fullmatch(esc)   # a piece ``split`` found: it matches, as it did in the text
    kind = m.lastgroup or ""  # type: ignore[union-attr]
    body = m.group(kind)  # type: ignore[union-attr]
    try:
        char = (_ENTITIES.get(body) if kind in ("name", "legacy") else unicodedata.lookup(body)
                if kind == "uname" else _utf8(body.split("%" if kind == "hp" else "=")) if kind in ("hp", "hq")
                else chr(int(body, _BASES[kind])))
    except (KeyError, ValueError, OverflowError):
        char = None
    out = esc if char is None or len(char) != 1 else char.translate(_TABLE) + _GAP * (len(esc) - 1)
    if len(_ESCAPES_READ) < 4096:
        _ESCAPES_READ[esc] = out
    return out


def _utf8(pairs: "list[str]") -> str:
    """What bytes written as hex digit pairs (percent or quoted-printable, each maybe after a
    chain of escaped escape characters) stand for: one UTF-8 sequence, else the first as Latin-1."""
    raw = bytes.fromhex("".join(p[-2:] for p in pairs))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return chr(raw[0])


def _skeleton(text: str) -> str:
    if text.isascii():
        skel = text.lower()   # an ASCII character's skeleton is its lower case
    elif len(text) < _LONG:
        skel = text.translate(_TABLE)
    else:
        skel = _text_of(_TABLE.codes(text))
    if "&" in skel or "\\" in skel or "%" in skel or "=" in skel:
        skel = _read_escapes(skel, _ESCAPES)
    return skel


#: where an escape may begin, after ``&``, ``%`` or ``=``: ``_ESCAPE`` on a text's skeleton matches
#: only where one of these does on the text (a character outside ASCII may fold to a letter or a
#: digit, so any one counts; a backslash always counts): each a search for its first character, in C
_ESCAPE_OPENINGS = (("&", re.compile("&[#a-zA-Z\x80-\U0010ffff]")),
                    ("%", re.compile("%[0-9a-fA-F\x80-\U0010ffff]{2}")),
                    ("=", re.compile("=[0-9a-fA-F\x80-\U0010ffff]{2}")))
#: what a character outside ASCII must not fold to for a text to be left as it is: an escape's
#: opener, a character the patterns start with, or a surrogate (``encodable`` replaces it; it
#: folds to itself)
_FOLDS_MARKED = re.compile(r"[<\[&\\%=#*_~\-\ud800-\udfff]")


def _untouched(text: str, tags: tuple[str, ...], ctl: tuple[str, ...]) -> bool:
    """Whether neutralising ``text`` cannot change it: no control token of the judge's is given, it holds
    no ``<``, ``[`` or backslash (nor a ``#`` where ``tags`` hold a template heading, nor two rule characters
    in a row where they hold a ruled label: ``tag_starts``), its ``&``, ``%`` and ``=`` open no escape (``2+2=4``
    is none: ``_ESCAPE_OPENINGS``), and no character outside ASCII is a surrogate or folds to ``<[&\\%=#-*_~``."""
    heading, ruled = tag_starts(tags)   # remembered per tags: a generator over them cost ~1k instructions a tag
    if ctl or "<" in text or "[" in text or "\\" in text or ("#" in text and heading) \
            or (ruled and _RULED.search(text) is not None):
        return False
    for opener, opening in _ESCAPE_OPENINGS:
        if opener in text and opening.search(text) is not None:
            return False
    if text.isascii():
        return True
    # the characters outside ASCII, in C: their UTF-8 bytes are all over 0x7f, so deleting every
    # ASCII byte leaves them whole; when they are many (``_RUN_CHARS``), the skeleton's long way
    outside = text.encode("utf-8", "surrogatepass").translate(None, ASCII_BYTES).decode("utf-8", "surrogatepass")
    return len(outside) * _RUN_CHARS <= len(text) and _FOLDS_MARKED.search(outside.translate(_TABLE)) is None


#: a character outside ASCII, kept by ``split`` (one at a time: a pattern for a run of them
#: scans four times slower)
_NON_ASCII = re.compile(r"([^\x00-\x7f])")
#: ``_runs`` splits (and ``_untouched`` looks at the characters outside ASCII of) a text with at
#: most one character outside ASCII in this many (each costs a few calls where a character of the
#: text costs one table lookup)
_RUN_CHARS = 32


def _runs(text: str) -> "list[str] | None":
    """``text`` as its runs of ASCII characters (maybe empty) and each character outside
    ASCII between them, when those are few (``_RUN_CHARS``); None when they are not."""
    if (len(text) - len(text.encode("ascii", "ignore"))) * _RUN_CHARS > len(text):
        return None
    return _NON_ASCII.split(text)


def _spaced(name: str) -> str:
    """A regex for ``name`` with gaps allowed between its letters."""
    return (_GAP + "*").join(re.escape(ch) for ch in name)


# Control tokens of common judge families (ChatML/Llama-3 ``<|...|>``, DeepSeek's fullwidth bars,
# ``[INST]``/``<<SYS>>``/``<s>``, Mistral's ``[SYSTEM_PROMPT]``, Gemma's turns, image placeholders).
# Image placeholders of multimodal judges (Gemma 3, LLaVA/Idefics, InternVL; Qwen's and Llama's are
# ``<|...|>``): a server counts them against the images sent, so one in text-only policy text fails
# the request. Only the bare token: ``<img src=...>`` is HTML and stays. ``<<SYS>>`` is defanged at
# its second '<' (``<[SYS>>``): a '<' then '<' is never a start to try, so a run of '<' costs a
# character class test each (a try per '<' cost 60 ms in 256 KiB).
_IMAGE_NAMES = ("start_of_image", "end_of_image", "image_soft_token", "fake_token_around_image",
                "image", "img_context", "img")
_LT_NAMES = ("start_of_turn", "end_of_turn")
_LT_CLOSED = ("bos", "eos", *_IMAGE_NAMES)   # after '<', maybe '/', then '>'
_LT_TAILS = (r"s\x00*>", _spaced("sys") + r"\x00*>\x00*>", *map(_spaced, _LT_NAMES),
             "(?:" + "|".join(map(_spaced, _LT_CLOSED)) + r")\x00*>")
# '[', slash, name, ']': Llama 2's [INST] and [SYS], and the control tokens of Mistral's tekken
# tokenizers (its system prompt, tools, image placeholders, Magistral's [THINK])
_BRACKET_WORDS = ("inst", "sys", "system_prompt", "available_tools", "tool_results", "tool_calls", "tool_content",
                  "img_break", "img_end", "img", "think")
_BRACKET_NAMES = tuple(map(_spaced, _BRACKET_WORDS))


@functools.lru_cache(maxsize=256)
def _pattern(extra_tags: tuple[str, ...], control: tuple[str, ...], tags: bool = True) -> re.Pattern[str]:
    """Tags (unless ``tags`` is False) and control tokens, as one regex, factored by
    their first character (a '<' is tested once for all)."""
    names = sorted({t.casefold() for t in extra_tags if t and t[0] not in "[#-"} - set(PROTOCOL_TAGS),
                   key=len, reverse=True)
    labels = {kind: sorted({_skeleton(t[1:]).replace(_GAP, "") for t in extra_tags if t[:1] == kind},
                           key=len, reverse=True) for kind in "[#-"}
    lt, bracket = _lt_pattern(names, tags), _bracket_pattern(labels)
    base = re.compile(lt + "|" + bracket)
    # the judge's own control tokens the common forms do not already match (``<|im_end|>`` does)
    extra_ctl = [re.escape(skel) for skel in map(_skeleton, filter(None, control)) if not base.match(skel)]
    return re.compile("|".join([lt, bracket, *extra_ctl])) if extra_ctl else base


def _lt_pattern(names: "list[str]", tags: bool) -> str:
    """What starts at a '<': a protocol or template tag (unless ``tags`` is False), a control token."""
    alts = ["(?:" + "|".join(_spaced(t) for t in PROTOCOL_TAGS) + ")"]   # prefixes: <grades> too
    if names:
        alts.append("(?:" + "|".join(_spaced(t) for t in names) + r")(?![\w-])")
    # gaps, then an optional '/' and its gaps: unambiguous (``\x00*/?\x00*`` would split a run of
    # gaps between two stars in every way: quadratic), like every regex here, so each pass is linear
    controls = r"\x00*(?:\||(?:/\x00*)?(?:" + "|".join(_LT_TAILS) + "))"
    # what may follow '<' and its spaces, gaps and slashes: most '<' fail at once
    firsts = "|s" + "".join(n[0] for n in (*_LT_NAMES, *_LT_CLOSED) + ((*PROTOCOL_TAGS, *names) if tags else ()))
    lt = r"(?=[\s/\x00]*[" + re.escape("".join(sorted(set(firsts)))) + "])"
    # '|' tried first, before the look-ahead (which it passes: '|' is among the firsts): no tag name
    # starts with it, and a text dense with '<|' pays no try of the tags, nor the look-ahead
    return "<" + ((r"(?:\x00*\||" + lt + r"(?:[\s/\x00]*(?:" + "|".join(alts) + ")|" + controls + "))") if tags
                  else lt + controls)


def _bracket_pattern(labels: "dict[str, list[str]]") -> str:
    """What starts at a '[' (a control token, a template's delimiter line, a bracketed label, its
    closing bracket optional), or at a '#' (a template's heading)."""
    lines = {kind: "|".join(map(_spaced_words, found)) for kind, found in labels.items()}
    bracket = r"(?:/\x00*)?(?:" + "|".join(_BRACKET_NAMES) + r")\x00*\]"
    if lines["["]:
        # its spaces and gaps as one class repeated (the gaps after '[' are taken, so the run starts
        # with a space, as ``(?:\s\x00*)*`` took it): 256 KiB of spaces after a '[', 40 -> 3 ms
        bracket += r"|[\s\x00]*(?:" + lines["["] + r")(?!\w)"
    firsts = re.escape("".join(sorted({w[0] for w in (*_BRACKET_NAMES, *labels["["]) if w})))
    bracket = r"\[\x00*(?=[/\s" + firsts + "])(?:" + bracket + ")"   # most '[' fail at once
    if lines["#"]:
        # after a space, a control character (one joining texts checked in one pass) or nothing, and
        # gaps (zero-width characters; not an escape's padding, which follows its character)
        bracket += r"|(?<![^\s\x01-\x1f])\x00*#(?:\x00*#){0,5}(?!\x00*#)" + _SPACES + "*(?:" + lines["#"] + r")(?!\w)"
    if lines["-"]:   # a label after a run of rule characters (``-----END ANSWER-----``, ``**Reference:**``)
        bracket += (r"|(?<![^\s\x01-\x1f])(?:\x00*[-=*_~]){2,40}(?!\x00*[-=*_~])" + _SPACES + "*(?:" + lines["-"]
                    + r")(?![^\W_])")
    return bracket


#: gaps, then a space and its gaps (repeated): each repeat starts with what it needs, so a run of
#: gaps is never split between two quantifiers in every way
_SPACES = r"\x00*(?:\s\x00*)"
#: what a label's apostrophe matches, or nothing (``Assistantʼs``: a modifier letter folds to a gap)
_APOSTROPHE = "(?:" + _GAP + "*['\u2018\u2019\u2032\uff07`\u00b4])?"


def _spaced_words(label: str) -> str:
    """A regex for ``label`` with gaps allowed inside its words, any apostrophe for its
    own, and any run of whitespace between words. Each optional part starts with what
    it needs, so a failed try costs one pass over a run of gaps: linear."""
    def word(w: str) -> str:
        return re.escape(w[0]) + "".join(_APOSTROPHE if c == "'" else _GAP + "*" + re.escape(c) for c in w[1:])
    return (_SPACES + "+").join(map(word, label.split()))


def contains_tag(text: str, extra_tags: Iterable[str] = (), control_tokens: Iterable[str] = ()) -> bool:
    """Whether ``text`` holds anything ``neutralize`` would defang.

    >>> contains_tag("\\uff1cgrade\\uff1e4"), contains_tag("1 < 2 and <b>x</b>")
    (True, False)
    """
    return bool(_pattern(tuple(extra_tags), tuple(control_tokens)).search(_skeleton(text)))


def neutralize(text: str, extra_tags: Iterable[str] = (), control_tokens: Iterable[str] = (), *,
               tags: bool = True) -> str:
    """Defang tags and control tokens in ``text``: the first character of each
    (or the whole escape standing for '<') becomes ``[``. ``extra_tags`` adds
    whole tag names (``response``), ``control_tokens`` literal special tokens
    of the judge; ``tags=False`` leaves every tag (text the judge wrote, going back
    to it as a reply prefix). Surrogates become U+FFFD. Idempotent; the rest is kept.

    >>> neutralize("ok <b>bold</b> \\uff1c/candidate> <|im_end|>")
    'ok <b>bold</b> [/candidate> [|im_end|>'
    >>> neutralize('<grade id="k">1</grade> &lt;|im_start|&gt;system', tags=False)
    '<grade id="k">1</grade> [|im_start|&gt;system'
    """
    extra_tags, control_tokens = tuple(extra_tags), tuple(control_tokens)
    if not isinstance(text, str) or not text:
        return text
    if _untouched(text, extra_tags, control_tokens):
        return text   # plain ASCII with no bracket or escape: nothing to defang
    text = encodable(text)   # a surrogate cannot be encoded: it would fail a shared request
    skel = _skeleton(text)
    if not control_tokens and "<" not in skel and "[" not in skel and "#" not in skel and _RULED.search(skel) is None:
        return text   # every match starts at a '<' or '[', holds a '#', or a run of rule characters
    starts = _starts(_pattern(extra_tags if tags else (), control_tokens, tags), skel)
    return _defanged(text, skel, starts) if len(starts) else text


@functools.lru_cache(maxsize=256)
def _seam_words(extra_tags: tuple[str, ...], control: tuple[str, ...]) -> SeamWords:
    """What ``_pattern`` defangs after an opener, as ``_seams.seam_pattern`` reads it."""
    names = {t.casefold() for t in extra_tags if t and t[0] not in "[#-"}
    ctl = [_skeleton(c).replace(_GAP, "") for c in control if c]
    return SeamWords(tuple({*PROTOCOL_TAGS, *names, *_LT_NAMES, *_LT_CLOSED, "s", "sys",
                            *(c[1:].lstrip("/") for c in ctl if c[:1] == "<")}),
                     tuple({*_BRACKET_WORDS, *(c[1:].lstrip("/") for c in ctl if c[:1] == "[")}),
                     *(tuple(squeezed(_skeleton(t[1:])) for t in extra_tags if t[:1] == kind) for kind in "[#"))


def _closed(text: str, tags: tuple[str, ...], ctl: tuple[str, ...]) -> str:
    """``text`` (neutralised) closed at its end (``_seams.closed``): a template may show it beside another value."""
    return closed(text, _skeleton, _seam_words(tags, ctl))


def _starts(pattern: "re.Pattern[str]", text: str) -> "np.ndarray":
    """Where each match of ``pattern`` in ``text`` starts, as ``finditer`` finds them: from the lengths
    of the pieces ``split`` cuts (a Match object and a call per match cost 40 ms for 131,072 of them)."""
    splitter = split_by(pattern)
    if splitter is None:
        return np.array([m.start() for m in pattern.finditer(text)], dtype=np.int64)
    found, at = [], 0
    for parts in split_chunks(splitter, text):   # a chunk a call: no call over the whole text
        ends = np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
        found.append(ends[0:len(parts) - 1:2] + at)   # a match starts where the text before it ends
        at += int(ends[-1])
    return np.concatenate(found)


_ESCAPE_OPENERS = np.array([ord(c) for c in "&\\%="], dtype=np.uint32)


def _defanged(text: str, skel: str, starts: "np.ndarray") -> str:
    """``text`` with the match at each of ``starts`` (offsets in its skeleton) defanged: its first
    character (after the gaps a heading's match may open with) becomes ``[``, a ``[`` becomes ``(``
    (``[INST]`` -> ``(INST]``), and an escape's padding (the gaps after it) goes with it. In numpy:
    a text may hold a match every 3 characters (87,000 in 256 KiB: a loop over them took 30 ms)."""
    out, sk = _codes(text).copy(), _codes(skel)
    real = np.flatnonzero(sk)   # the characters that are no gap
    at = real[np.searchsorted(real, starts)]
    first, was = sk[at], out[at]
    out[at] = np.where(first == ord("["), ord("("), ord(_DEFANG))
    escapes = at[(was != first) & np.isin(was, _ESCAPE_OPENERS)]
    if len(escapes):
        ends = np.append(real, len(sk))[np.searchsorted(real, escapes + 1)]
        cut = np.zeros(len(sk) + 1, dtype=np.int8)   # +1 where a padding begins, -1 where it ends
        cut[escapes + 1] = 1
        cut[ends] -= 1
        out = out[np.cumsum(cut[:-1], dtype=np.int8) == 0]
    return out.tobytes().decode("utf-32-le")


def neutralize_all(texts: "list[str]", extra_tags: Iterable[str] = (),
                   control_tokens: Iterable[str] = ()) -> "list[str]":
    """``[neutralize(t, extra_tags, control_tokens) for t in texts]``, ``str``
    texts in one pass over them joined (40,000 short strings cost one call), each closed at its end
    (``_closed``: a template may show texts side by side, as ``neutralize_value``'s)."""
    tags, ctl = tuple(extra_tags), tuple(control_tokens)
    if set(map(type, texts)) - {str}:
        return [_closed(n, tags, ctl) if isinstance(n, str) else n for n in (neutralize(t, tags, ctl) for t in texts)]
    if _untouched("".join(texts), tags, ctl):
        return list(texts)
    joiner = free_joiner(texts, ctl)
    if joiner is None:
        return [_closed(neutralize(t, tags, ctl), tags, ctl) for t in texts]
    joined = neutralize(joiner.join(texts), tags, ctl)
    return closed(joined, _skeleton, _seam_words(tags, ctl), joiner).split(joiner)   # each one's end, in one pass


#: what joins texts checked in one pass: control characters that fold to themselves and are no
#: space, letter, digit, bracket or escape, so no tag, token or master key can span one
_JOINERS = "".join(map(chr, [*range(0x01, 0x09), *range(0x0e, 0x1c)]))
#: texts below this many are checked one by one
_BATCH = 8


def free_joiner(texts: "list[str]", avoid: Iterable[str] = ()) -> "str | None":
    """A joiner none of ``texts`` and ``avoid`` holds, for one pass over them
    joined; None for fewer than ``_BATCH`` texts or when every joiner is taken."""
    if len(texts) < _BATCH:
        return None
    whole = "".join(texts)
    return next((j for j in _JOINERS if j not in whole and not any(j in t for t in avoid)), None)


def neutralize_value(value: Any, extra_tags: Iterable[str] = (),
                     control_tokens: Iterable[str] = ()) -> Any:
    """``neutralize`` every string inside ``value`` (keys as ``str(key)``), keeping
    its structure (tuples become lists). Any other object becomes plain data first, as a
    template would show it (``to_plain``: a pydantic model or a dataclass as its fields, a
    subclass of ``str``, ``int`` or ``float`` as its value, bytes or a numpy array as their
    ``str``), its text neutralised too; a callable is kept (rendering refuses it). Iterative."""
    tags, ctl = tuple(extra_tags), tuple(control_tokens)
    if type(value) in _SCALARS:
        return value
    if type(value) is dict and _flat_and_clean(value, tags, ctl):
        return {str(k): v for k, v in value.items()}   # the common metadata: nothing to change
    texts = _texts_in(value)   # every distinct str neutralised in one pass, then the copy
    done = dict(zip(texts, neutralize_all(texts, tags, ctl)))

    get = done.get

    def fix(s: str) -> str:
        out = get(s)
        return _closed(neutralize(s, tags, ctl), tags, ctl) if out is None else out

    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        src, parent, key = stack.pop()
        kind = type(src)
        if kind is str:
            parent[key] = fix(src)
        elif kind in _SCALARS:
            parent[key] = src
        elif isinstance(src, Mapping):
            out: dict[str, Any] = {}
            parent[key] = out
            clashes: dict[str, int] = {}
            for k, v in src.items():
                nk = fix(str(k))
                if nk in out:   # two keys alike once neutralised: both values stay
                    nk = _unclashed(out, nk, clashes)
                out[nk] = None
                stack.append((v, out, nk))
        elif isinstance(src, (list, tuple)):   # its texts and numbers at once (a list may hold 40,000)
            if _only_str(src):   # each text looked up in C (every one was neutralised above)
                parent[key] = lst = list(map(get, src))
                if None not in lst:
                    continue
            parent[key] = lst = [(get(v) or fix(v)) if type(v) is str else v for v in src]
            stack.extend([(v, lst, i) for i, v in enumerate(src) if type(v) not in _LEAVES])
        else:   # shown as to_plain shows it, then walked: its text may be the policy's
            try:
                stack.append((to_plain(src), parent, key))
            except TemplateContextError:
                parent[key] = src
    return root[0]


def _unclashed(out: "dict[str, Any]", key: str, clashes: "dict[str, int]") -> str:
    """``key`` marked ``key (2)``, ``key (3)``... past the keys ``out`` holds (``clashes``: the
    last mark of each key, so k clashing keys cost k steps). Without it, a value whose key
    neutralises to another's (``<think>``, ``[think>``) was dropped: the judge saw the other
    (a master key) where the content-free screen had seen both (an answer)."""
    n = clashes.get(key, 1) + 1
    while f"{key} ({n})" in out:
        n += 1
    clashes[key] = n
    return f"{key} ({n})"


#: the exact types ``neutralize_value`` keeps as they are
_SCALARS = frozenset({int, float, bool, type(None)})
_LEAVES = _SCALARS | {str}


def _flat_and_clean(mapping: dict, tags: tuple[str, ...], ctl: tuple[str, ...]) -> bool:
    """Whether ``mapping`` holds only ``str`` keys and ``str`` or ``_SCALARS`` values, its
    texts all ``_untouched`` (one scan of them joined)."""
    parts = []
    for k, v in mapping.items():
        if type(k) is not str or type(v) is not str and type(v) not in _SCALARS:
            return False
        parts.append(k)
        if type(v) is str:
            parts.append(v)
    return _untouched("".join(parts), tags, ctl)


def _texts_in(value: Any) -> "list[str]":
    """The distinct ``str`` (exactly) keys, as ``str(key)``, and leaves inside ``value``."""
    found: dict[str, None] = {}
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is str:
            found[node] = None
        elif isinstance(node, dict):
            found.update((sk, None) for sk in map(str, node) if type(sk) is str)
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            if _only_str(node):
                found.update(dict.fromkeys(node))
                continue
            found.update(dict.fromkeys([v for v in node if type(v) is str]))
            stack.extend([v for v in node if type(v) not in _LEAVES])
    return list(found)


def _only_str(items: "list[Any] | tuple[Any, ...]") -> bool:
    """Whether ``items`` are all ``str`` exactly (their types gathered in C)."""
    return set(map(type, items)) == {str}


_RULED = re.compile(r"[-=*_~][\x00\xad\u034f\u180e\u200b-\u200f\u2060-\u206f\ufeff]*[-=*_~]")   # a ruled label may open
_TEMPLATE_TAG = re.compile(r"</?\s*([A-Za-z][\w-]*)")
#: a template's delimiter line, alone on its line with no placeholder in it: a bracketed label (MT-Bench's
#: ``[The Start of Assistant's Answer]``), a heading (Prometheus's ``###Response to evaluate:``, LLMBar's
#: ``# Output (a):``) or a label between rules (``-----END ANSWER-----``, ``**Reference:**``)
_TEMPLATE_LINE = re.compile(r"^[ \t]*(?:\[([A-Za-z][^\[\]{}<>\n]{0,78})\]|#{1,6}[ \t]*([A-Za-z][^\[\]{}<>#\n]{0,78})"
                            r"|[-=*_~]{2,40}[ \t]*([A-Za-z][^\[\]{}<>#\n]{0,78}?)[ \t:]*[-=*_~]*)[ \t:]*$", re.M)


def template_tag_names(*sources: str) -> list[str]:
    """The XML-like tag names templates write (``<submission id=…>`` ->
    ``submission``) and their delimiter lines, each as ``[`` or ``#`` and its label
    (``[The End of Assistant's Answer]`` -> ``[the end of assistant's answer``,
    ``### Feedback:`` -> ``#feedback``), so policy text can be kept from closing or
    forging them: a judge reads the prompt's structure where the policy's text imitates it."""
    found = [m.group(1).casefold() for src in sources for m in _TEMPLATE_TAG.finditer(src or "")]
    for src in sources:
        for m in _TEMPLATE_LINE.finditer(src or ""):
            kind, label = "[#-"[m.lastindex - 1], m.group(m.lastindex).rstrip(" \t:" if m.lastindex > 1 else "")
            found.append(kind + " ".join(label.casefold().split()))
    return list(dict.fromkeys(found))


# also dropped: fillers that render as blank space (modifier letters, read as apostrophes in
# "Letʼs", fold to nothing in ``_fold_char``)
_FILLERS = "\u115f\u1160\u2800\u3164\uffa0"


def letters(text: str, keep: str = "") -> str:
    """The letters and digits of ``text``'s skeleton and nothing else, but
    ``keep`` (a separator of texts checked in one pass). Linear.

    >>> letters("**Th\u043eught  process:**"), letters("\uff33\uff54\uff45\uff50 \uff11"), letters("Let&#39;s")
    ('thoughtprocess', 'step1', 'lets')
    """
    if "&" in text or "\\" in text or "%" in text:
        # escapes as what they stand for (a judge decodes them): "Thought&#32;process:" is a master key
        text = text.lower()
        if "\\" in text or any(opening.search(text) for opening in _LETTER_ESCAPE_OPENINGS):
            text = _read_escapes(text, _TEXT_ESCAPES_SPLIT)
    if keep.isascii() and not text.isascii():   # a few characters outside ASCII as their letters: ASCII then
        text = ascii_folded(text, _LETTERS) or text
    if text.isascii() and keep.isascii():
        # the table and the pattern on ASCII, as one bytes.translate (20x faster)
        return text.lower().encode("ascii").translate(None, _ascii_dropped(keep)).decode("ascii")
    runs = _runs(text) if keep.isascii() else None
    if runs is not None:   # a few other characters (curly quotes): only those through the tables
        dropped = _ascii_dropped(keep)
        return "".join([_LETTERS[ord(r)] if i % 2 else r.lower().encode("ascii").translate(None, dropped).decode()
                        for i, r in enumerate(runs)])
    # the skeleton keeps one character per character (for positions); here length does not
    # matter, so a character folding to several (the ligature \ufb01, \u2474, \u00df) keeps them all.
    # Translations, no pattern: a pattern removing each run of what is no letter matched
    # 260,000 times in 256 KiB of U+2474 (``(1)``), 60-90 ms
    if len(text) < _LONG:
        return text.translate(_LETTERS).translate(_controls_dropped(keep))
    codes = _LETTERS.codes(text)
    controls = codes < 0x20
    if controls.any():
        codes = codes[~controls | np.isin(codes, _codes(keep))]
    return _text_of(codes)


def _letters_of(ch: str) -> str:
    """One character's NFKC form, case-folded, as skeleton, its letters and digits only (ASCII
    control characters kept: ``letters`` drops those not kept). Character by character: NFKC of
    a whole text reorders each run of combining marks by insertion (quadratic: 256 KiB of U+0F73
    took minutes); composing them back changes no letter of the skeleton, which drops the marks."""
    if ch < "\x20":
        return ch
    if unicodedata.category(ch) == "Cf":   # invisible (a tag character too): no letter of content
        return ""
    folded = unicodedata.normalize("NFKC", ch).casefold().translate(_TABLE)
    return "".join(c for c in folded if c.isalnum() and c not in _FILLERS)


_LETTERS = _FoldTable(_letters_of)

