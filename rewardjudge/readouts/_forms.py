"""Declared verdict forms: the verdict a benchmark's own judge prompt asks for
(``Rating: [[{score}]]``, ``[[{label}]]``, ``[RESULT] {score}``), read as that
benchmark reads it (docs/sealed-verdicts.md). ``VerdictForm.read`` is the
unsealed reading; ``read_line`` reads the rest of a sealed ``VERDICT <seal>:`` line.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence, Union

from ..errors import ConfigError
from . import _gbnf
from ._decision import Decision, NoVerdict, Verdict, disagreeing
from ._copies import MAX_POLICY_TEXTS as _MAX_POLICY_TEXTS, inside_copy, policy_copies
from ._form_checks import checked_bounds as _checked_bounds, checked_labels as _checked_labels
from ._own import EMPHASIS, unwrap

__all__ = ["END_TOKENS", "VerdictForm", "inside_copy", "policy_copies"]

_SCORE, _LABEL, _OTHER = "{score}", "{label}", "{other}"
_PLACEHOLDER = re.compile(r"\{score\}|\{label\}")
_WHITESPACE = re.compile(r"(\s+)")
#: what a run of whitespace in a pattern matches: bounded, so no start position costs more than a few steps
_GAP = r"[ \t*_]{0,16}"
#: ... and one that holds a line break: a line break, one blank line between at most (a form over two lines,
#: ``[The Begin of Ranking Score]\n\\boxed{{score}}``)
_LINE_GAP = r"[ \t*_]{0,16}(?:\r?\n[ \t*_]{0,16}){1,2}"
_NUMBER = r"[+-]?\d{1,15}(?:\.\d{1,15})?"
#: after a score with no literal text after it: not more digits, nor the rest of a sum the judge works
#: out (``Final rating: 5 - 3 = 2``: the 5 is no verdict); ``4.5/5`` stays a score
_NOT_ARITHMETIC = r"(?!\d|[ \t]{0,2}[-+*×=][ \t]{0,2}\d)"
#: an ``{other}``: a number beside the verdict (the other answer's score), read whole and not its value
_OTHER_NUMBER = r"(?<![\w.+-])" + _NUMBER + r"(?!\.?\d)"
#: around a bare form's verdict (no literal text): the rest of its line, spaces, emphasis, a full stop
_LINE_HEAD = r"(?<![^\n])[ \t*_`~]{0,8}"
#: a bare form's name: one to three words and a colon (emphasis and spaces before the colon)
_NAME_WORDS = r"[^\W\d_]{1,16}(?:[ \t][^\W\d_]{1,16}){0,2}[*_]{0,4}[ \t]{0,2}:"
#: unsealed: a markdown heading's marks or a list's bullet before a bare form's name (``### Final verdict: N``,
#: ``- Usefulness: 3``), never before the verdict itself (``## 2`` and ``### A`` head sections, ``- 4`` is a sum)
_HEADING = r"(?:(?:#{1,6}|[-+\u2022])[ \t]{1,2}(?=" + _NAME_WORDS + "))?"
#: before a bare form's verdict: a name of one to three words and a colon, as judges label the number a
#: "scores ONLY" prompt asks for (``Score: 2``, ``Functional Correctness: 3``, ``**Usefulness:** 4``);
#: matched once, never given back (a lookahead and its backreference: an atomic group on Python 3.10)
_NAME = r"(?:(?=(?P<name>" + _NAME_WORDS + r"[*_]{0,4}[ \t]{0,4}))(?P=name))?"
#: unsealed: ... and emphasis after it, around the verdict alone (``Usefulness: **3**``)
_NAME_EMPH = r"(?:(?=(?P<name>" + _NAME_WORDS + r"[*_]{0,4}[ \t]{0,4}[*_]{0,4}))(?P=name))?"
_LINE_TAIL = r"[ \t*_`~.]{0,8}(?![^\r\n])"
#: unsealed: a scale after a bare form's score (``4/10``, ``4 out of 5``), as after a verdict alone on the next
#: line (``_ALONE``); ``_found`` drops a score above its scale (``9/7``)
_OUT_OF_GAP = r"(?:[ \t]{0,2}/[ \t]{0,2}|[ \t]{1,2}(?i:out[ \t]of)[ \t]{1,2})"
_OUT_OF = _OUT_OF_GAP + r"(?P<of>\d{1,3})"
_SCALE = "(?:" + _OUT_OF + ")?"
#: emphasis allowed where a word of a pattern meets its punctuation
_EMPH = r"[*_]{0,4}"
_RUNS = re.compile(r"\w+|[^\w\s]+")


Value = Union[float, str]


@functools.lru_cache(maxsize=256)
def _compile(pattern: str, labels: "tuple[str, ...] | None", unsealed: bool = False) -> re.Pattern[str]:
    """The regex of a (validated) pattern: group ``v`` is the value. The pattern's
    final full stop is optional (the judge may go on with the sentence: ``Output
    (a) is better, as ...``); a bare placeholder is the verdict alone on its line.
    ``unsealed`` (``VerdictForm.read``) adds what real judges write around a form and
    their benchmarks' parsers read (the comments marked "unsealed"); a sealed line's
    reading (``read_line``) never takes it."""
    text = pattern.strip()
    m = _PLACEHOLDER.search(text)
    assert m is not None
    before, tail = text[:m.start()], text[m.end():]
    after = tail.rstrip(".")
    stop = "(?:" + re.escape(tail[len(after):]) + ")?" if after != tail else ""
    json = unsealed and bool(_OBJECT_FORM.fullmatch(text))
    if json and before.rstrip().endswith(":") and after[:1] in "},":
        # unsealed, an object literal's bare value (``{"score": {score}}``) read bare or quoted (``"score": "7"``,
        # both quotes or neither), as its quoted value is and as a spaced-off head's is
        before, after = before.rstrip() + '"', '"' + after
    value = _value(m.group() == _SCORE, labels, before, after, unsealed)
    if not (before + after).replace(_OTHER, "").strip():
        # no literal text (``{score}``, ``{score} {other}``): the verdict's line holds nothing else but a name
        pair = _PAIR_GAP if unsealed else None
        scale = _SCALE if unsealed and m.group() == _SCORE and not after.strip() else ""
        # unsealed, a label alone: in the quote marks the prompt put around it ("relevant")
        quoted = unsealed and m.group() == _LABEL and not (before + after).strip()
        return re.compile(_LINE_HEAD + (_HEADING + _NAME_EMPH if unsealed else _NAME)
                          + _literal(before, pair, unsealed=unsealed) + (_OPEN_QUOTE if quoted else "")
                          + "(?P<v>" + value + ")" + (_CLOSE_QUOTE if quoted else "") + scale
                          + _literal(after, pair, unsealed=unsealed)
                          + (_NOTE if unsealed else "") + _LINE_TAIL)
    if before.strip() and before != before.rstrip():
        return re.compile(_spaced_off(before, value, after, unsealed, m.group() == _LABEL) + stop)
    return re.compile(_enclosed(before, value, after, m.group() == _SCORE, unsealed, json) + stop)


def _value(score: bool, labels: "tuple[str, ...] | None", before: str, after: str, unsealed: bool) -> str:
    """The regex of a form's value (for ``_compile``): a number, or one of ``labels``."""
    if score:
        # a bare number: not the tail of a longer number or word (nor of an {other}), nor its head
        return (r"(?<![\w.+-])" if not before else r"(?<![\d.])") + _NUMBER + ("" if after else _NOT_ARITHMETIC)
    # unsealed, a form that ends with a label after a spaced-off head in words (``GRADE: {label}``): a label
    # that is also a one-letter word, followed by a word in lower case, after the head in another case
    # than the form's, is prose ("to decide the grade: I think ..."), not a verdict
    prose = unsealed and not after and before != before.rstrip() and any(c.isalpha() for c in before)
    # sealed, the labels in any case where no two differ by case alone (``VERDICT <seal>: [[b>>a]]``, ``no``);
    # unsealed, so a label of two letters or more ("tie", "[[a>b]]", "LABEL: Relevant"), as the parsers that lower-
    # or upper-case the reply read it, never a one-letter one ("a" and "I" are words)
    distinct = len({lab.casefold() for lab in labels or ()}) == len(labels or ())
    return ("(?i:" if distinct and not unsealed else "(?:") + "|".join(
        _label(lab, distinct and unsealed, not before, not after) + (_PROSE if prose and lab in _WORD_LABELS else "")
        for lab in sorted(labels or (), key=lambda s: (-len(s), s))) + ")"


