"""Scorers: shareable judge definitions (model + template + output spec + params), versioned.

See docs/scorers.md: ``Scorer``, ``ScorerConfig`` (``version_id``: SHA-256 of its canonical JSON),
output specs, built-ins, ``ScorerBinding`` (a pinned version and a variable -> source mapping),
``ScorerRegistry``, ``ScorerGrader`` and the document's result names (``DOCUMENT_FIELDS``).
"""

from ._binding import ScorerBinding, ScorerGrader
from ._builtins import BUILTIN_FUNCTIONS, BUILTIN_VARIABLES
from ._config import ScorerConfig
from ._fields import DOCUMENT_FIELDS, document_fields, scorer_result, with_document_fields
from ._output_spec import BooleanSpec, CategoricalSpec, NumericSpec
from ._registry import ScorerNotFound, ScorerRegistry
from ._scorer import Scorer

__all__ = ["BUILTIN_FUNCTIONS", "BUILTIN_VARIABLES", "BooleanSpec", "CategoricalSpec", "DOCUMENT_FIELDS",
           "NumericSpec", "Scorer", "ScorerBinding", "ScorerConfig", "ScorerGrader", "ScorerNotFound",
           "ScorerRegistry", "document_fields", "scorer_result", "with_document_fields"]
