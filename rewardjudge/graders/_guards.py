"""Guards that run before a judge sees a completion: an empty or content-free one (blank
fillers, punctuation, a lone code fence, "master key" openers such as "Thought process:",
a JSON document of such strings) is penalized without a judge call; a structured one is
screened field by field in ``_field_guards``. Every check is linear in the text's length."""

from __future__ import annotations

import functools
import json
import operator
import re
from typing import Any, Iterable, Iterator

import numpy as np

from ..readouts._fold import _codes, _text_of
from ..readouts._text import free_joiner, letters
from ._encoded import base64_text, base64_texts, unescaped
from ._keys import _FILLER, _STEP, _STEP_TWICE, ECHO_LABELS, _announce, _chars, _key_chars, _opener_starts, _start_words
from ._joined import (CLOSING, CODE_STARTS, COLONS, NEWLINE, OVERRIDE, OWN_RARER, _first_joiner, after_last, holding,
                      leading, may_be_documents, opening)
from ._markup import _items, _may_mark, _rtf_texts, _trie, _unmarked
from ._notation import NOTATION_MAX, document_body, notation_strings
from ._nulls import may_hold, null_label
from ._spelled import spelled_text, spelled_texts
from ._tables import table_strings, xml_strings
from ._disguises import turned_flags, turned_readings   # hunt 38: ``_turned``'s, shifted and look-alikes too
from ._turned import _ends

# Nothing a reader sees: whitespace, fillers that render blank, zero-width characters
_BLANK = re.compile("[\\s\u3164\u2800\u115f\u1160\uffa0\u17b4\u17b5\u034f\u180e\u00ad"
                    "\u200b-\u200f\u2028-\u202f\u205f-\u206f\ufeff\ufe00-\ufe0f]*")
_EDGES = "".join(c for c in map(chr, [*range(0x3001), 0x3164, *range(0xfe00, 0xff00), 0xffa0]) if _BLANK.fullmatch(c))

#: symbols written for the letters they look like (``pr0c3$$``, ``@nswer``), as the digits
#: ``_LOOKALIKE_DIGITS`` match: a text holding one is also read with them so (``$$`` alone stays none)
_LEET_DIGITS = {"$": "5", "@": "4", "!": "1", "\u20ac": "3"}


def _leet(text: str) -> bool:
    """Whether ``text`` holds a ``_LEET_DIGITS`` symbol: a memchr-speed search per symbol (a character
    class searched a character at a time cost a fifth of a short answer's screen), each written out
    (``any`` over a ``map`` of them cost 4k instructions, this 1k)."""
    return "$" in text or "@" in text or "!" in text or "\u20ac" in text


def _as_digits(text: str) -> str:
    """``text`` with each ``_LEET_DIGITS`` symbol as its digit: a ``str.replace`` per symbol (no
    digit is a symbol), each in C; a translation table looked up every character of a text outside
    ASCII (20 ms in 256 KiB)."""
    for symbol, digit in _LEET_DIGITS.items():
        if symbol in text:
            text = text.replace(symbol, digit)
    return text


#: emoji pictographs (faces, people, animals, objects: Unicode's emoji blocks, U+1F300 to U+1FAFF, less the
#: skin-tone modifiers); arrows, check marks and stars (the older symbol blocks) are none. One range, then
#: a look behind: a class of several astral ranges took 30 ms to search 256 KiB of ASCII, this one 2 ms
_PICTOGRAPH = re.compile("[\U0001f300-\U0001faff](?<![\U0001f3fb-\U0001f3ff])")
#: ``_PICTOGRAPH``'s range, skin tones and all (``holding``: the texts that may hold one)
_PICTOGRAPHS = range(0x1F300, 0x1FB00)


def _emoji_message(text: str) -> bool:
    """Whether ``text`` holds two distinct emoji pictographs (``_PICTOGRAPH``): a text of no letter or digit
    that does is a message written in emoji (models asked to answer in emoji wrote ``🙌🎉😅``),
    not a lone symbol, which stays content-free (a judge may read ``👍`` as a verdict). Two passes at most."""
    first = None if text.isascii() else _PICTOGRAPH.search(text)
    return first is not None and _PICTOGRAPH.search(text.replace(first.group(), "")) is not None


#: the longest text quoted in a reason
_SHOWN = 40

