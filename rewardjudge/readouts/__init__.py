"""Readouts: a judge reply into a decision value, a verdict, a distribution or the reason there is none
(docs/sealed-verdicts.md); this door exports the two pieces the README names."""

from ._scan import json_objects
from ._text import neutralize

__all__ = ["json_objects", "neutralize"]
