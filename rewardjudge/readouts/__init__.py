"""Readouts: a judge reply into a decision, one reader per reply form
(``_seal``, ``_forms``, ``_candidate_blocks``; ``_gbnf``, the grammars holding a
judge to one where its server takes one), the JSON
scanner of completions (``_scan``) and the neutraliser of policy text
(``_text``); see docs/sealed-verdicts.md. Only a sealed verdict is read.
This door exports the two pieces the README names."""

from ._scan import json_objects
from ._text import neutralize

__all__ = ["json_objects", "neutralize"]
