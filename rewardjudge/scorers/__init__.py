"""Scorers: shareable judge definitions (model + template + output spec + params), versioned.

* ``Scorer``: name, description, ``ScorerConfig``; ``scorer.grader(model, mapping)``.
* ``ScorerConfig``: validated config; ``version_id`` = SHA-256 of its canonical JSON.
  Templates are sandboxed Jinja2 by default (``template_engine="handlebars"`` on request).
* Output specs (``BooleanSpec``, ``CategoricalSpec``, ``NumericSpec``): strict reply schemas;
  categorical labels get numbers only from explicit ``values`` (without them: a label-only
  scorer, evaluated by label counts and shares, refused as a reward).
* Built-ins (``BUILTIN_VARIABLES``, ``BUILTIN_FUNCTIONS``): ``transcript``, ``attr("key")``,
  ``format_input_transcript(...)``, ``format_output_transcript(...)`` and more.
* ``ScorerBinding``: a pinned version + variable -> source mapping; ``binding.grader(model)``.
* ``ScorerRegistry``: a folder of scorers with create, get, find, update, delete and versions.
* ``ScorerGrader``: the Grader a binding becomes; it asks ``config.model`` and every Grade
  names the version and the model that answered.
* The document's result names (``DOCUMENT_FIELDS``: ``score_value``, ``score_label``,
  ``explanation`` for our ``grade_value``, ``grade_label``, ``grade_reasoning``):
  ``document_fields(grade)``, ``scorer_result(grade)``, ``with_document_fields(results)``.

>>> from rewardjudge.scorers import Scorer
>>> s = Scorer("Correct?", {"model": "judge", "output_spec": {"type": "boolean"},
...            "prompt_template": "{% if reference %}Reference: {{ reference }}\\n{% endif %}"
...                               "Answer: {{ completion }}\\nIs it correct?"})
>>> s.variables, len(s.version)
(['reference'], 64)
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
