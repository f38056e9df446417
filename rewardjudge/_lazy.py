"""Names a package loads on first use (PEP 562): ``import rewardjudge`` and the
command line's ``--help`` stay light."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_getattr(package: str, names: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from ``names[name]`` (a
    module, absolute or relative to ``package``) on first use and keeps it in
    ``namespace`` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
