"""The base every option model shares (graders, judges, scorers, evaluation,
JSON forms) and its field types: numbers kept as floats or ints, flags and text
taken as Python takes them. A model built with a bad value, however it is built
(a constructor's ``**options``, ``TemplatedOptions(...)``, ``model_validate``), raises
a ConfigError naming the field and the value. ``JSON_FORM``: the config of a model
that is a JSON object's form."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Mapping

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictFloat, StrictInt,
                      ValidationError)

from ._validate import config_error, problem, validated_object
from .errors import ConfigError

__all__ = ["Flag", "JSON_FORM", "Number", "Options", "Real", "Text", "Whole"]


class Options(BaseModel):
    """An option model: pydantic's failure is a ConfigError (``_validate.config_error``),
    a float field is finite and an unknown option is refused, named."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    #: the JSON object these are the keys of (``"params"``), named before each key in a
    #: message; "" for a constructor's keyword options
    where: ClassVar[str] = ""

    def __init__(self, /, *args: Any, **values: Any) -> None:
        if args:   # positional arguments are the fields in their declared order
            names = list(type(self).model_fields)[:len(args)]
            if len(args) > len(names) or set(names) & set(values):
                raise TypeError(f"{type(self).__name__} takes at most {len(type(self).model_fields)} positional "
                                f"arguments, each given once")
            values = {**dict(zip(names, args)), **values}
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise config_error(type(self), values, exc) from None
        for name, v in self:
            if isinstance(v, float) and not math.isfinite(v):
                raise ConfigError(problem(type(self), values, name))

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        # pydantic runs ``__init__`` inside its own validation here and wraps what it raises
        if not isinstance(obj, (Mapping, cls)):
            raise ConfigError(f"{cls.where or cls.__name__} must be an object, got {type(obj).__name__}")
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise config_error(cls, obj if isinstance(obj, Mapping) else {}, exc) from None

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        """Build from the JSON form (an instance passes through); anything but an object with
        text keys, an unknown key or a bad value is a ConfigError naming it."""
        return data if isinstance(data, cls) else validated_object(cls, data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (what ``from_dict`` reads back)."""
        return self.model_dump(mode="json")

#: an int or a float, never a bool or a numeric string
Number = StrictFloat | StrictInt
#: a number kept as a float (``1`` and ``1.0`` alike)
Real = Annotated[Number, AfterValidator(float)]
#: a whole number kept as an int (a JSON ``7.0`` is 7)
Whole = Annotated[StrictInt | Annotated[StrictFloat, Field(multiple_of=1)], AfterValidator(int)]
#: a flag taken as Python takes it (``bool(value)``)
Flag = Annotated[bool, BeforeValidator(bool)]
#: a text option where None means ""
Text = Annotated[str, BeforeValidator(lambda v: str(v or ""))]

#: a JSON object's form: unknown keys refused, finite numbers only; "non-blank" is a search for a
#: non-space character (Python's re: the whitespace that ``str.strip`` removes)
JSON_FORM = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, regex_engine="python-re",
                       arbitrary_types_allowed=True)
