"""The scorer document's result names and ours (``DOCUMENT_FIELDS``, see docs/scorers.md).

>>> from rewardjudge import Grade
>>> document_fields(Grade(value=4.0, grader_key="s", reasoning="clear", extra={"label": None}))
{'score_value': 4.0, 'score_label': None, 'explanation': 'clear'}"""

from __future__ import annotations

import os
from typing import Any, Mapping

from ..errors import ConfigError
from ..grade import Grade

__all__ = ["DOCUMENT_FIELDS", "document_fields", "scorer_result", "with_document_fields"]

#: the scorer document's name -> our result column (``Grade``: value, extra["label"], reasoning)
DOCUMENT_FIELDS: dict[str, str] = {"score_value": "grade_value", "score_label": "grade_label",
                                   "explanation": "grade_reasoning"}


def _as_dict(grade: Grade | Mapping[str, Any]) -> Mapping[str, Any]:
    return grade.to_dict() if isinstance(grade, Grade) else grade


def document_fields(grade: Grade | Mapping[str, Any]) -> dict[str, Any]:
    """``{"score_value", "score_label", "explanation"}`` of one grade (a Grade or its dict)."""
    g = _as_dict(grade)
    status = g.get("status") or ("scored" if g.get("value") is not None else "unscored")
    if status != "scored":
        return {"score_value": None, "score_label": None, "explanation": None}
    extra = g.get("extra") or {}
    label = extra.get("label") if isinstance(extra, Mapping) and isinstance(extra.get("label"), str) else None
    value = g.get("value")
    return {"score_value": None if label is not None or value is None else float(value),
            "score_label": label, "explanation": g.get("reasoning")}


def scorer_result(grade: Grade | Mapping[str, Any]) -> dict[str, Any]:
    """A scorer grade's dict form: ``status``, the document's three fields, then ``value`` (the
    reward), ``error``, ``scorer``, ``scorer_version``, ``judge_model``, ``missing_variables``."""
    g = _as_dict(grade)
    extra = g.get("extra") or {}
    return {"status": g.get("status"), **document_fields(g), "value": g.get("value"),
            "error": g.get("error"), "scorer": extra.get("scorer"),
            "scorer_version": extra.get("scorer_version") or g.get("grader_version"),
            "judge_model": extra.get("judge_model"),
            "missing_variables": list(extra.get("missing_variables") or [])}


def with_document_fields(results: Any) -> Any:
    """An evaluation's results (an ``EvalResult``, its output folder or results file, or a results
    ``datasets.Dataset``) as a Dataset with the document's three columns added beside ours."""
    import datasets

    ds = results
    if hasattr(results, "dataset") and hasattr(results, "summary"):
        ds = results.dataset
    elif isinstance(results, (str, os.PathLike)):
        from ..evaluate._data import load_data
        from ..evaluate._report import _results_path

        ds = load_data(_results_path(results))
    if not isinstance(ds, datasets.Dataset):
        raise ConfigError(f"with_document_fields takes evaluation results, got {type(results).__name__}")
    missing = [c for c in ("grade_status", *DOCUMENT_FIELDS.values()) if c not in ds.column_names]
    if missing:
        raise ConfigError(f"results lack column(s) {missing} (not an evaluate_dataset output)")
    clash = sorted(set(DOCUMENT_FIELDS) & set(ds.column_names))
    if clash:
        raise ConfigError(f"the results already have column(s) {clash}")
    # the same rule as document_fields, row by row
    rows = zip(*(ds[c] for c in ("grade_status", "grade_value", "grade_reasoning", "grade_label")))
    doc = [document_fields({"status": s, "value": v, "reasoning": r, "extra": {"label": lab}})
           for s, v, r, lab in rows]
    for name in DOCUMENT_FIELDS:
        ds = ds.add_column(name, [d[name] for d in doc],
                           feature=datasets.Value("float64" if name == "score_value" else "string"))
    return ds
