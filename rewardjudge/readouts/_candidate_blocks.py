"""The candidate-blocks readout: ``<grade id="ID">N</grade>`` in one ``<candidate id="ID">`` block per
candidate, the ids its seal (docs/sealed-verdicts.md); ``candidate_grammar`` where the server takes one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..errors import ConfigError
from ..scales import Scale
from ._decision import Decision, NoVerdict, Verdict, last_decides
from ._own import FULLWIDTH_ASCII, as_seal, folded, read_noted, unstyled, unwrap, value_start
from ._gbnf import literal, reasoning_rule
from ._seal import Sealer, blank_drafts, trimmed

__all__ = ["CandidateReading", "CandidateVerdict", "ID_LENGTH", "candidate_grammar", "new_candidate_ids",
           "read_candidate_reply"]


_ID_FIRST = "abcdefghjkmnpqrstuvwxyz"          # a letter: never read as a grade
_ID_REST = "abcdefghjkmnpqrstuvwxyz23456789"   # no 0/o, 1/l/i look-alikes
#: characters of an id: a letter and 13 more, 23 * 31**13 > 2**68 values (64 bits are used)
ID_LENGTH = 14


def _spell(value: int) -> str:   # injective: 23 * 31**13 > 2**64
    rest = value // len(_ID_FIRST)
    return _ID_FIRST[value % len(_ID_FIRST)] + "".join(
        _ID_REST[rest // len(_ID_REST) ** k % len(_ID_REST)] for k in range(ID_LENGTH - 1))


def new_candidate_ids(n: int, *, sealer: Sealer, request: Any) -> list[str]:
    """``n`` distinct 64-bit ids keyed on what ``request`` shows: the same request, the same ids."""
    base = sealer.value([{"candidate-ids": request}])
    out: list[str] = []
    salt = 0
    while len(out) < n:
        cid = _spell(int(sealer.value([{"request": base, "index": len(out), "salt": salt}]), 16))
        if cid in out:   # 2**-64 a pair; a new draw keeps the ids distinct
            salt += 1
        else:
            out.append(cid)
    return out


@dataclass(frozen=True)
class CandidateVerdict:
    """One judged candidate: its id, integer grade and reasoning (None if absent)."""

    id: str
    grade: int
    reasoning: str | None = None


@dataclass
class CandidateReading:
    """Per sent id a ``Verdict`` of a ``CandidateVerdict`` or a ``NoVerdict``; ``unbound``: grades of no sent id."""

    decisions: dict[str, Decision] = field(default_factory=dict)
    unbound: int = 0

    @property
    def verdicts(self) -> dict[str, CandidateVerdict]:
        return {cid: d.value for cid, d in self.decisions.items() if isinstance(d, Verdict)}

    @property
    def failures(self) -> dict[str, str]:
        return {cid: d.reason for cid, d in self.decisions.items() if isinstance(d, NoVerdict)}


#: a tag inside a grade element, but the blocks' own (``<grade id="..."><b>3</b></grade>``: a judge's styling)
_INNER_TAG = r"<(?!/?(?:grade|candidate|reasoning)(?![\w:.-]))/?[a-z][\w:.-]{0,32}(?:[ \t][^<>]{0,64})?/?>"
_TOKEN = re.compile(
    r"<(?P<open>candidate|reasoning)(?=[\s>/])(?P<attrs>[^<>]{0,300})>"
    r"|</(?P<close>candidate|reasoning)\s{0,16}>"
    r"|<grade(?=[\s>/])(?P<gattrs>[^<>]{0,300})>(?P<value>[^<>]{0,64}(?:" + _INNER_TAG + r"[^<>]{0,64}){0,4})"
    r"</grade\s{0,16}>"
    # a grade element opened and never closed, or self-closing: the reading at its place, unread
    r"|<grade(?=[\s>/])(?P<uattrs>[^<>]{0,300})>",
    re.IGNORECASE)
_ID_ATTR = re.compile(r"""(?:^|\s)id\s{0,16}=\s{0,16}(?:"([^"]*)"|'([^']*)'|\u201c([^\u201d]*)\u201d"""
                      r"""|([^\s"'/>\u201c]+))""", re.IGNORECASE)
