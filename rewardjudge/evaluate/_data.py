"""Datasets in, threads out: ``load_data``, ``Columns`` (docs/evaluation.md), the rows as threads in
prompt groups (``row_groups``). An unset role maps only to a name that leaves no doubt (``_SURE``).
Rows are read forward a chunk at a time; a dataset that is plainly its Arrow files is read from them a
record batch at a time (through the memory map every page read would stay resident).

>>> Columns.parse("prompt=question,completion=answer,metadata=id,metadata=topic").metadata
('id', 'topic')
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Iterator, Mapping, Optional, Sequence

import numpy as np
from pydantic import BeforeValidator, Field

from .._hash import canonical_hash
from .._option_types import JSON_FORM, Options
from .._validate import json_value
from ..errors import ConfigError
from ..graders._schedule import prompt_units
from ..thread import StringThread, content_text, message_turns, with_own_keys

__all__ = ["ArrowSlices", "Columns", "detect_columns", "feature_leaves", "iter_masked_rows", "load_data",
           "release_mapped_pages", "row_groups", "row_threads", "row_to_thread", "thread_digest"]

#: names mapped to a role without being asked: each is that role in every common dataset format
_SURE = {
    "messages": ("messages",),
    "prompt": ("prompt", "question"),
    "completion": ("completion", "response"),
    "reference": ("reference", "ground_truth", "reference_answer"),
}
#: names that may be the role and may be something else: never mapped, only pointed out
_MAYBE = {
    "messages": ("conversation", "conversations", "chat", "dialogue"),
    "prompt": ("input", "instruction", "query", "problem"),
    "completion": ("output", "generation", "prediction", "answer"),
    "reference": ("expected", "expected_output", "target", "gold", "label", "solution", "answer"),
}
_ROLES = ("prompt", "messages", "completion", "reference", "system", "metadata")


_COLUMN = Field(None, description="must be a column name")


class Columns(Options):
    """Which dataset columns make a thread (the roles: docs/evaluation.md)."""

    model_config = JSON_FORM
    where: ClassVar[str] = "columns"

    prompt: Optional[str] = _COLUMN
    messages: Optional[str] = _COLUMN
    completion: Optional[str] = _COLUMN
    reference: Optional[str] = _COLUMN
    system: Optional[str] = _COLUMN
    metadata: Annotated[tuple[str, ...], BeforeValidator(lambda v: (v,) if isinstance(v, str) else v or ())] = \
        Field((), description="must be a column name or a list of them")

    @classmethod
    def parse(cls, spec: "str | Mapping[str, Any] | Columns | None") -> "Columns":
        """From ``"role=column,..."`` (``metadata`` may repeat), JSON, a mapping or a ``Columns``."""
        if isinstance(spec, Columns):
            return spec
        return cls.model_validate(_parse_text(spec) if isinstance(spec, str) else spec or {})


def _parse_text(text: str) -> Any:
    text = text.strip()
    if text.startswith("{"):
        return json_value(text, "--columns")
    pairs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        role, eq, col = part.partition("=")
        if not eq or not col.strip():
            raise ConfigError(f"column mapping {part!r} must look like role=column "
                              f"(roles: {', '.join(_ROLES)})")
        role, col = role.strip(), col.strip()
        if role == "metadata":
            pairs.setdefault("metadata", []).append(col)
        elif role in pairs:
            raise ConfigError(f"column role {role!r} given twice")
        else:
            pairs[role] = col
    return pairs


def _named(table: dict[str, tuple[str, ...]], roles: tuple[str, ...], names: list[str],
           taken: set[str]) -> list[tuple[str, str]]:
    """``(role, column)`` for each free column named as ``table`` lists for ``roles``."""
    return [(r, c) for r in roles for c in table[r] if c in names and c not in taken]


def _hint(role: str, names: list[str], taken: set[str]) -> str:
    hints = _named(_MAYBE, (role,), names, taken)
    if not hints:
        return f"{role}: not mapped (no column named like it)"
    listed = ", ".join(repr(c) for _, c in hints)
    return f"{role}: not mapped; {listed} might be it (map it with --columns {hints[0][0]}={hints[0][1]})"


def _find(roles: tuple[str, ...], names: list[str], taken: set[str]) -> tuple[str, str] | None:
    """The one free column surely named as ``roles``; two are an error, none is None."""
    hits = _named(_SURE, roles, names, taken)
    if len(hits) > 1:
        listed = " and ".join(repr(c) for _, c in hits)
        raise ConfigError(f"columns {listed} could each be the {roles[-1]}; say which with --columns "
                          f"{hits[0][0]}=<column> (columns=...)")
    if hits:
        return hits[0]
    if roles[-1] != "prompt":
        return None
    hints = _named(_MAYBE, roles, names, taken)
    hint = (f"; {', '.join(repr(c) for _, c in hints)} might be it, e.g. --columns {hints[0][0]}={hints[0][1]}"
            if hints else "; name one, e.g. --columns prompt=<column>,completion=<column>")
    raise ConfigError(f"no prompt or messages column found among {names}{hint}")


def detect_columns(spec: "str | Mapping[str, Any] | Columns | None",
                   column_names: Sequence[str]) -> tuple[Columns, list[str]]:
    """The column mapping for ``column_names``, and one note per role (given, found, or not mapped).

    >>> cols, notes = detect_columns(None, ["question", "response", "expected"])
    >>> cols.prompt, cols.completion, cols.reference
    ('question', 'response', None)
    >>> notes[-1]
    "reference: not mapped; 'expected' might be it (map it with --columns reference=expected)"
    """
    given = Columns.parse(spec)
    names = list(column_names)
    taken = {c for c in (given.prompt, given.messages, given.completion, given.reference, given.system,
                         *given.metadata) if c is not None}
    searches = [(role,) for role in ("completion", "reference") if getattr(given, role) is None]
    if given.prompt is None and given.messages is None:
        searches.insert(0, ("messages", "prompt"))
    found: dict[str, str] = {}
    for roles in searches:
        hit = _find(roles, names, taken)
        if hit is not None:
            found[hit[0]] = hit[1]
            taken.add(hit[1])
    cols = given.model_copy(update=found)
    if cols.prompt is not None and cols.messages is not None:
        raise ConfigError("give either a prompt column or a messages column, not both")
    for role, col in [*((r, getattr(cols, r)) for r in _ROLES[:-1]), *(("metadata", c) for c in cols.metadata)]:
        if col is not None and col not in names:
            raise ConfigError(f"column {col!r} (for {role}) is not in the data; columns are {names}")
    if cols.messages is None and cols.completion is None:
        hint = _hint("completion", names, taken).partition("; ")[2] or "name it with --columns completion=<column>"
        raise ConfigError(f"no completion column found among {names} (every row would be graded as an empty "
                          f"answer): {hint}; a column of whole conversations goes as --columns messages=<column>")
    return cols, _notes(given, cols, names, taken)


def _notes(given: Columns, cols: Columns, names: list[str], taken: set[str]) -> list[str]:
    notes = []
    for role in ("messages", "prompt", "completion", "reference", "system"):
        col = getattr(cols, role)
        if col is not None:
            notes.append(f"{role}: {col!r} ({'given' if getattr(given, role) is not None else 'found by name'})")
        elif role == "completion" and cols.messages is not None:
            notes.append("completion: the last assistant message of each conversation")
        elif role in ("completion", "reference"):
            notes.append(_hint(role, names, taken))
    if cols.metadata:
        notes.append(f"metadata: {', '.join(repr(c) for c in cols.metadata)} (given)")
    return notes


def row_to_thread(row: Mapping[str, Any], cols: Columns, *, index: int | None = None,
                  eval_mode: bool | None = True) -> StringThread:
    """One dataset row as a StringThread; ``metadata`` gets the metadata columns, ``reference``, ``row``
    and ``eval`` (unless ``eval_mode`` is None)."""
    where = f"row {index}" if index is not None else "row"
    # a system column of content parts is read as a message's content is, not as the list's repr
    turns = [("system", content_text(row[cols.system], f"{where}: column {cols.system!r}"))] \
        if cols.system is not None and row.get(cols.system) else []
    column = cols.messages or cols.prompt
    if cols.messages is None and row[column] is None:
        raise ConfigError(f"{where}: prompt column {column!r} is empty")
    turns += message_turns(row[column], "user", f"{where}: column {column!r}")
    if cols.completion is not None:  # an empty answer is graded (and judged) as empty, not skipped
        completion = "" if row[cols.completion] is None else row[cols.completion]
        turns += message_turns(completion, "assistant", f"{where}: column {cols.completion!r}")
    metadata: dict[str, Any] = {}
    for col in cols.metadata:  # a column holding a dict is merged in
        metadata = with_own_keys(metadata, row[col] if isinstance(row[col], Mapping) else {col: row[col]},
                                 where, f"metadata column {col!r}")
    own: dict[str, Any] = {}
    if cols.reference is not None:
        own["reference"] = row[cols.reference]
    if index is not None:
        own["row"] = index
    if eval_mode is not None:
        own["eval"] = bool(eval_mode)
    metadata = with_own_keys(metadata, own, where, {"reference": f"the reference column {cols.reference!r}",
                                                    "row": "the row index", "eval": "the evaluation mode"})
    try:
        return StringThread(turns, metadata)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def thread_digest(thread: StringThread) -> str:
    """First 16 hex digits of the SHA-256 of a thread's turns and metadata (checked on resume)."""
    return canonical_hash({"turns": thread.turns, "metadata": thread.metadata})[:16]


