"""Grader options: one pydantic model per family, the one place each option is named, defaulted
and checked; a bad value is a ConfigError at construction (docs/pipeline.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import (BaseModel, BeforeValidator, Field, PrivateAttr, StrictBool, StrictInt, StrictStr,
                      field_validator, model_validator)

from .._option_types import Flag, Number, Options, Real, Text
from .._thread_context import THREAD_VARIABLES
from .._validate import finite_number
from ..errors import ConfigError
from ..models._base import InferenceModel, check_choices
from ..readouts._forms import VerdictForm
from ..readouts._seal import SEAL_FIELDS
from ..scales import Scale
from ._outputs import check_output_model, fitted_max_tokens, score_choices

__all__ = ["CandidateOptions", "GraderOptions", "JudgeBinding", "JudgeOptions", "ProbabilityOptions",
           "TemplatedOptions"]

#: what the seal field adds to a schema-constrained verdict, in tokens (at worst one per hex digit)
SEAL_TOKENS = 48
#: default floor of valid-score probability for the expected-value option
EXPECTED_VALUE_FLOOR = 0.5
#: the reply prefix of ``answer_prefix="auto"``; with the space, the digit is the next token
AUTO_PREFIX = "Grade: "


def _mapping(value: Any) -> dict[str, Any]:
    if value is not None and not isinstance(value, Mapping):
        raise ConfigError(f"template_variables must be a mapping, got {type(value).__name__}")
    # a constant in the completion's place would be graded instead of every sample
    if taken := sorted(set(value or ()) & set(THREAD_VARIABLES)):
        raise ConfigError(f"template_variables {', '.join(map(repr, taken))}: the sample fills "
                          f"{'these names' if len(taken) > 1 else 'this name'} (the thread vocabulary); name "
                          f"the constant otherwise")
    return dict(value or {})


Variables = Annotated[dict, BeforeValidator(_mapping)]
ScaleOption = Annotated[Any, BeforeValidator(Scale.get)]


class GraderOptions(Options):
    """What every grader takes: its key, penalty mode and penalties, guards (None: the class's default)."""

    grader_key: str = Field(min_length=1, description="must be a non-empty str")
    mode: Optional[Literal["train", "eval"]] = Field(None, description="must be 'train', 'eval' or None")
    train_penalty: Real = Field(-1.0, description="must be a finite number (a reward)")
    eval_penalty: Real = Field(0.0, description="must be a finite number (a reward)")
    reject_content_free: Optional[StrictBool] = Field(None, description="must be True, False or None")
    max_completion_chars: Optional[StrictInt] = Field(None, ge=1, description="must be an int >= 1 (or None)")


class JudgeBinding(Options):
    """What every judge-asking family takes: the judge, and the model a completion is parsed into."""

    model: InferenceModel = Field(description="must be an InferenceModel: the judge of `async with spawn_judge() as "
                                              "judge`, OpenAIModel(URL, NAME) or TorchModel")
    completion_model: Optional[type[BaseModel]] = Field(
        None, description="must be a pydantic BaseModel subclass (or None)")


class PromptOptions(Options):
    """How a family's templates are compiled."""

    #: "handlebars" or "jinja2" (checked by the template)
    engine: Any = "handlebars"
    #: a template reading a variable the context lacks fails at construction (False: renders empty)
    strict_templates: Flag = True


class SealOptions(PromptOptions):
    """A sealing family's templates, and the key of its seals."""

    #: bytes or text of 16 bytes or more (None: the judge's, else REWARDJUDGE_SEAL_KEY, else random per process)
    seal_key: Any = None


class Sampling(Options):
    """Sampling settings of a judge request."""

    temperature: Optional[Number] = Field(0.0, ge=0.0, le=2.0,
                                          description="must be a number in [0, 2] (or None)")
    top_p: Optional[Number] = Field(None, gt=0.0, le=1.0, description="must be a number in (0, 1] (or None)")
    seed: Optional[StrictInt] = Field(None, description="must be an int (or None)")


class JudgeOptions(Sampling):
    """Sampling and re-ask settings of graders that ask a judge for text."""

    max_tokens: Optional[StrictInt] = Field(512, ge=1, description="must be an int >= 1 (or None)")
    reply_retries: StrictInt = Field(1, ge=0, le=20, description="must be >= 0 and <= 20 (an int)")


class TemplatedOptions(JudgeOptions, SealOptions, JudgeBinding, GraderOptions):
    """The templated judge's options; a ``verdict_form`` turns ``structured`` off and is checked into ``form``."""

    output_model: Any = None
    max_tokens: Optional[Literal["fit"] | Annotated[StrictInt, Field(ge=1)]] = Field(
        "fit", description="must be an int >= 1 (or None)")
    template_variables: Variables = {}
    seal: StrictBool = Field(True, description="must be True or False")
    output_schema_format: Literal["compact", "json_schema"] = Field(
        "compact", description="must be 'compact' or 'json_schema'")
    verdict_form: Any = None
    label_values: Any = None
    score_bounds: Any = None
    structured: Flag = True
    expected_value: Flag = False
    _form: Optional[VerdictForm] = PrivateAttr(None)

    @field_validator("output_model", mode="before")
    @classmethod
    def _output_model(cls, model: Any) -> Any:
        model = check_output_model(model)
        taken = [name for name in SEAL_FIELDS if name in model.model_fields]
        if taken:
            raise ConfigError(f"output_model {model.__name__} has a field named {taken[0]!r}: that "
                              f"name carries the verdict's seal; rename the field")
        return model

    @model_validator(mode="after")
    def _together(self) -> "TemplatedOptions":
        self._form, self.label_values = _declared_form(self.verdict_form, self.label_values, self.score_bounds)
        if self._form is not None:
            self.structured = False   # the verdict is a line of text in the declared form
            if self.seal and "\n" in self._form.pattern.strip():
                raise ConfigError(f"verdict_form {self._form.pattern!r} spans lines; a sealed verdict is the "
                                  f"one line after 'VERDICT <seal>:': declare a one-line form, or seal=False "
                                  f"to read this form as the judge writes it")
        if self.max_tokens == "fit":   # a schema-constrained reply and its seal; 512 unbounded
            fitted = fitted_max_tokens(self.output_model) if self.structured else None
            self.max_tokens = fitted + (SEAL_TOKENS if self.seal else 0) if fitted else 512
        if self.expected_value and self._form is not None:
            raise ConfigError(f"expected_value weighs the output model's 'score'; a verdict_form "
                              f"({self._form.pattern!r}) is read as the form's own value: use one or "
                              f"the other")
        if self.expected_value and score_choices(self.output_model) is None:
            raise ConfigError(f"expected_value needs an output model whose 'score' is one of a few "
                              f"one-token values (a Literal/enum, or an int bounded in 0..9); "
                              f"{self.output_model.__name__}.score is not")
        return self

    @property
    def form(self) -> Optional[VerdictForm]:
        return self._form


def _declared_form(pattern: Any, label_values: Any, bounds: Any) -> "tuple[VerdictForm | None, dict[str, float]]":
    """The declared verdict form, checked (by ``VerdictForm``; ``{label}`` needs ``label_values``)."""
    if pattern is None:
        if label_values is not None or bounds is not None:
            raise ConfigError("label_values and score_bounds go with a verdict_form")
        return None, {}
    values = dict(label_values or {})
    for label, v in values.items():
        if not isinstance(label, str) or not finite_number(v):
            raise ConfigError(f"label_values must map each label to a finite number, got {label!r}: {v!r}")
    if isinstance(pattern, str) and "{label}" in pattern and not values:
        raise ConfigError(f"verdict_form {pattern!r} holds {{label}}: give label_values, the reward of "
                          f"each label (e.g. {{'A>>B': 1.0, 'A>B': 0.75, 'A=B': 0.5, ...}})")
    form = VerdictForm(pattern, labels=tuple(values) if values else None,
                          bounds=tuple(bounds) if bounds is not None else None)
    return form, {k: float(v) for k, v in values.items()}


class CandidateOptions(Sampling, SealOptions, JudgeBinding, GraderOptions):
    """The candidate (group) judge's options (templates None: the shipped ones)."""

    template: Any = None
    system_template: Any = None
    protected_tags: tuple[StrictStr, ...] = Field((), description="must be a sequence of tag names")
    scale: ScaleOption = Field("graded", validate_default=True)
    batch_size: StrictInt = Field(8, ge=1, description="must be an int >= 1")
    max_rounds: StrictInt = Field(3, ge=1, description="must be an int >= 1 (1 = no re-asks)")
    max_tokens_per_candidate: Optional[StrictInt] = Field(256, ge=1,
                                                          description="must be an int >= 1 (or None)")
    title_field: Optional[str] = None
    image_field: Optional[str] = None
    include_images: StrictBool = Field(False, description="must be True or False")
    evaluation_name: Text = ""
    evaluation_description: Text = ""
    template_variables: Variables = {}
    shuffle: Flag = True
    expected_value: Flag = False
    expected_value_floor: Real = Field(EXPECTED_VALUE_FLOOR, ge=0.0, le=1.0,
                                         description="must be a probability in [0, 1]")

    @model_validator(mode="after")
    def _together(self) -> "CandidateOptions":
        scale = self.scale
        if self.expected_value and not (0 <= scale.min and scale.max <= 9):
            raise ConfigError(f"expected_value reads each grade as one digit token, but the "
                              f"{scale.name!r} scale runs {scale.min}-{scale.max}; use a scale within 0-9")
        for name in ("title_field", "image_field"):
            value, model = getattr(self, name), self.completion_model
            if value is not None and model is None:
                raise ConfigError(f"{name} names a field of completion_model; pass completion_model")
            if value is not None and value not in model.model_fields:
                raise ConfigError(f"{name}={value!r} is not a field of {model.__name__}; "
                                  f"fields: {sorted(model.model_fields)}")
        if self.include_images and self.image_field is None:
            raise ConfigError("include_images=True sends each candidate's image_field as an image "
                              "part; pass completion_model and image_field")
        return self


class ProbabilityOptions(PromptOptions, JudgeBinding, GraderOptions):
    """The probability judge's options (``"auto"`` prefix: ``AUTO_PREFIX``)."""

    system_template: Any = None
    user_template: Any = None
    question_template: Any = None
    scale: ScaleOption = Field("graded", validate_default=True)
    value: Literal["expected", "most_likely"] = Field("expected",
                                                      description="must be 'expected' or 'most_likely'")
    min_valid_mass: Real = Field(0.5, ge=0.0, le=1.0, description="must be a number in [0, 1]")
    seed: Optional[StrictInt] = Field(None, description="must be an int (or None)")
    answer_prefix: Optional[StrictStr] = Field("auto", min_length=1,
                                               description="must be 'auto', a non-empty string or None")
    title_field: Optional[str] = None
    evaluation_name: Text = ""
    evaluation_description: Text = ""
    template_variables: Variables = {}
    tokens: Optional[dict[StrictStr, Real]] = Field(
        None, description="must map each answer token (a non-empty string) to its reward")

    @property
    def typed(self) -> bool:
        return bool(getattr(self.model, "answers_typed_questions", False))

    @model_validator(mode="after")
    def _together(self) -> "ProbabilityOptions":
        scale, model = self.scale, self.model
        if scale.min < 0 or scale.max > 9:
            raise ConfigError(f"scale {scale.name!r} has grades {scale.min}-{scale.max}: a probability "
                              f"judge reads each grade as one token, so grades must be single digits (0-9)")
        if self.title_field is not None and (self.completion_model is None
                                             or self.title_field not in self.completion_model.model_fields):
            raise ConfigError(f"title_field={self.title_field!r} must name a field of completion_model")
        if self.tokens is not None and self.typed:
            raise ConfigError("tokens= names the judge's answer tokens; a typed-question provider answers "
                              "per criterion of the scale instead")
        if self.tokens is not None:
            if len(self.tokens) < 2:
                raise ConfigError(f"tokens must name at least two answer tokens, got {self.tokens!r}")
            check_choices(list(self.tokens))   # the choices a distribution is read over: bare, non-empty
            if bad := [(t, r) for t, r in self.tokens.items() if not finite_number(r)]:
                raise ConfigError(f"the reward of token {bad[0][0]!r} must be a finite number, got {bad[0][1]!r}")
        if self.answer_prefix == "auto":
            self.answer_prefix = AUTO_PREFIX
        if not self.typed and (self.answer_prefix is None or not model.continues_prefix):
            raise ConfigError(
                "a probability grade reads only the token right after an answer prefix the "
                "library writes (answer_prefix, default 'Grade: '), and "
                + (f"{getattr(model, 'name', type(model).__name__)!r} cannot continue one "
                   f"(continues_prefix is False): use a TorchModel, or an OpenAIModel with "
                   f"logprobs_endpoint='completions' and the judge's chat_template"
                   if not model.continues_prefix else "answer_prefix=None turns it off"))
        return self

