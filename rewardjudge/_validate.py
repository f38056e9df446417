"""What an option model's failure says (a ConfigError naming the argument and
the value given, raised at construction; ``_option_types.Options`` raises it),
and the checks of values read from JSON. Light: imports no pydantic."""

from __future__ import annotations

import difflib
import json
import math
from typing import TYPE_CHECKING, Any, Mapping

from .errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["config_error", "finite_number", "json_value", "problem", "validated_object"]


def json_value(text: str | bytes, what: Any) -> Any:
    """``text`` decoded as JSON, else a ConfigError saying ``what`` is not valid JSON."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{what} is not valid JSON: {exc}") from None


def finite_number(v: Any) -> bool:
    """Whether ``v`` is an int or float (not a bool) and finite."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def config_error(options: type[BaseModel], values: Mapping[str, Any], exc: Exception) -> ConfigError:
    """The ConfigError for ``options(**values)`` having failed with ``exc`` (pydantic's
    ValidationError): the first validator's own ConfigError, or one naming each bad
    argument and its value. ``options.where``: the JSON object the values are the keys
    of (``"params"``), named before each key, unknown keys listed together."""
    where = getattr(options, "where", "")
    errors = exc.errors(include_url=False)
    for err in errors:   # a validator's own ConfigError says it best: raised as it is
        if isinstance((err.get("ctx") or {}).get("error"), ConfigError):
            return err["ctx"]["error"]
    names = list(dict.fromkeys(str((err.get("loc") or ("(options)",))[0]) for err in errors))
    missing = {str(err["loc"][0]) for err in errors if err["type"] == "missing" and err["loc"]}
    unknown = sorted(n for n in names if n not in options.model_fields) if where else []
    said = [f"{where}: unknown key(s) {unknown}; allowed: {list(options.model_fields)}"] if unknown else []
    said += [problem(options, values, n, n in missing) for n in names if n not in unknown]
    return ConfigError("; ".join(said))


def problem(options: type[BaseModel], values: Mapping[str, Any], name: str, missing: bool = False) -> str:
    """What is wrong with option ``name`` of ``values``: not an option (with the
    nearest one), missing, or its field's rule and the value given."""
    field = options.model_fields.get(name)
    if field is None and name in values:   # a misspelt or foreign option
        near = difflib.get_close_matches(name, list(options.model_fields), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"{name!r} is not an option here{hint}; the options are the fields of {options.__name__}"
    where = getattr(options, "where", "")
    label = f"{where}.{name}" if where else name
    if missing:
        return f"{label} is required"
    rule = field.description if field is not None and field.description else "is invalid"
    return f"{label} {rule}, got {values.get(name)!r:.200}"


def validated_object(options: type[BaseModel], data: Any) -> BaseModel:
    """The JSON object ``data`` validated as ``options``: anything but a mapping
    with text keys is a ConfigError saying what ``options.where`` must be."""
    where = getattr(options, "where", "") or options.__name__
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be an object, got {type(data).__name__}")
    odd = [k for k in data if not isinstance(k, str)]
    if odd:
        raise ConfigError(f"{where}: every key must be a string, got {odd[0]!r:.80}")
    return options(**data)