def _label(lab: str, caseless: bool, head: bool, tail: bool) -> str:
    """One label's regex (for ``_value``): in any case where ``caseless`` and it holds two letters or more."""
    return ("(?i:" if caseless and sum(c.isalpha() for c in lab) > 1 else "(?:") \
        + _bounded(re.escape(lab), lab, head, tail) + ")"


def _spaced_off(before: str, value: str, after: str, unsealed: bool, label: bool = False) -> str:
    """A pattern that spaces its verdict off (``[RESULT] {score}``): judges echo the prompt's
    "[RESULT] (an integer ...)" or add a colon, so take "[RESULT]: 4", "[RESULT] (4)", "[RESULT] [4]"; unsealed, a
    head of one bracketed word also as ``_bracket_heads`` says, a label also after the candidates' name."""
    name = before.rstrip()
    # the head in the form's own case, where the value asks (``_PROSE``)
    cs = "(?:(?=" + _literal(name.rstrip(":") if unsealed and _KEY_HEAD.fullmatch(name) else name, exact=True,
                             unsealed=unsealed) + r")(?P<cs>)|)" if "(?(cs)" in value else ""
    opened = ""
    if unsealed and _KEY_HEAD.fullmatch(name):
        # unsealed, a head of words and a colon (``score: {score}``): its words also a JSON key
        # (``{"score": 4, ...}``), which the pipelines that ask for such lines read with json.loads (MLflow)
        head = r"(?<!\w)(?P<jq>['\"])?" + cs + _literal(name[:-1], unsealed=True) + r"(?(jq)['\"])" + _EMPH \
            + r"[ \t]?:" + ":?"
    else:
        head = cs + _bounded(_literal(name, unsealed=unsealed), before, True, False)
        if unsealed and _BRACKETED_WORD.fullmatch(name):
            heads, opened = _bracket_heads(name, label)
            head = "(?:" + head + heads + ")"
        head += ":?"
    if unsealed:
        # a verdict alone on the next line, a blank one between at most, where the form ends with it
        # ("[RESULT]\n4", "**Score:**\n\n8"), as prometheus-eval's and Inspect's parsers read it
        below = "" if after.strip(". ") else "|" + _NEXT_LINE
        # and spaced off inside its brackets ("Rating: [ 4 ]")
        head += "(?:" + _GAP + below + ")" + _BRACKET_WORD \
            + r"(?:(?:(?P<o1>\()|(?P<o2>\[))" + _INNER_SPACE + r"|(?P<o3>['\"]))?" \
            + ("(?:" + _CANDIDATE + ")?" if label and opened else "")
        # ... a scale inside them ("Rating: [2/10]")
        close = opened + r"(?:(?(o1)|(?(o2)|(?!)))" + _OUT_OF + r")?(?(o1)" + _INNER_SPACE + r"\))(?(o2)" \
            + _INNER_SPACE + r"\])(?(o3)['\"])" + (_ALONE if below else "") + ")" * opened.count("(?(")
    else:
        head += _GAP + r"(?:(?P<o1>\()|(?P<o2>\[))?"
        close = r"(?(o1)\))(?(o2)\])"
    return head + "(?P<v>" + value + ")" + close + _bounded(_literal(after, unsealed=unsealed), after, False, True)