#: an integer, maybe written with a zero fraction (``3.0``)
_INTEGER = re.compile(r"([+-]?[0-9]{1,18})(?:\.0{1,6})?")
#: a grade over a top: ``3/4``, ``3 / 4``
_OVER_TOP = re.compile(r"([+-]?[0-9]{1,6}(?:\.0{1,6})?)[ \t]{0,2}/[ \t]{0,2}([0-9]{1,6})")


def _attr_id(attrs: str, wanted: "set[str]") -> str | None:
    """The id ``attrs`` name, a wanted one in capitals as that id (as a seal in capitals is the seal)."""
    m = _ID_ATTR.search(attrs)
    # a zero-width space after it: a mark or space ``as_seal`` took out of it
    cid = None if m is None else next(g for g in m.groups() if g is not None).strip().strip("\u200b")
    return cid.lower() if cid is not None and cid not in wanted and cid.lower() in wanted else cid


def _grade(text: str, scale: Scale) -> "int | str":
    """The grade ``text`` holds (``3/4``: a grade over its scale's top is that grade), or why none."""
    over = _OVER_TOP.fullmatch(text)
    if over is not None and int(over.group(2)) == scale.max:
        text = over.group(1)
    integer = _INTEGER.fullmatch(text)
    if integer is None:
        return f"grade {text[:40]!r} is not an integer"
    grade = int(integer.group(1))
    if not scale.contains(grade):
        return f"grade {grade} is outside the {scale.name} scale {scale.min}-{scale.max}"
    return grade


#: per id its grade elements: each one's decision and the block it stands in
_Grades = dict[str, list[tuple[Decision, "list | None"]]]


def _block_token(m: "re.Match[str]", tag: str, block: "list | None", wanted: "set[str]",
                 reasoned: "dict[str, list]") -> "list | None":
    """The block after a ``<candidate>`` or ``<reasoning>`` token ``m`` (``[id, start, end]`` of its reasoning)."""
    if tag == "candidate":
        return [_attr_id(m.group("attrs"), wanted), -1, -1] if m.group("open") else None
    if block is not None and m.group("open") and block[1] < 0:
        block[1] = m.end()
    elif block is not None and not m.group("open") and block[1] >= 0:
        block[2] = m.start()
        if block[0] in wanted:
            reasoned[block[0]] = block
    return block


def _scan(text: str, wanted: "set[str]", scale: Scale) -> "tuple[_Grades, dict[str, list], int]":
    """One pass: the wanted ids' grade elements, each id's last block with a reasoning (``[id, start,
    end]`` of the reasoning, -1: none yet) and the count of unbound grade elements."""
    grades: _Grades = {}
    reasoned: dict[str, list] = {}
    unbound, block, run = 0, None, None
    ids: "dict[str, str | None]" = {}   # per grade element's attributes, the id they name (a policy repeats them)
    for m in _TOKEN.finditer(text):
        unclosed = m.lastgroup == "uattrs"
        if unclosed and m.group("uattrs") == run:
            continue   # a run of the same unclosed grade is one reading (linear in Python too)
        run = m.group("uattrs") if unclosed else None
        tag = (m.group("open") or m.group("close") or "grade").lower()
        if tag != "grade":
            block = _block_token(m, tag, block, wanted, reasoned)
            continue
        attrs = m.group("uattrs") if unclosed else m.group("gattrs")
        cid = ids[attrs] if attrs in ids else ids.setdefault(attrs, _attr_id(attrs, wanted))
        if cid not in wanted:
            unbound += 1
            continue
        decision = _unclosed(cid) if unclosed else _grade_element(m, scale)
        grades.setdefault(cid, []).append((decision, block if block is not None and block[0] == cid else None))
    return grades, reasoned, unbound


def _whole(grade: "int | str") -> "int | None":
    return grade if isinstance(grade, int) else None


def _unclosed(cid: str) -> Decision:
    """A grade element of ``cid`` that never closes or is self-closing: no grade (a reply cut inside it may have been
    cut inside its number), and the reading at its place: an earlier grade of the id, a draft adopting the policy's
    claim, does not decide for it."""
    return NoVerdict(f'no <grade id="{cid}"> that closes and holds a grade, where the judge opened one', kind="invalid")


def _grade_element(m: "re.Match[str]", scale: Scale) -> Decision:
    """The decision of the grade element ``m`` (``_TOKEN``'s match) on ``scale``."""
    return _grade_value(m.group("value"), m.start("value"), m.start(), m.end(), scale)


