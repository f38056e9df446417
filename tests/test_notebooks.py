"""The notebooks run top to bottom on a fresh kernel (scripted / fake-server judge)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.mark.parametrize("name", [
    "quickstart.ipynb",           # a structured-output grader, a few grades, reasoning, histogram
    "offline_evaluation.ipynb",   # a dataset run, resume, comparison, against a fake HTTP judge
])
def test_notebook_runs_top_to_bottom(name, tmp_path, monkeypatch):
    monkeypatch.setenv("REWARDJUDGE_NOTEBOOK_JUDGE", "scripted")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("REWARDJUDGE_NOTEBOOK_URL", raising=False)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks without outputs"
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any failure
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # a histogram was displayed as an image
    assert any("image/png" in o.get("data", {}) for o in outputs if o.output_type == "display_data")
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "scored" in text and "mean value" in text
    if name == "offline_evaluation.ipynb":
        assert "judge requests made: 0" in text  # the rerun resumed, asking nothing