def _bracket_heads(name: str, label: bool) -> "tuple[str, str]":
    """Unsealed, the other heads of a spaced head that is one word in brackets (``[RESULT] {label}``), as
    prometheus-eval's parsers read them: the verdict inside the brackets after the word and a colon ("[RESULT: B]",
    group ``ib``); the word and a colon without the brackets at a line's start, a heading's marks or a bullet
    before it ("Result: B", "- Result: 4", ``nb``); for a label, the candidates' name (``_CANDIDATE``) and the label
    in the brackets, ending its line ("[Response B]", ``cb``), or alone on the reply's last line ("Response B",
    ``rb``). Returns them as alternatives to the head's own, and the opening of the close they need (its conditionals)."""
    word = _literal(name[1:-1], unsealed=True)
    heads = r"|(?P<ib>\[" + word + r"[ \t]{0,2}(?=:))|(?P<nb>(?<![^\n])[ \t*_]{0,4}" \
        + r"(?:(?:#{1,6}|[-+\u2022])[ \t]{1,2})?(?<!\w)" + word + r"[ \t]{0,2}(?=:))"
    opened = r"(?(ib)[ \t]{0,2}\]|"
    if label:
        heads += r"|(?P<cb>\[(?=" + _CANDIDATE + "))|(?P<rb>(?<![^\n])[ \t*_]{0,4}(?=" + _CANDIDATE + "))"
        opened += r"(?(cb)\]" + _ENDS_LINE + r"|(?(rb)(?=[ \t*_.]{0,8}[\s\x00]*\Z)|"
    return heads, opened


def _enclosed(before: str, value: str, after: str, score: bool, unsealed: bool, json: bool = False) -> str:
    """A pattern whose verdict sits against its text: in brackets, quotes or a tag, or after a word;
    ``json``: the pattern is an object literal (``_OBJECT_FORM``), its text read as ``_json_literal`` says."""
    head = _bounded(_literal(before, unsealed=unsealed, json=json), before, True, False)
    # a tag around the verdict (``<score>{score}</score>``): judges put it on a line of its own inside
    inner_head, inner_tail = (_TAG_GAP if before.endswith(">") else ""), (_TAG_GAP if after.startswith("<") else "")
    if before.endswith(("[", "(")) and after.startswith(("]", ")")):
        # brackets around the verdict (``[[{score}]]``): judges copy the prompt's example word in ("[[Rating: 8]]")
        inner_head = _BRACKET_WORD
        if unsealed:   # and space it off inside the brackets ("Rating: [[ 5 ]]", read by Auto-J)
            inner_head, inner_tail = _INNER_SPACE + inner_head, _INNER_SPACE
        if unsealed and before.endswith("[[") and after.startswith("]]") \
                and (not before[:-2].strip() or score and before[:-2].rstrip().endswith(":")):
            (head, close), after = _single_too(before[:-2], score), after[2:]
            inner_tail += close
    elif unsealed and before.endswith("{") and after.startswith("}"):
        # braces around the verdict (``\\boxed{{score}}``): spaced off inside ("\\boxed{ 5 }"), which NeMo-RL's
        # GenRM parser strips
        inner_head, inner_tail = _INNER_SPACE, _INNER_SPACE
    elif unsealed and before and after and before[-1] in "'\"" and after[0] in "'\"":
        # quotes around the verdict (``"score": "{score}"``): a JSON-mode judge writes the number bare
        # (``"score": 7``), which its benchmark's json.loads reads: the quotes are taken both or neither
        head = _bounded(_literal(before[:-1], unsealed=True, json=json), before, True, False) + r"(?P<q>['\"])?"
        inner_tail = r"(?(q)['\"]|(?!\w))"
        after = after[1:]
    return head + inner_head + "(?P<v>" + value + ")" + inner_tail \
        + _bounded(_literal(after, unsealed=unsealed, json=json), after, False, True)


