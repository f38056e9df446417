"""readouts/_text.py over hostile policy text: the linear rewrites keep behaviour.

Every pass over policy text was made linear (``python -m bench linear`` has
the timings; nothing here asserts one). These tests hold the rewrites to the
forms they replaced, on random text built from the pieces the patterns look
for, and check the outputs on 64 KiB hostile inputs that used to take
seconds (a run of backslashes, '<' or '[' then a run of zero-width
characters, a run of combining marks).
"""

from __future__ import annotations

import html
import html.entities
import quopri
import random
import re
import unicodedata
import urllib.parse
from enum import Enum

import pytest

from rewardjudge.grade import encodable
from rewardjudge.readouts import _fold, _text
from rewardjudge.readouts._text import (PROTOCOL_TAGS, contains_tag, letters, neutralize, neutralize_all,
                                        neutralize_value)

N = 65_536
ZW = "\u200b"

# --------------------------------------------------------------------------
# the forms replaced (quadratic on some inputs, same matches on all)
# --------------------------------------------------------------------------
_sp = _text._spaced
OLD_CONTROL = (
    r"<\x00*\|",
    r"\[\x00*/?\x00*" + _sp("inst") + r"\x00*\]",
    r"\[\x00*/?\x00*" + _sp("sys") + r"\x00*\]",
    r"<\x00*<\x00*/?\x00*" + _sp("sys") + r"\x00*>\x00*>",
    r"<\x00*/?\x00*s\x00*>",
    r"<\x00*/?\x00*" + _sp("start_of_turn"),
    r"<\x00*/?\x00*" + _sp("end_of_turn"),
    r"<\x00*/?\x00*" + _sp("bos") + r"\x00*>",
    r"<\x00*/?\x00*" + _sp("eos") + r"\x00*>",
)


def old_pattern(extra_tags=(), control=()):
    """``_pattern`` as it was: the tags, then the nine control patterns side by side."""
    names = sorted({t.casefold() for t in extra_tags if t} - set(PROTOCOL_TAGS), key=len, reverse=True)
    alts = ["(?:" + "|".join(_sp(t) for t in PROTOCOL_TAGS) + ")"]
    if names:
        alts.append("(?:" + "|".join(_sp(t) for t in names) + r")(?![\w-])")
    tag = r"<[\s/\x00]*(?:" + "|".join(alts) + ")"
    extra = [re.escape(_text._skeleton(t)) for t in control if t]
    return re.compile("|".join([tag, *OLD_CONTROL, *extra]))


PIECES = ["<", "<", "[", "]", ">", "/", "|", "\x00", "\x00", " ", "\n", "\\", "\\", "u003c", "x3c", "&",
          "amp;", "lt;", "lt", "#60;", "#x3c", "#0", "%", "25", "3c", "s", "sys", "inst", "INST", "y",
          "bos", "eos", "start_of_turn", "end_of_turn", "candidate", "grade", "reasoning", "response",
          "answer", "-", "n", "r", "t", "\\n", "&#10;", "%0A", "a", "im_end", "\"", "/"]


def random_texts(seed: int, count: int, longest: int = 14):
    rnd = random.Random(seed)
    for _ in range(count):
        yield "".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, longest)))


@pytest.mark.parametrize("tags, control", [((), ()), (("response", "answer", "s"), ("<|im_end|>", "[EOT]"))])
def test_the_factored_pattern_matches_where_the_old_one_did(tags, control):
    new, old = _text._pattern(tags, control), old_pattern(tags, control)
    for text in random_texts(2, 20_000):
        assert [m.span() for m in new.finditer(text)] == [m.span() for m in old.finditer(text)], text


BRACKET_PIECES = ["[", "[", "]", "/", "\x00", " ", "\n", "user", "assistant", "tool", "system", "inst", "sys", "the",
                  " end of", " start of", " assistant's", "\u2019s", " answer", "x", "(", "users", "u", "er", "_"]


@pytest.mark.parametrize("tags", [("[user]", "[assistant]", "[system]", "[tool]"),
                                  ("[the end of assistant's answer", "[the start of assistant's answer")])
def test_the_bracket_alternatives_factored_match_where_they_matched_side_by_side(tags):
    # '[' and its gaps are tested once, then a look-ahead at the next character: most '[' fail at
    # once (256 KiB of '[' took 2-3 times as long with a template's bracketed labels)
    labels = "|".join(map(_text._spaced_words, sorted({t[1:] for t in tags}, key=len, reverse=True)))
    side_by_side = re.compile(r"\[\x00*(?:/\x00*)?(?:" + "|".join(_text._BRACKET_NAMES) + r")\x00*\]"
                              + r"|\[" + _text._SPACES + "*(?:" + labels + r")(?!\w)")
    new = _text._pattern(tags, ())
    rnd = random.Random(5)
    for _ in range(20_000):
        text = "".join(rnd.choice(BRACKET_PIECES) for _ in range(rnd.randint(1, 14)))
        assert [m.span() for m in new.finditer(text)] == [m.span() for m in side_by_side.finditer(text)], text
    assert neutralize("[" * N + "user]", ("[user]",)) == "[" * (N - 1) + "(user]"
    assert neutralize(("[ " + ZW) * N, tags) == ("[ " + ZW) * N


