"""Readouts: a judge reply into a decision, one reader per reply form.

Every verdict the library asks for is sealed (``_seal``): bound to a
per-request value the policy never saw, and only a sealed verdict is read.

* ``_seal``: the seal, the request's seal instruction, sealed JSON verdicts
  and ``VERDICT <seal>: <label>`` lines (and the opt-in unsealed reading);
* ``_forms``: declared verdict forms of a user's own prompt (``[[{score}]]``);
* ``_candidate_blocks``: ``<candidate id>`` blocks, each grade bound to its id;
* ``_distribution``: next-token probabilities over the grades;
* ``_decision``: what every reader returns (``Verdict`` or ``NoVerdict``);
* ``_scan``: the one JSON scanner (completions, not judge replies);
* ``_text``: the one neutraliser of policy text.

This door exports only the two pieces the README names, ``json_objects`` and
``neutralize``; the rest is imported from its private module.
"""

from ._scan import json_objects
from ._text import neutralize

__all__ = ["json_objects", "neutralize"]
