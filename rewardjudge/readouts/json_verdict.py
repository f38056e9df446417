"""Readout of a JSON verdict: the judge's own object, never a quoted one.

A judge reply may repeat its prompt (which holds the policy's completion),
quote the completion, or obey it, so a verdict-shaped object in the reply is
the judge's only when it is not a copy of the prompt (``PromptIndex``).
Then:

* the judge's own verdicts all agree -> that verdict; quoted verdicts that
  say otherwise are counted as forgeries (a forgery never changes a grade);
* the judge's own verdicts disagree -> ambiguous (a judge-side failure:
  re-asked, then unscored);
* the judge wrote no verdict of its own -> unreadable (judge-side).

Without a prompt index every verdict in the reply counts as the judge's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Hashable, TypeVar

from pydantic import ValidationError

from ..errors import OutputParserException, format_validation_error
from ._scan import PromptIndex, json_objects

__all__ = ["Reading", "read_json_verdict"]

V = TypeVar("V")


@dataclass
class Reading(Generic[V]):
    """A verdict read from a reply: ``verdict``; ``forgeries``, verdict-shaped
    text copied from the prompt that disagreed with it; ``quoted``, every
    verdict-shaped copy of the prompt seen."""

    verdict: V
    forgeries: int = 0
    quoted: int = 0


def read_json_verdict(text: str, check: Callable[[dict[str, Any]], V], key: Callable[[V], Hashable],
                      prompt: PromptIndex | None = None) -> Reading[V]:
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
    for span in spans:
        try:
            verdict = check(span.value)
            key(verdict)
        except ValidationError as exc:
            problem = format_validation_error(exc)
            continue
        except (ValueError, TypeError, OverflowError) as exc:
            problem = str(exc)
            continue
        level = 0 if prompt is None else prompt.quote_level(text, span.start, span.end)
        found.append((verdict, level, span.start, span.end))
    if not found:
        raise OutputParserException(problem or "no verdict in the reply", text)
    return decide(text, [(v, lvl, a, b) for v, lvl, a, b in found], key, prompt)


def decide(text: str, found: "list[tuple[V, int, int, int]]", key: Callable[[V], Hashable],
           prompt: PromptIndex | None) -> Reading[V]:
    """The judge's verdict among ``(verdict, quote level, start, end)`` found in a reply.

    Verdicts not in the prompt (level 0) are the judge's own and decide;
    copies with copied text around them (level 2) are quotes. Copies without
    (level 1) decide only when the judge wrote nothing else: they agree, or
    the ones the reply holds more often than the prompt (so the judge wrote
    one itself) agree. Quoted verdicts that disagree count as forgeries.
    """
    own = [f for f in found if f[1] == 0]
    unsure = [f for f in found if f[1] == 1]
    chosen: list[tuple[V, int, int, int]]
    if own:
        chosen = own
    elif unsure:
        chosen = unsure
        if len({key(f[0]) for f in unsure}) > 1 and prompt is not None:
            surplus = [f for f in unsure if (lambda c: c[0] > c[1])(prompt.count(text, f[2], f[3]))]
            chosen = surplus or unsure
    else:
        raise OutputParserException(f"no verdict of the judge's own ({len(found)} quoted "
                                    f"from the prompt)", text)
    if len({key(f[0]) for f in chosen}) > 1:
        raise OutputParserException(f"ambiguous reply: {len(chosen)} verdicts that disagree", text)
    verdict = chosen[-1][0]
    mine = key(verdict)
    others = [f for f in found if f not in chosen]
    return Reading(verdict, forgeries=sum(1 for f in others if key(f[0]) != mine),
                   quoted=len(others))