def _single_too(lead: str, score: bool) -> "tuple[str, str]":
    """The head of a verdict in doubled brackets also read in single ones: a score after a name and a
    colon ("Rating: [5]"), as FastChat's run_judge_single falls back to (group ``sb``); a bare form's score
    or label alone on its line (in quote marks, both or neither) under a line that ends with a colon ("my
    final verdict is:\n\n[A]", as Llama-2-chat judges write it; group ``sl``), or as the whole reply ("[4]", as a
    judge told to output only the rating writes it; group ``sw``); never a bare "[5]" or "[A]" in a line (a list
    index, a citation, a quoted option). Returns the head and the closing brackets' regex."""
    if lead.strip():
        return _bounded(_literal(lead, unsealed=True), lead, True, False) + r"(?:\[\[|(?P<sb>\[))", r"(?(sb)\]|\]\])"
    name = r"(?P<sb>" + _SINGLE_NAME + r"\[)|" if score else ""
    close = r"(?(sl)\]" + _ALONE_UNDER + r"|(?(sw)\]" + _WHOLE_END + r"|\]\]))"
    return (r"(?:\[\[|" + name + r"(?P<sl>(?=\[)" + _UNDER_COLON + r"\[)|(?P<sw>" + _WHOLE_START + r"\[))",
            r"(?(sb)\]|" + close + ")" if score else close)


#: unsealed (``_spaced_off``): a spaced head that is one word in brackets (``[RESULT]``), read also as
#: ``_bracket_heads`` says
_BRACKETED_WORD = re.compile(r"\[[^\W\d_]{1,16}\]")
#: unsealed: the name a pairwise prompt gives its candidates, before a label ("[RESULT] Response B"), as
#: prometheus-eval's relative parser reads it
_CANDIDATE = r"(?i:response|assistant|answer|output|model)[ \t]{1,2}"
#: unsealed: nothing after a verdict on its line but spaces, emphasis and a full stop (looked at, not taken)
_ENDS_LINE = r"(?=[ \t*_.]{0,8}(?![^\r\n]))"
#: unsealed (``_spaced_off``): a head of one to three words and a colon, read as a JSON key too
_KEY_HEAD = re.compile(r"[^\W\d_]{1,16}(?: [^\W\d_]{1,16}){0,2}:")
#: labels that are also one-letter words ("I think", "A good answer")
_WORD_LABELS = ("A", "I", "a")
#: unsealed: after such a label, where the head is not in the form's case: not a word in lower case next
_PROSE = r"(?(cs)|(?![ \t]{1,4}[a-z]))"
#: whitespace (line breaks too) allowed between a tag and the verdict it holds
_TAG_GAP = r"\s{0,16}"
#: one word and a colon allowed inside the brackets that hold a verdict, before it
_BRACKET_WORD = r"(?:[^\W\d_]{1,16}[ \t]{0,2}:[ \t]{0,4})?"
#: unsealed: the name and colon before a score in single brackets, for a form that doubles them ("Rating: [5]")
_SINGLE_NAME = r"(?<!\w)[^\W\d_]{1,16}[*_]{0,2}[ \t]{0,2}[:\uff1a][*_]{0,2}[ \t]{0,4}"
#: unsealed: the start of a line right under one that ends with a colon, one blank line between at most, maybe
#: after emphasis or an opening quote mark (group ``sq``) (``_single_too``), as fixed-width look-behinds: the
#: verdict's span is its own brackets, so a copy of the policy's "[A]" holds it
_UNDER_COLON = "(?:" + "|".join(
    "(?:" + "|".join("(?<=:" + re.escape(gap + mark) + ")" for gap in (
        "\n", "\n\n", " \n", " \n\n", "**\n", "**\n\n", "\r\n", "\r\n\r\n") for mark in marks) + ")" + group
    for marks, group in ((("", "**", "*"), ""), (("\"", "\u201c"), "(?P<sq>)"))) + ")"
