"""Offline evaluation over datasets: resumable runs, reports, comparisons.

>>> from rewardjudge.evaluate import evaluate_dataset, compare
>>> result = evaluate_dataset("answers.jsonl", grader, output_dir="runs/v1")  # doctest: +SKIP
>>> print(result.summary)                                                     # doctest: +SKIP
>>> print(compare("runs/v1", "runs/v2"))                                      # doctest: +SKIP

The command line form is ``rewardjudge eval DATA --judge URL --grader SPEC
--output DIR`` (see ``rewardjudge eval --help``); ``ray_runner`` runs the
same evaluation on a Ray cluster.
"""

from ._data import Columns, detect_columns, load_data
from ._report import Comparison, Summary, bootstrap_ci, compare, grade_label, save_histogram, summarize
from ._runner import EvalResult, aevaluate_dataset, evaluate_dataset
from ._spec import resolve_grader

__all__ = ["Columns", "Comparison", "EvalResult", "Summary", "aevaluate_dataset", "bootstrap_ci",
           "compare", "detect_columns", "evaluate_dataset", "grade_label", "load_data", "resolve_grader",
           "save_histogram", "summarize"]
