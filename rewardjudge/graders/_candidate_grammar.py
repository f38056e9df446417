"""A GBNF grammar for one candidate-judging request: the ``<candidate id="…">`` reply
protocol, enforced where the server takes a grammar (the reply is still read as any other).

>>> from rewardjudge.scales import Scale
>>> print(candidate_grammar(["a2b3c4"], Scale.BINARY, reasoning_chars=80))
root ::= c0
c0 ::= "<candidate id=\\"a2b3c4\\">\\n<reasoning>" reason "</reasoning>\\n<grade id=\\"a2b3c4\\">" grade "</grade>\\n</candidate>\\n"
reason ::= [^<>\\x00-\\x20] [^<>\\x00-\\x1f]{15,79}
grade ::= "0" | "1"
"""

from __future__ import annotations

import re
from typing import Sequence

from ..errors import ConfigError
from ..scales import Scale

__all__ = ["CANDIDATE_REASONING_CHARS", "candidate_grammar"]

#: the most characters of reasoning the grammar lets the judge write per candidate
CANDIDATE_REASONING_CHARS = 200
#: the fewest (without a floor a 135M judge grades without a word)
CANDIDATE_REASONING_MIN_CHARS = 16

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]+\Z")


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{out}"'


def candidate_grammar(ids: Sequence[str], scale: Scale, *,
                      reasoning_chars: int = CANDIDATE_REASONING_CHARS,
                      min_reasoning_chars: int = CANDIDATE_REASONING_MIN_CHARS) -> str:
    """The GBNF grammar of a reply judging ``ids`` (in this order) on ``scale``, with
    ``min_reasoning_chars`` to ``reasoning_chars`` characters of reasoning each (the
    first one not a space)."""
    if not ids:
        raise ConfigError("a candidate grammar needs at least one id")
    if isinstance(reasoning_chars, bool) or not isinstance(reasoning_chars, int) or reasoning_chars < 1:
        raise ConfigError(f"reasoning_chars must be an int >= 1, got {reasoning_chars!r}")
    if isinstance(min_reasoning_chars, bool) or not isinstance(min_reasoning_chars, int) \
            or not 1 <= min_reasoning_chars <= reasoning_chars:
        raise ConfigError(f"min_reasoning_chars must be an int in 1..reasoning_chars, "
                          f"got {min_reasoning_chars!r}")
    for cid in ids:
        if not isinstance(cid, str) or not _SAFE_ID.match(cid):
            raise ConfigError(f"candidate id {cid!r} is not a plain token (letters, digits, _ or -)")
    lines = ["root ::= " + " ".join(f"c{k}" for k in range(len(ids)))]
    lines += [f"c{k} ::= " + _literal(f'<candidate id="{cid}">\n<reasoning>') + " reason "
              + _literal(f'</reasoning>\n<grade id="{cid}">') + " grade " + _literal("</grade>\n</candidate>\n")
              for k, cid in enumerate(ids)]
    rest = (f" [^<>\\x00-\\x1f]{{{min_reasoning_chars - 1},{reasoning_chars - 1}}}"
            if reasoning_chars > 1 else "")
    lines.append(r"reason ::= [^<>\x00-\x20]" + rest)
    lines.append("grade ::= " + " | ".join(_literal(str(g)) for g in scale.grades))
    return "\n".join(lines)
