"""Guards that run before a judge sees a completion.

Judges are fooled by content-free answers: an empty reply, whitespace,
punctuation, or "master key" openers such as ":" or "Thought process:" that
carry no answer but read like the start of one. A completion flagged here is
the policy's fault, so graders penalize it without calling the judge.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..readouts._text import leaves, normalize_text

# Openers that carry no answer (lower-cased, trailing punctuation stripped).
MASTER_KEYS: frozenset[str] = frozenset({
    "thought process", "let's solve this problem step by step", "let's think step by step",
    "solution", "answer", "the answer is", "step 1", "reasoning", "explanation", "response",
    "final answer", "here is the answer", "here's the answer", "i think", "sure",
})

#: the longest text still compared with the master keys (they are all shorter)
_KEY_SPAN = 64
_TRAILING = " \t\r\n\x0b\x0c!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\u2026\u3002\uff1a"


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
    if len(folded) > _KEY_SPAN:   # longer than any master key: only the alnum test is left
        return None if any(ch.isalnum() for ch in folded) else \
            f"content-free completion: {text.strip()[:40]!r}"
    if not any(ch.isalnum() for ch in folded):
        return f"content-free completion: {text.strip()[:40]!r}"
    key = folded.lower().rstrip(_TRAILING).strip()
    keys = MASTER_KEYS | {k.lower() for k in extra_keys}
    if key in keys:
        return f"content-free completion: {text.strip()[:40]!r}"
    return None


def content_free_fields(value: Any, extra_keys: Iterable[str] = ()) -> str | None:
    """Why a parsed structured completion carries no content, or None.

    Every string field is checked like a plain completion; the completion
    is content-free when *all* of them are (``{"answer": ""}``,
    ``{"answer": "Thought process:"}``), or when it holds no string at all
    and no number or boolean either. Iterative: nesting cannot exhaust the stack.
    """
    strings: list[str] = []
    scalars = 0
    for node in leaves(value):
        if isinstance(node, str):
            strings.append(node)
        elif node is not None:
            scalars += 1
    if not strings:
        return None if scalars else "structured completion holds no value"
    reasons = [content_free_reason(t, extra_keys) for t in strings]
    if all(r is not None for r in reasons):
        return f"every text field is empty or content-free ({reasons[0]})"
    return None
