"""Grader SPECs: name a grader on the command line.

``resolve_grader(spec, model)`` accepts, in this order:

* a ``Grader`` (returned as is) or a callable ``f(model) -> Grader``;
* ``"demo"``: the bundled structured-answer grader (``rewardjudge.demo``);
* ``"module:attribute"`` or ``"path/to/file.py:attribute"``: an attribute
  that is a ``Grader`` (used as is: it keeps its own judge model), or a
  callable taking the judge model and returning a ``Grader`` (a Grader
  subclass whose constructor takes the model as first argument counts);
* a catalog key (``rewardjudge.catalog.grader(key, model)``) or a scorer
  (``rewardjudge.scorers``: a registry slug, or a scorer JSON file), where
  those modules are installed.

>>> grader = resolve_grader("demo", judge)                       # doctest: +SKIP
>>> grader = resolve_grader("my_graders:make_grader", judge)     # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..graders.base import Grader

__all__ = ["BUILTIN_GRADERS", "resolve_grader"]


def _demo(model):
    from ..demo import demo_grader

    return demo_grader(model)


#: names usable as a SPEC without any other module
BUILTIN_GRADERS = {"demo": _demo}


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
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"grader spec {spec!r}: {module_part!r} has no attribute {attr!r}") from None
    return obj


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


def _optional(module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name in (module, module.rpartition(".")[0]):
            return None
        raise


def resolve_grader(spec: Any, model: Any) -> Grader:
    """A Grader from ``spec`` (see module doc), bound to ``model`` where it
    is built here. Raises ConfigError naming what was tried."""
    if isinstance(spec, Grader):
        return spec
    if callable(spec) and not isinstance(spec, str):
        return _from_object(spec, model, getattr(spec, "__name__", repr(spec)))
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"grader spec must be a non-empty str, a Grader or a factory, got {spec!r}")
    spec = spec.strip()
    if spec in BUILTIN_GRADERS:
        return BUILTIN_GRADERS[spec](model)
    if ":" in spec and not spec.endswith(":"):
        return _from_object(_import_attribute(spec), model, spec)
    tried = [f"built-in ({', '.join(sorted(BUILTIN_GRADERS))})", "module:attribute"]
    scorers = _optional("rewardjudge.scorers")
    if scorers is not None:
        tried.append("scorer")
        grader = _scorer_grader(scorers, spec, model)
        if grader is not None:
            return grader
    catalog = _optional("rewardjudge.catalog")
    if catalog is not None:
        tried.append("catalog key")
        try:
            return catalog.grader(spec, model)
        except (KeyError, LookupError) as exc:
            last = exc
        except ConfigError as exc:
            last = exc
        else:  # pragma: no cover
            last = None
        hint = ""
        lister = getattr(catalog, "keys", None) or getattr(catalog, "list_criteria", None)
        if callable(lister):
            try:
                hint = f"; catalog keys: {', '.join(sorted(map(str, lister())))}"
            except Exception:  # listing is a hint only
                hint = ""
        raise ConfigError(f"unknown grader spec {spec!r} (tried {', '.join(tried)}): {last}{hint}")
    raise ConfigError(f"unknown grader spec {spec!r}; tried {', '.join(tried)}")


def _scorer_grader(scorers: Any, spec: str, model: Any) -> Grader | None:
    """A scorer's grader from a scorer JSON file or a registry slug, if the
    scorers module offers a way to build one; None when ``spec`` is not one."""
    path = Path(spec).expanduser()
    if path.suffix == ".json" and path.is_file():
        load = getattr(getattr(scorers, "Scorer", None), "from_file", None) or getattr(scorers, "load_scorer", None)
        if load is None:
            raise ConfigError(f"{spec}: this rewardjudge.scorers has no Scorer.from_file to read it")
        return _scorer_to_grader(load(path), model, spec)
    registry_cls = getattr(scorers, "ScorerRegistry", None)
    if registry_cls is None:
        return None
    try:
        registry = registry_cls()
        scorer = registry.get(spec)
    except Exception:  # not a slug in the default registry: let the catalog try
        return None
    return _scorer_to_grader(scorer, model, spec)


def _scorer_to_grader(scorer: Any, model: Any, spec: str) -> Grader:
    if isinstance(scorer, Grader):
        return scorer
    for name in ("grader", "as_grader", "to_grader"):
        fn = getattr(scorer, name, None)
        if callable(fn):
            return _from_object(lambda m: fn(m), model, spec)
    raise ConfigError(f"scorer {spec!r} cannot be turned into a grader (no .grader(model) method)")
