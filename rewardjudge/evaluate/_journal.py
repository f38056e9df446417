"""The run journal: append-only JSONL, a line ``{"row", "input", "grade"}`` per finished row written
with one ``write`` on an ``O_APPEND`` file; a torn last line is cut away, a row's last record wins."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import ConfigError
from ..grade import STATUSES

log = logging.getLogger("rewardjudge")

__all__ = ["Journal", "JournalIndex", "lock_folder", "read_records"]

STATUS_CODES = {s: i for i, s in enumerate(STATUSES)}


def lock_folder(out: Path, what: str = "run") -> int:
    """Take ``out``'s lock (one writer per folder); the descriptor to close to release it."""
    import fcntl
    fd = os.open(out / ".lock", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ConfigError(f"another {what} is writing to {out}; wait for it or use another folder") from None
    return fd


def read_records(path: Path, check: Callable[[dict[str, Any]], Any]
                 ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(offset, record)`` per JSON line of ``path`` that ``check`` accepts (it may normalise it; it
    raises ValueError, KeyError or TypeError on a wrong shape: skipped); a torn last line is truncated away."""
    if not path.exists():
        return
    offset = 0
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            start, offset = offset, offset + len(line)
            if not line.endswith(b"\n"):
                log.warning("%s: dropping a torn last line (%d bytes); its work is done again", path,
                            len(line))
                with open(path, "r+b") as w:
                    w.truncate(start)
                    w.flush()
                    os.fsync(w.fileno())
                return
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                check(rec)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s line %d is unreadable (%s); its work is done again", path, lineno, exc)
                continue
            yield start, rec


def _journal_shape(rec: dict[str, Any]) -> None:
    rec["row"] = int(rec["row"])
    rec["grade"]["status"]  # noqa: B018 - shape check


class JournalIndex:
    """Per row: its last record's offset (-1: none), input digest and status code (arrays made on first use)."""

    def __init__(self, n: int):
        self.n = n
        self._offset: np.ndarray | None = None
        self._digest: np.ndarray | None = None
        self._status: np.ndarray | None = None

    def set(self, row: int, offset: int, digest: str | None, status: str) -> None:
        if self._offset is None:
            self._offset = np.full(self.n, -1, dtype=np.int64)
            self._digest = np.zeros(self.n, dtype=np.uint64)
            self._status = np.full(self.n, -1, dtype=np.int8)
        self._offset[row] = offset
        try:
            self._digest[row] = int(digest or "0", 16) & 0xFFFFFFFFFFFFFFFF
        except ValueError:
            self._digest[row] = 0
        self._status[row] = STATUS_CODES.get(status, -1)

    def _or_fill(self, name: str, fill: int, dtype: Any) -> np.ndarray:
        arr = getattr(self, name)
        return arr if arr is not None else np.full(self.n, fill, dtype=dtype)

    offset = property(lambda self: self._or_fill("_offset", -1, np.int64))
    digest = property(lambda self: self._or_fill("_digest", 0, np.uint64))
    status = property(lambda self: self._or_fill("_status", -1, np.int8))
    done = property(lambda self: self.offset >= 0)


class Journal:
    """Finished rows of one run; ``path=None`` keeps them in memory only."""

    def __init__(self, path: str | os.PathLike | None, *, sync_interval: float = 1.0):
        self.path = Path(path) if path is not None else None
        self.sync_interval = sync_interval
        self._fd: int | None = None
        self._last_sync = 0.0
        self._dirty = False

    def _records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return read_records(self.path, _journal_shape) if self.path is not None else iter(())

    def load(self) -> dict[int, dict[str, Any]]:
        """Every row's last record."""
        return {rec["row"]: rec for _, rec in self._records()}

    def scan(self, n: int) -> tuple[JournalIndex, int]:
        """Index the last record of rows ``0..n-1``; also how many rows lie at or beyond ``n``."""
        index = JournalIndex(n)
        beyond: set[int] = set()
        for start, rec in self._records():
            row = rec["row"]
            if 0 <= row < n:
                index.set(row, start, rec.get("input"), rec["grade"]["status"])
            elif row >= n and len(beyond) < 10_000_000:
                beyond.add(row)
        return index, len(beyond)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line now (an in-memory journal keeps nothing)."""
        if self.path is None:
            return
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        view = memoryview((json.dumps(record, ensure_ascii=False, default=str) + "\n").encode())
        while view:  # a regular file takes it in one write; loop in case it does not
            view = view[os.write(self._fd, view):]
        self._dirty = True
        if time.monotonic() - self._last_sync >= self.sync_interval:
            self.sync()

    def sync(self) -> None:
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False
            self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._fd is not None:
            self.sync()
            os.close(self._fd)
            self._fd = None
