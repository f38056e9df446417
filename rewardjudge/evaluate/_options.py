"""An evaluation's options, validated once: a bad value is a ConfigError naming the argument."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, ConfigDict, Field, StrictInt

from .._option_types import Options
from ..errors import ConfigError
from ..rl._health import OutageGuard

__all__ = ["EvalOptions"]


def _folder(path: Any) -> Any:
    if path is not None and Path(path).expanduser().is_file():
        raise ConfigError(f"output_dir (--output) is the folder the run writes its results into; {str(path)!r} "
                          f"is a file")
    return path


class EvalOptions(Options):
    """The keyword arguments of ``evaluate_dataset`` (its docstring says what each does)."""

    model_config = ConfigDict(frozen=True)

    columns: Any = None
    output_dir: Annotated[Optional[str | os.PathLike], AfterValidator(_folder)] = Field(
        None, description="must be a path (or None)")
    mode: Literal["eval", "train"] = Field("eval", description="must be 'eval' or 'train'")
    resume: bool = Field(True, description="must be True or False")
    retry_unscored: bool = Field(False, description="must be True or False")
    overwrite: bool = Field(False, description="must be True or False")
    progress: Any = True
    concurrency: Optional[StrictInt] = Field(None, ge=1, description="must be an int >= 1 (or None)")
    split: Optional[str] = Field(None, description="must be a split name (or None)")
    formats: tuple[Literal["parquet", "jsonl", "arrow"], ...] = Field(
        ("parquet", "jsonl"), description="must name output formats among parquet, jsonl, arrow")
    histogram: bool = Field(True, description="must be True or False")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="must be a number in (0, 1)")
    limit: Optional[StrictInt] = Field(None, ge=0, description="must be an int >= 0 (or None)")
    group_window: StrictInt = Field(1024, ge=1, description="must be an int >= 1")
    max_group: StrictInt = Field(64, ge=1, description="must be an int >= 1")
    outage: Optional[OutageGuard | bool] = Field(True, description="must be True, False, None or an OutageGuard")
    outage_window: StrictInt = Field(64, ge=1, description="must be an int >= 1")

    @property
    def out(self) -> Path | None:
        """The output folder (None: in memory)."""
        return Path(self.output_dir).expanduser() if self.output_dir is not None else None

    def rows(self, available: int) -> int:
        """How many rows this run grades of ``available``."""
        return available if self.limit is None else min(self.limit, available)

    def guard(self) -> OutageGuard | None:
        return OutageGuard() if self.outage is True else (self.outage or None)
