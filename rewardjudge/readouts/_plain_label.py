"""Readout of a plain-label verdict: ``PASS``, ``Verdict: FAIL``, a label on
the reply's last line, for judges that answer as their prompt asks rather
than in JSON.

A line counts when it holds exactly one label of the output model, alone or
after a verdict word (``Verdict:``, ``Final answer -``...), with markdown
emphasis and a final full stop allowed. As for JSON verdicts, a line copied
from the prompt is quoted, not a verdict; the judge's own label lines must
agree, else the reply is ambiguous. Which label lines are the judge's own is
decided by the tiers of ``json_verdict.decide``, on whole folded lines: a
line no prompt line folds to, a line the reply holds more often than the
prompt, else the last label line of a reply that does not echo its prompt.
Lines are counted as written and with their escapes decoded (a judge that
repeats ``Paris.%0APASS`` may write ``PASS`` on a line of its own).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Sequence

from ..errors import OutputParserException
from ._scan import PromptIndex, _line_counts, line_key
from ._text import fold
from ._json_verdict import Reading, decide

__all__ = ["read_plain_label"]

_LEAD = re.compile(r"^(?:(?:final|overall|my)\s+)?(?:verdict|answer|score|grade|label|decision|"
                   r"result|rating)\s*(?:is)?\s*[:=\-]?\s*", re.IGNORECASE)
_DECOR = re.compile(r"^[\s*_`#>\"'\[\(]+|[\s*_`\"'\]\).!]+$")
_MAX_LINE = 80


def read_plain_label(text: str, labels: Sequence[str], prompt: PromptIndex | None = None, *,
                     harmless: "Callable[[str], bool] | None" = None,
                     value: "Callable[[str], float | None] | None" = None) -> Reading[tuple[str, str]]:
    """The label the judge wrote and the text before it, ``(label, reasoning)``.

    >>> read_plain_label("The answer is wrong.\\nVerdict: **FAIL**", ["PASS", "FAIL"]).verdict
    ('FAIL', 'The answer is wrong.')
    """
    if not isinstance(text, str) or not text.strip():
        raise OutputParserException("empty reply", repr(text))
    by_fold = {lab.casefold(): lab for lab in labels}
    found: list[tuple[str, int, int, int]] = []   # label, quote level, start, end
    pos = 0
    for line in text.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        body = line.strip()
        if not body or len(body) > _MAX_LINE:
            continue
        word = _DECOR.sub("", _LEAD.sub("", _DECOR.sub("", body)))
        label = by_fold.get(word.casefold())
        if label is None:
            continue
        end = start + len(line.rstrip("\r\n"))
        # a label line is the judge's own when no line of the prompt folds to it
        # (the label word itself is in the prompt's instructions)
        level = 0 if prompt is None or not prompt.line_copies(fold(text[start:end])) else 1
        found.append((label, level, start, end))
    if not found:
        raise OutputParserException(f"no JSON object and no line holding one of {list(labels)}", text)
    reading = decide(text, found, lambda lab: lab, prompt, harmless=harmless,
                     copies=None if prompt is None else prompt.line_copies, last_word=_last_line,
                     reply_copies=None if prompt is None else _reply_copies(text), value=value)
    label = reading.verdict
    at = max(f[2] for f in found if f[0] == label)
    return Reading((label, text[:at].strip()), reading.forgeries, reading.quoted, reading.tier,
                   reading.floor)


def _reply_copies(text: str) -> "Callable[[str], int]":
    """How many lines of the reply fold to a label line, counted exactly as
    ``PromptIndex.line_copies`` counts the prompt's: every line (not only
    the label lines read), as written and (the larger count) with escapes
    decoded. A quoted ``- FAIL`` or ``FAIL;`` is a copy of a prompt line
    keyed ``fail`` on both sides, and a prompt echoed as it was sent holds
    an escaped line (``&#10;PASS``) as often as the prompt does. Counted
    when first asked: a reply whose label line is the judge's own never is."""
    counts: "Counter[str] | None" = None

    def copies(folded: str) -> int:
        nonlocal counts
        if counts is None:
            counts = _line_counts([text])
        return counts[line_key(folded)]

    return copies


def _last_line(text: str, end: int) -> bool:
    """Whether the label line ending at ``end`` is the reply's last line."""
    return not text[end:].strip()