def _escapes_of(ch: str) -> "list[str]":
    """``ch`` written in the escapes judges decode."""
    code, utf8 = ord(ch), ch.encode()
    names = [n for n, c in html.entities.html5.items() if c == ch and n.endswith(";")]
    byte_escapes = [f"\\x{code:02x}", f"\\{code:03o}"] if code < 256 else []
    return [f"&#{code};", f"&#x{code:X};", f"&#{code:05d}", *("&" + n for n in names), f"&amp;#{code};",
            urllib.parse.quote(ch, safe=""), urllib.parse.quote(urllib.parse.quote(ch, safe=""), safe=""),
            "".join(f"={b:02X}" for b in utf8), f"\\u{code:04x}", f"\\U{code:08X}", *byte_escapes,
            f"\\N{{{unicodedata.name(ch)}}}", f"\\u{{{code:x}}}"]


def _decoded_by_stdlib(esc: str) -> "set[str]":
    out = {html.unescape(html.unescape(esc)), urllib.parse.unquote(urllib.parse.unquote(esc)),
           quopri.decodestring(esc.encode()).decode()}
    try:
        out.add(esc.encode().decode("unicode_escape"))
    except UnicodeDecodeError:
        pass
    return out


@pytest.mark.parametrize("ch", ["<", "[", "#", "/", "|", "t", "\u200b", "\uff1c"])
def test_the_skeleton_reads_every_escape_as_its_character(ch):
    for esc in _escapes_of(ch):
        assert ch in _decoded_by_stdlib(esc) or esc.startswith("\\u{"), esc   # \u{..}: JavaScript's, Rust's
        want = ch.translate(_fold._TABLE) + "\x00" * (len(esc) - 1)
        assert _text._skeleton(f"a {esc} b") == f"a {want} b", esc


def test_the_escape_pattern_matches_where_the_look_behind_first_one_did():
    """A run of backslashes was opened by a look-behind, so no branch of the escape pattern
    started with its character and the engine tried every branch at each position (7.6 us on
    a 331-character answer holding '='); each branch opens with its character now."""
    # (the backslashes after the first are taken possessively: one way to match them, as the look-behind had)
    old = re.compile(_text._ESCAPE.pattern.replace(r"|\\(?<!\\\\)\\*+(?:", r"|(?<!\\)\\+(?:"), _text._ESCAPE.flags)
    assert old.pattern != _text._ESCAPE.pattern
    for text in random_texts(9, 20_000, longest=20):
        text = text.lower()   # the skeleton it reads
        assert [(m.span(), m.groupdict()) for m in _text._ESCAPE.finditer(text)] == \
            [(m.span(), m.groupdict()) for m in old.finditer(text)], text


#: characters outside ASCII a long text may hold a few of: harmless ones, and ones folding to
#: what the patterns look for (a fullwidth '<' or '#', a tag character, a surrogate)
OUTSIDE = ["\u2019", "\u2014", "\u00e9", "\u0130", "\u0430", "\u200b", "\uff1c", "\uff03", "\ufe64",
           "\U000e003c", "\ud800", "\u4e2d\u6587", "\u2474"]


def test_a_long_text_with_a_few_characters_outside_ascii_folds_as_one_translation_does():
    """A text with a few curly quotes or accents is folded a run at a time (its ASCII runs
    in C): the skeleton, the letters and what neutralising leaves alone as the whole
    text's translation gives them."""
    rnd, split = random.Random(21), 0
    for i, text in enumerate(random_texts(13, 3000, longest=120)):
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randint(0, len(text))
            text = text[:at] + rnd.choice(OUTSIDE) + text[at:]
        if i % 3 == 0:   # and texts without any of what the patterns look for
            text = re.sub(r"[<\[&\\%=#]", " ", text)
        split += _text._runs(text) is not None
        skel = text.translate(_fold._TABLE)
        if "&" in skel or "\\" in skel or "%" in skel or "=" in skel:
            skel = _text._ESCAPE.sub(lambda m: _text._read_escape(m.group()), skel)
        assert _text._skeleton(text) == skel, text
        for keep in ("", "\x01"):
            lowered = re.sub(_text._TEXT_ESCAPES, lambda m: _text._read_escape(m.group()), text.lower()) \
                if re.search(r"[&\\%]", text) else text
            assert letters(text, keep) == lowered.translate(_text._LETTERS).translate(_text._controls_dropped(keep))
        for tags in ((), ("answer", "# Rubric")):
            if _text._untouched(text, tags, ()):
                assert not contains_tag(text, tags) and encodable(text) == text, text
    assert split > 1500   # most took the runs
    line = "It\u2019s 4: twice 2, as the question asked, and the answer says why in one line. "
    assert _text._runs(line * 4) is not None and _text._untouched(line * 4, (), ())
    for marked in ("\uff1cgrade>", "\ud800", "\U000e003cgrade>"):   # fullwidth '<', a surrogate, a tag '<'
        assert not _text._untouched(line * 4 + marked, (), ()), marked
    assert not _text._untouched(line * 4 + "\n\uff03 Rubric", ("# Rubric",), ())   # a fullwidth heading