#: ... and what may follow such a verdict in single brackets on its line: its closing quote mark, emphasis, a full
#: stop (looked at, not taken: ``_UNDER_COLON``)
_ALONE_UNDER = r"(?=(?(sq)[\"\u201d])[*_]{0,2}[ \t.]{0,4}(?![^\r\n]))"
#: unsealed: the reply's start (one space or line break before) and end (emphasis, a stop, spaces after) (``_single_too``)
_WHOLE_START = r"(?:(?<![\s\S])|(?<=\A[ \n]))"
_WHOLE_END = r"(?=[*_]{0,2}[ \t.]{0,4}[\s\x00]*\Z)"
#: unsealed: the gap from a spaced head to a verdict alone on the next line, one blank line between at most
_NEXT_LINE = r"[ \t*_]{0,16}(?:\r?\n[ \t]{0,4}){1,2}[ \t*_]{0,8}(?P<nl>)"
#: ... and what may follow that verdict on its line: a scale (``8/10``, ``4 out of 5``), emphasis, a full stop
_ALONE = r"(?(nl)(?=(?:" + _OUT_OF_GAP + r"\d{1,3})?[ \t*_`~.]{0,8}(?![^\r\n])))"
#: unsealed (``_compile``): spaces inside the brackets that hold a verdict
_INNER_SPACE = r"[ \t]{0,2}"
#: unsealed: a bare form's spaces between its verdict and an ``{other}`` may hold a comma (``8, 9``, read by
#: Vicuna's, LLaVA's and JudgeLM's ``parse_score``)
_PAIR_GAP = r"[ \t*_]{0,16},?[ \t*_]{0,16}"
#: unsealed: quote marks around a bare form's label alone, as its prompt quoted it (``"relevant"``, Phoenix's
#: rails; OpenAI evals' get_choice drops them), both or neither
_OPEN_QUOTE = "(?P<bq>[\"'\u201c\u2018])?"
_CLOSE_QUOTE = "(?(bq)[\"'\u201d\u2019])"
#: unsealed: a note in parentheses after a bare form's verdict on its line (``Score: 0 (the code is empty)``)
_NOTE = r"(?:[ \t]{1,4}\([^()\r\n]{1,200}\))?"


def _bounded(regex: str, text: str, head: bool, tail: bool) -> str:
    """``regex`` (of ``text``) kept from matching inside a longer word at its ``head``/``tail``."""
    if head and text and _is_word(text[0]):
        regex = r"(?<!\w)" + regex
    if tail and text and _is_word(text[-1]):
        regex += r"(?!\w)"
    return regex


def _literal(text: str, pair: "str | None" = None, exact: bool = False, unsealed: bool = False,
             json: bool = False) -> str:
    """Literal pattern text as regex: words case-insensitive, whitespace a
    bounded gap (a line break where the pattern breaks its line), a little
    markdown emphasis allowed where a word meets punctuation (``**Rating**:``
    for ``Rating:``), either quote mark for either; an ``{other}`` is a number;
    ``pair``: the regex of a part that is only whitespace beside an ``{other}``; ``exact``: words in
    their own case; ``unsealed``: a space allowed before a colon after a word or a quote (``GRADE : C``,
    French typography's ``Note : 7``, ``"score" : 7``), as Inspect's ``GRADE\\s*:`` and ``json.loads`` read it;
    ``json``: a part of an object literal form, read as ``_json_literal`` says."""
    if json:
        return _json_literal(text)
    if pair is not None and _OTHER in text:
        return _OTHER_NUMBER.join(pair if part and not part.strip() else _literal(part, unsealed=unsealed)
                                  for part in text.split(_OTHER))
    case = "(?:" if exact else "(?i:"
    return _OTHER_NUMBER.join(
        "".join((_LINE_GAP if "\n" in piece else _GAP) if i % 2 else
                _EMPH.join(case + _run(run, unsealed and j > 0) + ")" for j, run in enumerate(_RUNS.findall(piece)))
                for i, piece in enumerate(_WHITESPACE.split(part)))
        for part in text.split(_OTHER))


#: unsealed: a form that is a JSON (or Python) object literal, a quote mark first inside its braces
#: (``{"model": "{label}", "rank": 1}``)
_OBJECT_FORM = re.compile(r"\{\s*['\"].*\}", re.S)
#: ... the whitespace json.loads and ast.literal_eval skip around its punctuation: a judge's pretty-printed
#: JSON (a function call's arguments) breaks its lines and indents there; two line breaks at most
_JSON_GAP = r"[ \t]{0,16}(?:\r?\n[ \t]{0,32}){0,2}"
_JSON_PUNCT = re.compile(r"\s*([{}\[\],:])\s*")


def _json_literal(text: str) -> str:
    """A part of an object literal form as regex (for ``_literal``): its punctuation (``{ } [ ] , :``) with
    ``_JSON_GAP`` on each side, where JSON allows whitespace (before a ``}``, ``]``, ``,`` or ``:`` that opens
    the part, after a ``{``, ``[``, ``,`` or ``:`` that ends it), its other text as ``_literal`` reads it."""
    parts = [p for p in _JSON_PUNCT.split(text) if p.strip()]
    regex = _JSON_GAP.join(re.escape(p) if _JSON_PUNCT.fullmatch(p) else _literal(p, unsealed=True) for p in parts)
    head = _JSON_GAP if parts and parts[0] in "}],:" else ""
    return head + regex + (_JSON_GAP if parts and parts[-1] in "{[,:" else "")


