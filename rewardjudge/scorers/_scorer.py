"""Scorer: a named, described judge definition (a config) with its version history; a binding
(``scorer.bind({...})``) says where each variable comes from and pins the version."""

from __future__ import annotations

import secrets
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import BeforeValidator, ConfigDict, Field, StrictStr, model_validator

from .._option_types import Options, Text, Whole
from .._validate import validated_object
from ._binding import ScorerBinding
from ._config import ScorerConfig, pinned, slugify

__all__ = ["Scorer", "ScorerForm", "ScorerVersion", "make_slug"]

MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 2000
KIND = "llm_judge"


def make_slug(name: str) -> str:
    """``slugify(name)`` plus ``-`` and 8 random hex digits (creating twice makes two scorers)."""
    return f"{slugify(name)}-{secrets.token_hex(4)}"


class ScorerForm(Options):
    """A scorer's JSON form, new or earlier: name, description, kind and config count; the rest is
    information only."""

    where = "scorer"
    model_config = ConfigDict(regex_engine="python-re")
    name: StrictStr = Field(pattern=r"\S", max_length=MAX_NAME_CHARS, description=(
        f"must be a non-empty string of at most {MAX_NAME_CHARS} characters"))
    description: Annotated[StrictStr, BeforeValidator(lambda v: "" if v is None else v)] = Field(
        "", max_length=MAX_DESCRIPTION_CHARS, description=f"must be a string of at most {MAX_DESCRIPTION_CHARS} "
                                                           f"characters (or None)")
    kind: Literal["llm_judge"] = Field(KIND, description=f"must be {KIND!r}")
    config: Annotated[ScorerConfig, BeforeValidator(ScorerConfig.from_dict)]
    latest_version: Optional[dict] = Field(None, description="must be an object")
    slug: Any = None
    version: Any = None
    version_number: Any = None
    variables: Any = None
    created_at: Any = None
    updated_at: Any = None


class ScorerVersion(Options):
    """One version of a scorer: ``id`` (the config's SHA-256), 1-based ``number``, date, config."""

    where = "version"
    model_config = ConfigDict(frozen=True)

    id: StrictStr
    number: Whole
    created_at: Text = ""
    config: Annotated[ScorerConfig, BeforeValidator(ScorerConfig.from_dict)]

    @model_validator(mode="after")
    def _hashes(self) -> "ScorerVersion":
        pinned(self.config, self.id, f"version {self.number} claims id", "the file was edited by hand")
        return self


class Scorer:
    """A judge definition (docs/scorers.md): ``version`` is its config's id, ``bind(mapping)`` pins it,
    ``ScorerGrader(scorer, model, mapping)`` runs it.

    >>> Scorer("Helpful", {"model": "judge", "output_spec": {"type": "boolean"},
    ...                    "prompt_template": "Q: {{ question }} A: {{ completion }}"}).variables
    ['question']
    """

    kind = KIND

    def __init__(self, name: str, config: ScorerConfig | Mapping[str, Any], description: str = "", *,
                 slug: str | None = None, history: list[ScorerVersion] | None = None,
                 created_at: str | None = None, updated_at: str | None = None):
        form = ScorerForm(name=name, description=description, config=config)
        self.name, self.description, self.config = form.name, form.description, form.config
        self.slug, self.history, self.created_at, self.updated_at = slug, list(history or []), created_at, updated_at

    @property
    def version(self) -> str:
        return self.config.version_id

    @property
    def version_number(self) -> int | None:
        """The number of the newest version in ``history`` with the current id (None outside a registry)."""
        return next((v.number for v in reversed(self.history) if v.id == self.version), None)

    @property
    def variables(self) -> list[str]:
        return self.config.variables

    def bind(self, mapping: Mapping[str, str] | None = None) -> ScorerBinding:
        """Pin the current version with a variable -> source mapping (see ``binding.py``)."""
        return ScorerBinding(self.config, mapping, scorer_name=self.name, scorer_slug=self.slug)

    @property
    def latest_version(self) -> dict[str, Any]:
        """The current version as the document shows it: ``number``, ``id``, ``created_at``, ``variables``."""
        made = next((v.created_at for v in reversed(self.history) if v.id == self.version), None)
        return {"number": self.version_number, "id": self.version, "created_at": made,
                "variables": self.variables}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a registry's scorer adds ``slug``, ``latest_version`` and dates)."""
        out: dict[str, Any] = {"name": self.name, "description": self.description, "kind": self.kind,
                               "config": self.config.to_dict()}
        if self.slug:
            out = {"slug": self.slug, **out, "latest_version": self.latest_version,
                   "created_at": self.created_at, "updated_at": self.updated_at}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Scorer":
        """Build from ``{"name", "description"?, "kind"?, "config"}`` or any ``to_dict()`` form."""
        form = validated_object(ScorerForm, data)
        return cls(form.name, form.config, form.description)

    def __repr__(self) -> str:
        return f"Scorer({self.name!r}, slug={self.slug!r}, version={self.version[:12]})"
