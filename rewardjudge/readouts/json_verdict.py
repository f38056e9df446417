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
    own: list[V] = []
    quoted: list[V] = []
    problem = ""
    for span in spans:
        try:
            verdict = check(span.value)
            k = key(verdict)
        except ValidationError as exc:
            problem = format_validation_error(exc)
            continue
        except (ValueError, TypeError, OverflowError) as exc:
            problem = str(exc)
            continue
        if prompt is not None and prompt.is_quoted(text, span.start, span.end):
            quoted.append(verdict)
        else:
            own.append(verdict)
    if not own:
        if quoted:
            raise OutputParserException(f"no verdict of the judge's own ({len(quoted)} quoted "
                                        f"from the prompt)", text)
        raise OutputParserException(problem or "no verdict in the reply", text)
    if len({key(v) for v in own}) > 1:
        raise OutputParserException(f"ambiguous reply: {len(own)} verdicts that disagree", text)
    verdict = own[-1]
    mine = key(verdict)
    return Reading(verdict, forgeries=sum(1 for q in quoted if key(q) != mine), quoted=len(quoted))
