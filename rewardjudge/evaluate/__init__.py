"""Offline evaluation over datasets: resumable runs, reports, comparisons (see docs/evaluation.md)."""

from .._lazy import lazy_getattr as _lazy_getattr
import typing as _typing

#: name -> module, imported on first use: ``rewardjudge eval --help`` loads no dataset stack
_LAZY = {"compare": "._report", "save_histogram": "._plot", "summarize": "._report",
         "aevaluate_dataset": "._runner", "evaluate_dataset": "._runner", "resolve_grader": "._spec"}

if _typing.TYPE_CHECKING:
    from ._plot import save_histogram
    from ._report import compare, summarize
    from ._runner import aevaluate_dataset, evaluate_dataset
    from ._spec import resolve_grader

__all__ = sorted(_LAZY)

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