def _run(run: str, spaced_colon: bool) -> str:
    """One run of a pattern's text (a word, or punctuation after a word where ``spaced_colon``) as regex,
    for ``_literal``: a quote mark either quote mark (judges write Python's quotes where a form has JSON's,
    and back); where ``spaced_colon``, a space allowed before a colon
    that opens the run or follows a quote in it."""
    out = []
    for k, ch in enumerate(run):
        if spaced_colon and ch == ":" and (k == 0 or run[k - 1] in "'\""):
            out.append("[ \t]?")
        out.append("['\"]" if ch in "'\"" else re.escape(ch))
    return "".join(out)


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


@dataclass(frozen=True)
class VerdictForm:
    """A declared verdict form, read as docs/sealed-verdicts.md says: ``pattern`` with one
    ``{score}`` (a number within the inclusive ``bounds``) or ``{label}`` (one of ``labels``,
    longest first), maybe an ``{other}`` (a number beside the verdict that is not its value).
    One bounded ``finditer`` pass: linear. A bad form raises ``ConfigError``.

    >>> form = VerdictForm("[[{score}]]", bounds=(1, 10))
    >>> form.read("Helpful and correct. Rating: [[8]]").value, form.read("Rating: [[11]]").ok
    (8.0, False)
    """

    pattern: str
    labels: "tuple[str, ...] | None" = None
    bounds: "tuple[float, float] | None" = None

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str):
            raise ConfigError(f"a verdict form's pattern must be a string, got {self.pattern!r}")
        holders = _PLACEHOLDER.findall(self.pattern)
        if len(holders) != 1:
            raise ConfigError(f"a verdict form needs exactly one {_SCORE} or {_LABEL}, "
                              f"{self.pattern!r} has {len(holders)}")
        if holders[0] == _LABEL:
            labels = _checked_labels(self.pattern, self.labels)
            if self.bounds is not None:
                raise ConfigError(f"bounds apply to {_SCORE}; the form {self.pattern!r} holds {_LABEL}")
            object.__setattr__(self, "labels", labels)
        elif self.labels is not None:
            raise ConfigError(f"labels apply to {_LABEL}; the form {self.pattern!r} holds {_SCORE}")
        elif self.bounds is not None:
            object.__setattr__(self, "bounds", _checked_bounds(self.bounds))

    def _value(self, raw: str) -> "Value | None":
        if self.labels is not None:   # a label written in another case (``_value``): the label declared
            return raw if raw in self.labels else next(lab for lab in self.labels if lab.casefold() == raw.casefold())
        value = float(raw)
        return value if self.bounds is None or self.bounds[0] <= value <= self.bounds[1] else None

    def _found(self, text: str) -> "list[tuple[int, int, Value]]":
        """Each occurrence in ``text`` as ``(start, end, value)``, in order (a number outside
        ``bounds`` is none): no object per occurrence, 256 KiB of quoted policy text holds 50,000."""
        if not isinstance(text, str):
            return []
        regex = _compile(self.pattern, self.labels, True)
        scaled = "of" in regex.groupindex
        return [(m.start(), m.end(), v) for m in regex.finditer(_plain(text, self.pattern))
                if (v := self._value(m.group("v"))) is not None
                and (not scaled or m.group("of") is None or v <= int(m.group("of")))]

    def find(self, text: str) -> list[Verdict]:
        """Every occurrence of the form in ``text``, in order."""
        return [Verdict(v, start, end) for start, end, v in self._found(text)]

    def read(self, text: str, policy_texts: Sequence[str] = ()) -> Decision:
        """The unsealed reading: the last occurrence the judge wrote, skipping
        those inside a copy of one of ``policy_texts``, verbatim or as a judge
        re-renders it (``_DROP``); the values of earlier occurrences that
        disagree with it are ``others``."""
        found = self._found(text)
        if not found:
            return NoVerdict(f"no verdict of the form {self.pattern!r} in the reply", kind="no verdict")
        texts = (policy_texts,) if isinstance(policy_texts, str) else policy_texts
        copies = policy_copies(text, texts)
        # a verdict's span less the emphasis and full stop the judge put around a copy ("10." after "10")
        cores = [span for f in found if not inside_copy(copies, *(span := _core(text, *f))[3:])]
        if cores and texts:
            # a copy as the judge re-renders it: spaces, line breaks, emphasis, a line's heading, bullet or quote
            # marks and end-of-turn tokens changed or dropped (``_DROP``)
            masked = _unmarked(text).translate(_DROP)
            shown = [_unmarked(p).translate(_DROP).replace("\x00", "")
                     for p in list(texts)[:_MAX_POLICY_TEXTS] if isinstance(p, str)]
            folded = policy_copies(masked.replace("\x00", ""), shown)
            if folded[0]:
                cores = _outside_folded(masked, folded, cores)
        found = [(start, end, v) for start, end, v, _, _ in cores]
        if not found:
            return NoVerdict(f"every verdict of the form {self.pattern!r} in the reply lies "
                             f"inside a copy of the policy's text", kind="no verdict")
        start, end, last = found[-1]
        return Verdict(last, start, end, disagreeing((v for _, _, v in found[:-1]), last))

    def read_line(self, rest: str) -> "Value | None":
        """The value of what follows ``VERDICT <seal>:`` when it is exactly one occurrence of the form, or
        (``_alone``) its value alone, in the form's brackets or after a name and a colon (``[[2]]``, ``2``,
        ``Score: 2``), the seal binding it: emphasis, a final full stop and spaces inside brackets tolerated, a
        label in another case where no two labels differ by case alone, a score over the top of ``bounds``
        (``[[8/10]]``); else None."""
        raw = rest.strip()
        views = [raw, unwrap(raw), _INSIDE_BRACKETS.sub("", raw)]
        if self.labels is None and self.bounds is not None:
            cut, over = _over_top(_num(self.bounds[1])).subn("", raw)
            views += [cut, unwrap(cut)] if over == 1 else []
        for form in _alone(self.pattern):
            regex = _compile(form, self.labels)
            for candidate in views:
                m = regex.fullmatch(candidate)
                if m is not None:
                    value = self._value(m.group("v"))
                    return value if self.labels is None or value in self.labels else \
                        {lab.casefold(): lab for lab in self.labels}[value.casefold()]   # type: ignore[union-attr]
        return None

    def grammar(self) -> str:
        """The form as a GBNF expression, for a grammar forcing a sealed verdict: its literal text,
        the value one of the labels or of the numbers within the bounds (``_offered``), else any number
        (as an ``{other}`` is).

        >>> VerdictForm("Rating: [[{score}]]", bounds=(1, 3)).grammar()
        '"Rating: [[" ("1" | "2" | "3") "]]"'
        """
        values = self.labels or _offered(self.bounds)
        value = "(" + " | ".join(map(_gbnf.literal, values)) + ")" if values else _gbnf.NUMBER
        return " ".join(value if p in (_SCORE, _LABEL) else _gbnf.NUMBER if p == _OTHER else _gbnf.literal(p)
                        for p in re.split(r"(\{score\}|\{label\}|\{other\})", self.pattern.strip()) if p)

    def instruction_text(self) -> str:
        """The form with a placeholder where the verdict goes (``[[<score from 1 to
        10>]]``), for a prompt: never itself a verdict a judge could echo."""
        m = _PLACEHOLDER.search(self.pattern)
        assert m is not None
        head, tail = (part.replace(_OTHER, "<other score>")
                      for part in (self.pattern[:m.start()], self.pattern[m.end():]))
        if self.labels is None:
            what = ("<score>" if self.bounds is None
                    else f"<score from {_num(self.bounds[0])} to {_num(self.bounds[1])}>")
            return head + what + tail
        text = head + "<one of " + ", ".join(self.labels) + ">" + tail
        if self.find(text):          # a label list the form would read: name it without the labels
            text = head + "<label>" + tail
        return text


