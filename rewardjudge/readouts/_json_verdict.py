"""Readout of a JSON verdict: the judge's own object, never a copied one.

A judge reply may repeat its prompt (which holds the policy's completion),
quote the completion, or obey it. Every verdict-shaped object in the reply
is a candidate; which of them are the judge's own is decided in tiers
(``decide``), and the first tier that holds any candidate decides:

1. *own*: its folded text occurs nowhere in the prompt that was sent, so the
   judge wrote it (no policy text can produce it);
2. *in excess*: the reply holds more copies of its folded text than the
   prompt does, so at least one copy is the judge's own (a policy that
   pre-writes the judge's likely verdict, even twice, cannot make that
   verdict look quoted: the judge's copy is one more);
3. *last word*: the last candidate of a reply that does not echo its prompt,
   with no verdict-like line after it: a judge whose whole answer coincides
   with text the policy wrote, or a hijacked judge that repeats the
   completion (then the judge itself was fooled; no parser can tell).

The deciding verdicts must agree, else the reply is ambiguous (a judge-side
failure: re-asked, then unscored); every other candidate that disagrees is
counted as a forgery. Where verdicts have a value (the reward), a verdict in
excess is read only when no candidate is lower, and one of the judge's own
only when no candidate in excess is lower: a judge that quotes part of the
completion twice, or re-writes policy text into a verdict while quoting it,
otherwise lets a forgery outweigh its own verdict pre-written by the policy. A forgery never changes a grade and never makes one
unscored. With no candidate in any tier the reply is unreadable (judge-side).

Without a prompt index every verdict in the reply counts as the judge's own.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Generic, Hashable, TypeVar

from pydantic import ValidationError

from ..errors import OutputParserException, format_validation_error
from ._scan import JsonSpan, PromptIndex, json_objects
from ._text import fold

__all__ = ["Reading", "read_json_verdict"]

V = TypeVar("V")


@dataclass
class Reading(Generic[V]):
    """A verdict read from a reply: ``verdict``; ``forgeries``, verdict-shaped
    text the judge did not write that disagreed with it; ``quoted``, every
    verdict-shaped candidate that did not decide."""

    verdict: V
    forgeries: int = 0
    quoted: int = 0
    #: the tier that decided (``decide``): 0 own, 1 in excess, 2 last word
    tier: int = 0
    #: the lowest value among every candidate (``decide``'s ``value``); None when
    #: not told, or when the verdict was the only candidate (its own value is the floor)
    floor: "float | None" = None


_UNSEEN = object()


class _Problem:
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


def read_json_verdict(text: str, check: Callable[[dict[str, Any]], V], key: Callable[[V], Hashable],
                      prompt: PromptIndex | None = None, *,
                      harmless: Callable[[V], bool] | None = None,
                      value: "Callable[[V], float | None] | None" = None) -> Reading[V]:
    """Read the judge's own verdict from ``text``.

    ``check`` turns a decoded object into a verdict or raises (``ValueError``,
    pydantic's ``ValidationError``); ``key`` is what verdicts must agree on.
    Raises ``OutputParserException`` when there is no verdict of the judge's
    own or its own verdicts disagree.
    """
    if not isinstance(text, str):
        raise OutputParserException("judge reply is not text", repr(text))
    spans = json_objects(text)
    if not spans:
        why = ("no complete JSON object (a truncated reply? raise max_tokens)" if "{" in text
               else "no JSON object found")
        raise OutputParserException(why, text)
    found: list[tuple[V, int, int, int]] = []   # verdict, quote level, start, end
    problem = ""
    checked: dict[str, Any] = {}   # a reply may repeat one object many times: check it once
    # an object that is no verdict may hold one: policy text copied before and after the
    # judge's own verdict can open an object around it ('{"note": ' ... '}'), which would
    # hide it. Its inside is scanned too, within a budget linear in the reply
    budget = 2 * len(text) + 4096
    spans = list(reversed(spans))
    while spans:
        span = spans.pop()
        raw = text[span.start:span.end]
        verdict = checked.get(raw, _UNSEEN)
        if verdict is _UNSEEN:
            try:
                verdict = check(span.value)
                key(verdict)
            except ValidationError as exc:
                verdict = format_validation_error(exc)
            except (ValueError, TypeError, OverflowError) as exc:
                verdict = _Problem(str(exc))
            checked[raw] = verdict if not isinstance(verdict, str) else _Problem(verdict)
            verdict = checked[raw]
        if isinstance(verdict, _Problem):
            problem = verdict.reason
            inner = span.end - span.start - 2
            if 0 < inner <= budget and '{"' in raw[1:-1]:
                budget -= inner
                spans.extend(reversed([JsonSpan(span.start + 1 + n.start, span.start + 1 + n.end, n.value)
                                       for n in json_objects(raw[1:-1])]))
            continue
        level = 0 if prompt is None else prompt.quote_level(text, span.start, span.end)
        if level == 0 and prompt is not None and prompt.holds_value(span.value):
            level = 1   # the prompt holds this object, re-serialised by the judge
        found.append((verdict, level, span.start, span.end))
    if not found:
        raise OutputParserException(problem or "no verdict in the reply", text)
    found.sort(key=lambda f: f[2])   # reply order (objects found inside others came later)
    return decide(text, found, key, prompt, harmless=harmless, value=value)


def decide(text: str, found: "list[tuple[V, int, int, int]]", key: Callable[[V], Hashable],
           prompt: PromptIndex | None, *, copies: Callable[[str], int] | None = None,
           last_word: Callable[[str, int], bool] | None = None,
           harmless: Callable[[V], bool] | None = None,
           reply_copies: Callable[[str], int] | None = None,
           value: "Callable[[V], float | None] | None" = None) -> Reading[V]:
    """The judge's verdict among ``(verdict, quote level, start, end)`` found
    in a reply, in reply order, by the tiers of the module doc (level 0: not
    in the prompt). ``copies(folded)`` counts a candidate's folded text in the
    prompt (default: substrings of the folded prompt); ``last_word(text, end)``
    says whether nothing verdict-like follows the last candidate;
    ``reply_copies(folded)`` counts it in the reply (default: among ``found``).
    ``harmless(verdict)`` says whether a verdict cannot raise the policy's
    reward (the lowest grade): a reply that is nothing but a copy of policy
    text (a judge that obeyed the completion) is read only when its verdict
    is harmless. ``value(verdict)``, the reward a verdict stands for: a
    verdict in excess is read only when no candidate is lower (a judge that
    quotes part of the reply twice puts a forgery in excess, and the judge's
    own verdict, pre-written where it did not quote, is then not: it is one
    of the lower candidates). Raises ``OutputParserException`` (for own
    verdicts that disagree, with ``tier`` set to the tier that held them),
    with ``floor`` set to the lowest value among the candidates."""
    excess = _Excess(text, found, prompt, copies, reply_copies)
    try:
        reading = _decide(text, found, key, prompt, excess, last_word, harmless)
    except OutputParserException as exc:
        exc.floor = _floor(found, value)   # type: ignore[attr-defined]
        raise
    if len(found) == 1:
        return reading   # its floor is its own value (left unset: not needed on the fast path)
    reading.floor = floor = _floor(found, value)
    if floor is not None and reading.tier <= 1 and _above(value, reading.verdict, floor):
        # a verdict the judge seems to have written (tier 0: text no prompt text folds to,
        # which a judge re-writing policy text may still make) never outweighs a lower one
        # in excess; a verdict in excess never outweighs any lower one
        lower = [f for f in found if (v := value(f[0])) is not None   # type: ignore[misc]
                 and _above(value, reading.verdict, v)]
        if reading.tier == 1 or any(excess.holds(f) for f in lower):
            exc = OutputParserException("ambiguous reply: a verdict above a lower one that may be "
                                        "the judge's own (quoted more often than the prompt holds "
                                        "it, or pre-written where the judge did not quote)", text)
            exc.tier, exc.floor = reading.tier, floor   # type: ignore[attr-defined]
            raise exc
    return reading


class _Excess:
    """Which candidates the reply holds more often than the prompt (counted lazily)."""

    def __init__(self, text: str, found: "list[tuple[Any, int, int, int]]", prompt: PromptIndex | None,
                 copies: Callable[[str], int] | None, reply_copies: Callable[[str], int] | None):
        self.text, self.found, self.prompt = text, found, prompt
        self.copies, self.reply_copies = copies, reply_copies
        self._shapes: "dict[int, str] | None" = None

    def holds(self, f: "tuple[Any, int, int, int]") -> bool:
        if self.prompt is None:
            return False
        if self._shapes is None:
            shapes = [fold(self.text[g[2]:g[3]]) for g in self.found]
            self._shapes = {id(g): sh for g, sh in zip(self.found, shapes)}
            if self.reply_copies is None:
                # counted as the prompt is: every copy in the folded reply, those inside
                # other text too (a verdict escaped inside a JSON string is one there)
                in_reply, folded_reply = Counter(shapes), fold(self.text)
                self.reply_copies = lambda sh: max(in_reply[sh], folded_reply.count(sh))  # noqa: E731
            if self.copies is None:
                self.copies = self.prompt.copies
        sh = self._shapes[id(f)]
        return self.reply_copies(sh) > self.copies(sh)   # type: ignore[misc]


def _floor(found: "list[tuple[V, int, int, int]]",
           value: "Callable[[V], float | None] | None") -> "float | None":
    if value is None:
        return None
    values = [v for v in (value(f[0]) for f in found) if v is not None]
    return min(values) if values else None


def _above(value: "Callable[[V], float | None] | None", verdict: V, floor: float) -> bool:
    v = None if value is None else value(verdict)
    return v is not None and v > floor


def _decide(text: str, found: "list[tuple[V, int, int, int]]", key: Callable[[V], Hashable],
            prompt: PromptIndex | None, in_excess: _Excess,
            last_word: Callable[[str, int], bool] | None,
            harmless: Callable[[V], bool] | None) -> Reading[V]:
    own = [f for f in found if f[1] == 0]
    if own or prompt is None:
        return _agreeing(own or found, found, key, text, 0)
    excess = [f for f in found if in_excess.holds(f)]
    if excess:
        return _agreeing(excess, found, key, text, 1)
    last = max(found, key=lambda f: f[2])
    if (last_word or _nothing_after)(text, last[3]) and not prompt.echoed_in(text):
        if harmless is not None and not harmless(last[0]):
            raise OutputParserException("the only verdict is a copy of policy text that would raise "
                                        "its reward (a judge that obeyed the completion?)", text)
        return _agreeing([last], found, key, text, 2)
    raise OutputParserException(f"no verdict of the judge's own ({len(found)} copied from the "
                                f"prompt)", text)


def _agreeing(chosen: "list[tuple[V, int, int, int]]", found: "list[tuple[V, int, int, int]]",
              key: Callable[[V], Hashable], text: str, tier: int) -> Reading[V]:
    if len({key(f[0]) for f in chosen}) > 1:
        exc = OutputParserException(f"ambiguous reply: {len(chosen)} verdicts of the judge's own "
                                    f"that disagree", text)
        exc.tier = tier   # type: ignore[attr-defined]
        raise exc
    verdict = chosen[-1][0]
    mine = key(verdict)
    ids = {id(f) for f in chosen}
    others = [f for f in found if id(f) not in ids]
    return Reading(verdict, forgeries=sum(1 for f in others if key(f[0]) != mine),
                   quoted=len(others), tier=tier)


_TRAILER = re.compile(r"[\s`.!]*\Z")


def _nothing_after(text: str, end: int) -> bool:
    """Whether the reply ends at ``end`` (whitespace, a closing code fence or
    a full stop may follow): only a reply's last word can be the judge's
    own verdict when its text is also in the prompt. A cut-off verdict or
    prose after it means the copy was a quote."""
    return _TRAILER.match(text, end) is not None
