"""Output specs: what a scorer's judge must answer, as a strict JSON schema (see docs/scorers.md).

>>> spec = output_spec_from_dict({"type": "numeric", "min": 1, "max": 5})
>>> spec.parse('{"reason": "clear and correct", "score": 4}').value
4.0"""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any, ClassVar, Literal, Mapping, Optional

from pydantic import BaseModel, Field, StrictStr, model_serializer, model_validator

from .._option_types import JSON_FORM, Options, Real
from .._validate import finite_number
from ..errors import ConfigError

__all__ = ["BooleanSpec", "CategoricalSpec", "NumericSpec", "OutputSpec", "Verdict",
           "output_spec_from_dict"]

_REASON = {"type": "string",
           "description": "One or two sentences: why this verdict (shown next to the score)"}
MAX_LABELS = 50


class Verdict(BaseModel):
    """A parsed reply: reward ``value`` (None: labels only), ``label`` (None: numeric), ``reason``, raw ``score``."""

    reason: str
    value: Optional[float]
    label: Optional[str]
    score: Any

    @property
    def labels_only(self) -> bool:
        return self.value is None

    def to_value(self) -> float | None:
        return self.value


class OutputSpec(Options):
    """Base of the three specs: each defines ``_field_schema`` and ``_read(value) -> (reward, label)``."""

    where = "output_spec"
    model_config = JSON_FORM

    #: the reply's verdict key
    field: ClassVar[str] = ""

    def _grammar_field_schema(self) -> dict[str, Any]:
        return self._field_schema()

    @property
    def has_values(self) -> bool:
        """True when every verdict maps to a number (numeric, boolean, valued categorical)."""
        return True

    def require_values(self, where: str = "a grader", hint: str = "") -> None:
        """``ConfigError`` (with an example) when verdicts have no number."""

    def json_schema(self, *, grammar: bool = False) -> dict[str, Any]:
        """The strict JSON schema of a reply; ``grammar``: a range in a form llama.cpp's grammar enforces."""
        field = self._grammar_field_schema() if grammar else self._field_schema()
        return {"title": f"{self.type.capitalize()}Verdict", "type": "object",
                "properties": {"reason": dict(_REASON), self.field: field},
                "required": ["reason", self.field], "additionalProperties": False}

    def check(self, data: Any) -> Verdict:
        """Validate one decoded reply object; ValueError saying what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("the reply is not a JSON object")
        extra = sorted(set(data) - {"reason", self.field})
        missing = [k for k in ("reason", self.field) if k not in data]
        if missing:
            raise ValueError(f"missing key(s) {missing}")
        if extra:
            raise ValueError(f"unexpected key(s) {extra}; only 'reason' and {self.field!r} are allowed")
        if not isinstance(data["reason"], str):
            raise ValueError("'reason' must be a string")
        value, label = self._read(data[self.field])
        return Verdict.model_construct(reason=data["reason"].strip(), value=value, label=label,
                                       score=data[self.field])

    def parse(self, text: str) -> Verdict:
        """One verdict object written alone (no seal: to check a spec by hand); ``ValueError``."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the reply is not one JSON object: {exc}") from None
        return self.check(data)

    @functools.cached_property
    def output_model(self) -> type[Verdict]:
        """This spec as a judge output model: schema ``json_schema()``, replies checked by ``check``."""
        spec = self

        class SpecVerdict(Verdict):
            @model_validator(mode="before")
            @classmethod
            def _checked(cls, data: Any) -> dict[str, Any]:
                return dict(spec.check(data))

            @classmethod
            def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
                return spec.json_schema()

        SpecVerdict.__name__ = SpecVerdict.__qualname__ = f"{self.type.capitalize()}Verdict"
        return SpecVerdict

    @model_serializer(mode="wrap")
    def _json(self, dump: Any) -> dict[str, Any]:
        """``type`` first; unset keys are left out."""
        return {"type": self.type, **{k: v for k, v in dump(self).items() if v is not None}}

    def __getstate__(self) -> dict[Any, Any]:   # the verdict model is rebuilt, not pickled
        state = super().__getstate__()
        return {**state, "__dict__": {k: v for k, v in state["__dict__"].items() if k != "output_model"}}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputSpec) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"


class BooleanSpec(OutputSpec):
    """A yes/no verdict: ``true`` -> 1.0, ``false`` -> 0.0; label ``"true"``/``"false"``."""

    field = "verdict"
    type: Literal["boolean"] = "boolean"

    def _field_schema(self) -> dict[str, Any]:
        return {"type": "boolean", "description": "true if the criterion is met, else false"}

    def _read(self, value: Any) -> tuple[float, str | None]:
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"  # a server that cannot constrain may quote it
        if not isinstance(value, bool):
            raise ValueError(f"'verdict' must be true or false, got {value!r:.60}")
        return (1.0 if value else 0.0), ("true" if value else "false")

    def describe(self) -> str:
        return "boolean (true -> 1.0, false -> 0.0)"


