"""Datasets in, threads out: loading data and mapping columns to StringThreads.

``load_data`` accepts a ``datasets.Dataset`` (or a one-split ``DatasetDict``),
a list of row dicts, a pandas DataFrame, a local ``.jsonl`` / ``.json`` /
``.parquet`` / ``.arrow`` / ``.csv`` file, a folder written by
``Dataset.save_to_disk``, or a hub name (``owner/name`` or
``owner/name:config``, split ``train`` unless told; only where the network
allows).

``Columns`` says which columns make a thread. A role left unset is mapped
only to a column whose name leaves no doubt: ``messages``; ``prompt`` or
``question``; ``completion`` or ``response``; ``reference``,
``ground_truth`` or ``reference_answer``. Two such candidates for one role
are an error (name one). Names that could mean a role or something else
(``input``, ``output``, ``answer``, ``expected``, ``target``, ``gold``,
``label``...) are never mapped: ``detect_columns`` says what it mapped and
which columns it left alone that you may want to map.

>>> cols = Columns.parse("prompt=question,completion=answer,metadata=id,metadata=topic")
>>> cols.prompt, cols.completion, cols.metadata
('question', 'answer', ('id', 'topic'))
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .._hash import canonical_hash
from ..errors import ConfigError
from ..thread import StringThread

__all__ = ["Columns", "detect_columns", "load_data", "row_to_thread", "thread_digest"]

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


@dataclass(frozen=True)
class Columns:
    """Which dataset columns make a thread.

    * ``prompt``: a str (one user turn) or a list of ``{role, content}``
      messages (the conversational format TRL uses).
    * ``messages``: a list of ``{role, content}`` messages; used instead of
      ``prompt``.
    * ``completion``: a str (one assistant turn) or a list of messages. With
      no completion column, the thread's last assistant message is graded.
    * ``reference``: copied to ``metadata["reference"]`` (templates read it
      as ``{{metadata.reference}}``).
    * ``system``: a str, prepended as a system turn.
    * ``metadata``: column names copied into ``metadata`` under their own
      names; a column holding a dict is merged in.
    """

    prompt: str | None = None
    messages: str | None = None
    completion: str | None = None
    reference: str | None = None
    system: str | None = None
    metadata: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, spec: "str | Mapping[str, Any] | Columns | None") -> "Columns":
        """From ``"role=column,..."`` (``metadata`` may repeat), a JSON object
        string, a mapping, or a ``Columns``."""
        if spec is None:
            return cls()
        if isinstance(spec, Columns):
            return spec
        if isinstance(spec, str):
            text = spec.strip()
            if text.startswith("{"):
                try:
                    spec = json.loads(text)
                except ValueError as exc:
                    raise ConfigError(f"--columns is not valid JSON: {exc}") from None
            else:
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
                spec = pairs
        if not isinstance(spec, Mapping):
            raise ConfigError(f"columns must be a mapping of role -> column, got {type(spec).__name__}")
        unknown = sorted(set(spec) - set(_ROLES))
        if unknown:
            raise ConfigError(f"unknown column role(s) {unknown}; roles are {', '.join(_ROLES)}")
        meta = spec.get("metadata") or ()
        if isinstance(meta, str):
            meta = (meta,)
        values = {k: spec.get(k) for k in _ROLES if k != "metadata"}
        for k, v in values.items():
            if v is not None and not isinstance(v, str):
                raise ConfigError(f"column for {k!r} must be a column name, got {v!r}")
        return cls(metadata=tuple(meta), **values)

    def resolve(self, column_names: Sequence[str]) -> "Columns":
        """Fill unset roles from unambiguous names and check every column
        exists (``detect_columns`` also says what it did)."""
        return detect_columns(self, column_names)[0]

    def as_dict(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "messages": self.messages, "completion": self.completion,
                "reference": self.reference, "system": self.system, "metadata": list(self.metadata)}


def detect_columns(spec: "str | Mapping[str, Any] | Columns | None",
                   column_names: Sequence[str]) -> tuple[Columns, list[str]]:
    """The column mapping for ``column_names``, and what was done, one line
    per role: given, found by an unambiguous name, or not mapped (with the
    columns that might be meant and the ``--columns`` to map them).

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
    found: dict[str, str] = {}
    notes: list[str] = []

    def sure(roles: tuple[str, ...], what: str) -> str | None:
        hits = [(r, c) for r in roles for c in _SURE[r] if c in names and c not in taken]
        if len(hits) > 1:
            listed = " and ".join(repr(c) for _, c in hits)
            raise ConfigError(f"columns {listed} could each be the {what}; say which with --columns "
                              f"{hits[0][0]}=<column> (columns=...)")
        if hits:
            role, col = hits[0]
            found[role] = col
            taken.add(col)
            return role
        return None

    def maybe(roles: tuple[str, ...]) -> list[tuple[str, str]]:
        return [(r, c) for r in roles for c in _MAYBE[r] if c in names and c not in taken]

    def unmapped(role: str, roles: tuple[str, ...]) -> str:
        hints = maybe(roles)
        if not hints:
            return f"{role}: not mapped (no column named like it)"
        listed = ", ".join(repr(c) for _, c in hints)
        return (f"{role}: not mapped; {listed} might be it (map it with --columns "
                f"{hints[0][0]}={hints[0][1]})")

    if given.prompt is None and given.messages is None:
        role = sure(("messages", "prompt"), "prompt")
        if role is None:
            hints = maybe(("messages", "prompt"))
            hint = (f"; {', '.join(repr(c) for _, c in hints)} might be it, e.g. --columns "
                    f"{hints[0][0]}={hints[0][1]}" if hints else
                    "; name one, e.g. --columns prompt=<column>,completion=<column>")
            raise ConfigError(f"no prompt or messages column found among {names}{hint}")
    for role in ("completion", "reference"):
        if getattr(given, role) is None:
            sure((role,), role)
    cols = replace(given, **found)
    if cols.prompt is not None and cols.messages is not None:
        raise ConfigError("give either a prompt column or a messages column, not both")
    for role in ("prompt", "messages", "completion", "reference", "system", *cols.metadata):
        col = role if role in cols.metadata else getattr(cols, role)
        if col is not None and col not in names:
            raise ConfigError(f"column {col!r} (for {role if role not in cols.metadata else 'metadata'}) "
                              f"is not in the data; columns are {names}")
    for role in ("messages", "prompt", "completion", "reference", "system"):
        col = getattr(cols, role)
        if col is not None:
            how = "given" if getattr(given, role) is not None else "found by name"
            notes.append(f"{role}: {col!r} ({how})")
        elif role == "completion" and cols.messages is None:
            notes.append(unmapped(role, (role,)))
        elif role == "completion":
            notes.append("completion: the last assistant message of each conversation")
        elif role == "reference":
            notes.append(unmapped(role, (role,)))
    if cols.metadata:
        notes.append(f"metadata: {', '.join(repr(c) for c in cols.metadata)} (given)")
    return cols, notes


