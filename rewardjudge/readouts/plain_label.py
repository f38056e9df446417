"""Readout of a plain-label verdict: ``PASS``, ``Verdict: FAIL``, a label on
the reply's last line, for judges that answer as their prompt asks rather
than in JSON.

A line counts when it holds exactly one label of the output model, alone or
after a verdict word (``Verdict:``, ``Final answer -``...), with markdown
emphasis and a final full stop allowed. As for JSON verdicts, a line copied
from the prompt is quoted, not a verdict; the judge's own label lines must
agree, else the reply is ambiguous.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..errors import OutputParserException
from ._scan import PromptIndex
from .json_verdict import Reading

__all__ = ["read_plain_label"]

_LEAD = re.compile(r"^(?:(?:final|overall|my)\s+)?(?:verdict|answer|score|grade|label|decision|"
                   r"result|rating)\s*(?:is)?\s*[:=\-]?\s*", re.IGNORECASE)
_DECOR = re.compile(r"^[\s*_`#>\"'\[\(]+|[\s*_`\"'\]\).!]+$")
_MAX_LINE = 80


def read_plain_label(text: str, labels: Sequence[str], prompt: PromptIndex | None = None
                     ) -> Reading[tuple[str, str]]:
    """The label the judge wrote and the text before it, ``(label, reasoning)``.

    >>> read_plain_label("The answer is wrong.\\nVerdict: **FAIL**", ["PASS", "FAIL"]).verdict
    ('FAIL', 'The answer is wrong.')
    """
    if not isinstance(text, str) or not text.strip():
        raise OutputParserException("empty reply", repr(text))
    by_fold = {lab.casefold(): lab for lab in labels}
    own: list[tuple[str, int]] = []
    quoted: list[str] = []
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
        if prompt is not None and prompt.is_quoted(text, start, start + len(line.rstrip("\r\n"))):
            quoted.append(label)
        else:
            own.append((label, start))
    if not own:
        raise OutputParserException(
            f"no label line of the judge's own ({len(quoted)} quoted)" if quoted
            else f"no JSON object and no line holding one of {list(labels)}", text)
    if len({lab for lab, _ in own}) > 1:
        raise OutputParserException(f"ambiguous reply: {len(own)} label lines that disagree", text)
    label, at = own[-1]
    reasoning = text[:at].strip()
    return Reading((label, reasoning), forgeries=sum(1 for q in quoted if q != label),
                   quoted=len(quoted))
