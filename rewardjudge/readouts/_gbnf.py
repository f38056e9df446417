"""GBNF grammars holding a judge whose server takes one (``accepts_grammar``) to a sealed reply."""

from __future__ import annotations

#: the fewest characters of reasoning asked for (without a floor a 135M judge grades without a word)
REASONING_MIN_CHARS = 16
#: tokens of a reply's sealed parts besides its reasoning (tags and ids, or a verdict line)
SEALED_TOKENS = 56
#: a number a declared form reads
NUMBER = '("-"? [0-9]{1,6} ("." [0-9]{1,3})?)'


def literal(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{out}"'


def reasoning_rule(max_chars: int, max_tokens: int | None, banned: str = "") -> str:
    """The rule ``reason``: one line of 16 to ``max_chars`` characters, at most ``max_tokens`` (~3 characters each)."""
    if max_tokens is not None:
        max_chars = max(min(max_chars, 3 * (max_tokens - SEALED_TOKENS)), REASONING_MIN_CHARS)
    return rf"reason ::= [^{banned}\x00-\x20] [^{banned}\x00-\x1f]{{{REASONING_MIN_CHARS - 1},{max_chars - 1}}}"


def verdict_line_grammar(seal: str, verdict: str, max_chars: int, max_tokens: int | None) -> str:
    """A reply of bounded reasoning, then the line ``VERDICT <seal>: `` ending in ``verdict``."""
    return f"root ::= reason {literal(chr(10) + f'VERDICT {seal}: ')} ({verdict})\n" \
        + reasoning_rule(max_chars, max_tokens)
