"""Readouts: a judge reply into a decision (docs/sealed-verdicts.md); only a sealed verdict is
read unless a grader opts out. Where a verdict is read: ``_seal.read_sealed`` (a sealed JSON
object or ``VERDICT <seal>:`` line) and ``_seal.read_unsealed`` (opt-in);
``_forms.VerdictForm`` (a declared form: ``read`` unsealed, ``read_line`` on a sealed line);
``_candidate_blocks.read_candidate_reply`` (``<grade id="ID">`` elements);
``graders._expected_value.read_distribution`` (a next-token distribution). Each returns a
decision value (``_decision``): a verdict, a distribution, or the reason there is none. Beside
them: ``_gbnf``, the grammars holding a judge to its form where its server takes one, the
completion JSON scanner (``_scan``) and the neutraliser of policy text (``_text``).
This door exports the two pieces the README names."""

from ._scan import json_objects
from ._text import neutralize

__all__ = ["json_objects", "neutralize"]
