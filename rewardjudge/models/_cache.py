"""CachedModel: answer repeated judge requests from memory and an SQLite file."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from .._hash import canonical_hash
from ..errors import ConfigError
from ._base import Completion, GenerationParams, InferenceModel, Message, TokenDistribution

__all__ = ["CachedModel", "SQLiteCache", "request_key"]


def request_key(model_name: str, messages: Sequence[Message], params: GenerationParams | None,
                json_schema: dict[str, Any] | None, grammar: str | None = None) -> str:
    """SHA-256 hex of a request's canonical JSON: every ``GenerationParams`` field (``reask`` only on a
    re-ask) and a GBNF ``grammar`` when there is one (older keys stay valid)."""
    fields = dataclasses.asdict(params or GenerationParams())
    if not fields["reask"]:
        del fields["reask"]
    request = {"model": model_name, "params": fields, "json_schema": json_schema,
               "messages": [dict(m) for m in messages]}
    if grammar is not None:
        request["grammar"] = grammar
    return canonical_hash(request)


def _as_hit(c: Completion) -> Completion:
    # a fresh object per caller: graders may mutate what they get back
    return dataclasses.replace(c, attempts=0, latency_s=0.0, usage=dict(c.usage),
                               top_logprobs=[dict(t) for t in c.top_logprobs], tokens=list(c.tokens))


class SQLiteCache:
    """A key -> completion table in one SQLite file, safe across processes (WAL journal)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA busy_timeout=30000")
            self._conn.execute("CREATE TABLE IF NOT EXISTS completions ("
                               "key TEXT PRIMARY KEY, model TEXT, reply TEXT NOT NULL, created REAL)")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot use {self.path} as a judge cache: {exc}") from exc

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute("SELECT reply FROM completions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        fields = {f.name for f in dataclasses.fields(Completion)}   # a field it no longer has is dropped
        return Completion(**{k: v for k, v in json.loads(row[0]).items() if k in fields})

    def put(self, key: str, model_name: str, completion: Completion) -> None:
        record = dataclasses.asdict(completion)
        record.pop("raw")   # the reply body is not kept on disk
        reply = json.dumps(record, ensure_ascii=False)
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO completions (key, model, reply, created) "
                               "VALUES (?, ?, ?, ?)", (key, model_name, reply, time.time()))

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def seal_key(self) -> bytes:
        """The seal key kept with this cache (made on first use), so a later run's requests hit it."""
        with self._lock:
            self._conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
            self._conn.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('seal_key', ?)",
                               (secrets.token_hex(32),))
            row = self._conn.execute("SELECT value FROM meta WHERE name = 'seal_key'").fetchone()
        return bytes.fromhex(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CachedModel(InferenceModel):
    """``inner``'s ``chat`` replies cached in memory and, with ``cache`` (a path or ``SQLiteCache``), on
    disk (a hit has ``attempts == 0``); identical requests in flight are sent once (docs/evaluation.md)."""

    def __init__(self, inner: InferenceModel, cache: str | os.PathLike | SQLiteCache | None = None, *,
                 max_memory_entries: int | None = 100_000):
        if not isinstance(inner, InferenceModel):
            raise ConfigError(f"CachedModel wraps an InferenceModel, got {type(inner).__name__}")
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.disk = cache if cache is None or isinstance(cache, SQLiteCache) else SQLiteCache(cache)
        self.max_memory_entries = max_memory_entries
        self._memory: dict[str, Completion] = {}
        # in-flight requests per event loop: a future cannot be awaited from another loop
        self._inflight: dict[tuple[int, str], asyncio.Future] = {}
        self.stats = {"hits": 0, "misses": 0, "deduplicated": 0}

    def __getattr__(self, attr: str) -> Any:
        # only reached for attributes this wrapper does not have
        if attr.startswith("__") or attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def __repr__(self) -> str:
        where = f", cache={str(self.disk.path)!r}" if self.disk is not None else ""
        return f"CachedModel({self.inner!r}{where})"

    # what the base defines is not looked up in the inner model by __getattr__: answered here
    @property
    def continues_prefix(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.inner, "continues_prefix", False))

    @property
    def caches_grammars(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.inner, "caches_grammars", True))

    @property
    def seal_key(self) -> bytes | None:
        """The SQLite cache's seal key (``SQLiteCache.seal_key``); None without one."""
        return None if self.disk is None else self.disk.seal_key()

    async def grade_distribution(self, messages: Sequence[Message], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> TokenDistribution:
        """The inner model's ``grade_distribution`` (not cached)."""
        return await self.inner.grade_distribution(messages, choices, params)

    def key(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
            json_schema: dict[str, Any] | None = None, grammar: str | None = None) -> str:
        return request_key(self.name, messages, params, json_schema, grammar)

    def _remember(self, key: str, completion: Completion) -> None:
        self._memory[key] = completion
        if self.max_memory_entries is not None and len(self._memory) > self.max_memory_entries:
            self._memory.pop(next(iter(self._memory)))

    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None, grammar: str | None = None) -> Completion:
        """The inner model's reply, from the cache for a request answered before (``grammar`` is keyed)."""
        key = self.key(messages, params, json_schema=json_schema, grammar=grammar)
        hit = self._memory.get(key)
        if hit is None and self.disk is not None:
            hit = self.disk.get(key)
            if hit is not None:
                self._remember(key, hit)
        if hit is not None:
            self.stats["hits"] += 1
            return _as_hit(hit)
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        while (pending := self._inflight.get(slot)) is not None:
            self.stats["deduplicated"] += 1
            try:
                return _as_hit(await asyncio.shield(pending))
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this caller was cancelled
                # the caller that sent the request was cancelled, not us: ask again
                self.stats["deduplicated"] -= 1
        future: asyncio.Future = loop.create_future()
        self._inflight[slot] = future
        self.stats["misses"] += 1
        try:
            extra = {} if grammar is None else {"grammar": grammar}
            completion = await self.inner.chat(messages, params, json_schema=json_schema, **extra)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            # failures are not cached: waiters get this one, later callers ask again
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        else:
            self._remember(key, completion)
            if self.disk is not None:
                self.disk.put(key, self.name, completion)
            future.set_result(completion)
            return completion
        finally:
            self._inflight.pop(slot, None)

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            if self.disk is not None:
                self.disk.close()