#: filler words in a row, at most: a text of filler alone fails in a few steps, not a pass
_FILLER_RUN = 8
#: the fewest letters and digits of a question that ``content_free_reason`` takes out of an answer (``Hello``
#: answered ``Hello!`` is a reply)
_ECHO_MIN = 12
#: the labels a question restated stands under, in ``letters`` form, none or several (``ECHO_LABELS``)
_RESTATED = re.compile(f"(?>{_trie(list(w) for w in ECHO_LABELS)})*+")


def _echo(question: str) -> str:
    """The ``letters`` of ``question`` an answer that only repeats it holds, or "" where too short to tell."""
    return _echo_of(question) if isinstance(question, str) and question else ""


@functools.lru_cache(maxsize=32)
def _echo_of(question: str) -> str:
    """``_echo``, remembered: a group's samples share their question, and its letters cost a third of
    the screen of a short answer."""
    found = letters(question)
    return found if len(found) >= _ECHO_MIN else ""


def _opener_units(extra_keys: tuple[str, ...], doubled: bool = False) -> "tuple[str, str]":
    """The parts of ``_opener_pattern``: filler words before the first key, and one unit (a key, then
    filler words); ``doubled``: over the text with each character written twice (``_doubled``)."""
    keys = _trie(_key_chars(extra_keys), doubled=doubled)
    filler = _trie((list(w) for w in _FILLER), _key_chars(extra_keys), doubled=doubled)
    # numbered step headers first: ``step 12`` is one, not ``step 1`` and 2
    keys = f"(?:{_STEP_TWICE if doubled else _STEP}|{_announce(doubled)}|{keys})"
    # atomic groups: a word, a run of filler and the run of keys are never given back (no split
    # but the first could end later, so the match is the same), and no state is kept to give
    # them back (a text of 262,144 one-character keys: 155 -> 80 ms)
    # a key first, where one matches; tried only where a filler word may start (a run of keys tried
    # each key once, not twice: 262,144 one-character keys, 185 -> 100 ms)
    firsts = "".join(map(re.escape, sorted({w[0] for w in _FILLER})))
    fillers = f"(?>(?:(?=[{firsts}])(?!{keys})(?>{filler})){{0,{_FILLER_RUN}}})"
    if doubled:   # the run of filler entered only where one may start: no repeat set up after each key
        fillers = f"(?:(?=[{firsts}]){fillers}|)"
    return fillers, f"(?>{keys}){fillers}"


@functools.lru_cache(maxsize=64)
def _opener_pattern(extra_keys: tuple[str, ...]) -> "re.Pattern[str]":
    """Master keys in ``letters`` form, at least one, with up to ``_FILLER_RUN`` filler words
    (where no key matches) before and after each, at a text's start. Each word is taken whole
    (an atomic group: a failed run never tries other splits), the longest that matches."""
    fillers, unit = _opener_units(extra_keys)
    return re.compile(f"{fillers}(?:{unit})++")


#: the most units (a key and its filler) one call of ``_opener_end`` takes: 262,144 one-character keys
#: in one call held the GIL (and an event loop) for 100 ms; 2,048 take about 1 ms
_UNITS = 2048


@functools.lru_cache(maxsize=64)
def _opener_steps(extra_keys: tuple[str, ...], units: int) -> "tuple[re.Pattern[str], re.Pattern[str]]":
    """``_opener_pattern`` cut in calls: its start with up to ``units`` units, then up to ``units`` more."""
    fillers, unit = _opener_units(extra_keys)
    return re.compile(f"{fillers}(?:{unit}){{1,{units}}}+"), re.compile(f"(?:{unit}){{1,{units}}}+")


@functools.lru_cache(maxsize=64)
def _doubled_units(extra_keys: tuple[str, ...], units: int) -> "re.Pattern[str]":
    """``_opener_steps``' second pattern over a ``_doubled`` text."""
    return re.compile(f"(?:{_opener_units(extra_keys, doubled=True)[1]}){{1,{units}}}+")


#: the letters from which ``_opener_end`` reads a text doubled (``_doubled``)
_DOUBLED_FROM = 4096


