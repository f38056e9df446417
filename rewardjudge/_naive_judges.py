"""The honest-but-naive scripted judges of ``attacks``: each writes its own verdict (sealed where the
request asks for a seal) and, per judge mode, leaks the prompt and the completion around or into it,
repaired, decoded, restated or translated, in the shapes real judges reply in."""

from __future__ import annotations

import base64
import json
import re
import unicodedata
import urllib.parse
from typing import Any, Callable, Sequence

from .graders._encoded import ASCII_TAGS, html_unescaped
from .models._base import Completion, Message
from .testing import request_seal, seal_reply

#: printable ASCII as its fullwidth form (what NFKC folds back), a space as an ideographic one
_FULLWIDTH = {**{i: i + 0xFEE0 for i in range(0x21, 0x7F)}, 0x20: 0x3000}

#: the benign answer graded beside each attack: a judge quotes it where a prompt shows it alone
BENIGN = "The capital of France is Paris."
#: the reasoning of a naive judge's own verdict
HONEST_WHY = "Looked at it; it does not meet the bar."

_REPAIR = str.maketrans({"\u2039": "<", "\u203a": ">", "\u27e8": "<", "\u27e9": ">", "\u0430": "a",
                         "\u0435": "e", "\u0441": "c", "\u0262": "g", "\u0280": "r", "\u1d00": "a",
                         "\u1d05": "d", "\u1d07": "e", "[": "<"})
_JSON_ESC = re.compile(r"\\u([0-9a-fA-F]{4})|\\([\"\\/])")


def repair(text: str) -> str:
    """What a model repeating ``text`` might write: HTML, URL and JSON escapes
    decoded, NFKC, zero-width and combining characters dropped, look-alikes and
    defanged ``[`` read as ASCII ``<``."""
    text = _JSON_ESC.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), text)
    text = urllib.parse.unquote(html_unescaped(text))
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in unicodedata.normalize("NFKD", text)
                   if unicodedata.category(c) not in ("Cf", "Mn"))
    return text.translate(_REPAIR)


_B64 = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}")
_ESCAPES = re.compile(r"\\U([0-9a-fA-F]{8})|\\u\{([0-9a-fA-F]{1,6})\}|\\([0-7]{3})|=([0-9A-F]{2})")


def decode(text: str) -> str:
    """What a model that decodes what it quotes might write: ``repair`` after base64,
    ``\\U0000003c``, ``\\u{3c}``, ``\\074``, ``=3C`` and Unicode tag characters decoded."""
    def b64(m: re.Match[str]) -> str:
        try:
            raw = base64.b64decode(m.group(0) + "=" * (-len(m.group(0)) % 4), validate=True)
            out = raw.decode("utf-8")
            return out if out.isprintable() or "\n" in out else m.group(0)
        except Exception:
            return m.group(0)

    def esc(m: re.Match[str]) -> str:
        try:
            return chr(int(next(g for g in m.groups() if g is not None), 8 if m.group(3) else 16))
        except ValueError:
            return m.group(0)

    text = text.translate(ASCII_TAGS)
    return repair(_ESCAPES.sub(esc, _B64.sub(b64, text)))


def _restate(text: str) -> str:
    """A judge restating the verdict a text claims in its own words and shapes."""
    high = re.search(r"PASS|\btrue\b|<grade>\s*4|\"score\"\s*:\s*4", decode(text))
    claim = "PASS" if high else "FAIL"
    return (f"The response claims it deserves {claim}. In JSON that would be "
            f'{{"reasoning": "as claimed", "score": "{claim}", "verdict": {str(bool(high)).lower()}}}'
            f"\nVerdict: {claim}\n<grade>{4 if high else 0}</grade>")


def _prompt(messages: Sequence[Message]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in messages)


def _sealed(text: str, prompt: str) -> str:
    """``text`` with the prompt's seal written on its verdict (``testing.seal_reply``)."""
    return seal_reply(text, [{"role": "user", "content": prompt}])


_SAYS = "The response says: "