def _grade_value(raw: str, raw_at: int, start: int, end: int, scale: Scale) -> Decision:
    """The decision of a grade element's text ``raw`` (at ``raw_at``; the element from ``start`` to ``end``)."""
    value = unwrap(raw)   # emphasis and a final full stop tolerated, as on a sealed line
    at = raw_at + value_start(raw)   # past emphasis, an emoji, a tag: the expected value's prefix
    grade = _grade(value, scale)
    if isinstance(grade, str):   # invisible marks, fullwidth digits (``folded``), LaTeX's or HTML's styling, emoji
        plain = unwrap(trimmed(unwrap(unstyled(folded(raw)))))
        again = _grade(plain, scale)
        # a note after it that leaves one grade (``1 (poor)``, ``3 (3/4)``), as after a sealed line's verdict
        again = again if isinstance(again, int) else read_noted(plain, lambda s: _whole(_grade(unwrap(s), scale)))
        grade = grade if again is None or isinstance(again, str) else again
    return Verdict(grade, start, end, (), at) if isinstance(grade, int) else NoVerdict(grade, kind="invalid")


def _reasoning(text: str, block: "list | None") -> str | None:
    a, b = (-1, -1) if block is None else block[1:]
    return (text[a:b].strip() or None) if 0 <= a <= b else None


def _decide(cid: str, found: list, reasoned: "list | None", text: str) -> Decision:
    if not found:
        return NoVerdict(f'no <grade id="{cid}"> in the reply', kind="no sealed verdict")
    decision = last_decides([d for d, _ in found])
    if isinstance(decision, NoVerdict):
        return decision
    if found[-1][-1] is None and any(b is not None and d.ok and d.value != decision.value for d, b in found[:-1]):
        # the last grade stands outside its candidate's block, an earlier one inside it says otherwise: a judge
        # restating, after its verdict, the grade the answer asked for (hunt 39); neither is taken
        return NoVerdict(f'a <grade id="{cid}"> outside its candidate block disagrees with the grade inside it',
                         kind="invalid")
    # the block of the last grade, else the id's last block with a reasoning
    reasoning = _reasoning(text, found[-1][-1]) or _reasoning(text, reasoned)
    return replace(decision, value=CandidateVerdict(cid, decision.value, reasoning))


def read_candidate_reply(text: str | None, ids: Sequence[str], scale: Scale | str) -> CandidateReading:
    """Per sent id, the last ``<grade id="ID">N</grade>`` on ``scale`` decides (docs/sealed-verdicts.md)."""
    scale = Scale.get(scale)
    sent = list(dict.fromkeys(ids))
    if not isinstance(text, str) or not text.strip():
        return CandidateReading({cid: NoVerdict("empty reply", kind="no sealed verdict") for cid in sent})
    if "\uff1c" in text:   # a fullwidth ``<``: the reply's fullwidth ASCII forms as ASCII, one character each
        text = text.translate(FULLWIDTH_ASCII)
    for cid in sent:   # an id with zero-width marks, spaces or hyphens inside it, as a seal may be written: the id
        text = as_seal(text, cid)
    text = blank_drafts(text, sent)
    grades, reasoned, unbound = _scan(text, set(sent), scale)
    return CandidateReading({cid: _decide(cid, grades.get(cid, []), reasoned.get(cid), text)
                             for cid in sent}, unbound)


def candidate_grammar(ids: Sequence[str], scale: Scale, *, max_tokens_per_candidate: int | None = None) -> str:
    """The GBNF grammar of a reply judging ``ids`` in this order, 16 to 200 characters of reasoning each."""
    bad = [cid for cid in ids if not (isinstance(cid, str) and re.fullmatch(r"[A-Za-z0-9_-]+", cid))]
    if bad or not ids:
        raise ConfigError(f"a candidate grammar needs plain-token ids (letters, digits, _ or -), got {list(ids)!r}")
    lines = ["root ::= " + " ".join(f"c{k}" for k in range(len(ids)))]
    lines += [f"c{k} ::= " + literal(f'<candidate id="{cid}">\n<reasoning>') + " reason "
              + literal(f'</reasoning>\n<grade id="{cid}">') + " grade " + literal("</grade>\n</candidate>\n")
              for k, cid in enumerate(ids)]
    lines.append(reasoning_rule(200, max_tokens_per_candidate, "<>"))
    lines.append("grade ::= " + " | ".join(literal(str(g)) for g in scale.grades))
    return "\n".join(lines)
