"""Every benchmark module imports: benches reach into private modules to time
single stages, so a reshaping that moves a private name must move it there too
(benches are not run by the suite; this keeps them runnable)."""

from __future__ import annotations

import importlib
import pathlib

import pytest

BENCHES = sorted(p.stem for p in (pathlib.Path(__file__).parent.parent / "bench").glob("*.py")
                 if p.stem != "__main__")


@pytest.mark.parametrize("name", BENCHES)
def test_bench_module_imports(name):
    module = importlib.import_module(f"bench.{name}")
    assert module.__name__ == f"bench.{name}"
