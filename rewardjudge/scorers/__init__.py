"""Scorers: shareable judge definitions (model + template + output spec + params), versioned (see
docs/scorers.md). Scorers are data: the grader that runs one is ``rewardjudge.ScorerGrader``, and
nothing here imports a grader."""

from ._binding import ScorerBinding
from ._builtins import BUILTIN_FUNCTIONS, BUILTIN_VARIABLES
from ._config import ScorerConfig
from ._fields import DOCUMENT_FIELDS, document_fields, scorer_result, with_document_fields
from ._output_spec import BooleanSpec, CategoricalSpec, NumericSpec
from ._registry import ScorerNotFound, ScorerRegistry
from ._scorer import Scorer

__all__ = ["BUILTIN_FUNCTIONS", "BUILTIN_VARIABLES", "BooleanSpec", "CategoricalSpec", "DOCUMENT_FIELDS",
           "NumericSpec", "Scorer", "ScorerBinding", "ScorerConfig", "ScorerNotFound",
           "ScorerRegistry", "document_fields", "scorer_result", "with_document_fields"]
