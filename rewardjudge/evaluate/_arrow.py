"""Reading a dataset's rows forward, a chunk at a time, in bounded memory: a dataset that is
plainly its Arrow files is read from them a record batch at a time (through the memory map every
page read would stay resident), others through ``datasets``."""

from __future__ import annotations

import os
from typing import Any, Iterator, Mapping

import numpy as np

__all__ = ["ArrowSlices", "feature_leaves", "iter_masked_rows", "release_mapped_pages"]


def feature_leaves(feature: Any) -> Iterator[Any]:
    """The leaf features (``Value``, ``Json``, ``Image``...) of a nested ``datasets`` feature."""
    if isinstance(feature, Mapping):
        children = list(feature.values())
    elif isinstance(feature, (list, tuple)):
        children = list(feature)
    elif type(feature).__name__ in ("List", "LargeList", "Sequence"):
        children = [feature.feature]
    else:
        yield feature
        return
    for child in children:
        yield from feature_leaves(child)


def _arrow_files(ds: Any) -> list[str] | None:
    """The Arrow files a dataset is exactly the concatenation of (nothing on top), else None."""
    try:
        from datasets.table import ConcatenationTable, MemoryMappedTable
        # only plain values read the same from Arrow as through datasets' decoding (no Json, Image...)
        if ds._indices is not None or any(type(f).__name__ != "Value" for f in feature_leaves(ds.features)):
            return None
        table = ds.data
        if isinstance(table, MemoryMappedTable):
            blocks = [table]
        elif isinstance(table, ConcatenationTable) and all(len(row) == 1 for row in table.blocks):
            blocks = [row[0] for row in table.blocks]
        else:
            return None
        if not all(isinstance(b, MemoryMappedTable) and os.path.isfile(b.path)
                   and all(op[0] == "replace_schema_metadata" for op in b.replays) for b in blocks):
            return None
        return [b.path for b in blocks]
    except Exception:  # noqa: BLE001 - datasets internals moved: read through datasets instead
        return None


def release_mapped_pages(ds: Any) -> bool:
    """Drop the pages of a dataset's mapped Arrow files from the resident set (``madvise
    (MADV_DONTNEED)``, Linux): ``datasets`` walks the whole map on open, and rows are then read
    with ordinary reads. The mapping stays valid. Whether anything was released."""
    files = _arrow_files(ds)
    if not files or not os.path.exists("/proc/self/maps"):
        return False
    try:
        import ctypes
        import ctypes.util
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        madv_dontneed = 4
        wanted = {os.path.realpath(f) for f in files}
        released = False
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].strip() in wanted:
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    released |= libc.madvise(start, end - start, madv_dontneed) == 0
        return released
    except (OSError, AttributeError, ValueError):
        return False


def _file_tables(files: list[str], schema: Any, n: int) -> Iterator[tuple[int, Any]]:
    """``(start, Table)`` from the Arrow files a record batch at a time; returns the row reached
    (``n``, or the first row of a batch that does not match the dataset's schema)."""
    import pyarrow as pa
    start = 0
    for path in files:
        with pa.OSFile(path) as source:
            for batch in pa.ipc.open_stream(source):
                if start >= n:
                    return start
                table = pa.Table.from_batches([batch.slice(0, min(batch.num_rows, n - start))])
                if not table.schema.equals(schema, check_metadata=False):
                    return start
                yield start, table
                start += table.num_rows
    return start


def iter_tables(ds: Any, n: int, chunk: int = 1024) -> Iterator[tuple[int, Any]]:
    """``(start, pyarrow.Table)`` for consecutive rows ``0..n-1`` (from its files where it can)."""
    files = _arrow_files(ds)
    start = 0 if files is None else (yield from _file_tables(files, ds.data.schema, n))
    arrow = ds.with_format("arrow")
    for a in range(start, n, chunk):
        yield a, arrow[a:min(n, a + chunk)]


def iter_masked_rows(ds: Any, mask: Any, n: int, chunk: int = 1024) -> Iterator[tuple[int, dict]]:
    """``(index, row dict)`` for rows ``i < n`` with ``mask[i]`` true, in order, a chunk at a time,
    decoded as ``ds[i]`` would be (``Json``, ``Image``... features)."""
    for start, table in iter_tables(ds, n, chunk):
        hits = np.flatnonzero(mask[start:start + table.num_rows])
        if hits.size:
            batch = ds.features.decode_batch(table.take(hits).to_pydict())
            for j, i in enumerate(hits.tolist()):
                yield start + i, {k: column[j] for k, column in batch.items()}


class ArrowSlices:
    """Row ranges of a dataset as pyarrow Tables, read forward: ``take(a, b)``, ``a`` never going back."""

    def __init__(self, ds: Any, n: int, chunk: int = 4096):
        self.n = n
        self._tables = iter_tables(ds, n, chunk)
        self._start = 0
        self._table = None

    def take(self, a: int, b: int):
        import pyarrow as pa
        parts = []
        while a < b:
            while self._table is None or a >= self._start + self._table.num_rows:
                self._start, self._table = next(self._tables)
            stop = min(b, self._start + self._table.num_rows)
            parts.append(self._table.slice(a - self._start, stop - a))
            a = stop
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)