#: unsealed: spaces other than a space and a tab that judges write in a form (a no-break space after a colon,
#: an ideographic one in CJK text), read as a space, as the parsers' ``\\s`` and ``str.strip`` read them
_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
#: The end-of-turn and end-of-sequence tokens a server may leave in a judge's reply or a policy's response
#: (the one list: the unsealed reading's line ends and copy folding here, what may follow a sealed line's
#: label in ``_seal``, what the reward server strips off a response's end): each token that a current open
#: model's generation config stops on and that ends a turn, a message or the text (not a role header such as
#: Phi-3's ``<|assistant|>``), family by family, then ``<|eos|>``, a name custom tokenizers give their end.
#: A view whose result could depend on the order its tokens are tried in takes them longest first.
END_TOKENS: tuple[str, ...] = (
    "</s>",                                              # Llama 2, Mistral
    "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>",       # Llama 3.x: turn, message (a tool's turn), text
    "<|eot|>", "<|eom|>",                                # Llama 4: turn, message
    "<|im_end|>", "<|endoftext|>",                       # ChatML (Qwen, SmolLM, Phi-4), and its text's end
    "<|end|>", "<|return|>", "<|call|>",                 # Phi-3; gpt-oss: message, final answer, tool call
    "<end_of_turn>", "<eos>",                            # Gemma
    "<\uff5cend\u2581of\u2581sentence\uff5c>",          # DeepSeek V3, R1
    "<|END_OF_TURN_TOKEN|>",                             # Cohere Command R, Command A
    "<|eos|>",
)
#: unsealed: each end token, longest first, as ``_plain`` shows it: a line break padded with NULs
_END_PADS = {tok: "\n" + "\x00" * (len(tok) - 1) for tok in sorted(END_TOKENS, key=len, reverse=True)}