def _doubled(found: str, keys: tuple[str, ...]) -> str:
    """``found`` up to its first character that no word of an opener holds (nor a digit: ``_foreign``; no match
    reads past one, and every lookahead there fails or holds as at the text's end), each character written twice,
    in numpy: the keys' pattern over it (``_trie``'s ``doubled``) reads the first copy of a key's first character
    by a range of a few, the second by the character (262,144 one-character keys: each character tried about 100
    alternatives one at a time, now about 20)."""
    cut = _foreign(keys).search(found)
    return _text_of(np.repeat(_codes(found if cut is None else found[:cut.start()]), 2))


@functools.lru_cache(maxsize=64)
def _foreign(keys: tuple[str, ...]) -> "re.Pattern[str]":
    """A character no word of an opener (``_start_words``), nor a step header's number, holds."""
    held = {c for word in _start_words(keys) for pattern in word for c in pattern}   # a class's brackets too
    return re.compile(f"[^{''.join(map(re.escape, sorted(held)))}\\d]")


def _opener_end(found: str, extra_keys: tuple[str, ...]) -> "int | None":
    """Where ``_opener_pattern(extra_keys).match(found)`` ends (None: no match), taken ``_UNITS`` units
    a call: the possessive run resumed where a call stopped is the same run (each unit taken as it
    is, its lookaheads reading the whole text), and between calls other threads run. A long text whose
    run goes on past the first call is read on doubled (``_doubled``): each of its characters a pair, each
    of the pattern's a pair, the same run (one that stops soon, as in most texts, costs no doubling)."""
    first, more = _opener_steps(extra_keys, _UNITS)
    run = first.match(found)
    if run is None:
        return None
    end = run.end()
    if len(found) >= _DOUBLED_FROM and end < len(found) and more.match(found, end) is not None:
        text, more, end = _doubled(found, extra_keys), _doubled_units(extra_keys, _UNITS), 2 * end
        while end < len(text) and (run := more.match(text, end)) is not None:
            end = run.end()
        return end // 2
    while end < len(found) and (run := more.match(found, end)) is not None:
        end = run.end()
    return end


def _only_keys(found: str, extra_keys: tuple[str, ...]) -> bool:
    """Whether ``found`` (``letters`` of a text) is master keys, one or several, and ``_FILLER``
    words around them."""
    return _opener_end(found, extra_keys) == len(found)


def _content_free_flags(texts: "list[str]", keys: tuple[str, ...], question: str = "") -> "list[bool]":
    """Whether each text is empty or content-free (``content_free_reason``), in passes over the
    texts joined (``_free_flags``: 30,000 short strings cost a few passes, not 30,000 calls); with
    ``question``, the texts holding its letters (one pass) are read again less them (``_echo``)."""
    flags = _free_flags(texts, keys)
    if flags is None:
        return [content_free_reason(t, keys, question) is not None for t in texts]
    _flag_echoes(flags, texts, keys, question)
    _flag_lookalikes(flags, texts, keys)
    _flag_documents(flags, texts, keys)
    _flag_encoded(flags, texts, keys, question)
    if not all(flags) and may_hold("\n".join(texts)):   # hunt 36: ``answer: null`` (``_nulls``)
        flags[:] = [flag or _nulled(t, keys, question) for flag, t in zip(flags, texts)]
    return flags


def _nulled(text: str, keys: tuple[str, ...], question: str) -> bool:
    """Whether ``text`` is a label of master keys given a null on one line (``_nulls.null_label``)."""
    label = null_label(text, question)
    return label is not None and _free(label, keys) is not None


def _flag_encoded(flags: "list[bool]", texts: "list[str]", keys: tuple[str, ...], question: str) -> None:
    """Flags (in place) the texts with content that are base64 of a content-free text (``base64_texts``: one search
    over the texts joined), or spell one out (``_spelled``), read again as decoded."""
    joiner = free_joiner(texts)
    # only the texts whose first character may start a code (``CODE_STARTS``, found in numpy: 12 ms over 43,000 texts)
    at = [i for i in leading(joiner.join(texts), joiner, CODE_STARTS) if not flags[i]] if joiner is not None else []
    joined = joiner.join(map(texts.__getitem__, at)) if at else None
    coded = {at[i]: plain for found in (base64_texts(joined, joiner), spelled_texts(joined, joiner))   # hunt 36: spelled
             for i, plain in found.items()} if joined is not None else {}
    for i, free in zip(coded, _content_free_flags(list(coded.values()), keys, question) if coded else []):
        flags[i] = free


