"""Guards that run before a judge sees a completion.

Judges are fooled by content-free answers: an empty reply, whitespace,
punctuation, or "master key" openers such as ":" or "Thought process:" that
carry no answer but read like the start of one. A completion flagged here is
the policy's fault, so graders penalize it without calling the judge.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

# Openers that carry no answer (lower-cased, trailing punctuation stripped).
MASTER_KEYS: frozenset[str] = frozenset({
    "thought process", "let's solve this problem step by step", "let's think step by step",
    "solution", "answer", "the answer is", "step 1", "reasoning", "explanation", "response",
    "final answer", "here is the answer", "here's the answer", "i think", "sure",
})

_INVISIBLE = re.compile(r"[\u200b-\u200f\u2028-\u202f\u205f-\u206f\ufeff\u00ad\u180e]")


def normalize_text(text: str) -> str:
    """NFKC-fold (look-alike full-width forms become ASCII) and drop
    zero-width and other invisible characters."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


def content_free_reason(text: str, extra_keys: Iterable[str] = ()) -> str | None:
    """Why ``text`` carries no content, or None if it does.

    >>> content_free_reason("  \\u200b ")
    'empty completion'
    >>> content_free_reason("Thought process:")
    "content-free completion: 'Thought process:'"
    >>> content_free_reason("Paris.") is None
    True
    """
    if not isinstance(text, str):
        return "completion is not text"
    folded = normalize_text(text).strip()
    if not folded:
        return "empty completion"
    if not any(ch.isalnum() for ch in folded):
        return f"content-free completion: {text.strip()[:40]!r}"
    key = re.sub(r"[\s\W_]+$", "", folded.lower()).strip()
    keys = MASTER_KEYS | {k.lower() for k in extra_keys}
    if key in keys:
        return f"content-free completion: {text.strip()[:40]!r}"
    return None
