"""The run journal: an append-only JSONL file of finished rows.

Each finished row is one line ``{"row": i, "input": digest, "grade": {...}}``
written with a single ``write`` on a file opened with ``O_APPEND``, so a
killed process (SIGKILL included) leaves every line it finished intact: the
kernel holds what ``write`` returned from even if the process dies.
``fsync`` runs at most every ``sync_interval`` seconds and on close, which
covers a machine crash up to that interval. A line cut short by a crash is
the only damage possible; ``load`` drops it and truncates the file back to
the last full line.

A row may appear more than once (``retry_unscored`` appends a new record):
the last record wins.

>>> j = Journal("out/journal.jsonl")            # doctest: +SKIP
>>> done = j.load()                             # {row: record}
>>> j.append({"row": 3, "input": "ab12", "grade": {...}})  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("rewardjudge")

__all__ = ["Journal"]


class Journal:
    """Finished rows of one run; ``path=None`` keeps them in memory only."""

    def __init__(self, path: str | os.PathLike | None, *, sync_interval: float = 1.0):
        self.path = Path(path) if path is not None else None
        self.sync_interval = sync_interval
        self._fd: int | None = None
        self._last_sync = 0.0
        self._dirty = False

    def load(self) -> dict[int, dict[str, Any]]:
        """Every row's last record. Drops (and truncates away) a torn last line."""
        if self.path is None or not self.path.exists():
            return {}
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            log.warning("journal %s: dropping a torn last line (%d bytes); that row is graded again",
                        self.path, len(data) - end)
            with open(self.path, "r+b") as f:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
        done: dict[int, dict[str, Any]] = {}
        for n, line in enumerate(data[:end].splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                row = int(rec["row"])
                rec["grade"]["status"]  # noqa: B018 - shape check
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("journal %s line %d is unreadable (%s); that row is graded again",
                            self.path, n, exc)
                continue
            done[row] = rec
        return done

    def _open(self) -> int:
        if self._fd is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self._fd

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line, now."""
        if self.path is None:
            return
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
        fd = self._open()
        view = memoryview(line)
        while view:  # a regular file takes it in one write; loop in case it does not
            written = os.write(fd, view)
            view = view[written:]
        self._dirty = True
        now = time.monotonic()
        if now - self._last_sync >= self.sync_interval:
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
