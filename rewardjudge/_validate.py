"""Options validated once, by pydantic: a bad value is a ConfigError naming
the argument and the value given, raised at construction; and the checks of
values read from JSON. Light: pydantic is imported where ``validated`` runs."""

from __future__ import annotations

import difflib
import json
import math
from typing import TYPE_CHECKING, Any, Mapping

from .errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["finite_number", "json_value", "validated", "validated_object"]


def json_value(text: str | bytes, what: Any) -> Any:
    """``text`` decoded as JSON, else a ConfigError saying ``what`` is not valid JSON."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{what} is not valid JSON: {exc}") from None


def finite_number(v: Any) -> bool:
    """Whether ``v`` is an int or float (not a bool) and finite."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validated(options: type[BaseModel], where: str = "", /, **values: Any) -> BaseModel:
    """``options(**values)``; else the first validator's own ConfigError, or one
    naming each bad argument and its value. ``where``: the JSON object the values
    are the keys of (``"params"``), named before each key, unknown keys listed together."""
    from pydantic import ValidationError

    def problem(name: str, missing: bool = False) -> str:
        field = options.model_fields.get(name)
        if field is None and name in values:   # a misspelt or foreign option
            near = difflib.get_close_matches(name, list(options.model_fields), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            return f"{name!r} is not an option here{hint}; the options are the fields of {options.__name__}"
        label = f"{where}.{name}" if where else name
        if missing:
            return f"{label} is required"
        rule = field.description if field is not None and field.description else "is invalid"
        return f"{label} {rule}, got {values.get(name)!r:.200}"

    try:
        out = options(**values)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        for err in errors:   # a validator's own ConfigError says it best: raised as it is
            if isinstance((err.get("ctx") or {}).get("error"), ConfigError):
                raise err["ctx"]["error"] from None
        names = list(dict.fromkeys(str(err.get("loc", ("(options)",))[0]) for err in errors))
        missing = {str(err["loc"][0]) for err in errors if err["type"] == "missing"}
        unknown = sorted(n for n in names if n not in options.model_fields) if where else []
        said = [f"{where}: unknown key(s) {unknown}; allowed: {list(options.model_fields)}"] if unknown else []
        said += [problem(n, n in missing) for n in names if n not in unknown]
        raise ConfigError("; ".join(said)) from None
    for name, v in out:
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(problem(name))
    return out


def validated_object(options: type[BaseModel], where: str, data: Any) -> BaseModel:
    """The JSON object ``data`` validated as ``options`` (``validated``): anything
    but a mapping with text keys is a ConfigError saying what ``where`` must be."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be an object, got {type(data).__name__}")
    odd = [k for k in data if not isinstance(k, str)]
    if odd:
        raise ConfigError(f"{where}: every key must be a string, got {odd[0]!r:.80}")
    return validated(options, where, **data)