class CategoricalSpec(OutputSpec):
    """One label out of ``labels``; its number, if any, from ``values`` (never from their order)."""

    field = "label"
    labels: tuple[Annotated[StrictStr, Field(pattern=r"\S")], ...] = Field(
        min_length=1, max_length=MAX_LABELS,
        description=f"must be a non-empty list of at most {MAX_LABELS} distinct non-empty strings")
    values: Optional[dict[str, Real]] = Field(None, description=(
        "must map each label to a finite number, e.g. {\"good\": 1, \"bad\": 0}"))
    type: Literal["categorical"] = "categorical"

    @model_validator(mode="after")
    def _labels_and_values(self) -> "CategoricalSpec":
        dup = sorted({lab for lab in self.labels if self.labels.count(lab) > 1})
        if dup:
            raise ConfigError(f"output_spec.labels must be unique; repeated: {dup}")
        unknown = sorted(set(self.values or ()) - set(self.labels))
        lacking = [lab for lab in self.labels if self.values is not None and lab not in self.values]
        if unknown or lacking:
            raise ConfigError(f"output_spec.values must give a number for exactly the labels; "
                              f"unknown: {unknown or '-'}, missing: {lacking or '-'}")
        if self.values is not None:   # in the labels' order
            self.__dict__["values"] = {lab: self.values[lab] for lab in self.labels}
        return self

    @property
    def has_values(self) -> bool:
        return self.values is not None

    def require_values(self, where: str = "a reward", hint: str = "") -> None:
        if self.values is None:
            example = {"type": "categorical", "labels": list(self.labels),   # a placeholder, never applied
                       "values": {lab: (1.0 if i == 0 else 0.0) for i, lab in enumerate(self.labels)}}
            raise ConfigError(
                f"{where} needs a number for each categorical label, and labels have no order: "
                f"add 'values' to the output_spec, e.g. {json.dumps(example, ensure_ascii=False)} "
                f"(give each label the reward you mean){hint}")

    def _field_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.labels), "description": "exactly one of the labels"}

    def _read(self, value: Any) -> tuple[float | None, str | None]:
        if not isinstance(value, str):
            raise ValueError(f"'label' must be a string, got {value!r:.60}")
        if value not in self.labels:
            folded = [lab for lab in self.labels if lab.strip().lower() == value.strip().lower()]
            if len(folded) != 1:
                raise ValueError(f"'label' must be one of {list(self.labels)}, got {value!r:.60}")
            value = folded[0]
        return (None if self.values is None else self.values[value]), value

    def describe(self) -> str:
        if self.values is None:
            return "categorical: " + ", ".join(self.labels) + " (labels only: no values)"
        return "categorical: " + ", ".join(f"{lab} -> {v:g}" for lab, v in self.values.items())


#: a number as a judge quotes it: digits, a sign, a decimal point (no exponent, no other script's digits)
_PLAIN_NUMBER = re.compile(r"[+-]?[0-9]{1,15}(?:\.[0-9]{1,15})?")


class NumericSpec(OutputSpec):
    """A number in ``[min, max]``; the Grade's value is that number."""

    field = "score"
    min: Real = Field(description="must be a finite number")
    max: Real = Field(description="must be a finite number")
    type: Literal["numeric"] = "numeric"

    @model_validator(mode="after")
    def _ordered(self) -> "NumericSpec":
        if self.min > self.max:
            raise ConfigError(f"output_spec.min ({self.min}) must be <= output_spec.max ({self.max})")
        return self

    def _field_schema(self) -> dict[str, Any]:
        return {"type": "number", "minimum": self.min, "maximum": self.max,
                "description": f"a number from {self.min:g} to {self.max:g}"}

    def _grammar_field_schema(self) -> dict[str, Any]:
        # a grammar ignoring bounds lets a judge write 391 on a 1-5 scale: small integer ranges go as enums
        if self.min.is_integer() and self.max.is_integer() and self.max - self.min <= 20:
            return {"type": "integer", "enum": list(range(int(self.min), int(self.max) + 1)),
                    "description": f"a whole number from {self.min:g} to {self.max:g}"}
        return self._field_schema()

    def _read(self, value: Any) -> tuple[float, str | None]:
        if isinstance(value, str) and _PLAIN_NUMBER.fullmatch(value.strip()):
            value = float(value)   # a server that cannot constrain may quote it, as a boolean
        if not finite_number(value):
            raise ValueError(f"'score' must be a number, got {value!r:.60}")
        if not self.min <= value <= self.max:
            raise ValueError(f"'score' must be within [{self.min:g}, {self.max:g}], got {value}")
        return float(value), None

    def describe(self) -> str:
        return f"numeric {self.min:g}..{self.max:g} (the score is the value)"


_SPECS = {"boolean": BooleanSpec, "categorical": CategoricalSpec, "numeric": NumericSpec}


def output_spec_from_dict(data: Any) -> OutputSpec:
    """Build and validate an output spec from its JSON form (or pass a spec through)."""
    if isinstance(data, OutputSpec):
        return data
    kind = data.get("type") if isinstance(data, Mapping) else "boolean"   # not an object: any form says so
    if kind not in _SPECS:
        raise ConfigError(f"output_spec.type must be one of {sorted(_SPECS)}, got {kind!r:.80}")
    return _SPECS[kind].from_dict(data)
