"""Every Python code block in docs/*.md runs as written."""

from __future__ import annotations

import pathlib
import re
import runpy

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
BLOCKS = [(page.name, i, code) for page in sorted(DOCS.glob("*.md"))
          for i, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")))]


@pytest.mark.parametrize("page, index, code", BLOCKS, ids=[f"{p}-{i}" for p, i, _ in BLOCKS])
def test_doc_block_runs(page, index, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / f"{page}-{index}.py"
    script.write_text(code, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
