"""Every benchmark module imports, and every name a bench imports from the
package exists (function-local imports included): benches reach into private
modules to time single stages, so a reshaping that moves a private name must
move it there too. The suite does not run benches; this keeps them runnable."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

BENCH = pathlib.Path(__file__).parent.parent / "bench"
BENCHES = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__main__")


def _submodule(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("name", BENCHES)
def test_bench_module_and_its_package_names_import(name):
    importlib.import_module(f"bench.{name}")
    missing = []
    for node in ast.walk(ast.parse((BENCH / f"{name}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rewardjudge"):
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name} (line {node.lineno})" for a in node.names
                        if not hasattr(module, a.name) and not _submodule(f"{node.module}.{a.name}")]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("rewardjudge"):
                    importlib.import_module(a.name)
    assert not missing, missing