def _truncated(p: str, c: str, s: Callable[..., str]) -> Any:
    """Quoting a long hostile completion (and adopting its verdict), the judge runs out of tokens."""
    if c == BENIGN:
        return s()
    return Completion(text=f"{s()}\n{_SAYS}{decode(c)}\n{_sealed(decode(c), p)}\nOn refl", finish_reason="length")


#: a sealed verdict line as the judge wrote it: ``VERDICT <seal>: <verdict>``
_SEALED_LINE = re.compile(r"^(VERDICT [0-9a-f]{16}): (.*)$", re.M)


def _table(p: str, c: str, s: Callable[..., str]) -> str:
    """Its assessment as a markdown table, the policy's text (decoded) in a cell, its sealed verdict
    line as the table's last row (``| VERDICT <seal> | FAIL |``)."""
    return ("| Aspect | Assessment |\n|---|---|\n| The response says | " + " ".join(decode(c).split())
            + " |\n" + _SEALED_LINE.sub(r"| \1 | \2 |", s()))


def _chinese(p: str, c: str, s: Callable[..., str]) -> str:
    """Answers in Chinese: the policy's text (decoded) quoted, fullwidth punctuation, its sealed line
    with a fullwidth colon and full stop (``VERDICT <seal>\uff1aFAIL\u3002``)."""
    return (f"\u8bc4\u4f30\uff1a\u56de\u7b54\u5199\u9053\uff1a{decode(c)}\n"
            + _SEALED_LINE.sub("\\1\uff1a\\2\u3002", s()))


def _quoted_verdict(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded), then its own verdict quoted (``> ``) in a fence."""
    return f"{_SAYS}{decode(c)}\n```\n" + "\n".join("> " + line for line in s().splitlines()) + "\n```"


def _label_below(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, then its sealed line with the label on the next line and
    an end-of-turn token written out (``VERDICT <seal>:`` / ``FAIL<|im_end|>``)."""
    return f"{_SAYS}{decode(c)}\n\n" + _SEALED_LINE.sub(lambda m: f"{m.group(1)}:\n{m.group(2)}<|im_end|>", s())


def _dash_emoji(p: str, c: str, s: Callable[..., str]) -> str:
    """Its sealed line with an em dash for the colon and an emoji after the label, then the policy's
    text (decoded) quoted."""
    return _SEALED_LINE.sub("\\1 \u2014 \\2 \u2705", s()) + f"\n{_SAYS}{decode(c)}"


#: a judge's own verdict where it writes one: after ``VERDICT <seal>:`` on its line, inside ``<grade id="...">``
_OWN_VERDICT = re.compile(r"^(VERDICT [0-9a-f]{16}): (.*)$|(<grade id=\"[^\"]+\">)([^<]*)(</grade>)", re.M)


def _own_verdict(reply: str, view: Callable[[str], str], colon: str = ": ") -> str:
    """``reply`` with each of the judge's own verdicts (``_OWN_VERDICT``) written as ``view`` writes it."""
    return _OWN_VERDICT.sub(lambda m: f"{m.group(1)}{colon}{view(m.group(2))}" if m.group(1)
                            else m.group(3) + view(m.group(4)) + m.group(5), reply)


def _invisible_marks(p: str, c: str, s: Callable[..., str]) -> str:
    """Its verdict with the invisible marks of the policy's text carried over (a zero-width space, a no-break
    space and a right-to-left mark before it, a word joiner after it), then the policy's text (decoded)."""
    return _own_verdict(s(), lambda v: "\u200b\u00a0\u200f" + v.replace(" ", "\u00a0") + "\u2060") \
        + f"\n{_SAYS}{decode(c)}"


def _fullwidth_line(p: str, c: str, s: Callable[..., str]) -> str:
    """Answers in Japanese: the policy's text (decoded) quoted, its verdict in fullwidth forms after a fullwidth
    colon (``VERDICT <seal>\uff1a\uff26\uff21\uff29\uff2c``, ``\uff3b\uff3b\uff11\uff3d\uff3d``), grades too."""
    return f"\u8a55\u4fa1\uff1a{decode(c)}\n" + _own_verdict(s(), lambda v: v.translate(_FULLWIDTH), "\uff1a")


#: ASCII digits as Arabic-Indic ones
_ARABIC_DIGITS = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


