"""A GBNF grammar for one candidate-judging request: the ``<candidate id="…">`` reply
protocol, enforced where the server takes a grammar (the reply is still read as any other).

>>> from rewardjudge.scales import Scale
>>> print(candidate_grammar(["a2b3c4"], Scale.BINARY, max_tokens_per_candidate=83))
root ::= c0
c0 ::= "<candidate id=\\"a2b3c4\\">\\n<reasoning>" reason "</reasoning>\\n<grade id=\\"a2b3c4\\">" grade "</grade>\\n</candidate>\\n"
reason ::= [^<>\\x00-\\x20] [^<>\\x00-\\x1f]{15,80}
grade ::= "0" | "1"
"""

from __future__ import annotations

import re
from typing import Sequence

from ..errors import ConfigError
from ..scales import Scale

__all__ = ["candidate_grammar"]

#: the most characters of reasoning the grammar lets the judge write per candidate
CANDIDATE_REASONING_CHARS = 200
#: the fewest (without a floor a 135M judge grades without a word)
CANDIDATE_REASONING_MIN_CHARS = 16
#: tokens of one reply block other than its reasoning
_BLOCK_TOKENS = 56

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]+\Z")


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{out}"'


def candidate_grammar(ids: Sequence[str], scale: Scale, *, max_tokens_per_candidate: int | None = None) -> str:
    """The GBNF grammar of a reply judging ``ids`` (in this order) on ``scale``: each block's
    reasoning 16 to 200 characters (the first one not a space), at most what fits in
    ``max_tokens_per_candidate`` at about 3 characters a token."""
    if not ids:
        raise ConfigError("a candidate grammar needs at least one id")
    for cid in ids:
        if not isinstance(cid, str) or not _SAFE_ID.match(cid):
            raise ConfigError(f"candidate id {cid!r} is not a plain token (letters, digits, _ or -)")
    chars = CANDIDATE_REASONING_CHARS
    if max_tokens_per_candidate is not None:
        chars = max(min(chars, 3 * (max_tokens_per_candidate - _BLOCK_TOKENS)), CANDIDATE_REASONING_MIN_CHARS)
    lines = ["root ::= " + " ".join(f"c{k}" for k in range(len(ids)))]
    lines += [f"c{k} ::= " + _literal(f'<candidate id="{cid}">\n<reasoning>') + " reason "
              + _literal(f'</reasoning>\n<grade id="{cid}">') + " grade " + _literal("</grade>\n</candidate>\n")
              for k, cid in enumerate(ids)]
    lines.append(rf"reason ::= [^<>\x00-\x20] [^<>\x00-\x1f]{{{CANDIDATE_REASONING_MIN_CHARS - 1},{chars - 1}}}")
    lines.append("grade ::= " + " | ".join(_literal(str(g)) for g in scale.grades))
    return "\n".join(lines)
