"""A run's results: the inputs plus ``grade_*`` columns, written in input order as rows finish."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ._data import ArrowSlices
from ._journal import JournalIndex
from ._report import GRADE_COLUMNS, SummaryBuilder, grade_columns

__all__ = ["OrderedOutput", "quiet_datasets", "write_json"]

_GRADE_TYPES = {"grade_value": "float64", "grade_attempts": "int64", "grade_prompt_tokens": "int64",
                "grade_completion_tokens": "int64", "grade_latency_s": "float64"}


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)  # readers never see half a file


@contextlib.contextmanager
def quiet_datasets() -> Iterator[None]:
    """No "Creating parquet from Arrow format" bars under our own output."""
    import datasets
    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


class OrderedOutput:
    """Writes rows in input order as they become ready (rows not in ``todo`` read back from the journal),
    and summarizes them; a ``chunk`` of rows is one Parquet row group and one JSONL append."""

    def __init__(self, ds: Any, n: int, out: Path | None, formats: tuple[str, ...], todo: np.ndarray,
                 index: JournalIndex, journal_path: Path | None, builder: SummaryBuilder, *,
                 chunk: int = 1024, ahead: int = 8192):
        self.ds, self.n, self.out, self.formats = ds, n, out, tuple(formats)
        self.todo, self.index, self.builder = todo, index, builder
        self.chunk, self.ahead = chunk, ahead
        self.frontier = 0
        self._ready: dict[int, dict[str, Any]] = {}
        self._moved = asyncio.Event()
        self._buffer: dict[str, list] = {c: [] for c in GRADE_COLUMNS}
        self._buffer_start = 0
        self._tables: list | None = [] if out is None else None  # with no folder: the results, in memory
        resumed = journal_path is not None and journal_path.exists() and bool((~todo & index.done).any())
        self._reader = open(journal_path, "rb") if resumed else None  # done rows, read back by offset
        self._slices = ArrowSlices(ds, n)
        self._parquet = self._jsonl = self._schema = None
        self._tmp: dict[str, Path] = {}
        if out is not None and {"parquet", "arrow"} & set(self.formats):
            self._tmp["parquet"] = out / "results.parquet.tmp"
        if out is not None and "jsonl" in self.formats:
            self._tmp["jsonl"] = out / "results.jsonl.tmp"
            self._jsonl = open(self._tmp["jsonl"], "w", encoding="utf-8")

    def accept(self, i: int, grade: dict[str, Any]) -> None:
        self._ready[i] = grade
        if i == self.frontier:
            self.advance()

    def advance(self) -> None:
        start = self.frontier
        while self.frontier < self.n:
            i = self.frontier
            if self.todo[i]:
                grade = self._ready.pop(i, None)
                if grade is None:
                    break
            else:
                self._reader.seek(int(self.index.offset[i]))
                grade = json.loads(self._reader.readline())["grade"]
            row = grade_columns(grade)
            self.builder.add(grade, label=row["grade_label"])
            for c in GRADE_COLUMNS:
                self._buffer[c].append(row[c])
            if len(self._buffer["grade_status"]) >= self.chunk:
                self._flush()
            self.frontier += 1
        if self.frontier != start:
            self._moved.set()

    async def admit(self, row: int) -> None:
        """Wait until ``row`` is within ``ahead`` rows of the frontier."""
        while row >= self.frontier + self.ahead:
            self._moved.clear()
            await self._moved.wait()

    def _arrow_schema(self) -> Any:
        if self._schema is None:
            import datasets
            grades = {c: datasets.Value(_GRADE_TYPES.get(c, "string")) for c in GRADE_COLUMNS}
            self._schema = datasets.Features({**self.ds.features, **grades}).arrow_schema
        return self._schema

    def _flush(self) -> None:
        import pyarrow as pa
        rows = len(self._buffer["grade_status"])
        if not rows:
            return
        inputs = self._slices.take(self._buffer_start, self._buffer_start + rows)
        schema = self._arrow_schema()
        grades = [pa.array(self._buffer[c], type=schema.field(c).type) for c in GRADE_COLUMNS]
        table = pa.Table.from_arrays([*inputs.columns, *grades], schema=schema)
        if self._tables is not None:
            self._tables.append(table)
        if "parquet" in self._tmp:
            if self._parquet is None:
                import pyarrow.parquet as pq
                self._parquet = pq.ParquetWriter(self._tmp["parquet"], schema)
            self._parquet.write_table(table)
        if self._jsonl is not None:
            lines = [json.dumps({**row, **{c: self._buffer[c][j] for c in GRADE_COLUMNS}},
                                ensure_ascii=False, default=str)
                     for j, row in enumerate(inputs.to_pylist())]
            self._jsonl.write("\n".join(lines) + "\n")
        self._buffer_start += rows
        for c in GRADE_COLUMNS:
            self._buffer[c].clear()

    def close(self) -> dict[str, Path]:
        """Finish the files (every row written) and move them into place."""
        self._flush()
        if "parquet" in self._tmp and self._parquet is None:  # no rows: an empty file with the columns
            import pyarrow.parquet as pq
            pq.write_table(self._arrow_schema().empty_table(), self._tmp["parquet"])
        self._close_files()
        if self.out is None:
            return {}
        files: dict[str, Path] = {}
        if "arrow" in self.formats:  # a folder datasets.load_from_disk reads
            files["arrow"] = self._save_arrow(self._tmp["parquet"])
        for kind, tmp in self._tmp.items():
            if kind in self.formats:
                files[kind] = self.out / f"results.{kind}"
                os.replace(tmp, files[kind])
            else:   # a parquet file written for the arrow folder only
                tmp.unlink(missing_ok=True)
        return files

    def _close_files(self, quiet: bool = False) -> None:
        files = (self._parquet, self._jsonl, self._reader)
        self._parquet = self._jsonl = self._reader = None
        for f in files:
            if f is not None:
                with contextlib.suppress(Exception) if quiet else contextlib.nullcontext():
                    f.close()

    def _save_arrow(self, parquet: Path) -> Path:
        import datasets
        cache, tmp, final = self.out / ".arrow-cache", self.out / "dataset.tmp", self.out / "dataset"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            with quiet_datasets():
                datasets.Dataset.from_parquet(str(parquet), cache_dir=str(cache)).save_to_disk(str(tmp))
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        return final

    def abort(self) -> None:
        """Drop the unfinished files (the journal keeps every finished row)."""
        self._close_files(quiet=True)
        for path in self._tmp.values():
            path.unlink(missing_ok=True)

    def memory_dataset(self) -> Any:
        """With no output folder: the results (inputs and grade columns) as a Dataset."""
        if self._tables is None:
            return None
        import datasets
        import pyarrow as pa
        from datasets.table import InMemoryTable
        table = pa.concat_tables(self._tables) if self._tables else self._arrow_schema().empty_table()
        return datasets.Dataset(InMemoryTable(table))