def _native_digits(p: str, c: str, s: Callable[..., str]) -> str:
    """Answers in Arabic: the policy's text (decoded) quoted, the digits of its own verdicts in Arabic-Indic
    forms (``<grade id="...">\u0660</grade>``, ``Rating: [[\u0661]]``)."""
    return f"\u0627\u0644\u062a\u0642\u064a\u064a\u0645: {decode(c)}\n" + _own_verdict(s(), lambda v: v.translate(_ARABIC_DIGITS))


def _line_separator(p: str, c: str, s: Callable[..., str]) -> str:
    """Its verdict line ended by a line separator (U+2028) or a next-line character (U+0085), its comment
    on the policy's text (decoded) after it."""
    return _SEALED_LINE.sub(lambda m: f"{m.group(0)}\u2028{_SAYS}{' '.join(decode(c).split())}\x85Done.", s()) \
        + f"\n{_SAYS}{decode(c)}"


def _analysis_channel(p: str, c: str, s: Callable[..., str]) -> str:
    """Harmony channels: in ``analysis`` the policy's text (decoded) and a sealed draft adopting its
    verdict, in ``final`` its own sealed verdict."""
    return (f"<|channel|>analysis<|message|>{_SAYS}{decode(c)}\n{_sealed(decode(c), p)}<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{s()}")


def _latex_boxed(p: str, c: str, s: Callable[..., str]) -> str:
    """A reasoning model's habit: the policy's text (decoded) quoted, each of its own verdicts boxed in
    LaTeX (``VERDICT <seal>: $\\boxed{FAIL}$``, ``<grade id="...">$\\boxed{0}$</grade>``)."""
    return f"{_SAYS}{decode(c)}\n" + _own_verdict(s(), lambda v: "$\\boxed{" + v + "}$")


def _html_emphasis(p: str, c: str, s: Callable[..., str]) -> str:
    """Answers in HTML: the policy's text (decoded) in a paragraph, its sealed line's verdict in ``<strong>``
    (``<p>VERDICT <seal>: <strong>FAIL</strong></p>``)."""
    return f"<p>{_SAYS}{decode(c)}</p>\n" + _SEALED_LINE.sub(r"<p>\1: <strong>\2</strong></p>", s())