def row_threads(ds: Any, cols: Columns, mask: Any, n: int, eval_mode: bool,
                chunk: int = 1024) -> Iterator[tuple[int, StringThread | None, str]]:
    """``(row, thread, digest)`` for the rows in ``mask`` (``(row, None, why)`` for an unreadable one)."""
    for i, row in iter_masked_rows(ds, mask, n, chunk=chunk):
        try:
            thread = row_to_thread(row, cols, index=i, eval_mode=eval_mode)
        except ConfigError as exc:
            yield i, None, str(exc)
            continue
        yield i, thread, thread_digest(thread)


def row_groups(ds: Any, cols: Columns, mask: Any, n: int, eval_mode: bool, *, window: int, max_group: int,
               on_input_error: Callable[[int, str], None]) -> Iterator[list[tuple[int, Any, str]]]:
    """Groups ``[(row, thread, digest), ...]`` of one ``prompt_key`` within each ``window`` of rows (pieces
    of at most ``max_group``), in order of first row; an unreadable row goes to ``on_input_error``."""
    items: list[tuple[int, Any, str]] = []
    window_end = window

    def flush() -> list[list[tuple[int, Any, str]]]:
        out = prompt_units(items, lambda item: item[1], max_group)
        out.sort(key=lambda g: g[0][0])
        items.clear()
        return out

    for i, thread, digest in row_threads(ds, cols, mask, n, eval_mode, chunk=min(window, 1024)):
        if i >= window_end:
            yield from flush()
            window_end = (i // window + 1) * window
        if thread is None:
            on_input_error(i, digest)
        else:
            items.append((i, thread, digest))
    yield from flush()


def _with_parts(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row whose messages hold every content as parts (rows mixing both forms share one Arrow type)."""
    def parts(content: Any) -> Any:
        if content is None or isinstance(content, str):
            return [] if content is None else [{"type": "text", "text": content}]
        return [dict(content)] if isinstance(content, Mapping) else content

    return {k: [{**m, "content": parts(m["content"])} for m in v]
            if isinstance(v, list) and v and all(isinstance(m, Mapping) and "content" in m for m in v) else v
            for k, v in row.items()}


def _uses_content_parts(rows: Iterator[Mapping[str, Any]]) -> bool:
    """Whether some row holds messages whose content is a list of parts."""
    return any(isinstance(v, list) and any(isinstance(m, Mapping) and isinstance(m.get("content"), list)
                                           for m in v) for row in rows for v in row.values())


def _or_with_parts(load: Callable[[], Any], rows: Callable[[], Iterator[Mapping[str, Any]]],
                   reload: Callable[[], Any]) -> Any:
    """``load()``, else ``reload()`` (contents as parts) where rows hold content-part messages and ``load``
    failed (one Arrow type per column) or inferred a ``Json`` feature (it decodes JSON-looking strings)."""
    try:
        ds = load()
    except UnicodeEncodeError as exc:   # Arrow holds UTF-8 only: name the text, not pyarrow's stack
        raise ConfigError(f"the data holds text that is not valid Unicode ({exc.reason}: "
                          f"{exc.object[max(exc.start - 20, 0):exc.end + 20]!r}); repair it, e.g. "
                          f"text.encode('utf-8', 'replace').decode('utf-8')") from None
    except Exception:
        if not _uses_content_parts(rows()):
            raise
        return reload()
    json_typed = any(type(f).__name__ == "Json" for f in feature_leaves(ds.features))
    return reload() if json_typed and _uses_content_parts(rows()) else ds


def _json_rows(path: Path) -> Iterator[dict]:
    import gzip
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        head = f.read(1)
        while head and head.isspace():
            head = f.read(1)
        if head == "[":  # a JSON array file
            yield from json.loads(head + f.read())
            return
        for line in itertools.chain([head + f.readline()], f):
            if line.strip():
                yield json.loads(line)


def _load_json_with_parts(path: Path):
    """JSON(L) loaded through a temporary JSONL with every content as parts, written a row at a time."""
    import tempfile
    import datasets
    with tempfile.TemporaryDirectory(prefix="rewardjudge-parts-") as tmp:
        fixed = Path(tmp) / "rows.jsonl"
        with open(fixed, "w", encoding="utf-8") as out:
            for row in _json_rows(path):
                if not isinstance(row, Mapping):
                    raise ConfigError(f"{path}: every row must be a JSON object")
                out.write(json.dumps(_with_parts(row), ensure_ascii=False) + "\n")
        ds = datasets.Dataset.from_json(str(fixed))
        return ds.flatten_indices() if ds._indices is not None else ds


def load_data(data: Any, *, split: str | None = None):
    """A ``datasets.Dataset`` from any of the accepted inputs (docs/evaluation.md)."""
    import datasets
    if isinstance(data, datasets.Dataset):
        return data
    if isinstance(data, datasets.DatasetDict):
        return _pick_split(data, split)
    if isinstance(data, list):
        if not all(isinstance(r, Mapping) for r in data):
            raise ConfigError("a list of rows must hold dicts (column -> value); grade StringThreads with "
                              "grader.grade_batch(threads)")
        return _or_with_parts(lambda: datasets.Dataset.from_list([dict(r) for r in data]), lambda: iter(data),
                              lambda: datasets.Dataset.from_list([_with_parts(r) for r in data]))
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_dict"):
        return datasets.Dataset.from_pandas(data, preserve_index=False)
    if not isinstance(data, (str, os.PathLike)):
        raise ConfigError(f"data must be a Dataset, a list of dicts, a DataFrame or a path, "
                          f"got {type(data).__name__}")
    path = Path(data).expanduser()
    if path.is_dir():
        return _from_folder(path, split)
    if path.is_file():
        return _from_file(path)
    text = str(data)
    if text.count("/") <= 1 and not text.startswith((".", "/", "~")) and not Path(text).suffix:
        name, _, config = text.partition(":")  # "owner/name:config" picks a configuration
        try:
            return datasets.load_dataset(name, config or None, split=split or "train")
        except Exception as exc:
            raise ConfigError(f"{text!r} is not a local file, and loading it from the Hugging Face "
                              f"hub failed ({type(exc).__name__}: {exc})") from exc
    raise ConfigError(f"no such file: {path}")


def _from_folder(path: Path, split: str | None) -> Any:
    import datasets
    if not ((path / "state.json").exists() or (path / "dataset_dict.json").exists()):
        raise ConfigError(f"{path} is a folder but not one written by Dataset.save_to_disk; "
                          f"pass a .jsonl/.json/.parquet/.arrow/.csv file")
    loaded = datasets.load_from_disk(str(path))
    return _pick_split(loaded, split) if isinstance(loaded, datasets.DatasetDict) else loaded


def _from_file(path: Path) -> Any:
    import datasets
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    loaders = {**dict.fromkeys((".jsonl", ".json", ".jsonl.gz", ".json.gz"), datasets.Dataset.from_json),
               ".parquet": datasets.Dataset.from_parquet, ".arrow": datasets.Dataset.from_file,
               ".csv": datasets.Dataset.from_csv}
    loader = loaders.get(suffix.lower())
    if loader is None:
        raise ConfigError(f"cannot read {path}: unknown file type {suffix!r}; "
                          f"expected one of {', '.join(sorted(loaders))}")
    try:
        if loader is not datasets.Dataset.from_json:
            return loader(str(path))
        return _or_with_parts(lambda: loader(str(path)), lambda: _json_rows(path),
                              lambda: _load_json_with_parts(path))
    except ConfigError:
        raise
    except Exception as exc:  # datasets raises many kinds; say which file and why
        raise ConfigError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc


def _pick_split(dd, split: str | None):
    if split is not None:
        if split not in dd:
            raise ConfigError(f"split {split!r} not found; splits are {sorted(dd)}")
        return dd[split]
    if len(dd) == 1:
        return next(iter(dd.values()))
    raise ConfigError(f"the data has several splits {sorted(dd)}; choose one (split=... / --split)")


def feature_leaves(feature: Any) -> Iterator[Any]:
    """The leaf features (``Value``, ``Json``, ``Image``...) of a nested ``datasets`` feature."""
    if isinstance(feature, Mapping):
        feature = list(feature.values())
    elif type(feature).__name__ in ("List", "LargeList", "Sequence"):
        feature = [feature.feature]
    if isinstance(feature, (list, tuple)):
        for child in feature:
            yield from feature_leaves(child)
    else:
        yield feature


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
    """``madvise(MADV_DONTNEED)`` a dataset's mapped Arrow files (``datasets`` walks the whole map on open;
    rows are then read with ordinary reads); whether anything was released."""
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
    """``(start, Table)`` a record batch at a time; returns the row reached (a batch of another schema stops)."""
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
    """``(index, row dict)`` for rows ``i < n`` with ``mask[i]``, in order, decoded as ``ds[i]`` would be."""
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
