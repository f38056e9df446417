"""Readouts: a judge reply into a verdict, one module per reply form.

* ``json_verdict``: a JSON object validated by the output model;
* ``plain_label``: a bare label (``PASS``, ``Verdict: FAIL``);
* ``candidate_blocks``: ``<candidate id>`` blocks with one ``<grade>`` each
  (``rewardjudge.graders._candidate_protocol``);
* token distributions: ``rewardjudge.graders._distribution``.

All of them read only what the judge wrote: text copied from the prompt that
was sent (which holds policy text) is quoted material, never a verdict
(``PromptIndex``). ``neutralize`` is the one neutraliser of policy text.
"""

from ._scan import JsonSpan, PromptIndex, json_objects
from ._text import (PROTOCOL_TAGS, contains_tag, fold, neutralize, neutralize_value, normalize_text,
                    template_tag_names)
from ._json_verdict import Reading, read_json_verdict
from ._plain_label import read_plain_label

__all__ = ["JsonSpan", "PROTOCOL_TAGS", "PromptIndex", "Reading", "contains_tag", "fold", "json_objects",
           "neutralize", "neutralize_value", "normalize_text", "read_json_verdict", "read_plain_label",
           "template_tag_names"]