def _plain(text: str, pattern: str) -> str:
    """``text`` as an unsealed reading of ``pattern`` reads it, each character where it was (``_SPACES`` a
    space, an ``END_TOKENS`` token that ``pattern`` does not hold a line break padded with NULs, which no
    form reads)."""
    if not text.isascii():
        text = _SPACES.sub(" ", text)
    if "<" in text:
        for tok, pad in _END_PADS.items():
            if tok in text and tok not in pattern:
                text = text.replace(tok, pad)
    return text


#: around a verdict's span, not part of it (``_core``)
_AROUND = " \t*_`~."


def _core(text: str, start: int, end: int, value: Value) -> "tuple[int, int, Value, int, int]":
    """A verdict ``(start, end, value)`` and its span without the spaces, emphasis and full stops at its ends
    (a bare form's line)."""
    if text[start] not in _AROUND and text[end - 1] not in _AROUND:
        return start, end, value, start, end
    piece = text[start:end]
    return start, end, value, start + len(piece) - len(piece.lstrip(_AROUND)), start + len(piece.rstrip(_AROUND))


#: unsealed copies (``read``): what a judge quoting the policy's text may change or drop, dropped: whitespace (a
#: no-break space, a line re-wrapped), emphasis, a heading's, a quote's and a bullet's marks, end-of-turn tokens
#: (``_plain`` makes them a line's end and NULs): each made a NUL, then NULs dropped; a copy is also found where
#: the policy had no such marks. And ``[`` read as ``<``: the neutraliser shows the judge ``[think>`` for
#: ``<think>``, and a judge quoting it may write it back, every ``[`` with it (``attacks.repair``)
_DROP = {**dict.fromkeys(map(ord, " \t\n\r\f\v\x00\x1c\x1d\x1e\x1f\x85\u1680\u2028\u2029*_`~#>-+\u2022"), 0),
         ord("["): "<"}


#: an end-of-turn token as the neutraliser shows it to the judge (``[|eot_id|>``), which a judge may write back
_SHOWN_TOKENS = {"[" + tok[1:]: "\x00" * len(tok) for tok in _END_PADS}


def _unmarked(text: str) -> str:
    """``text`` as ``_plain`` reads it, each end-of-turn token, as written or as shown to the judge, a line's
    end and NULs, each character where it was: what ``_DROP`` folds for an unsealed reading's copies."""
    text = _plain(text, "")
    if "[" in text:
        for tok, pad in _SHOWN_TOKENS.items():
            if tok in text:
                text = text.replace(tok, pad)
    return text


def _outside_folded(masked: str, folded: "tuple[list[int], list[int]]", cores: list) -> list:
    """The ``cores`` (``_core``, in order, not overlapping) outside ``folded``, copies in the fold of a text;
    ``masked``: the text with what ``_DROP`` drops a NUL. One pass over the text (``str.count``, no slices)."""
    out, at, size = [], 0, 0
    for core in cores:
        start, end = core[3], core[4]
        size += start - at - masked.count("\x00", at, start)
        fs = size
        size += end - start - masked.count("\x00", start, end)
        at = end
        if not inside_copy(folded, fs, size):
            out.append(core)
    return out


@functools.lru_cache(maxsize=256)
def _alone(pattern: str) -> "tuple[str, ...]":
    """``pattern``, then, where it holds no ``{other}`` (beside one, a number alone may be either), its value
    alone in the brackets right around it (``[[{score}]]`` of ``Rating: [[{score}]]``) and bare."""
    m = _PLACEHOLDER.search(pattern)
    assert m is not None
    if _OTHER in pattern:
        return (pattern,)
    before, after = pattern[:m.start()], pattern[m.end():]
    opened = len(before) - len(before.rstrip("[({"))
    closed = len(after) - len(after.lstrip("])}"))
    bracketed = before[len(before) - opened:] + m.group() + after[:closed] if opened and opened == closed else ""
    return tuple(dict.fromkeys(f for f in (pattern, bracketed, m.group()) if f))


#: spaces just inside brackets, which a sealed line's reading drops (``[[ 8 ]]``, ``[[ B>>A ]]``)
_INSIDE_BRACKETS = re.compile(r"(?<=[\[(])[ \t]{1,4}|[ \t]{1,4}(?=[\])])")


@functools.lru_cache(maxsize=64)
def _over_top(top: str) -> "re.Pattern[str]":
    """A score's ``/top`` (``8/10``, ``8 / 10``) on a sealed line, ``top`` the form's: cut, the score is read."""
    return re.compile(r"(?<=\d)[ \t]{0,2}/[ \t]{0,2}" + re.escape(top) + r"(?![\d.])")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _offered(bounds: "tuple[float, float] | None") -> "list[str]":
    """The scores a grammar offers within ``bounds``: whole numbers (tenths for a range under 2),
    none (any number) without bounds, or where there would be none or over 101."""
    if bounds is None:
        return []
    step = 1 if bounds[1] - bounds[0] >= 2 else 0.1
    first, last = math.ceil(bounds[0] / step - 1e-9), math.floor(bounds[1] / step + 1e-9)
    return [_num(round(k * step, 1)) for k in range(first, last + 1)] if 0 <= last - first <= 100 else []
