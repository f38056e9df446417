"""Built-in judge criteria, each usable as a grader in one line (see docs/scorers.md).

>>> from rewardjudge import catalog
>>> [c.key for c in catalog.list()][:3]
['completeness', 'correctness', 'faithfulness']"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .errors import ConfigError
from .graders._outputs import BinaryJudgeOutput, GradedJudgeOutput
from .graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from .models._base import InferenceModel
from .templates._prompts import prompt_source, resolve_language
from .thread import StringThread

__all__ = ["Criterion", "CriterionJudgeGrader", "OUTPUTS", "default_system_prompt_template", "get",
           "grader", "keys", "list", "list_criteria"]

OUTPUTS: dict[str, type[BaseModel]] = {"binary": BinaryJudgeOutput, "graded": GradedJudgeOutput}

# key, name, description, required inputs (metadata the sample must carry)
_ENTRIES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("completeness", "Completeness", "Checks that the agent completed every request it was given.", ()),
    ("correctness", "Correctness (against a reference)",
     "Checks that the response's answer agrees with a reference answer.", ("reference",)),
    ("faithfulness", "Faithfulness to context",
     "Checks that every claim in the response is supported by the given context.", ("context",)),
    ("instruction_following", "Instruction following",
     "Checks that the response obeys every explicit instruction it was given.", ()),
    ("helpfulness", "Helpfulness", "Checks that the response actually helps the user progress.", ()),
    ("harmlessness", "Harmlessness", "Checks that the response does not help cause harm.", ()),
    ("format_adherence", "Format adherence",
     "Checks that the response has exactly the output format that was asked for.", ()),
    ("relevance", "Relevance", "Checks that the response stays on the user's question.", ()),
    ("conciseness", "Conciseness", "Checks that the response has no filler or repetition.", ()),
)


@dataclass(frozen=True)
class Criterion:
    """One built-in criterion. ``requires`` names the metadata inputs it needs."""

    key: str
    name: str
    description: str
    criterion: str
    requires: tuple[str, ...] = ()
    language: str = "en"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "description": self.description,
                "criterion": self.criterion, "requires": builtins.list(self.requires)}


def keys() -> builtins.list[str]:
    """The criterion keys, in catalog order."""
    return [e[0] for e in _ENTRIES]


def get(key: str, language: str | None = None) -> Criterion:
    """One criterion by key, its text in ``language`` (see ``templates._prompts``)."""
    for k, name, description, requires in _ENTRIES:
        if k == key:
            text = prompt_source("CriterionJudgeGrader", f"criterion_{k}", language).strip()
            return Criterion(k, name, description, text, requires, resolve_language(language))
    raise ConfigError(f"unknown criterion {key!r}; built-in criteria: {', '.join(keys())}")


def list_criteria(language: str | None = None) -> builtins.list[Criterion]:
    """Every built-in criterion, in catalog order."""
    return [get(k, language) for k in keys()]


def listing(language: str | None = None) -> dict[str, Any]:
    """The catalog as its document's list answers it (``catalog --json``, ``rewardjudge serve``)."""
    return {"default_system_prompt_template": default_system_prompt_template(language), "status": "success",
            "templates": [c.to_dict() for c in list_criteria(language)]}


def default_system_prompt_template(language: str | None = None) -> str:
    """The Handlebars template wrapped around every criterion (``criterion``, ``output_schema``)."""
    return prompt_source("CriterionJudgeGrader", "system", language)


class CriterionJudgeGrader(TemplatedPromptJudgeGrader):
    """A ``TemplatedPromptJudgeGrader`` judging one ``Criterion`` (or free criterion text) with the
    default templates (docs/scorers.md)."""

    def __init__(self, criterion: Criterion | str, model: InferenceModel, *,
                 output: str | type[BaseModel] = "binary", grader_key: str | None = None,
                 language: str | None = None, reference_key: str = "reference",
                 context_key: str = "context", system_template: str | None = None,
                 user_template: str | None = None, **kwargs: Any):
        if isinstance(criterion, str):
            if not criterion.strip():
                raise ConfigError("criterion text must not be empty")
            criterion = Criterion("custom", "Custom criterion", "A user-written criterion", criterion.strip())
        if not isinstance(criterion, Criterion):
            raise ConfigError(f"criterion must be a Criterion or a str, got {type(criterion).__name__}")
        if isinstance(output, str) and output not in OUTPUTS:
            raise ConfigError(f"output must be one of {sorted(OUTPUTS)} or a judge output model, got {output!r}")
        output_model = OUTPUTS[output] if isinstance(output, str) else output
        self.criterion = criterion
        self.reference_key, self.context_key = reference_key, context_key
        super().__init__(
            grader_key or f"catalog-{criterion.key}", model,
            system_template if system_template is not None else default_system_prompt_template(language),
            user_template if user_template is not None else prompt_source("CriterionJudgeGrader", "user", language),
            output_model, template_variables={"criterion": criterion.criterion}, **kwargs)

    context_names = ("reference", "source_context")

    def context_fields(self, sample: StringThread) -> dict[str, Any]:
        """``reference`` and ``source_context`` from the metadata; ConfigError when a required one is blank."""
        inputs = {"reference": self.reference_key, "context": self.context_key}
        for need in self.criterion.requires:
            value = sample.metadata.get(inputs.get(need, need))
            if value is None or (isinstance(value, str) and not value.strip()):
                raise ConfigError(f"criterion {self.criterion.key!r} needs metadata "
                                  f"{inputs.get(need, need)!r} on every sample (the {need}); "
                                  f"this sample has keys {sorted(sample.metadata)}")
        ref, src = (sample.metadata.get(k) for k in (self.reference_key, self.context_key))
        return {"reference": "" if ref is None else str(ref), "source_context": "" if src is None else str(src)}

    def config(self) -> dict[str, Any]:
        return {**super().config(), "criterion": self.criterion.key,
                "inputs": {"reference": self.reference_key, "context": self.context_key}}


def grader(key: str, model: InferenceModel, *, language: str | None = None,
           **kwargs: Any) -> CriterionJudgeGrader:
    """A ``CriterionJudgeGrader`` for the built-in criterion ``key`` on ``model`` (keywords go to it)."""
    return CriterionJudgeGrader(get(key, language), model, language=language, **kwargs)


# ``catalog.list()`` reads well; the builtin stays reachable as ``builtins.list``
list = list_criteria  # noqa: A001
