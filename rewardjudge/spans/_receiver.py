"""An OTLP/HTTP trace receiver that judges what it receives (docs/pipelines.md)."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from aiohttp import web

from ..errors import ConfigError
from ..serve._http import _BadRequest, _HTTPService
from . import SEMCONV_VERSION
from ._otlp import _pb, decode_request, spans_of
from ._runner import SpanJudge

__all__ = ["OtlpReceiver"]

log = logging.getLogger("rewardjudge")
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class OtlpReceiver(_HTTPService):
    """``SpanJudge`` behind ``POST /v1/traces``: answers once the selected spans are queued, 503 with
    ``Retry-After`` past ``max_pending``; errors are OTLP's ``{code, message}`` (docs/pipelines.md)."""

    def __init__(self, judge: SpanJudge, *, token: str | None = None, max_body: int = 16 << 20,
                 max_pending: int = 10_000, batch_size: int = 64, batch_window: float = 0.2, retry_after: int = 5,
                 body_timeout: float = 60.0):
        if max_pending < 1 or batch_size < 1:
            raise ConfigError("max_pending and batch_size must be >= 1")
        super().__init__(token=token, max_body=max_body, body_timeout=body_timeout)
        self.judge, self.max_pending, self.retry_after = judge, max_pending, retry_after
        self.batch_size, self.batch_window = batch_size, batch_window
        self.received = self.refused = 0
        self._queue: deque = deque()
        self._in_flight = 0
        self._wake = asyncio.Event()
        self._worker: asyncio.Task | None = None

    def _routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/traces", self._traces)
        router.add_get("/health", self._health)

    def _error_body(self, request: web.Request, status: int, message: str, code: str | None) -> dict[str, Any]:
        return {"code": status, "message": message}

    async def _traces(self, request: web.Request) -> web.Response:
        kind = request.content_type
        if kind not in (PROTOBUF, JSON):
            raise _BadRequest(415, f"Content-Type must be {PROTOBUF} or {JSON}, got {kind!r}")
        encoding = request.headers.get("Content-Encoding", "identity").lower()
        if encoding not in ("identity", "gzip", "deflate"):
            raise _BadRequest(400, f"Content-Encoding {encoding!r} is not supported (gzip or none)")
        received = list(spans_of(decode_request(await self._body(request), kind)))
        selected = [s for s in received if self.judge.pipeline.wants(s)]
        if self.pending + len(selected) > self.max_pending:
            self.refused += 1
            raise _BadRequest(503, f"{self.max_pending} spans already wait for the judge; retry later")
        self.received += 1
        self.judge.run.spans_read += len(received)
        self.judge.run.spans_selected += len(selected)
        self._queue.extend(selected)
        if selected:
            self._wake.set()
        body = b"{}" if kind == JSON else _pb().ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type=kind)

    def _about(self) -> dict[str, Any]:
        return {"semconv": SEMCONV_VERSION, "requests": self.received, "refused": self.refused,
                "pending": self.pending, **self.judge.run.to_dict()}

    async def _work(self) -> None:
        while True:
            if not self._queue:
                self._wake.clear()
                if self._draining:
                    return
                await self._wake.wait()
                continue
            if len(self._queue) < self.batch_size and not self._draining:
                await asyncio.sleep(self.batch_window)  # let a batch gather
            chunk = [self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))]
            self._in_flight = len(chunk)
            try:
                await self.judge.judge_spans(chunk)
            except Exception:  # a usage error in one batch must not stop the receiver
                log.exception("pipeline: a batch of %d spans failed", len(chunk))
            finally:
                self._in_flight = 0

    @property
    def pending(self) -> int:
        return len(self._queue) + self._in_flight

    async def start(self, host: str = "127.0.0.1", port: int = 4318) -> str:
        """Listen; returns the base URL (``port=0`` picks a free port)."""
        return await super().start(host, port)

    async def _on_startup(self, app: web.Application) -> None:
        await super()._on_startup(app)
        self._worker = asyncio.ensure_future(self._work())

    async def drain(self, timeout: float = 60.0) -> bool:
        """Refuse new requests, then judge what is queued (up to ``timeout`` s); True when all was."""
        drained = await super().drain(timeout)
        self._wake.set()
        if self._worker is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._worker), timeout)
            except asyncio.TimeoutError:
                drained = False
                self._worker.cancel()
        return drained and not self._queue

    async def _on_cleanup(self, app: web.Application) -> None:
        self.judge.close()
