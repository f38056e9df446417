"""A scorer's config (model, prompt template, output spec, params) and its version id: the
SHA-256 of the canonical JSON of the validated, normalised config (key order, whitespace, ``1`` vs
``1.0`` and ``random_seed`` vs ``seed`` never change it)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Mapping

from .._hash import canonical_hash, canonical_json
from .._validate import finite_number, json_value
from ..errors import ConfigError, TemplateError
from ..templates._prompt import ENGINES, PromptTemplate, normalize_engine
from ._builtins import BUILTIN_FUNCTIONS, BUILTIN_NAMES
from ._output_spec import OutputSpec, output_spec_from_dict

__all__ = ["ScorerConfig", "ScorerParams", "scorer_template", "slugify"]

MAX_TEMPLATE_CHARS = 20_000
MAX_MODEL_CHARS = 200


def _number(name: str, value: Any, lo: float, hi: float | None, *, lo_open: bool = False) -> float:
    if not finite_number(value):
        raise ConfigError(f"params.{name} must be a number, got {value!r}")
    low_ok = value > lo if lo_open else value >= lo
    if not low_ok or (hi is not None and value > hi):
        left = "(" if lo_open else "["
        raise ConfigError(f"params.{name} must be in {left}{lo:g}, {hi:g}], got {value!r}")
    return float(value)


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ConfigError(f"params.{name} must be a whole number >= 0, got {value!r}")
    if value < 0:
        raise ConfigError(f"params.{name} must be >= 0, got {value!r}")
    return int(value)


_PARAMS = ("temperature", "top_p", "max_tokens", "seed")


@dataclass(frozen=True)
class ScorerParams:
    """Sampling params: ``temperature`` in [0, 1.5], ``top_p`` in (0, 1], ``max_tokens`` >= 0 (0: the
    server's default), ``seed`` >= 0 (alias ``random_seed``). Unset params are not sent."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        for name, check in (("temperature", lambda n, v: _number(n, v, 0, 1.5)),
                            ("top_p", lambda n, v: _number(n, v, 0, 1, lo_open=True)),
                            ("max_tokens", _count), ("seed", _count)):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check(name, getattr(self, name)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "ScorerParams":
        if data is None or isinstance(data, ScorerParams):
            return cls() if data is None else data
        if not isinstance(data, Mapping):
            raise ConfigError(f"params must be an object, got {data!r:.80}")
        data = dict(data)
        if "random_seed" in data:
            if "seed" in data and data["seed"] != data["random_seed"]:
                raise ConfigError("params: give either seed or random_seed, not both")
            data["seed"] = data.pop("random_seed")
        unknown = sorted(set(data) - set(_PARAMS))
        if unknown:
            raise ConfigError(f"params: unknown key(s) {unknown}; allowed: {list(_PARAMS)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _PARAMS if getattr(self, k) is not None}


class ScorerConfig:
    """What defines a scorer's behaviour; validated (template compiled) at construction.

    ``model``: the judge model's name (1-200 chars); ``prompt_template``: sandboxed Jinja2
    (default) or Handlebars (``template_engine="handlebars"``), at most 20 000 characters,
    compiled into ``template`` (a non-strict ``PromptTemplate``: an undefined variable renders
    empty); ``output_spec`` and ``params``: objects or their JSON forms.

    >>> ScorerConfig.from_dict({"model": "m", "prompt_template": "Rate: {{answer}}",
    ...                         "output_spec": {"type": "boolean"}}).variables
    ['answer']
    """

    __slots__ = ("model", "prompt_template", "template_engine", "output_spec", "params", "template")

    def __init__(self, model: str, prompt_template: str, output_spec: OutputSpec | Mapping[str, Any],
                 params: ScorerParams | Mapping[str, Any] | None = None, *,
                 template_engine: str = "jinja2"):
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("config.model must name the judge model (a non-empty string)")
        if len(model) > MAX_MODEL_CHARS:
            raise ConfigError(f"config.model is at most {MAX_MODEL_CHARS} characters, got {len(model)}")
        if not isinstance(prompt_template, str) or not prompt_template.strip():
            raise ConfigError("config.prompt_template must be a non-empty template string")
        if len(prompt_template) > MAX_TEMPLATE_CHARS:
            raise ConfigError(f"config.prompt_template is at most {MAX_TEMPLATE_CHARS} characters, "
                              f"got {len(prompt_template)}")
        self.model = model
        self.prompt_template = prompt_template
        self.output_spec = output_spec_from_dict(output_spec)
        self.params = ScorerParams.from_dict(params)
        self.template = scorer_template(prompt_template, template_engine)
        self.template_engine = self.template.engine

    _KEYS = ("model", "prompt_template", "template_engine", "output_spec", "params")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ScorerConfig":
        """Build from the JSON form; unknown keys are refused (a typo must not pass silently)."""
        if isinstance(data, ScorerConfig):
            return data
        if not isinstance(data, Mapping):
            raise ConfigError(f"a scorer config must be an object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(cls._KEYS))
        if unknown:
            raise ConfigError(f"config: unknown key(s) {unknown}; allowed: {list(cls._KEYS)}")
        lacking = next((k for k in ("model", "prompt_template", "output_spec") if k not in data), None)
        if lacking:
            raise ConfigError(f"config.{lacking} is required")
        return cls(data["model"], data["prompt_template"], data["output_spec"], data.get("params"),
                   template_engine=data.get("template_engine", "jinja2"))

    @classmethod
    def from_json(cls, text: str) -> "ScorerConfig":
        return cls.from_dict(json_value(text, "scorer config"))

    def to_dict(self) -> dict[str, Any]:
        """The normalised JSON form (what is hashed and stored)."""
        return {"model": self.model, "prompt_template": self.prompt_template,
                "template_engine": self.template_engine, "output_spec": self.output_spec.to_dict(),
                "params": self.params.to_dict()}

    def canonical_json(self) -> str:
        return canonical_json(self.to_dict())

    @property
    def version_id(self) -> str:
        """SHA-256 hex of the canonical JSON: the version id."""
        return canonical_hash(self.to_dict())

    @property
    def variables(self) -> list[str]:
        """Declared variables: names the template reads, does not set itself and that are not
        built-in, in first-use order (a binding says where each comes from)."""
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


def scorer_template(source: str, engine: str) -> PromptTemplate:
    """The checked, non-strict template of a scorer. A Handlebars template cannot call the Jinja2
    function built-ins, so one naming them is refused.

    >>> scorer_template("Product: {{ product }}{% for s in steps %} {{ s }}{% endfor %}", "jinja2").variables
    ['product', 'steps']
    """
    try:
        engine = normalize_engine(engine)
    except ConfigError:
        raise ConfigError(f"config.template_engine must be one of {ENGINES}, got {engine!r}") from None
    template = PromptTemplate(source, engine, name="prompt_template", strict=False)
    called = [v for v in template.variables if engine == "handlebars" and v.split(".", 1)[0] in BUILTIN_FUNCTIONS]
    if called:
        raise TemplateError(f"prompt_template: {called[0]!r} is a Jinja2 built-in function; Handlebars "
                            f"templates cannot call it: read the attribute as {{{{metadata.key}}}}, "
                            f"or use Jinja2 (the default engine)")
    return template


def slugify(name: str) -> str:
    """Lowercase ASCII words joined by ``-`` (at most 60 characters; ``"scorer"`` if none).

    >>> slugify("Réponse  utile? (v2)")
    'reponse-utile-v2'
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:60].strip("-")
    return slug or "scorer"
