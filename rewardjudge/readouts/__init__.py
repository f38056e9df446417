"""Readouts: a judge reply into a verdict, one module per reply form.

* ``_json_verdict``: a JSON object validated by the output model;
* ``_plain_label``: a bare label (``PASS``, ``Verdict: FAIL``);
* ``_candidate_blocks``: ``<candidate id>`` blocks with one ``<grade>`` each;
* ``_distribution``: next-token probabilities over the grades (the expected value
  of a JSON verdict's score: ``rewardjudge.graders._expected_value``).

All of them read only what the judge wrote: text copied from the prompt that
was sent (which holds policy text) is quoted material, never a verdict
(``_scan.PromptIndex``). The readouts are the graders' machinery: this door
exports only the two pieces the README names, ``json_objects`` (the one JSON
scanner) and ``neutralize`` (the one neutraliser of policy text); the rest is
imported from its private module.
"""

from ._scan import json_objects
from ._text import neutralize

__all__ = ["json_objects", "neutralize"]