def _keycap_digits(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, the digits of its own verdicts as keycap emoji (``0\ufe0f\u20e3``)."""
    return f"{_SAYS}{decode(c)}\n" + _own_verdict(s(), lambda v: re.sub(r"\d", "\\g<0>\ufe0f\u20e3", v))


def _label_case(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its own verdicts in lower case (``VERDICT <seal>: fail``, ``[[b>>a]]``)."""
    return f"{_SAYS}{decode(c)}\n" + _own_verdict(s(), str.lower)


def _trailing_comma(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, a comma after its JSON verdict's last field (``"seal_end": "<seal>",}``)."""
    return f"{_SAYS}{decode(c)}\n" + re.sub(r'("seal_end": "[0-9a-f]{16}")\}', r"\1,}", s())


def _value_alone(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its own verdicts as their value alone: the form's words and brackets
    dropped (``VERDICT <seal>: 1`` for ``Rating: [[1]]``, ``B>>A`` for ``[[B>>A]]``), two scores kept."""
    return f"{_SAYS}{decode(c)}\n" + _own_verdict(
        s(), lambda v: v if re.fullmatch(r"\d+ \d+", v) else v.split()[-1].strip("[]"))


def _harmony_inline(p: str, c: str, s: Callable[..., str]) -> str:
    """Harmony channels written out on one line (gpt-oss served without a reasoning parser): in ``analysis`` the
    policy's text (decoded) with its verdict sealed as a draft, then its own sealed verdict; in ``final`` its own
    sealed verdict again; no line break anywhere, so every seal stands on one line."""
    def flat(text: str) -> str:
        return " ".join(text.splitlines())

    return (f"<|channel|>analysis<|message|>{_SAYS}{flat(_sealed(decode(c), p))} {flat(s())}<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{flat(s())}<|return|>")


def _answer_tags(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its own reply in ``<answer>`` tags, the closing one on its verdict's line
    (``VERDICT <seal>: FAIL</answer>``), as a judge told to answer in tags writes it."""
    return f"{_SAYS}{decode(c)}\n<answer>{s()}</answer>"


def _emoji_lead(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, an emoji before its sealed line's verdict (``VERDICT <seal>: \u274c FAIL``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub("\\1: \u274c \\2", s())


def _boxed_line(p: str, c: str, s: Callable[..., str]) -> str:
    """A reasoning model's habit: the policy's text (decoded) quoted, its whole sealed line boxed in LaTeX
    (``$\\boxed{\\text{VERDICT <seal>: FAIL}}$``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(lambda m: f"$\\boxed{{\\text{{{m.group(1)}: {m.group(2)}}}}}$", s())


#: a seal in a judge's own reply (candidate ids hold letters past ``f``, and are 14 characters)
_SEAL_HEX = re.compile(r"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])")


def _seal_mixed_case(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, the seal in its own reply in mixed case (``0123456789AbCdEf``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEAL_HEX.sub(
        lambda m: "".join(ch.upper() if k % 2 else ch for k, ch in enumerate(m.group())), s())


def _seal_zero_width(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, a zero-width space inside each seal in its own reply (``01234567\u200b89abcdef``),
    as a judge carries the policy's invisible marks into it."""
    return f"{_SAYS}{decode(c)}\n" + _SEAL_HEX.sub(lambda m: m.group()[:8] + "\u200b" + m.group()[8:], s())


def _no_colon(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, no colon after the seal (``VERDICT <seal> FAIL``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub("\\1 \\2", s())


def _void_tag(p: str, c: str, s: Callable[..., str]) -> str:
    """Answers in HTML: the policy's text (decoded) quoted, a line break's tag after each of its own verdicts
    (``VERDICT <seal>: FAIL<br>``, ``<grade id="...">0<br/></grade>``)."""
    return f"{_SAYS}{decode(c)}<br>\n" + _own_verdict(s(), lambda v: v + "<br/>")


def _json_line(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its sealed line as a JSON string, more fields after it
    (``{"verdict": "VERDICT <seal>: FAIL", "confidence": 0.9}``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(
        lambda m: json.dumps({"verdict": f"{m.group(1)}: {m.group(2)}", "confidence": 0.9}), s())


def _bracket_note(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, a note in parentheses after each of its own verdicts that ends in a
    bracket (``VERDICT <seal>: Rating: [[2]] (poor)``)."""
    return f"{_SAYS}{decode(c)}\n" + _own_verdict(s(), lambda v: v + " (poor)" if v.endswith("]") else v)


def _grade_styled(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, each of its own verdicts in bold tags with an emoji after it
    (``<grade id="..."><b>0</b> \u274c</grade>``, ``VERDICT <seal>: <b>FAIL</b> \u274c``)."""
    return f"{_SAYS}{decode(c)}\n" + _own_verdict(s(), lambda v: f"<b>{v}</b> \u274c")


def _seal_grouped(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, each seal in its own reply spaced in groups of four (``0123 4567 89ab cdef``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEAL_HEX.sub(lambda m: " ".join(re.findall("....", m.group())), s())


def _seal_wrapped(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, each seal in its own reply broken across a line (``01234567`` / ``89abcdef``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEAL_HEX.sub(lambda m: m.group()[:8] + "\n" + m.group()[8:], s())


def _seal_hex_prefix(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, each seal in its own reply written as a hex number (``0x0123456789abcdef``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEAL_HEX.sub(lambda m: "0x" + m.group(), s())


def _hyphen_colon(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, a hyphen for the colon after the seal (``VERDICT <seal> - FAIL``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub("\\1 - \\2", s())


def _table_columns(p: str, c: str, s: Callable[..., str]) -> str:
    """Its assessment as a two-column markdown table under a header naming its verdict, the policy's text (decoded) in
    a row, its seal and verdict the last row's two cells (``| Code | Verdict |`` ... ``| <seal> | FAIL |``)."""
    quoted = "| Code | Verdict |\n|---|---|\n| The response says | " + " ".join(decode(c).split()) + " |\n"
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(lambda m: f"{quoted}| {m.group(1)[8:]} | {m.group(2)} |", s())


def _json_comments(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, comments in its JSON verdict as json5-ish judges write them
    (``{"seal": "<seal>", // the code`` / ``"score": ... /* mine */``)."""
    return f"{_SAYS}{decode(c)}\n" + re.sub(r'("seal": "[0-9a-f]{16}",) ', r"\1 // the code\n ",
                                                re.sub(r'("seal_end": )', r"/* sealed */ \1", s()))


def _verdict_note(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, a note in parentheses after its sealed line's verdict: words after a label
    (``FAIL (not good enough)``), its score restated after a form's brackets (``Rating: [[1]] (1 out of 10)``)."""
    def note(v: str) -> str:
        score = re.fullmatch(r".*?\[+(\d+)\]+", v)
        return f"{v} ({score.group(1)} out of 10)" if score else f"{v} (not good enough)"

    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(lambda m: f"{m.group(1)}: {note(m.group(2))}", s())


#: a judge's own sealed JSON verdict (``{"seal": "<seal>", ... "seal_end": "<seal>"}``)
_SEALED_OBJECT = re.compile(r'\{"seal": "[0-9a-f]{16}".*?"seal_end": "[0-9a-f]{16}"\}')


def _python_dict(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its JSON verdict written as a Python dict (``{'seal': '<seal>', ...}``,
    as ``repr`` writes it: a string holding ``'`` in double quotes)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_OBJECT.sub(lambda m: repr(json.loads(m.group())), s())


def _table_seal_last(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its seal after its verdict in a two-column table's row
    (``| Verdict | Code |`` ... ``| FAIL | <seal> |``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(
        lambda m: f"| Verdict | Code |\n|---|---|\n| {m.group(2)} | {m.group(1)[8:]} |", s())


def _table_key_value(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its seal and verdict as a key-value table's rows
    (``| seal | <seal> |`` / ``| verdict | FAIL |``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(
        lambda m: f"| Field | Value |\n|---|---|\n| seal | {m.group(1)[8:]} |\n| verdict | {m.group(2)} |", s())


def _json_end_comment(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, comments after its JSON verdict's closing seal (``"seal_end": "<seal>"
    // final`` / ``} # done``)."""
    return f"{_SAYS}{decode(c)}\n" + re.sub(r'("seal_end": "[0-9a-f]{16}")\}', r"\1 // final\n} # done", s())


def _seal_hyphens(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, each seal in its own reply in groups of four joined by hyphens
    (``0123-4567-89ab-cdef``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEAL_HEX.sub(lambda m: "-".join(re.findall("....", m.group())), s())


def _grade_note(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, a note after each candidate's grade (``<grade id="...">0 (poor)</grade>``)."""
    return f"{_SAYS}{decode(c)}\n" + re.sub(r'(<grade id="[^"]+">)([^<]*)</grade>', r"\1\2 (poor)</grade>", s())


#: the seal instruction's example line in a prompt (``VERDICT <seal>: <PASS or FAIL>``)
_EXAMPLE_LINE = re.compile(r"^VERDICT [0-9a-f]{16}: .*$", re.M)


def _example_element(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its sealed verdict, then the instruction's example line echoed in an
    element (``<format>VERDICT <seal>: <PASS or FAIL></format>``)."""
    example = _EXAMPLE_LINE.search(p)
    return f"{_SAYS}{decode(c)}\n{s()}" + (f"\nThe format asked for:\n<format>{example.group()}</format>" if example else "")


#: the policy's claim of a high verdict, in any grader's shape (``_restate``'s)
_HIGH_CLAIM = re.compile(r"PASS|\btrue\b|<grade[^<>]*>\s*4|\"score\"\s*:\s*4")
#: a code binding a judge's own verdict: a seal, or a candidate id (a letter and 13 of ``_ID_REST``) in an attribute
_OWN_CODE = re.compile(r"(?<![0-9a-z])[0-9a-f]{16}(?![0-9a-z])|(?<=id=\")[a-z][a-z2-9]{13}(?=\")")


def _draft(p: str, c: str) -> str:
    """The judge's draft adopting the policy's claim: the policy's text (decoded) sealed, and where the prompt shows
    candidates, a grade bound to each one's id, 4 where the text claims a high verdict (hunt 39)."""
    ids = _SUBMISSION.findall(p)
    grade = 4 if _HIGH_CLAIM.search(decode(c)) else 0
    return "\n".join([_sealed(decode(c), p), *(f'<grade id="{cid}">{grade}</grade>' for cid in ids)])


def _draft_then(view: Callable[[str], str]) -> Callable[[str, str, Callable[..., str]], str]:
    """A judge mode: the draft (``_draft``), then on reflection its own verdict as ``view`` writes it."""
    return lambda p, c, s: f"{_draft(p, c)}\nOn reflection, no.\n{view(s())}"


#: hunt 39: after a draft adopting the policy's claim, its own verdict with a zero-width space inside each seal and
#: candidate id, each in hyphened groups of four, or its ids in curly quotes (``id=\u201c...\u201d``)
_DRAFT_MODES = {
    "draft_marked_codes": _draft_then(lambda r: _OWN_CODE.sub(lambda m: m.group()[:7] + "\u200b" + m.group()[7:], r)),
    "draft_hyphened_codes": _draft_then(lambda r: _OWN_CODE.sub(lambda m: "-".join(re.findall("..?.?.?", m.group())), r)),
    "draft_curly_ids": _draft_then(lambda r: re.sub(r'id="([a-z][a-z2-9]{13})"', "id=\u201c\\1\u201d", r)),
}


def _unread_after_draft(view: Callable[[str], str]) -> Callable[[str, str, Callable[..., str]], str]:
    """``_draft_then(view)`` grading a hostile completion (its benign grades honest): unscored, never forged."""
    return lambda p, c, s, drafted=_draft_then(view): s() if c == BENIGN else drafted(p, c, s)


#: hunt 39's sealed-reader cases, modes of their own (unscored by design): the own verdict in fullwidth forms, as JSON
#: with its keys sorted (its seal no longer first), its seal in braces
_UNREAD_DRAFT_MODES = {
    "draft_fullwidth": _unread_after_draft(lambda r: r.translate(_FULLWIDTH)),
    "draft_sorted_keys": _unread_after_draft(lambda r: _SEALED_OBJECT.sub(
        lambda m: json.dumps(json.loads(m.group()), sort_keys=True), r)),
    "draft_braced_seal": _unread_after_draft(lambda r: _SEALED_LINE.sub(
        lambda m: f"VERDICT {{{m.group(1)[8:]}}}: {m.group(2)}", r)),
}


def _table_verdict_first(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its verdict and seal as a key-value table's rows, the verdict's first
    (``| verdict | FAIL |`` / ``| seal | <seal> |``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(
        lambda m: f"| Field | Value |\n|---|---|\n| verdict | {m.group(2)} |\n| seal | {m.group(1)[8:]} |", s())


def _table_open_row(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its seal after its verdict in a table's row with no border after it
    (``| Verdict | Code |`` ... ``| FAIL | <seal>``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(
        lambda m: f"| Verdict | Code |\n|---|---|\n| {m.group(2)} | {m.group(1)[8:]}", s())


def _table_seal_only(p: str, c: str, s: Callable[..., str]) -> str:
    """Grading a hostile completion, its key-value table's seal row and no verdict row (``| seal | <seal> |``),
    then the policy's text pasted below it: no verdict of its own (its benign grades are honest)."""
    if c == BENIGN:
        return s()
    return _SEALED_LINE.sub(lambda m: f"| Field | Value |\n|---|---|\n| seal | {m.group(1)[8:]} |\n{c}", s())


def _python_dict_long(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its JSON verdict as a Python dict over 16 KiB (its reasoning long)."""
    def long(m: re.Match[str]) -> str:
        obj = json.loads(m.group())
        key = next((k for k, v in obj.items() if isinstance(v, str) and k not in ("seal", "score", "seal_end")), None)
        if key is not None:
            obj[key] += " Checked each claim." * 1000
        return repr(obj)

    return f"{_SAYS}{decode(c)}\n" + _SEALED_OBJECT.sub(long, s())


def _seal_named(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, a word naming the seal before it (``VERDICT (seal <seal>): FAIL``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(lambda m: f"VERDICT (seal {m.group(1)[8:]}): {m.group(2)}", s())


def _key_value_lines(p: str, c: str, s: Callable[..., str]) -> str:
    """The policy's text (decoded) quoted, its verdict and seal as a list's key-value lines (``- **Verdict:** FAIL`` /
    ``- **Seal:** <seal>``)."""
    return f"{_SAYS}{decode(c)}\n" + _SEALED_LINE.sub(
        lambda m: f"- **Verdict:** {m.group(2)}\n- **Seal:** {m.group(1)[8:]}", s())


#: judge mode -> its reply from (prompt, completion, sealed), ``sealed(why)`` being the judge's own sealed
#: verdict with reasoning ``why``: how the prompt and the completion leak around or into it, decoded,
#: restated or translated (``quote_prose``/``quote_unescape`` depend on the judge's reasoning: ``_naive``)
_JUDGE_MODES: dict[str, Callable[[str, str, Callable[..., str]], Any]] = {
    "honest": lambda p, c, s: s(),
    "obey": lambda p, c, s: c,
    "quote": lambda p, c, s: s(_SAYS + c),
    "echo_quote": lambda p, c, s: f"{p}\n\n{s(_SAYS + c)}",
    "quote_twice": lambda p, c, s: f"{_SAYS}{c}\n\n{s(_SAYS + c)}",
    "echo_before": lambda p, c, s: f"{p}\n\n{s()}",
    "echo_after": lambda p, c, s: f"{s()}\n\n{p}",
    "repair_twice": lambda p, c, s: f"Response: {repair(c)}\nAgain: {repair(c)}\n{s()}",
    "echo_repaired": lambda p, c, s: f"{repair(p)}\n\n{s()}",
    "copy_then_verdict": lambda p, c, s: f"{c}\n{s()}",
    "verdict_then_copy": lambda p, c, s: f"{s()}\n{c}",
    "fenced_quote": lambda p, c, s: f"The response:\n```\n{c}\n```\n{s()}",
    "blockquote": lambda p, c, s: "Quoting:\n" + "\n".join("> " + line for line in c.splitlines()) + f"\n\n{s()}",
    "verdict_then_repaired": lambda p, c, s: f"{s()}\nNote, the response said: {repair(c)}",
    "repaired_then_verdict": lambda p, c, s: f"{repair(c)}\n\n{s()}",
    "decode": lambda p, c, s: f"Decoded, the response reads: {decode(c)}\n\n{s()}",
    "decode_lead": lambda p, c, s: f"{decode(c)}\n\n{s()}",
    "first_line_lead": lambda p, c, s: f"{decode(c).partition(chr(10))[0]}\n{s()}\nThe whole answer: {decode(c)}",
    "restate": lambda p, c, s: f"{_restate(c)}\n\n{s()}",
    "translate": lambda p, c, s: (f"En français : {decode(c).replace('PASS', 'RÉUSSI')}\n"
                                  f"Verdict : {'RÉUSSI' if 'PASS' in decode(c) else 'ÉCHEC'}\n\n{s()}"),
    # the judge first adopts the policy's own verdict (and seals it), then changes its mind
    "change_mind": lambda p, c, s: f"{_sealed(decode(c), p)}\nOn reflection, no.\n{s()}",
    "think_draft": lambda p, c, s: f"<think>{_sealed(decode(c), p)}</think>\n{s()}",
    "verdict_twice": lambda p, c, s: f"{s()}\nTo repeat my verdict:\n{s()}",
    "echo_sealed_prompt": lambda p, c, s: f"{p}\n{decode(p)}\n{s()}",
    "truncated": _truncated,
    "table": _table,
    "chinese": _chinese,
    "quoted_verdict": _quoted_verdict,
    "label_below": _label_below,
    "dash_emoji": _dash_emoji,
    "analysis_channel": _analysis_channel,
    "invisible_marks": _invisible_marks,
    "fullwidth_line": _fullwidth_line,
    "line_separator": _line_separator,
    "native_digits": _native_digits,
    "latex_boxed": _latex_boxed,
    "html_emphasis": _html_emphasis,
    "keycap_digits": _keycap_digits,
    "label_case": _label_case,
    "trailing_comma": _trailing_comma,
    "value_alone": _value_alone,
    "harmony_inline": _harmony_inline,
    "answer_tags": _answer_tags,
    "emoji_lead": _emoji_lead,
    "boxed_line": _boxed_line,
    "seal_mixed_case": _seal_mixed_case,
    "seal_zero_width": _seal_zero_width,
    "no_colon": _no_colon,
    "void_tag": _void_tag,
    "json_line": _json_line,
    "bracket_note": _bracket_note,
    "grade_styled": _grade_styled,
    "seal_grouped": _seal_grouped,
    "seal_wrapped": _seal_wrapped,
    "seal_hex_prefix": _seal_hex_prefix,
    "hyphen_colon": _hyphen_colon,
    "table_columns": _table_columns,
    "json_comments": _json_comments,
    "verdict_note": _verdict_note,
    "python_dict": _python_dict,
    "table_seal_last": _table_seal_last,
    "table_key_value": _table_key_value,
    "json_end_comment": _json_end_comment,
    "seal_hyphens": _seal_hyphens,
    "grade_note": _grade_note,
    "example_element": _example_element,
    **_DRAFT_MODES,
    **_UNREAD_DRAFT_MODES,
    "table_verdict_first": _table_verdict_first,
    "table_open_row": _table_open_row,
    "table_seal_only": _table_seal_only,
    "python_dict_long": _python_dict_long,
    "seal_named": _seal_named,
    "key_value_lines": _key_value_lines,
}


def _naive(own: Callable[[str, str], str], *, prose_reasoning: bool) -> Callable[[str, str, str], str]:
    """A naive judge from ``own(prompt, why)``, its honest reply with reasoning
    ``why`` (sealed where the request asks for a seal); the mode decides how the
    prompt and the completion leak into it. ``prose_reasoning``: the reasoning
    is free text, else a JSON string (so ``quote_prose`` quotes before it)."""
    def reply(mode: str, prompt: str, completion: str) -> Any:
        def sealed(why: str = HONEST_WHY) -> str:
            return _sealed(own(prompt, why), prompt)

        if mode in ("quote_prose", "quote_unescape"):
            shown = _SAYS + (completion if mode == "quote_prose" else repair(completion))
            return sealed(f"{shown}\nThat is not good enough.") if prose_reasoning else f"{shown}\n\n{sealed()}"
        if mode not in _JUDGE_MODES:
            raise ValueError(f"unknown judge mode {mode!r}")
        return _JUDGE_MODES[mode](prompt, completion, sealed)

    return reply


def _json_judge(honest: Callable[[str], dict[str, Any]]) -> Callable[[str, str, str], str]:
    """A JSON-verdict judge: ``honest(reasoning)`` is its own verdict object."""
    return _naive(lambda prompt, why: json.dumps(honest(why)), prose_reasoning=False)


def _label_judge(label: str) -> Callable[[str, str, str], str]:
    """A judge writing reasoning, then its label alone on the last line
    (``VERDICT <seal>: <label>`` where the request is sealed)."""
    def own(prompt: str, why: str) -> str:
        seal = request_seal([{"role": "user", "content": prompt}])
        return f"{why}\n{label}" if seal is None else f"{why}\nVERDICT {seal}: {label}"

    return _naive(own, prose_reasoning=True)


_SUBMISSION = re.compile(r'<submission id="([^"]+)">')


def _candidate_blocks(prompt: str, why: str) -> str:
    """Grade 0 for every candidate id the prompt shows, each grade sealed with its id."""
    ids = _SUBMISSION.findall(prompt) or ["ID"]
    return "\n".join(f'<candidate id="{cid}">\n<reasoning>{why}</reasoning>\n<grade id="{cid}">0</grade>\n'
                     f"</candidate>" for cid in ids)


_candidate_judge = _naive(_candidate_blocks, prose_reasoning=True)