def _flag_echoes(flags: "list[bool]", texts: "list[str]", keys: tuple[str, ...], question: str) -> None:
    """Flags (in place) the texts with content that only repeat ``question`` (``_echo``) beside master keys:
    those holding its letters (one pass over the texts joined), or RTF, are read again one by one."""
    echo = _echo(question)
    if not echo or all(flags):
        return
    joiner = free_joiner(texts)
    joined = joiner.join(texts) if joiner is not None else ""
    pieces = letters(_unmarked(joined, tags=False, joiner=joiner), keep=joiner).split(joiner) if joiner else []
    rtf = _rtf_texts(texts, joined)
    for i, t in enumerate(texts):
        if not flags[i] and (len(pieces) != len(texts) or echo in pieces[i] or i in rtf):
            # the JSON-document rule is left to _flag_documents, which reads every unflagged text
            flags[i] = content_free_reason(t, keys, question, as_json=False) is not None


_LEET_CODES = np.array([ord(c) for c in _LEET_DIGITS], dtype=np.uint32)


def _flag_lookalikes(flags: "list[bool]", texts: "list[str]", keys: tuple[str, ...]) -> None:
    """Flags (in place) the texts with content holding a look-alike symbol that read it as a digit content-free."""
    whole = "".join(texts)
    if all(flags) or not _leet(whole):
        return
    joiner = free_joiner(texts)
    leet = holding(joiner.join(texts), joiner, _LEET_CODES, flags) if joiner is not None \
        else [i for i, t in enumerate(texts) if not flags[i] and _leet(t)]
    if not leet:
        return
    held = texts if len(leet) == len(texts) else [texts[i] for i in leet]
    # the texts joined by a control character, which no symbol stands for
    read = _as_digits("\x00".join(held)).split("\x00") if "\x00" not in whole else list(map(_as_digits, held))
    again = _free_flags(read, keys) or [bool(_free(t, keys)) for t in read]
    if len(leet) == len(flags):   # every text: the flags at once
        flags[:] = again
    for i, free in zip(leet, again) if len(leet) < len(flags) else ():
        flags[i] = free


def _flag_documents(flags: "list[bool]", texts: "list[str]", keys: tuple[str, ...]) -> None:
    """Flags (in place) the texts with content that are JSON documents of content-free strings
    (``_json_free``)."""
    if all(flags):
        return   # every text is flagged already
    joined = "".join(texts)
    if not any(c in joined for c in "{[`~&%<") and not ("\n" in joined and any(c in joined for c in ":=|,;\t")):
        return   # no text may be a document (``_document``)
    docs = {i: body for i in may_be_documents(texts, flags) if (body := _document(texts[i], keys)) is not None}
    for i, free in zip(docs, _json_free(list(docs.values()), keys) if docs else []):
        flags[i] = free


def _free_flags(texts: "list[str]", keys: tuple[str, ...]) -> "list[bool] | None":
    """``[_free(t, keys) for t in texts]``, each step a pass over the texts joined (a regex over
    the whole, then a test per text: 40,000 texts of master keys, each with a colon or under a
    right-to-left override, took 300-400 ms text by text); None where they cannot be joined."""
    joiner = free_joiner(texts)
    if joiner is None:
        return None
    plain = joiner.join(texts)
    unmarked = _joined_unmarked(texts, joiner, plain)
    found = letters(unmarked, keep=joiner)
    if found.count(joiner) != len(texts) - 1:
        return None
    pieces = found.split(joiner)
    only = _keys_only(pieces, joiner, keys)
    flags = list(map(operator.or_, map(operator.not_, pieces), only)) if True in only \
        else list(map(operator.not_, pieces))
    if "" in pieces and _PICTOGRAPH.search(unmarked):   # no letter or digit, but a message in emoji?
        _flag_emoji(flags, texts, pieces, only, (plain, joiner))
    # master keys, then an answer after the last colon?
    ask = holding(plain, joiner, COLONS, list(map(operator.not_, only))) if True in only else []
    if ask:
        flags = _flag_answered(flags, ask, unmarked.split(joiner), joiner, keys)
    # shown reversed (a right-to-left override): its letters read backwards
    turned = holding(plain, joiner, OVERRIDE, flags) if "\u202e" in plain else []
    if turned:   # each text's letters reversed: the whole reversed, its pieces in their order again
        backs = found[::-1].split(joiner)[::-1]
        for i, back in zip(turned, _keys_only(backs if len(turned) == len(texts) else [backs[i] for i in turned],
                                              joiner, keys)):
            flags[i] = back
    # hunt 33: in ROT13, reversed or upside down (``_turned``)
    turned_flags(texts, found, joiner, flags, lambda reading: _keys_only(reading, joiner, keys), keys, pieces)
    return flags