#: characters folding to no character, one, several (U+FDFA to 18), controls, escapes' openers, a
#: surrogate, a tag character, characters beyond the BMP
FOLDS = ["\u2474", "\ufb01", "\u00df", "\ufdfa", "\u3164", "\u2800", "\u0301", "\u200b", "\u0f73", "\u0410",
         "\uff21", "\u00e9", "\u0130", "\U0001d415", "\U0001f600", "\U000e0041", "\ud800", "\x00", "\x01",
         "\x02", "\x1f", "a", "B", "7", " ", "_", "!", "&", "#", "%", "\\", "amp;", "lt;", "x3c", "u00e9"]


def _folded_by_the_tables(text: str, keep: str) -> "tuple[str, str]":
    """The skeleton and the letters of ``text`` through the translation tables (a lookup per character)."""
    skel = text.translate(_fold._TABLE)
    if "&" in skel or "\\" in skel or "%" in skel or "=" in skel:
        skel = _text._ESCAPE.sub(lambda m: _text._read_escape(m.group()), skel)
    lowered = re.sub(_text._TEXT_ESCAPES, lambda m: _text._read_escape(m.group()), text.lower()) \
        if re.search(r"[&\\%]", text) else text
    return skel, lowered.translate(_text._LETTERS).translate(_text._controls_dropped(keep))


