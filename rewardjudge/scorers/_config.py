"""A scorer's config and its version id: the SHA-256 of the canonical JSON of the validated config
(key order, whitespace, ``1`` vs ``1.0`` and ``random_seed`` vs ``seed`` never change it)."""

from __future__ import annotations

import contextlib
import re
import unicodedata
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import BeforeValidator, Field, PrivateAttr, StrictStr, field_serializer, model_serializer, model_validator

from .._hash import canonical_hash, canonical_json
from .._option_types import JSON_FORM, Options, Real, Whole
from .._validate import json_value
from ..errors import ConfigError, TemplateError
from ..templates._prompt import ENGINES, PromptTemplate, normalize_engine
from ._builtins import BUILTIN_FUNCTIONS, BUILTIN_NAMES
from ._output_spec import OutputSpec, output_spec_from_dict

__all__ = ["ScorerConfig", "ScorerParams", "pinned", "slugify"]

MAX_TEMPLATE_CHARS = 20_000
MAX_MODEL_CHARS = 200


class ScorerParams(Options):
    """Sampling params: ``temperature`` in [0, 1.5], ``top_p`` in (0, 1], ``max_tokens`` >= 0 (0: the
    server's default), ``seed`` >= 0 (alias ``random_seed``). Unset params are not sent."""

    where = "params"
    model_config = JSON_FORM
    temperature: Optional[Real] = Field(None, ge=0, le=1.5, description="must be a number in [0, 1.5]")
    top_p: Optional[Real] = Field(None, gt=0, le=1, description="must be a number in (0, 1]")
    max_tokens: Optional[Whole] = Field(None, ge=0, description="must be a whole number >= 0")
    seed: Optional[Whole] = Field(None, ge=0, description="must be a whole number >= 0")

    @model_validator(mode="before")
    @classmethod
    def _alias(cls, data: Any) -> Any:
        """``random_seed`` read as ``seed``; the same seed under both names is no conflict."""
        if isinstance(data, Mapping) and "random_seed" in data:
            data = dict(data)
            seed = data.pop("random_seed")
            if data.setdefault("seed", seed) != seed:
                raise ConfigError("params: give either seed or random_seed, not both")
        return data

    @model_serializer(mode="wrap")
    def _set(self, dump: Any) -> dict[str, Any]:
        """Unset params are left out (and not sent)."""
        return {k: v for k, v in dump(self).items() if v is not None}


def _engine(engine: Any) -> Any:
    """An engine's alias as its name; anything else as it is, for the field to refuse."""
    with contextlib.suppress(ConfigError):
        return normalize_engine(engine)
    return engine


class ScorerConfig(Options):
    """What defines a scorer's behaviour (docs/scorers.md), validated and compiled at construction.

    >>> ScorerConfig.from_dict({"model": "m", "prompt_template": "Rate: {{answer}}",
    ...                         "output_spec": {"type": "boolean"}}).variables
    ['answer']"""

    where = "config"
    model_config = JSON_FORM
    model: StrictStr = Field(pattern=r"\S", max_length=MAX_MODEL_CHARS, description=(
        f"must name the judge model (a non-empty string of at most {MAX_MODEL_CHARS} characters)"))
    prompt_template: StrictStr = Field(pattern=r"\S", max_length=MAX_TEMPLATE_CHARS, description=(
        f"must be a non-empty template string of at most {MAX_TEMPLATE_CHARS} characters"))
    template_engine: Annotated[Literal["handlebars", "jinja2"], BeforeValidator(_engine)] = Field(
        "jinja2", description=f"must be one of {ENGINES}")
    output_spec: Annotated[OutputSpec, BeforeValidator(output_spec_from_dict)]
    params: Annotated[ScorerParams, BeforeValidator(lambda v: ScorerParams.from_dict({} if v is None else v))] = ScorerParams()
    _template: PromptTemplate = PrivateAttr()

    @model_validator(mode="after")
    def _compile(self) -> "ScorerConfig":
        """The checked, non-strict template; a Handlebars one naming a Jinja2 function built-in is refused."""
        template = PromptTemplate(self.prompt_template, self.template_engine, name="prompt_template", strict=False)
        called = [v for v in template.variables
                  if self.template_engine == "handlebars" and v.split(".", 1)[0] in BUILTIN_FUNCTIONS]
        if called:
            raise TemplateError(f"prompt_template: {called[0]!r} is a Jinja2 built-in function; Handlebars "
                                f"templates cannot call it: read the attribute as {{{{metadata.key}}}}, "
                                f"or use Jinja2 (the default engine)")
        self._template = template
        return self

    @property
    def template(self) -> PromptTemplate:
        return self._template

    @classmethod
    def from_json(cls, text: str) -> "ScorerConfig":
        return cls.from_dict(json_value(text, "scorer config"))

    @field_serializer("output_spec")
    def _spec(self, spec: OutputSpec) -> dict[str, Any]:
        return spec.to_dict()

    def canonical_json(self) -> str:
        return canonical_json(self.to_dict())

    @property
    def version_id(self) -> str:
        """SHA-256 hex of the canonical JSON: the version id."""
        return canonical_hash(self.to_dict())

    @property
    def variables(self) -> list[str]:
        """Names the template reads, does not set and that are not built-in, in first-use order."""
        top = dict.fromkeys(p.split(".", 1)[0] for p in self.template.variables)
        return [v for v in top if v not in BUILTIN_NAMES]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScorerConfig) and self.canonical_json() == other.canonical_json()

    def __hash__(self) -> int:
        return hash(self.canonical_json())

    def __repr__(self) -> str:
        return (f"ScorerConfig(model={self.model!r}, engine={self.template_engine!r}, "
                f"output_spec={self.output_spec.to_dict()!r}, params={self.params.to_dict()!r}, "
                f"version={self.version_id[:12]})")


def pinned(config: ScorerConfig, version: Any, pin: str, fix: str) -> ScorerConfig:
    """``config`` when its version id is ``version``; else a ConfigError: ``pin`` (who pins it), then ``fix``."""
    if config.version_id != version:
        raise ConfigError(f"{pin} {str(version)[:12]} but its config hashes to {config.version_id[:12]}: {fix}")
    return config


def slugify(name: str) -> str:
    """Lowercase ASCII words joined by ``-`` (at most 60 characters; ``"scorer"`` if none).

    >>> slugify("Réponse  utile? (v2)")
    'reponse-utile-v2'
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:60].strip("-")
    return slug or "scorer"