def _flag_emoji(flags: "list[bool]", texts: "list[str]", pieces: "list[str]", only: "list[bool]",
                joined: "tuple[str, str]") -> None:
    """Unflags (in place) the texts of no letter or digit (``pieces``: their letters) and no master key (``only``)
    that are a message in emoji (``_emoji_message``): only those holding a pictograph's code (``holding`` of
    ``joined``, the texts joined and the joiner, in numpy; a step per text cost 20 ms over 43,000)."""
    for i in holding(*joined, _PICTOGRAPHS, None):
        if not pieces[i] and not only[i]:
            flags[i] = not _emoji_message(texts[i])


def _flag_answered(flags: "list[bool]", ask: "list[int]", shown: "list[str]", joiner: str,
                   keys: tuple[str, ...]) -> "list[bool]":
    """``flags`` with those of the texts ``ask`` (master keys and a colon) set to whether nothing answers
    after the keys (``_answered_each``, over the texts ``shown`` unmarked)."""
    saids = _answered_each(shown if len(ask) == len(shown) else [shown[i] for i in ask], joiner, keys)
    if len(ask) == len(shown):
        return list(map(operator.not_, saids))
    for i, said in zip(ask, saids):
        flags[i] = not said
    return flags


def _joined_unmarked(texts: "list[str]", joiner: str, plain: str) -> str:
    """``plain`` (``texts`` joined by ``joiner``) with each text's markup set aside (``_unmarked``). A text's
    own markup (tags that pair, declarations, bracket tags, terminal codes, empty items) is its own: a lone
    ``<b>`` is no markup for a ``</b>`` in another, so it is set aside text by text, in a text holding a
    closing tag (found in numpy) or, where the joined text holds one, one of the rarer kinds."""
    unmarked = _unmarked(plain, tags=False, joiner=joiner)   # no fence, command or line holds a joiner
    own = set(holding(unmarked, joiner, CLOSING, None)) if "</" in unmarked else set()
    own.update(_rtf_texts(texts, plain))
    if "<?" in unmarked or "<!" in unmarked or "[/" in unmarked or "]:" in unmarked or "\x1b" in unmarked \
            or ("\n" in unmarked and _items(unmarked)):   # the texts holding one, found in numpy
        own.update(holding(plain, joiner, OWN_RARER, None))
        if "\n" in plain:
            own.update(i for i in holding(plain, joiner, NEWLINE, None) if _items(texts[i]))
    if not own:
        return unmarked
    shown = unmarked.split(joiner)
    read: "dict[str, str]" = {}   # each distinct text once (a batch repeats its answers)
    for i in own:   # as ``_free`` reads it alone: once (twice, a line set aside made another line's start)
        if _may_mark(texts[i]):   # a text of no markup's characters: as it is
            shown[i] = read[texts[i]] if texts[i] in read else read.setdefault(texts[i], _unmarked(texts[i]))
    return joiner.join(shown)


@functools.lru_cache(maxsize=64)
def _whole_openers(keys: tuple[str, ...], joiner: str) -> "tuple[re.Pattern[str], re.Pattern[str]]":
    """``_opener_pattern`` at the start of each text joined by ``joiner``, matched with the ``joiner``
    before it (the texts joined are read with one before the first: ``_led``): its first unit (where
    an opener starts a text), then its run taken as it is (an atomic group: what ``match`` takes, no
    other split) only where it ends the text. The engine finds each text's start by a scan for the
    joiner (a look-behind tried at every character cost 7 ms in 256 KiB), and for the first unit a text whose first
    two characters start no key, filler word or step header (their look-alike digits too) fails at once; the run is
    tried only on texts ``opening`` let through, whose starts that look-ahead would take again."""
    fillers, unit = _opener_units(keys)
    at_start = rf"{re.escape(joiner)}(?={_trie(w[:2] for w in _start_words(keys))})"
    return re.compile(rf"{at_start}(?>{fillers}{unit})"), \
        re.compile(rf"{re.escape(joiner)}(?>{_opener_pattern(keys).pattern})(?={re.escape(joiner)}|\Z)")


