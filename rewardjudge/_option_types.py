"""The field types option models share (graders, judges, scorers): numbers kept
as floats or ints, flags and text taken as Python takes them. Checked through
``_validate.validated``: a bad value is a ConfigError naming the field. ``JSON_FORM``: the
config of a model that is a JSON object's form."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, StrictFloat, StrictInt

__all__ = ["Flag", "JSON_FORM", "Number", "Real", "Text", "Whole"]

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