def _messages(value: Any, what: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        raise ConfigError(f"{what} must be a list of {{role, content}} messages, got a str")
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{what} must be a list of {{role, content}} messages, got {type(value).__name__}")
    turns = []
    for i, m in enumerate(value):
        if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
            raise ConfigError(f"{what}[{i}] must be a mapping with 'role' and 'content', got {m!r:.80}")
        content = m["content"]
        turns.append((m["role"], "" if content is None else content))
    return turns


def row_to_thread(row: Mapping[str, Any], cols: Columns, *, index: int | None = None,
                  eval_mode: bool | None = True) -> StringThread:
    """One dataset row as a StringThread (``cols`` already resolved).

    ``metadata`` gets ``row`` (the index), ``eval`` (unless ``eval_mode`` is
    None), ``reference`` and the metadata columns.
    """
    where = f"row {index}" if index is not None else "row"
    turns: list[tuple[str, str]] = []
    if cols.system is not None and row.get(cols.system):
        turns.append(("system", str(row[cols.system])))
    if cols.messages is not None:
        turns += _messages(row[cols.messages], f"{where}: column {cols.messages!r}")
    else:
        prompt = row[cols.prompt]
        if isinstance(prompt, str):
            turns.append(("user", prompt))
        elif prompt is None:
            raise ConfigError(f"{where}: prompt column {cols.prompt!r} is empty")
        else:
            turns += _messages(prompt, f"{where}: column {cols.prompt!r}")
    if cols.completion is not None:
        completion = row[cols.completion]
        if completion is None:
            completion = ""  # an empty answer is graded (and judged) as empty, not skipped
        if isinstance(completion, str):
            turns.append(("assistant", completion))
        else:
            turns += _messages(completion, f"{where}: column {cols.completion!r}")
    metadata: dict[str, Any] = {}
    for col in cols.metadata:
        value = row[col]
        if isinstance(value, Mapping):
            metadata.update(value)
        else:
            metadata[col] = value
    if cols.reference is not None:
        metadata["reference"] = row[cols.reference]
    if index is not None:
        metadata["row"] = index
    if eval_mode is not None:
        metadata["eval"] = bool(eval_mode)
    try:
        return StringThread(turns, metadata)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def thread_digest(thread: StringThread) -> str:
    """First 16 hex digits of the SHA-256 of a thread's turns and metadata:
    a resumed run checks that each finished row still holds the same input."""
    return canonical_hash({"turns": thread.turns, "metadata": thread.metadata})[:16]


def iter_rows(ds: Any, indices: Sequence[int] | None = None, chunk: int = 1024) -> Iterator[tuple[int, dict]]:
    """``(index, row dict)`` for ``indices`` (default: all), read a chunk at a time."""
    n = len(ds)
    wanted = range(n) if indices is None else indices
    todo = sorted(set(wanted))
    pos = 0
    while pos < len(todo):
        start = todo[pos]
        end = min(start + chunk, n)
        block = ds[start:end]  # column -> list
        keys = list(block)
        while pos < len(todo) and todo[pos] < end:
            i = todo[pos]
            yield i, {k: block[k][i - start] for k in keys}
            pos += 1


def _plain_feature(feature: Any) -> bool:
    """Whether rows of this feature read the same from Arrow (``to_pylist``)
    as through ``datasets``' own decoding (no Json, Image, Audio...)."""
    name = type(feature).__name__
    if name == "Value":
        return True
    if isinstance(feature, Mapping):
        return all(_plain_feature(f) for f in feature.values())
    if isinstance(feature, (list, tuple)):
        return all(_plain_feature(f) for f in feature)
    if name in ("List", "LargeList", "Sequence"):
        return _plain_feature(feature.feature)
    return False


def _arrow_files(ds: Any) -> list[str] | None:
    """The Arrow files a dataset is exactly the concatenation of (no slice,
    selection, column change or cast on top), else None."""
    try:
        from datasets.table import ConcatenationTable, MemoryMappedTable

        if ds._indices is not None or not _plain_feature(ds.features):
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
    """Drop from this process's resident set the pages of the Arrow files a
    dataset maps (``madvise(MADV_DONTNEED)`` on each mapping of them, Linux).

    ``datasets`` opens a file's Arrow cache by walking the whole memory map,
    which leaves most of the file resident; ``iter_tables`` then reads the
    rows with ordinary reads, so those pages only weigh on the process. The
    mapping stays valid: a page touched again is read back from the file.
    Returns whether anything was released."""
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


def iter_tables(ds: Any, n: int, chunk: int = 1024) -> Iterator[tuple[int, Any]]:
    """``(start, pyarrow.Table)`` for consecutive rows ``0..n-1``.

    A dataset that is plainly its Arrow files (what ``load_data`` gives for a
    file) is read from them with ordinary reads, a record batch at a time:
    going through its memory map would leave every page read resident (the
    whole file, at the end of a run). Other datasets are sliced through
    ``datasets``, ``chunk`` rows at a time."""
    import pyarrow as pa

    files = _arrow_files(ds)
    if files is not None:
        schema = ds.data.schema
        start = 0
        for path in files:
            with pa.OSFile(path) as source:
                reader = pa.ipc.open_stream(source)
                for batch in reader:
                    if start >= n:
                        return
                    table = pa.Table.from_batches([batch.slice(0, min(batch.num_rows, n - start))])
                    if not table.schema.equals(schema, check_metadata=False):
                        break  # not what it seemed: fall back below from here
                    yield start, table
                    start += table.num_rows
                else:
                    continue
                break
        else:
            return
        arrow = ds.with_format("arrow")
        for a in range(start, n, chunk):
            yield a, arrow[a:min(n, a + chunk)]
        return
    arrow = ds.with_format("arrow")
    for a in range(0, n, chunk):
        yield a, arrow[a:min(n, a + chunk)]


def iter_masked_rows(ds: Any, mask: Any, n: int, chunk: int = 1024) -> Iterator[tuple[int, dict]]:
    """``(index, row dict)`` for rows ``i < n`` with ``mask[i]`` true, in
    order, a chunk at a time (memory bounded by the chunk)."""
    import numpy as np

    if _arrow_files(ds) is not None:
        for start, table in iter_tables(ds, n, chunk):
            hits = np.flatnonzero(mask[start:start + table.num_rows])
            if hits.size:
                rows = table.take(hits).to_pylist()
                for j, row in zip(hits.tolist(), rows):
                    yield start + j, row
        return
    for start in range(0, n, chunk):
        end = min(start + chunk, n)
        hits = np.flatnonzero(mask[start:end])
        if hits.size == 0:
            continue
        block = ds[start:end]
        keys = list(block)
        for j in hits.tolist():
            yield start + j, {k: block[k][j] for k in keys}


class ArrowSlices:
    """Consecutive row ranges of a dataset as pyarrow Tables, read forward
    (``iter_tables``): ``take(a, b)`` for ``a`` never going back."""

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


def _normalize_content_parts(value: Any) -> Any:
    """A list of messages with every content as a list of parts (a str
    becomes one text part), so that rows mixing both forms share one type."""
    if isinstance(value, list) and value and all(isinstance(m, Mapping) and "content" in m for m in value):
        out = []
        for m in value:
            content = m["content"]
            if content is None:
                content = []
            elif isinstance(content, str):
                content = [{"type": "text", "text": content}]
            elif isinstance(content, Mapping):
                content = [dict(content)]
            out.append({**m, "content": content})
        return out
    return value


def _has_json_feature(feature: Any) -> bool:
    """Whether a ``datasets`` feature holds a ``Json`` type anywhere: what
    ``datasets`` (5.x) infers for a field mixing strings and objects, and it
    then decodes every such string that parses as JSON (an answer written as
    a JSON object would come back a dict). Messages must not go through it."""
    if type(feature).__name__ == "Json":
        return True
    if isinstance(feature, Mapping):
        return any(_has_json_feature(f) for f in feature.values())
    if isinstance(feature, (list, tuple)):
        return any(_has_json_feature(f) for f in feature)
    inner = getattr(feature, "feature", None)
    return inner is not None and _has_json_feature(inner)


def _uses_content_parts(rows: Iterator[Mapping[str, Any]]) -> bool:
    for row in rows:
        for v in row.values():
            if isinstance(v, list) and any(isinstance(m, Mapping) and isinstance(m.get("content"), list)
                                           for m in v):
                return True
    return False


def _json_rows(path: Path) -> Iterator[dict]:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        head = f.read(1)
        while head and head.isspace():
            head = f.read(1)
        if head == "[":  # a JSON array file
            for row in json.loads(head + f.read()):
                yield row
            return
        first = head + f.readline()
        if first.strip():
            yield json.loads(first)
        for line in f:
            if line.strip():
                yield json.loads(line)


def _load_json_with_parts(path: Path):
    """Load JSON(L) whose messages mix str and content-part contents (which
    Arrow cannot type as one column): rewrite them with every content as a
    list of parts into a temporary JSONL, a row at a time, and load that."""
    import tempfile

    import datasets

    with tempfile.TemporaryDirectory(prefix="rewardjudge-parts-") as tmp:
        fixed = Path(tmp) / "rows.jsonl"
        with open(fixed, "w", encoding="utf-8") as out:
            for row in _json_rows(path):
                if not isinstance(row, Mapping):
                    raise ConfigError(f"{path}: every row must be a JSON object")
                out.write(json.dumps({k: _normalize_content_parts(v) for k, v in row.items()},
                                     ensure_ascii=False) + "\n")
        ds = datasets.Dataset.from_json(str(fixed))
        return ds.flatten_indices() if ds._indices is not None else ds


def load_data(data: Any, *, split: str | None = None):
    """A ``datasets.Dataset`` from any of the accepted inputs (see module doc)."""
    import datasets

    if isinstance(data, datasets.Dataset):
        return data
    if isinstance(data, datasets.DatasetDict):
        return _pick_split(data, split)
    if isinstance(data, list):
        if not all(isinstance(r, Mapping) for r in data):
            raise ConfigError("a list of rows must hold dicts (column -> value)")
        try:
            ds = datasets.Dataset.from_list([dict(r) for r in data])
        except Exception:  # e.g. messages mixing str and content-part contents
            if not _uses_content_parts(iter(data)):
                raise
            ds = None
        if ds is None or (_has_json_feature(ds.features) and _uses_content_parts(iter(data))):
            ds = datasets.Dataset.from_list([{k: _normalize_content_parts(v) for k, v in r.items()}
                                             for r in data])
        return ds
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_dict"):
        return datasets.Dataset.from_pandas(data, preserve_index=False)
    if not isinstance(data, (str, os.PathLike)):
        raise ConfigError(f"data must be a Dataset, a list of dicts, a DataFrame or a path, "
                          f"got {type(data).__name__}")
    path = Path(data).expanduser()
    if path.is_dir():
        if (path / "state.json").exists() or (path / "dataset_dict.json").exists():
            loaded = datasets.load_from_disk(str(path))
            return _pick_split(loaded, split) if isinstance(loaded, datasets.DatasetDict) else loaded
        raise ConfigError(f"{path} is a folder but not one written by Dataset.save_to_disk; "
                          f"pass a .jsonl/.json/.parquet/.arrow/.csv file")
    if path.is_file():
        suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
        loaders = {".jsonl": datasets.Dataset.from_json, ".json": datasets.Dataset.from_json,
                   ".jsonl.gz": datasets.Dataset.from_json, ".json.gz": datasets.Dataset.from_json,
                   ".parquet": datasets.Dataset.from_parquet, ".arrow": datasets.Dataset.from_file,
                   ".csv": datasets.Dataset.from_csv}
        loader = loaders.get(suffix.lower())
        if loader is None:
            raise ConfigError(f"cannot read {path}: unknown file type {suffix!r}; "
                              f"expected one of {', '.join(sorted(loaders))}")
        try:
            ds = loader(str(path))
            if (loader is datasets.Dataset.from_json and _has_json_feature(ds.features)
                    and _uses_content_parts(_json_rows(path))):
                return _load_json_with_parts(path)
            return ds
        except ConfigError:
            raise
        except Exception as exc:  # datasets raises many kinds; say which file and why
            if loader is datasets.Dataset.from_json:
                try:
                    if _uses_content_parts(_json_rows(path)):
                        return _load_json_with_parts(path)
                except ConfigError:
                    raise
                except Exception:
                    pass
            raise ConfigError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc
    text = str(data)
    if text.count("/") <= 1 and not text.startswith((".", "/", "~")) and not Path(text).suffix:
        name, _, config = text.partition(":")  # "owner/name:config" picks a configuration
        try:
            loaded = datasets.load_dataset(name, config or None, split=split or "train")
        except Exception as exc:
            raise ConfigError(f"{text!r} is not a local file, and loading it from the Hugging Face "
                              f"hub failed ({type(exc).__name__}: {exc})") from exc
        return loaded
    raise ConfigError(f"no such file: {path}")


def _pick_split(dd, split: str | None):
    if split is not None:
        if split not in dd:
            raise ConfigError(f"split {split!r} not found; splits are {sorted(dd)}")
        return dd[split]
    if len(dd) == 1:
        return next(iter(dd.values()))
    raise ConfigError(f"the data has several splits {sorted(dd)}; choose one (split=... / --split)")
