"""Options validated once, by pydantic: a bad value is a ConfigError naming
the argument and the value given, raised at construction; and the checks of
values read from JSON. Light: pydantic is imported where ``validated`` runs."""

from __future__ import annotations

import difflib
import json
import math
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["finite_number", "json_value", "validated"]


def json_value(text: str | bytes, what: Any) -> Any:
    """``text`` decoded as JSON, else a ConfigError saying ``what`` is not valid JSON."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{what} is not valid JSON: {exc}") from None


def finite_number(v: Any) -> bool:
    """Whether ``v`` is an int or float (not a bool) and finite."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validated(options: type[BaseModel], /, **values: Any) -> BaseModel:
    """``options(**values)``; else the first validator's own ConfigError, or one
    naming each bad argument and its value."""
    from pydantic import ValidationError

    def problem(name: str) -> str:
        field = options.model_fields.get(name)
        if field is None and name in values:   # a misspelt or foreign option
            near = difflib.get_close_matches(name, list(options.model_fields), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            return f"{name!r} is not an option here{hint}; the options are the fields of {options.__name__}"
        rule = field.description if field is not None and field.description else "is invalid"
        return f"{name} {rule}, got {values.get(name)!r}"

    try:
        out = options(**values)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        for err in errors:   # a validator's own ConfigError says it best: raised as it is
            if isinstance((err.get("ctx") or {}).get("error"), ConfigError):
                raise err["ctx"]["error"] from None
        names = list(dict.fromkeys(str(err.get("loc", ("(options)",))[0]) for err in errors))
        raise ConfigError("; ".join(problem(n) for n in names)) from None
    for name, v in out:
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(problem(name))
    return out