def _led(pattern: "re.Pattern[str]", joiner: str, joined: str, by: str) -> str:
    """``pattern`` (led by ``joiner``: ``_whole_openers``) substituted ``by`` in ``joined`` read with a
    ``joiner`` before it, that ``joiner`` taken off again."""
    return pattern.sub(by, joiner + joined)[1:]


#: the characters of texts joined that one substitution over them takes (``_spans``): 43,000 short
#: texts in one held the GIL for 30 ms
_JOINED_SPAN = 32_768


def _spans(joined: str, joiner: str) -> "Iterator[str]":
    """``joined`` (texts joined by ``joiner``) cut at a ``joiner`` into runs of texts of about
    ``_JOINED_SPAN`` characters, a run ending with the text that reaches it, a text that long alone:
    each a search for the joiner (a step per text in Python cost 5 ms for 43,000 texts)."""
    start = 0
    while True:
        cut = joined.find(joiner, start + _JOINED_SPAN)
        end = len(joined) if cut < 0 else cut
        last = joined.rfind(joiner, start, end) + 1   # where the run's last text starts
        if last > start and end - last >= _JOINED_SPAN:   # a long text after shorter ones: alone, next
            end = last - 1
        yield joined[start:end]
        if end >= len(joined):
            return
        start = end + 1


def _sub_spans(pattern: "re.Pattern[str]", joiner: str, joined: str, by: str) -> str:
    """``_led(pattern, joiner, joined, by)``, a substitution per ``_spans``."""
    return joiner.join([_led(pattern, joiner, part, by) for part in _spans(joined, joiner)])


#: the texts ``_keys_only`` looks at to tell whether many are alike (hashing 43,000 distinct ones to learn it cost
#: 18 million instructions a call)
_SAMPLE = 1024


def _keys_only(pieces: "list[str]", joiner: str, keys: tuple[str, ...]) -> "list[bool]":
    """For each of ``pieces`` (``letters`` of texts; none holds ``joiner``): whether it is master keys and filler
    (``_only_keys``): a substitution per ``_spans`` of those joined whose first characters may start an opener
    (``opening``, in numpy: the rest fail), each distinct one once (texts differing by their symbols alone have the
    same letters; master keys at random cut in 6 letters repeat: 25,785 tried, 14,123 distinct), then what is left of
    each; a long text alone is matched a few units a call (``_opener_end``)."""
    if not pieces:
        return []
    joiner = _first_joiner(pieces, joiner)
    if 2 * len(set(pieces[:_SAMPLE])) <= len(pieces[:_SAMPLE]):   # many alike: each once, then a table
        distinct = list(dict.fromkeys(pieces))
        table = dict(zip(distinct, _keys_only(distinct, joiner, keys)))   # these differ: the sample says so
        return list(map(table.__getitem__, pieces))   # each in C: 43,000 texts
    joined = joiner.join(pieces)
    opens = opening(joined, joiner, _opener_starts(keys), _ends(keys)[3])   # a text of them starts and ends as they do
    at = None if opens.all() else np.flatnonzero(opens)
    tried = pieces if at is None else list(map(pieces.__getitem__, at.tolist()))
    once = list(dict.fromkeys(tried))
    said = _openers_only(once, joined if len(once) == len(pieces) else joiner.join(once), joiner, keys) if once else []
    if len(once) < len(tried):
        said = list(map(dict(zip(once, said)).__getitem__, tried))   # each in C
    if at is None:
        return said
    only = np.zeros(len(pieces), dtype=bool)
    only[at] = said
    return only.tolist()


