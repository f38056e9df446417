"""Grader SPECs: a grader named on the command line (the forms: docs/evaluation.md)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any

from .. import catalog, scorers
from .._validate import json_value
from ..demo import demo_grader
from ..errors import ConfigError
from ..graders._base import Grader
from ..graders.templated_prompt_judge import ScorerGrader

__all__ = ["BUILTIN_GRADERS", "bind_spec", "resolve_grader", "spec_target"]


#: names usable as a SPEC without any other module
BUILTIN_GRADERS = {"demo": demo_grader}


def _import_attribute(spec: str) -> Any:
    module_part, _, attr = spec.rpartition(":")
    if not module_part or not attr:
        raise ConfigError(f"grader spec {spec!r} must look like module:attribute")
    if module_part.endswith(".py") or os.sep in module_part:
        path = Path(module_part).expanduser()
        if not path.is_file():
            raise ConfigError(f"grader spec {spec!r}: no such file {path}")
        name = f"_rewardjudge_user_{abs(hash(str(path.resolve())))}"
        mod_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module  # dataclasses/pydantic look their module up by name
        try:
            mod_spec.loader.exec_module(module)
        except Exception:
            sys.modules.pop(name, None)
            raise
    else:
        # a console script does not put the working folder on sys.path; `python -m` does
        cwd = os.getcwd()
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as exc:
            raise ConfigError(f"grader spec {spec!r}: cannot import {module_part!r} ({exc}); run from "
                              f"the folder that holds it, or give a file path (path/to/file.py:{attr})") from exc
    try:
        return functools.reduce(getattr, attr.split("."), module)
    except AttributeError:
        raise ConfigError(f"grader spec {spec!r}: {module_part!r} has no attribute {attr!r}") from None


def _from_object(obj: Any, model: Any, spec: str) -> Grader:
    if isinstance(obj, Grader):
        return obj
    if callable(obj):
        grader = obj(model)
        if inspect.isawaitable(grader):
            raise ConfigError(f"grader spec {spec!r}: the factory must be a plain function, not async")
        if isinstance(grader, Grader):
            return grader
        raise ConfigError(f"grader spec {spec!r}: calling it with the judge model returned "
                          f"{type(grader).__name__}, not a Grader")
    raise ConfigError(f"grader spec {spec!r} names a {type(obj).__name__}; expected a Grader or a "
                      f"callable taking the judge model and returning one")


def resolve_grader(spec: Any, model: Any) -> Grader:
    """A Grader from ``spec`` (see module doc), bound to ``model``; ConfigError names what was tried."""
    if isinstance(spec, Grader):
        return spec
    if callable(spec) and not isinstance(spec, str):
        return _from_object(spec, model, getattr(spec, "__name__", repr(spec)))
    return bind_spec(spec, spec_target(spec), model)


def spec_target(spec: Any) -> Any:
    """What a str SPEC names, found without a judge: a Grader, a factory ``f(model)`` or a Scorer."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"grader spec must be a non-empty str, a Grader or a factory, got {spec!r}")
    spec = spec.strip()
    if spec in BUILTIN_GRADERS:
        return BUILTIN_GRADERS[spec]
    if ":" in spec and not spec.endswith(".json"):
        return _import_attribute(spec)
    if spec in catalog.keys():
        return functools.partial(catalog.grader, spec)
    if spec.endswith(".json"):
        return scorer_from_file(spec)
    if registry_folder().is_dir():
        with contextlib.suppress(scorers.ScorerNotFound):
            return scorers.ScorerRegistry(registry_folder()).get(spec)
    raise ConfigError(f"unknown grader spec {spec!r} (tried built-in ({', '.join(sorted(BUILTIN_GRADERS))}), "
                      f"module:attribute, scorer .json file, catalog key, scorer slug in {registry_folder()}/); "
                      f"catalog keys: {', '.join(catalog.keys())}")


def bind_spec(spec: str, target: Any, model: Any) -> Grader:
    """The Grader of ``spec_target(spec)`` on ``model``."""
    return ScorerGrader(target, model) if isinstance(target, scorers.Scorer) else _from_object(target, model, spec)


#: the scorer registry folder a bare slug is looked up in (default ./scorers)
SCORER_REGISTRY_ENV = "REWARDJUDGE_SCORERS"


def registry_folder(given: str | os.PathLike | None = None) -> Path:
    """``given``, else ``$REWARDJUDGE_SCORERS``, else ``./scorers``."""
    return Path(given or os.environ.get(SCORER_REGISTRY_ENV) or "scorers")


def scorer_from_file(spec: str) -> Any:
    """The Scorer a JSON file holds: a definition (or ``Scorer.to_dict()``'s form) or a registry's scorer file."""
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ConfigError(f"grader spec {spec!r}: no such scorer file")
    data = json_value(path.read_text(), f"scorer file {path}")
    if isinstance(data, dict) and "slug" in data and "versions" in data:  # a registry's own file
        return scorers.ScorerRegistry(path.parent).get(data["slug"])
    return scorers.Scorer.from_dict(data)
