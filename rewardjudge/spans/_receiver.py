"""An OTLP/HTTP trace receiver that judges what it receives (docs/pipelines.md): ``POST /v1/traces``
answers once the selected spans are queued, 503 with ``Retry-After`` past ``max_pending``."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections import deque
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from ..errors import ConfigError
from ._otlp import SEMCONV_VERSION, _pb, decode_request, spans_of
from ._runner import SpanJudge

__all__ = ["OtlpReceiver"]

log = logging.getLogger("rewardjudge")
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class OtlpReceiver:
    """``SpanJudge`` behind ``POST /v1/traces``.

    >>> receiver = OtlpReceiver(SpanJudge(pipeline, judge, output_dir="runs/live"))  # doctest: +SKIP
    >>> url = await receiver.start("127.0.0.1", 4318)                                # doctest: +SKIP
    """

    def __init__(self, judge: SpanJudge, *, token: str | None = None, max_body: int = 16 << 20,
                 max_pending: int = 10_000, batch_size: int = 64, batch_window: float = 0.2, retry_after: int = 5):
        if max_pending < 1 or batch_size < 1:
            raise ConfigError("max_pending and batch_size must be >= 1")
        self.judge, self.token, self.max_body, self.max_pending = judge, token or None, max_body, max_pending
        self.batch_size, self.batch_window, self.retry_after = batch_size, batch_window, retry_after
        self.received = self.refused = 0
        self._queue: deque = deque()
        self._in_flight = 0
        self._wake = asyncio.Event()
        self._stopping = False
        self._worker: asyncio.Task | None = None
        self._runner: web.AppRunner | None = None
        self.url: str | None = None

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body)
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_get("/health", self._health)
        return app

    def _authorized(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), f"Bearer {self.token}".encode())

    @staticmethod
    def _error(status: int, message: str, *, headers: dict | None = None) -> web.Response:
        return web.json_response({"code": status, "message": message}, status=status, headers=headers)

    async def _body(self, request: web.Request) -> bytes:
        """The body, at most ``max_body`` bytes after aiohttp's decompression."""
        encoding = request.headers.get("Content-Encoding", "identity").lower()
        if encoding not in ("identity", "gzip", "deflate"):
            raise ConfigError(f"Content-Encoding {encoding!r} is not supported (gzip or none)")
        chunks, size = [], 0
        while True:
            chunk = await request.content.read(1 << 16)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > self.max_body:
                raise web.HTTPRequestEntityTooLarge(max_size=self.max_body, actual_size=size)
            chunks.append(chunk)

    async def _traces(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._error(401, "missing or wrong bearer token (Authorization: Bearer <token>)")
        if self._stopping:
            return self._error(503, "stopping", headers={"Retry-After": str(self.retry_after)})
        kind = request.content_type
        if kind not in (PROTOBUF, JSON):
            return self._error(415, f"Content-Type must be {PROTOBUF} or {JSON}, got {kind!r}")
        try:
            body = await self._body(request)
            message = decode_request(body, kind)
        except web.HTTPRequestEntityTooLarge:
            return self._error(413, f"body over {self.max_body} bytes")
        except (web.HTTPException, HttpProcessingError, RequestPayloadError) as exc:  # a body that does not decompress
            return self._error(400, f"unreadable body: {getattr(exc, 'reason', None) or exc}")
        except ConfigError as exc:
            return self._error(400, str(exc))
        spans = list(spans_of(message))
        selected = [s for s in spans if self.judge.pipeline.wants(s)]
        if self.pending + len(selected) > self.max_pending:
            self.refused += 1
            return self._error(503, f"{self.max_pending} spans already wait for the judge; retry later",
                               headers={"Retry-After": str(self.retry_after)})
        self.received += 1
        self.judge.run.spans_read += len(spans)
        self.judge.run.spans_selected += len(selected)
        self._queue.extend(selected)
        if selected:
            self._wake.set()
        return self._answer(kind)

    @staticmethod
    def _answer(kind: str) -> web.Response:
        if kind == JSON:
            return web.Response(body=b"{}", content_type=JSON)
        return web.Response(body=_pb().ExportTraceServiceResponse().SerializeToString(), content_type=PROTOBUF)

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "stopping" if self._stopping else "ok", "semconv": SEMCONV_VERSION,
                                  "requests": self.received, "refused": self.refused,
                                  "pending": self.pending, **self.judge.run.to_dict()})

    async def _work(self) -> None:
        while True:
            if not self._queue:
                self._wake.clear()
                if self._stopping:
                    return
                await self._wake.wait()
                continue
            if len(self._queue) < self.batch_size and not self._stopping:
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
        self._runner = web.AppRunner(self._app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://{host}:{port}"
        self._worker = asyncio.ensure_future(self._work())
        return self.url

    async def stop(self, drain_timeout: float = 60.0) -> bool:
        """Refuse new requests, judge what is queued (up to ``drain_timeout`` s), close; True when all was."""
        self._stopping = True
        self._wake.set()
        drained = True
        if self._worker is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._worker), drain_timeout)
            except asyncio.TimeoutError:
                drained = False
                self._worker.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
        self.judge.close()
        return drained and not self._queue