def _openers_only(texts: "list[str]", joined: str, joiner: str, keys: tuple[str, ...]) -> "list[bool]":
    """``_keys_only`` of ``texts`` (``joined``: them joined by ``joiner``), each tried."""
    whole = _whole_openers(keys, joiner)[1]
    left = joiner.join([_led(whole, joiner, part, joiner) if len(part) < _JOINED_SPAN or joiner in part
                        else "" if _only_keys(part, keys) else part for part in _spans(joined, joiner)])
    if left == joined:   # none of them matched (the hostile case: 43,000 that almost do)
        return [False] * len(texts)
    return list(map(operator.and_, map(bool, texts), map(operator.not_, left.split(joiner))))   # each in C


#: the letters a text of ``_answered_each`` is cut to where an opener starts them
_OPENED = "\x00"


def _answered_each(unmarked: "list[str]", joiner: str, keys: tuple[str, ...]) -> "list[bool]":
    """``_answered`` of each of ``unmarked`` (texts with their markup set aside, none holding
    ``joiner``) whose letters are master keys and filler: each cut to what follows its last colon
    (``after_last``, in numpy; a text without one is left whole, and an opener starts its letters, as
    ``_answered`` finds no answer there), their letters in one pass, then whether an opener's first unit
    starts each (a substitution per span)."""
    pieces = letters(after_last(joiner.join(unmarked), joiner, COLONS), keep=joiner).split(joiner)
    distinct, joiner = list(dict.fromkeys(pieces)), _first_joiner(pieces, joiner)
    opened = _sub_spans(_whole_openers(keys, joiner)[0], joiner, joiner.join(distinct), joiner + _OPENED)
    said = {tail: bool(tail) and cut[:1] != _OPENED for tail, cut in zip(distinct, opened.split(joiner))}
    return list(map(said.__getitem__, pieces))


def _document(text: str, keys: tuple[str, ...]) -> "str | None":
    """The data document ``text`` may be (``document_body``, blank and invisible marks at its ends aside: ``_EDGES``),
    its label and tail, where it has them, no content: none, or master keys and filler only (``_only_keys``)."""
    def free(found: str) -> bool:
        return not found or _only_keys(found, keys)

    # hunt 30: a document written escaped (``{&quot;answer&quot;: &quot;&quot;}``, ``%7B...%7D``), as a judge reads it:
    # decoded once (an ``&amp;amp;...`` chain decoded again and again would be quadratic), up to ``NOTATION_MAX``
    plain = unescaped(text) if ("&" in text or "%" in text) and len(text) <= NOTATION_MAX else None
    body = document_body(plain.strip(_EDGES), free) if plain is not None else None
    return body if body is not None else document_body(text.strip(_EDGES), free)


def _json_free(bodies: "list[str]", keys: tuple[str, ...]) -> "list[bool]":
    """Whether each of ``bodies`` (``_document``-s) is a JSON object or array that ``content_free_fields``
    finds content-free, as a structured completion without a model is read (every string free text, keys
    not): ``{"answer": "", "sure": true, "score": 10}`` shows a judge no answer, as the same fields of a
    ``completion_model`` do not. The strings of all in one ``_content_free_flags``. Linear."""
    # JSON, else another notation (a Python literal, JSON5, YAML, TOML: ``_notation``)
    once = list(dict.fromkeys(bodies))   # each distinct body read once (a batch repeats its answers)
    # JSON, else another notation, else (hunt 33) XML or a table
    read = dict(zip(once, [_strings_of(value) if value is not None else notation_strings(body) or xml_strings(body)
                           or table_strings(body) for value, body in zip(_loaded(once), once)]))
    held = [read[body] for body in bodies]
    distinct = list(dict.fromkeys(t for doc in held if doc for t in doc[0] if t))
    if len(held) == 1 and len(distinct) > _FIRST and not all(_content_free_flags(distinct[:_FIRST], keys)):
        return [False]   # one document's first texts carry content (most do): the rest need no reading
    free = dict(zip(distinct, _content_free_flags(distinct, keys) if distinct else []))
    return [doc is not None and (all(not t or free[t] for t in doc[0]) if doc[0] else not doc[1]) for doc in held]