def test_long_texts_outside_ascii_fold_in_numpy_as_the_tables_translate():
    """A long text outside ASCII is folded through the code-point arrays (``_FoldTable.codes``: one
    gather, then one per fold of several characters), not a dict lookup per character: its skeleton
    and letters are what the translation tables give, over random texts and hostile runs."""
    rnd = random.Random(31)
    texts = ["".join(rnd.choice(FOLDS) for _ in range(rnd.randint(_fold._LONG // 4, 900))) for _ in range(400)]
    texts += [ch * N for ch in ("\u00df", "\ufdfa", "\ufb01\u0301", "\x01\u00e9", "\ud800a", "\u2474", "\U0001d415")]
    texts.append("".join(map(chr, range(0x100, 0x100 + N))))
    for text in texts:
        for keep in ("", "\x01"):
            skel, found = _folded_by_the_tables(text, keep)
            assert letters(text, keep) == found, text[:40]
        assert _text._skeleton(text) == skel, text[:40]
        assert len(_text._skeleton(text)) == len(text)
    long = [t for t in texts if len(t) >= _fold._LONG and _text._runs(t) is None]
    assert len(long) > 300   # most took the arrays


@pytest.mark.parametrize("block", [1, 5, 64])
def test_folds_made_and_decoded_a_block_at_a_time_read_as_the_tables_translate(monkeypatch, block):
    """``_FoldTable.codes`` makes a fold of several characters a block of characters out at a time, and
    ``_text_of`` decodes a block at a time (so no step holds the interpreter lock over 18 MB): blocks
    forced small, each cut anywhere in a fold, the letters and skeleton are what the tables give."""
    monkeypatch.setattr(_fold, "_BLOCK", block)
    rnd = random.Random(block)
    texts = ["".join(rnd.choice(FOLDS) for _ in range(rnd.randint(_fold._LONG, 600))) for _ in range(60)]
    texts += [ch * 700 for ch in ("\u00df", "\ufdfa", "\ufb01\u0301", "\x01\u00e9", "$\ufdfa", "\u2474")]
    for text in texts:
        for keep in ("", "\x01"):
            skel, found = _folded_by_the_tables(text, keep)
            assert letters(text, keep) == found, text[:40]
        assert _text._skeleton(text) == skel, text[:40]
    codes = _fold._codes("".join(texts))
    assert _fold._text_of(codes) == "".join(texts)


def test_a_fold_too_long_for_an_entry_reads_as_the_table_translates():
    """An entry of the arrays holds a fold of at most 62 characters; a table whose fold is longer
    (none of ours: NFKC writes at most 18) reads that text by ``str.translate`` instead."""
    table = _fold._FoldTable(lambda ch: ch * (70 if ch == "\u00e9" else ord(ch) % 4))
    for text in ("\u00e0\u00e1\u00e2" * 200, "\u00e0\u00e9" * 200, "\u00e9" + "\u00e1" * 300, "\u00e1" * 300):
        assert _fold._text_of(table.codes(text)) == text.translate(table), text[:8]


def test_match_starts_read_from_split_pieces_are_where_finditer_finds_them():
    """``neutralize`` reads where its matches start from the lengths of the pieces ``split`` cuts, not
    a Match object per match: the same starts as ``finditer``, over random skeletons and the tag and
    control-token patterns a grader builds (and a pattern with groups, read by ``finditer``)."""
    patterns = [_text._pattern((), ()), _text._pattern(("response", "[the end of answer", "#feedback"),
                                                       ("<|im_end|>", "</s>")), _text._pattern((), (), False),
                re.compile(r"(<)\|")]
    for text in [*random_texts(11, 3000, longest=30), "<|" * 500, "<c" * 300 + "<", ""]:
        skel = _text._skeleton(text)
        for pattern in patterns:
            assert _text._starts(pattern, skel).tolist() == [m.start() for m in pattern.finditer(skel)], text


def test_what_stands_for_no_character_is_kept():
    for text in ["&#99999999;", "&nosuchname;", "\\u{110000}", "\\N{NO SUCH NAME}", "%zz", "=g1", "&#;", "\\u12"]:
        assert _text._skeleton(text) == text.translate(_fold._TABLE), text


def test_neutralize_and_contains_tag_agree_with_the_old_pattern_on_random_text():
    for text in random_texts(5, 5000, longest=24):
        skel = _text._skeleton(text)
        starts = [m.start() for m in old_pattern().finditer(skel)]
        assert contains_tag(text) is bool(starts), text
        out = neutralize(text)
        if not starts:
            assert out == text
        else:
            assert out != text and neutralize(out) == out, text   # defanged, and idempotent


# --------------------------------------------------------------------------
# hostile inputs, 64 KiB: the right output (each was seconds, or an exception)
# --------------------------------------------------------------------------
def test_angle_bracket_then_a_long_gap_run():
    assert neutralize("<" + ZW * N) == "<" + ZW * N
    assert not contains_tag("<" + ZW * N)
    assert neutralize("<" + ZW * N + "|im_end|>") == "[" + ZW * N + "|im_end|>"
    assert neutralize("<" + ZW * N + "/" + ZW * N + "s>") == "[" + ZW * N + "/" + ZW * N + "s>"
    assert neutralize("<<" + ZW * N + "sys>>") == "<[" + ZW * N + "sys>>"   # at its second '<'
    assert neutralize("<" + ZW + "<" + ZW * N + "/sys>>") == "<" + ZW + "[" + ZW * N + "/sys>>"
    assert neutralize("<" + "\u0301" * N + "grade>") == "[" + "\u0301" * N + "grade>"


def test_square_bracket_then_a_long_gap_run():
    assert neutralize("[" + ZW * N) == "[" + ZW * N
    assert neutralize("[" + ZW * N + "/" + ZW * N + "INST]") == "(" + ZW * N + "/" + ZW * N + "INST]"
    assert neutralize("[" + ZW * N + "/" + ZW * N + "INST") == "[" + ZW * N + "/" + ZW * N + "INST"


def test_runs_of_angle_brackets_and_bars():
    assert neutralize("<" * N) == "<" * N
    assert neutralize("<|" * N) == "[|" * N
    assert neutralize("<s>" * N) == "[s>" * N
    assert neutralize("<" * N + "candidate") == "<" * (N - 1) + "[candidate"
    assert neutralize("[" * N + "INST]") == "[" * (N - 1) + "(INST]"


def test_runs_of_backslashes():
    assert neutralize("\\" * N) == "\\" * N
    assert neutralize("\\" * N + "u003cgrade>") == "[grade>"
    assert neutralize("\\" * N + "x3c|") == "[|"


def test_long_escapes():
    assert neutralize("&" + "amp;" * N + "lt;grade>") == "[grade>"
    assert neutralize("%" + "25" * N + "3cgrade>") == "[grade>"
    assert neutralize("&lt;" + ZW * N + "grade>") == "[grade>"   # the gaps after an escape go with it
    assert neutralize("&lt;" * N) == "&lt;" * N          # an escaped '<' alone is no tag
    assert neutralize("&lt;|" * N) == "[|" * N


def test_letters_over_hostile_runs():
    assert letters("\u3164" * N) == ""
    assert letters(("Th\u043eught process: " * (N // 17))) == "thoughtprocess" * (N // 17)
    assert letters("\u0301" * N + "x") == "x"


# --------------------------------------------------------------------------
# neutralize_value and neutralize_all: many texts in one pass
# --------------------------------------------------------------------------
class Colour(str, Enum):
    red = "red"


def test_many_strings_in_one_pass_match_one_call_each():
    rnd = random.Random(7)
    joiners = [chr(c) for c in (1, 2, 8, 0x0e, 0x1b)]
    for _ in range(300):
        texts = [t + rnd.choice(["", *joiners]) for t in random_texts(rnd.randint(0, 10 ** 6), rnd.randint(0, 40))]
        tags, ctl = rnd.choice([((), ()), (("response",), ("<|end|>",))])
        # one text alone (fewer than a batch: no joined pass), each closed at its end (hunt 24)
        one = {t: neutralize_all([t], tags, ctl)[0] for t in texts}
        expected = [one[t] for t in texts]
        assert neutralize_all(texts, tags, ctl) == expected
        assert neutralize_value(texts, tags, ctl) == expected
        value = {t: [t, {"k": t}] for t in texts}
        assert neutralize_value(value, tags, ctl) == {one[k]: [one[k], {"k": one[k]}] for k in texts}


def test_every_joiner_in_the_texts_falls_back_to_one_call_each():
    texts = [_text._JOINERS + f"<|{i}" for i in range(40)]
    assert neutralize_value(texts) == [_text._JOINERS + f"[|{i}" for i in range(40)]


def test_a_str_subclass_comes_back_as_its_text():
    # as plain text of the exact type: its own __str__ (what a template prints) may be anything
    out = neutralize_value({"colour": Colour.red, "list": [Colour.red] * 10, "x": "<|"})
    assert type(out["colour"]) is str and out["colour"] == "red" and out["list"] == ["red"] * 10
    assert all(type(c) is str for c in out["list"]) and out["x"] == "[|"


def test_a_long_list_of_short_hostile_strings():
    texts = [f"<|{i}" for i in range(N // 4)]
    assert neutralize_value({"steps": texts}) == {"steps": [f"[|{i}" for i in range(N // 4)]}


def test_joiners_are_nothing_a_pattern_looks_for():
    for j in _text._JOINERS:
        assert not j.isspace() and not re.match(r"\w", j) and _text._skeleton(j) == j
        assert neutralize(j) == j


def test_letters_reads_as_the_pattern_it_replaced():
    """``letters`` once removed each run of what is no letter by a pattern (60-90 ms on 256 KiB
    of U+2474, 260,000 runs); two translations now give the same letters."""
    pieces = ["\u2474", "\ufb01", "\u00df", "\u3164", "\u2800", "_", "a", "\u0410", "\uff21", "\u0301", " ", "(",
              "\x01", "\x02", "\x00", "\u200b", "9", "\u00bd", "\U0001d415", "\u02bc", "\u0f73", "!", "\u00e9"]
    rnd = random.Random(12)
    for keep in ("", "\x01"):
        old = re.compile(r"[^\w%s]+|[_%s]+" % (re.escape(keep), _text._FILLERS))
        for _ in range(5000):
            text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 12)))
            folded = "".join(unicodedata.normalize("NFKC", ch).casefold().translate(_fold._TABLE) for ch in text)
            assert letters(text, keep) == old.sub("", folded), (text, keep)


def test_the_unsealed_label_line_reads_as_the_loop_it_replaced():
    """``_unsealed_label`` walked back one blank line per step (62 ms on a reply ending in 256 KiB of
    line ends); it now skips them in one ``rstrip``: the same line, the same verdict."""
    from rewardjudge.readouts import _seal
    from rewardjudge.readouts._forms import EMPHASIS, inside_copy

    def old(text, copies, read_line):
        end = len(text)
        while end > 0:
            start = text.rfind("\n", 0, end) + 1
            line = text[start:end]
            if line.strip():
                head, sep, tail = line.partition(":")
                read = tail if sep and len(head) <= 24 else line
                value = read_line(read)
                if value is None or inside_copy(copies, start, end):
                    return []
                return [(start, _seal.Verdict(value, start, end, (), end - len(read.lstrip(EMPHASIS))))]
            end = start - 1
        return []

    read_line = _seal._label_reader(("PASS", "FAIL"))
    pieces = ["\n", "\r", " ", "\t", "PASS", "FAIL", "Verdict:", ":", "x", "**", "\u2028", "\x0b"]
    rnd = random.Random(7)
    for _ in range(5000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 10)))
        copies = ([1], [4]) if rnd.random() < 0.3 else ([], [])
        assert _seal._unsealed_label(text, copies, read_line) == old(text, copies, read_line), repr(text)


def _decoded_chars(monkeypatch) -> list[int]:
    """Counts the characters of every document handed to a JSON decoder (a failed decode counts
    the lines of its document up to where it failed: a cost of the document, not of the value)."""
    import json

    handed = [0]
    raw_decode = json.JSONDecoder.raw_decode

    def counting(self, s, idx=0):
        handed[0] += len(s)
        return raw_decode(self, s, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    return handed


def test_the_unsealed_reading_of_json_that_never_closes_hands_the_decoder_a_linear_share(monkeypatch):
    """``read_unsealed`` tries the last 256 ``{`` of a reply; each failed decode was handed the
    whole reply and counted its lines up to the failure (175-255 ms on 1 MB of ``{"a": ``). Each
    decode is now handed a window from its start: the characters handed stay linear in the reply."""
    from rewardjudge.readouts._seal import read_unsealed

    def check(obj):
        return obj["score"]

    handed = _decoded_chars(monkeypatch)
    text = ('{"a": ' * 50_000)[:262_144]
    decision = read_unsealed(text, check=check)
    assert decision.kind == "no verdict"
    assert handed[0] <= 2 * len(text)
    # a verdict after it: the same reading, still a linear share
    handed[0] = 0
    decision = read_unsealed(text + '\n{"score": 4}', check=check)
    assert decision.value == 4
    assert handed[0] <= 2 * len(text)
    # a sealed reading of the same reply, its last 64 seals opening objects that never close
    from rewardjudge.readouts._seal import read_sealed

    seal = "0123456789abcdef"
    handed[0] = 0
    decision = read_sealed(text + f'{{"seal": "{seal}", "a": ' * 64, seal, check=check)
    assert decision.kind == "invalid"
    assert handed[0] <= 2 * len(text)
    # 256 open objects around a long string: each start's decode read the whole string again
    # (256 times the reply); a start is decoded up to the later one that failed first
    handed[0] = 0
    text = ('{"a": ' * 256 + '"' + "x" * 262_144)[:262_143] + '"'
    assert read_unsealed(text, check=check).kind == "no verdict"
    assert handed[0] <= 2 * len(text)
    # the same with a verdict after them
    handed[0] = 0
    decision = read_unsealed(text + '\n{"score": 5}', check=check)
    assert decision.value == 5
    assert handed[0] <= 2 * len(text)
    # 256 closed objects around a long string: each start's decode read the whole string again; the
    # outermost is decoded once and the starts inside it are known (the window of the innermost too)
    def scored(obj):
        if "score" not in obj:
            raise ValueError("no score")
        return obj["score"]

    for tail in ("", " 1}"):   # the outermost closed, or broken at its end
        text = '{"a": ' * 256 + '"' + "x" * 262_144 + '"' + "}" * (256 - len(tail) // 3) + tail
        handed[0] = 0
        assert read_unsealed(text, check=scored).kind == "no verdict"
        assert handed[0] <= 5 * len(text)
    # a verdict around 128 of them and after another object: found, and no more read
    text = '{"score": 6, "a": ' + '{"a": ' * 128 + '"' + "x" * 262_144 + '"' + "}" * 128 + ', "b": {"c": 1}}'
    handed[0] = 0
    assert read_unsealed(text, check=scored).value == 6
    assert handed[0] <= 5 * len(text)


@pytest.mark.parametrize("first", [8, 3])
def test_a_decode_in_windows_reads_what_a_decode_of_the_whole_text_read(monkeypatch, first):
    """Windows of 8 characters (widened 8 times each try; ``first``: a first, shorter window
    before them) over random JSON-like text: every start decodes to the same value, end and repeated
    key as a decode of the whole text, or fails as it did; with a stop, to the same where its end is
    by the stop, else to nothing."""
    import json

    from rewardjudge.readouts import _scan, _seal

    def whole(text, start):
        repeated: list[str] = []

        def pairs(items):
            out = dict(items)
            if len(out) != len(items) and not repeated:
                seen: set[str] = set()
                repeated.append(next(k for k, _ in items if k in seen or seen.add(k)))
            return out

        try:
            obj, end = json.JSONDecoder(object_pairs_hook=pairs, strict=False).raw_decode(text, start)
        except (ValueError, RecursionError):
            return None, start, None
        return obj, end, repeated[0] if repeated else None

    monkeypatch.setattr(_scan, "MAX_SPAN", 8)
    monkeypatch.setattr(_scan, "_FIRST_SPAN", first)
    pieces = ['{', '}', '{"a": ', '{"a": 1}', '"', '"a"', '"a": ', ':', ',', ' ', '\n', '[', ']', '1', '1e',
              '1.5', '-', '-Infinity', 'Infinity', 'NaN', 'true', 'tr', 'null', '\\', '\\u00', '\\ud800',
              '\\udc00', '\\n', 'x', '"seal"', '9' * 5000, '{"a": "' + "y" * 40, '"b": 2, "b": 3',
              '\\u0041', '"\\u0041', '"{"', '"{ "', '"x\\u0041{', '{"a": "{"}', '{"a": "\\u0041{"}']
    rnd = random.Random(11)
    for _ in range(3000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 24)))
        starts = [i for i, ch in enumerate(text) if ch == "{"]
        for start in starts:
            want = whole(text, start)
            assert _seal._decode(text, start) == want, (text, start)
            stop = rnd.randint(start, len(text))
            cut = want if want[0] is not None and want[1] <= stop else (None, start, None)
            assert _seal._decode(text, start, stop) == cut, (text, start, stop)
            # a later start known to fail by the same stop: the same reading
            for later in starts:
                if start < later < stop and _seal._decode(text, later, stop)[0] is None:
                    assert _seal._decode(text, start, stop, later) == cut, (text, start, stop, later)


def test_the_recording_decoder_is_one_per_thread_and_emptied_for_each_decode():
    """The decoder that records closed objects and repeated keys is built once per thread: decodes
    in 8 threads at once, a decode after one that failed or repeated a key, each read as a decode
    on its own reads it (value, end, the first key repeated)."""
    import threading

    from rewardjudge.readouts import _scan

    texts = ['{"a": 1, "a": 2}', '{"b": {"c": 1, "c": 2}, "d": 3}', '{"e": [1, {"f": 2}]}', '{"g": ',
             '{"h": "x"} tail', '{"i": 1, "j": {"i": 2}}', '{"k": 1, "k": 1, "l": {"l": 0, "l": 1}}']
    alone = {t: _scan.decode_object(t, 0) for t in texts}
    assert [alone[t][2] for t in texts] == ["a", "c", None, None, None, None, "l"]
    failures: list[str] = []
    recorders: list[object] = []

    def work(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(3000):
            t = rnd.choice(texts)
            if _scan.decode_object(t, 0) != alone[t]:
                failures.append(t)
        recorders.append(_scan._LOCAL.recorder)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures
    assert len(set(recorders)) == 8   # one per thread, kept for its decodes
    _scan.decode_object(texts[1], 0)
    assert _scan._LOCAL.recorder.closed == [] and _scan._LOCAL.recorder.repeats == []   # none kept alive


def test_the_unsealed_objects_read_as_each_start_decoded_on_its_own(monkeypatch):
    """``_unsealed_objects`` decodes a start up to the last start tried that failed first, and knows
    the starts inside an object decoded around them (``Nested``, here after every object): over
    random JSON-like text (windows of 8 characters), the objects found are those every start,
    decoded on its own to the last object found, gives."""
    from rewardjudge.readouts import _scan, _seal
    from rewardjudge.readouts._seal import Verdict

    def old(text, copies, check):
        found = []
        text = _seal.lone_surrogates_out(text)   # each lone surrogate's escape a U+FFFD's, in place
        start = len(text)
        for _ in range(_seal._MAX_UNSEALED_STARTS):
            start = text.rfind("{", 0, start)
            if start < 0:
                break
            obj, end, repeated = _seal._decode(text, start, found[-1][0] if found else None)
            if repeated is not None or type(obj) is not dict or _seal.inside_copy(copies, start, end):
                continue
            try:
                found.append((start, Verdict(check(obj), start, end)))
            except (ValueError, TypeError, RecursionError):
                continue
        return found

    def check(obj):
        if "s" not in obj:
            raise ValueError("no score")
        return obj["s"]

    def key(found):
        return [(start, d.value, d.start, d.end) for start, d in found]

    monkeypatch.setattr(_scan, "MAX_SPAN", 8)
    monkeypatch.setattr(_scan, "_LONG", 1)
    pieces = ['{', '}', '{"a": ', '{"s": 1}', '{"s": 2', '"', '"a"', '"a": ', '"s": 3', ':', ',', ' ', '[',
              ']', '1', 'tr', '\\', '\\u0041', '"\\u0041', '"{"', '"x\\u0041{', '{"s": "{"}', '{"s": "\\u0041{"}', 'x',
              '{"a": "' + "y" * 40, '"b": 2, "b": 3', '\\\\', '\\"', '"}"', '{}', '}}', '{"s": {"s": ', '\\ud800',
              '{"s": [{"a": 1}, {"s": "}"}]}']
    rnd = random.Random(12)
    for _ in range(6000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 40)))
        copies = _seal.policy_copies(text, [text[3:20]] if rnd.random() < 0.2 else [], _seal._MIN_COPY)
        assert key(_seal._unsealed_objects(text, copies, check)) == key(old(text, copies, check)), text


def _defanged_one_by_one(text, skel, starts):
    """The loop ``_defanged`` replaced: each match's first character (after a heading's
    gaps) defanged, and an escape's padding dropped, one match at a time."""
    gaps = re.compile("\x00*")
    out = list(text)
    for s in starts:
        if skel[s] == "\x00":
            s = gaps.match(skel, s).end()
        out[s] = "(" if skel[s] == "[" else "["
        if text[s] in "&\\%=" and skel[s] != text[s]:
            end = gaps.match(skel, s + 1).end()
            out[s + 1:end] = [""] * (end - s - 1)
    return "".join(out)


def test_the_matches_defanged_at_once_read_as_one_by_one():
    """``neutralize`` defangs every match in one numpy pass (a text may hold one every 3
    characters): the same text as the loop it replaced, on random text dense with escapes,
    look-alikes, gaps, headings and the template's delimiter lines."""
    pieces = PIECES + [ZW, "\uff1c", "\u2039", "#", "##", "### Feedback:", "[The End of", " Answer]", "&#x5b;",
                       "=3C", "%5b", "\\u005b", "\U0001f600", "\u0301", "\ud800"]
    tags = ("response", "#feedback", "[the end of answer")
    rnd = random.Random(21)
    for _ in range(4000):
        text = encodable("".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 40))))
        skel = _text._skeleton(text)
        starts = [m.start() for m in _text._pattern(tags, ("<|im_end|>", "END")).finditer(skel)]
        if starts:
            assert _text._defanged(text, skel, starts) == _defanged_one_by_one(text, skel, starts), text


def test_the_code_point_tables_are_made_when_a_long_text_outside_ascii_first_comes():
    """The 4 MB arrays folding long texts outside ASCII (the skeleton's, the letters') are not
    made at import, nor for ASCII or short texts, nor for ``letters`` of a text whose few distinct
    characters outside ASCII are replaced by their letters: a process that never meets such a text
    never holds them, and one that meets it only in ``letters`` holds that one only."""
    import subprocess
    import sys

    code = ("from rewardjudge.readouts import _fold, _text as t\n"
            "made = lambda: (_fold._TABLE._array is not None, t._LETTERS._array is not None)\n"
            "t.neutralize('<think>' * 1000); t.neutralize('\\uff1cthink>'); t.letters('\\uff1c' * 100)\n"
            "t.letters('Thought process: ' * 1000)\n"
            "assert t.letters('\\uff21' * 1000) == 'a' * 1000\n"
            "assert made() == (False, False), 'made too early'\n"
            "wide = ''.join(map(chr, range(0xff21, 0xff3b)))\n"
            "assert t.letters(wide * 40) == 'abcdefghijklmnopqrstuvwxyz' * 40 and made() == (False, True)\n"
            "assert t.neutralize('\\uff1cthink>' * 1000) == '[think>' * 1000 and made() == (True, True)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_long_text_with_a_lone_surrogate_is_scanned_for_json_objects():
    """The depth bound of a long text's starts reads its code points with surrogates passed
    through: a lone surrogate in policy text over 4 KiB raised UnicodeEncodeError."""
    from rewardjudge.readouts import json_objects

    text = "\ud800" + " " * 5000 + '{"a": 1} {"b": "\ud800"}'
    assert [s.value for s in json_objects(text)] == [{"a": 1}, {"b": "\ud800"}]


def test_json_objects_widens_a_window_only_where_the_decode_needs_it():
    """``json_objects`` decodes each start in windows (``decode_within``), widened only where the
    window's error may be the window's cut: a syntax error early in a window widened it too, and
    5,000 broken objects spent the budget of wider windows before a long object after them."""
    from rewardjudge.readouts import json_objects

    text = '{"a" x} ' * 4000 + '{"b": "' + "y" * 20_000 + '"}'
    assert [(s.start, s.value) for s in json_objects(text)] == [(32_000, {"b": "y" * 20_000})]


def test_json_objects_tries_at_most_max_tries_starts_and_says_so():
    """A text opening more than ``MAX_TRIES`` objects (52,000 broken ones fit in 256 KiB, each a
    decode and an exception: 300 ms) is read up to that many starts; ``pydantic_parse`` says why
    an object past them is not read."""
    from pydantic import BaseModel

    from rewardjudge.core.structured_output import OutputParserException, pydantic_parse
    from rewardjudge.readouts._scan import MAX_TRIES, scan_objects

    class A(BaseModel):
        x: int

    answer = '{"x": 3}'
    for junk in ('{""} ', '{"a": 1} ', '{"a" x} '):
        text = junk * (MAX_TRIES - 1) + answer   # the answer is the last start tried
        spans, cut = scan_objects(text)
        assert not cut and spans[-1].value == {"x": 3} and pydantic_parse(text, A).x == 3
        text = junk + text
        spans, cut = scan_objects(text)
        assert cut and all(s.value != {"x": 3} for s in spans)
        with pytest.raises(OutputParserException, match=f"only the first {MAX_TRIES} places"):
            pydantic_parse(text, A)
    # starts inside an object decoded are no tries: one object holding 10,000 is read
    inner = '{"a": [' + ", ".join(['{"b": 1}'] * 10_000) + ']}'
    assert scan_objects(inner + " " + answer)[0][-1].value == {"x": 3}


def test_the_starts_found_in_numpy_are_where_the_pattern_matches():
    """``_starts`` of a long text (a ``{``, whitespace as ``\\s`` matches it, a ``"``) in numpy."""
    from rewardjudge.readouts import _scan

    assert all(re.match(r"\s", chr(c)) is None for c in range(0x3001, 0x110000))
    pieces = ["{", '"', " ", "\u2003", "a", '{"', "\n", "\x1c", "\u3000", "}", "\U0001f600", "\ud800", "\x85"]
    rnd = random.Random(17)
    for _ in range(200):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(_scan._SHORT + 1, 6000)))
        assert _scan._starts(text).tolist() == [m.start() for m in _scan._START.finditer(text)], text


def test_lone_surrogate_escapes_are_replaced_in_place_as_the_decoder_would_read_them():
    """``lone_surrogates_out`` writes each escape of a lone surrogate as ``\\ufffd`` (same length),
    keeps an escaped pair and an escaped backslash's text: decoding its output gives what decoding the
    text and replacing each lone surrogate gives, over random strings of escapes."""
    import json

    from rewardjudge.grade import encodable
    from rewardjudge.readouts._seal import lone_surrogates_out

    pieces = ["\\", "u", "d", "8", "c", "0", '"', "x", "\\ud800", "\\udc00", "\\\\", "\\ud83d\\ude00", "\\uD9FF"]
    rnd, decoded = random.Random(3), 0
    for _ in range(20000):
        text = '"' + "".join(rnd.choice(pieces) for _ in range(10)) + '"'
        try:
            want = encodable(json.loads(text))
        except ValueError:
            continue
        decoded += 1
        out = lone_surrogates_out(text)
        assert len(out) == len(text) and json.loads(out) == want, (text, out)
    assert decoded > 3000
    assert lone_surrogates_out('"\\ud83d\\ude00 \\\\ud800"') == '"\\ud83d\\ude00 \\\\ud800"'
