"""Scorers: shareable judge definitions (model + template + output spec + params), versioned.

* ``Scorer``: name, description, ``ScorerConfig``; ``scorer.grader(model, mapping)``.
* ``ScorerConfig``: validated config; ``version_id`` = SHA-256 of its canonical JSON.
* Output specs (``BooleanSpec``, ``CategoricalSpec``, ``NumericSpec``): strict reply schemas.
* ``ScorerBinding``: a pinned version + variable -> source mapping; ``binding.grader(model)``.
* ``ScorerRegistry``: a folder of scorers with create, get, find, update and versions.
* ``ScorerGrader``: the Grader a binding becomes; every Grade names the version.

>>> from rewardjudge.scorers import Scorer
>>> s = Scorer("Correct?", {"model": "judge", "output_spec": {"type": "boolean"},
...            "prompt_template": "Reference: {{reference}}\\nAnswer: {{completion}}\\nIs it correct?"})
>>> s.variables, len(s.version)
(['reference'], 64)
"""

from .binding import MalformedCompletion, ScorerBinding
from .config import BUILTIN_VARIABLES, ScorerConfig, ScorerParams
from .grader import ScorerGrader
from .output_spec import BooleanSpec, CategoricalSpec, NumericSpec, OutputSpec, Verdict
from .registry import ScorerNotFound, ScorerRegistry
from .scorer import Scorer, ScorerVersion, slugify

__all__ = ["BUILTIN_VARIABLES", "BooleanSpec", "CategoricalSpec", "MalformedCompletion",
           "NumericSpec", "OutputSpec", "Scorer", "ScorerBinding", "ScorerConfig", "ScorerGrader",
           "ScorerNotFound", "ScorerParams", "ScorerRegistry", "ScorerVersion", "Verdict", "slugify"]