def _strings_of(value: Any) -> "tuple[list[str], bool] | None":
    """The strings of a JSON document read (``value``), a null or an empty object or array as "" (no
    answer, as an empty string: ``{"answer": null, "score": 10}``), and whether a value stands among
    them (a number or a bool: the answer where no string stands beside it); None where it is no object
    or array. Iterative."""
    if not isinstance(value, (dict, list)):
        return None
    strings: "list[str]" = []
    other, stack = False, [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            strings.append(node)
        elif node is None or (isinstance(node, (dict, list)) and not node):
            strings.append("")
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif node is not None:
            other = True
    return strings, other


_FIRST = 8   # the texts of one JSON document ``_json_free`` reads before the rest


def _loaded(bodies: "list[str]") -> list:
    """Each of ``bodies`` read as JSON, or None (one ``json.loads`` each: documents joined into one array
    could read as other documents, a body cut in two, the next merged)."""
    out = []
    for body in bodies:
        try:
            out.append(json.loads(body) if body[:1] in ("{", "[") else None)
        except (ValueError, RecursionError):   # not JSON, nested too deep, or an integer past Python's limit
            out.append(None)
    return out


def _answered(unmarked: str, keys: tuple[str, ...], echo: str = "") -> bool:
    """Whether words follow the last colon of a text (``unmarked``: ``_unmarked``) that are no master
    key (nor the question's ``echo``): filler there (``Answer: the``, ``Solution: below``) is the answer,
    not an opener's."""
    at = max(unmarked.rfind(":"), unmarked.rfind("\uff1a"))
    tail = letters(unmarked[at + 1:]) if at >= 0 else ""
    tail = tail.replace(echo, "") if echo else tail
    return bool(tail) and _opener_steps(keys, _UNITS)[0].match(tail) is None   # a first unit: an opener


def _free(text: str, keys: tuple[str, ...], echo: str = "") -> "str | None":
    """``"free"`` where ``text`` (visible) holds no letter or digit once markup is set aside, or master keys
    and filler only, with no answer after their last colon (or under a right-to-left override, shown
    reversed); ``"echo"`` where it does once the question's ``echo`` (its ``letters``) is set aside too;
    else None. One pass over the text for both."""
    unmarked = _unmarked(text)
    found = letters(unmarked)
    if _bare(text, unmarked, found, keys, ""):
        return "free"
    if echo and echo in found and (_RESTATED.fullmatch(rest := found.replace(echo, "")) is not None
                                   or _bare(text, unmarked, rest, keys, echo)):
        return "echo"
    return None


def _bare(text: str, unmarked: str, found: str, keys: tuple[str, ...], echo: str) -> bool:
    """``_free``'s test of ``found``, the letters of ``text`` (``unmarked``: its markup set aside) less ``echo``."""
    return (not found and not _emoji_message(text)) \
        or (_only_keys(found, keys) and not _answered(unmarked, keys, echo)) \
        or ("\u202e" in text and _only_keys(found[::-1], keys)) \
        or any(_only_keys(reading, keys) for reading in turned_readings(text, found, keys))   # hunt 33


def content_free_reason(text: str, extra_keys: Iterable[str] = (), question: str = "", *,
                        as_json: bool = True) -> str | None:
    """Why ``text`` carries no content (empty: nothing visible; content-free: no letter or
    digit once code fences are set aside, or nothing but master keys and filler words around
    them, or ``question`` repeated with nothing else but those, or, with ``as_json``, a JSON
    document whose fields are: ``_json_free``), or None if it does. ``as_json`` is False where
    a ``completion_model`` reads the text (its schema tells which fields and keys are free text).

    >>> content_free_reason("  \\u200b\\u3164 ")
    'empty completion'
    >>> content_free_reason("Thought  process:")
    "content-free completion: 'Thought  process:'"
    >>> content_free_reason("Paris.") is None
    True
    """
    if not isinstance(text, str):
        return "completion is not text"
    if _BLANK.fullmatch(text):
        return "empty completion"
    keys = tuple(extra_keys)
    echo = _echo(question)
    how = _free(text, keys, echo) or (_leet(text) and _free(_as_digits(text), keys, echo)) or \
        (_nulled(text, keys, question) and "free") \
        or (as_json and (body := _document(text, keys)) is not None and _json_free([body], keys)[0] and "free") \
        or any(plain is not None and content_free_reason(plain, keys, question, as_json=as_json) is not None
               for plain in (base64_text(text), spelled_text(text))) and "free"   # hunts 30, 36: base64, spelled
    if not how:
        return None
    what = "it only repeats the question " if how == "echo" else ""
    return f"content-free completion: {what}{text.strip()[:_SHOWN]!r}"
