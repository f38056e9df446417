"""The HTTP layer shared by ``RewardServer`` and the ``--workers`` front, and the serve loop."""

from __future__ import annotations

import asyncio
import hmac
import json
import sys
from collections import Counter
from typing import Any, Sequence

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from ..catalog import listing
from ..errors import ConfigError, JudgeOutage
from ..grade import Grade
from ..readouts._scan import too_deep
from ..rl._health import UNSCORED_KINDS, unscored_kind


#: the counters a ``--workers`` front sums over its workers (requests and in-flight are each process's own)
_SUMMED = ("forgeries", "batches", "batched_samples", "latency_count", "latency_sum")


class _Metrics:
    def __init__(self) -> None:
        # requests by (endpoint, code), grades by status, unscored grades by kind
        self.requests, self.grades, self.unscored = Counter(), Counter(), Counter()
        self.forgeries = self.batches = self.batched_samples = self.latency_count = self.in_flight = 0
        self.latency_sum = 0.0

    def record(self, grades: Sequence[Grade]) -> None:
        for g in grades:
            self.grades[g.status] += 1
            if g.status == "unscored":
                self.unscored[unscored_kind(g.error)] += 1
            if g.extra.get("forgery"):
                self.forgeries += 1
            if g.latency_s is not None:
                self.latency_sum += g.latency_s
                self.latency_count += 1

    def counts(self) -> dict[str, Any]:
        """What ``add`` sums (``GET /metrics?format=json``: a worker to its front)."""
        return {"grades": self.grades, "unscored": self.unscored, **{k: getattr(self, k) for k in _SUMMED}}

    def add(self, counts: dict[str, Any]) -> None:
        self.grades.update(counts["grades"])
        self.unscored.update(counts["unscored"])
        for k in _SUMMED:
            setattr(self, k, getattr(self, k) + counts[k])

    def text(self) -> str:
        """The Prometheus text exposition of the counters."""
        families = [
            ("requests_total", "counter", "HTTP requests by endpoint and status code.",
             [(f'{{endpoint="{e}",code="{c}"}}', n) for (e, c), n in sorted(self.requests.items())]),
            ("grades_total", "counter", "Grades by status (unscored: the judge side failed).",
             [(f'{{status="{s}"}}', self.grades[s]) for s in ("scored", "penalized", "unscored")]),
            ("unscored_total", "counter", "Unscored grades by the kind of judge failure.",
             [(f'{{kind="{k}"}}', self.unscored[k]) for k in UNSCORED_KINDS]),
            ("forgeries_total", "counter", "Grades whose completion tried to forge a verdict.", [("", self.forgeries)]),
            ("batches_total", "counter", "grade_batch calls.", [("", self.batches)]),
            ("batched_samples_total", "counter", "Samples graded in those calls.", [("", self.batched_samples)]),
            ("judge_latency_seconds", "summary", "Judge latency of graded samples.",
             [("_sum", f"{self.latency_sum:.6f}"), ("_count", self.latency_count)]),
            ("in_flight_requests", "gauge", "Requests being answered.", [("", self.in_flight)]),
        ]
        lines = []
        for name, kind, help_text, samples in families:
            name = "rewardjudge_" + name
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *(f"{name}{tail} {v}" for tail, v in samples)]
        return "\n".join(lines) + "\n"


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code  # the catalog document's error code, where it names one


#: samples one request may carry by default (``max_samples``; OpenRLHF sends a few per request)
DEFAULT_MAX_SAMPLES = 8192
#: the list holding each endpoint's samples: what ``max_samples`` counts
_SAMPLES_KEY = {"/get_reward": "query", "/grade": "samples"}
#: deepest JSON nesting a body may have (a deeper one is 400, before anything recurses into it)
MAX_JSON_DEPTH = 64
#: the criteria catalog's list, at its document's path (bearer token; optional idempotency_key)
CATALOG_PATH = "/api/v1/agent_version/judge_templates"
#: the catalog document's error codes by HTTP status
_DOC_CODES = {400: "bad_request", 401: "not_authenticated", 408: "temporarily_unavailable",
              409: "idempotency_key_already_used", 503: "temporarily_unavailable"}


#: errors a handler may raise that answer the request (as 4xx/503), not as a 500
_ANSWERED = (_BadRequest, ConfigError, JudgeOutage, RecursionError, UnicodeError, web.HTTPException,
             HttpProcessingError, RequestPayloadError)


class _HTTPService:
    """The HTTP layer of ``RewardServer``, the ``--workers`` front and ``OtlpReceiver``: token, limits (408, 413,
    400), metrics, cancellation when the client leaves, draining (docs/serve.md)."""

    retry_after: int | None = None  # seconds a 503 tells the client to wait (a Retry-After header)

    def __init__(self, *, token: str | None = None, max_body: int = 8 << 20, max_samples: int | None = None,
                 body_timeout: float = 60.0, header_timeout: float = 60.0):
        if max_samples is not None and (isinstance(max_samples, bool) or not isinstance(max_samples, int)
                                        or max_samples < 1):
            raise ConfigError(f"max_samples must be a positive int or None, got {max_samples!r}")
        if not body_timeout > 0 or not header_timeout > 0:
            raise ConfigError("body_timeout and header_timeout must be > 0 seconds")
        self.token, self.max_body, self.max_samples = token or None, int(max_body), max_samples
        self.body_timeout, self.header_timeout = float(body_timeout), float(header_timeout)
        self.metrics, self._draining = _Metrics(), False
        self._idle: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self.url: str | None = None
        self._idempotent: dict[str, tuple[tuple, dict]] = {}  # idempotency_key -> (query, answer)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body, middlewares=[self._middleware])
        self._routes(app.router)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    def _routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/get_reward", self._get_reward)  # type: ignore[attr-defined]
        router.add_post("/grade", self._grade)  # type: ignore[attr-defined]
        router.add_get("/health", self._health)
        router.add_get("/metrics", self._metrics)
        router.add_get(CATALOG_PATH, self._judge_templates)

    async def _on_startup(self, app: web.Application) -> None:
        self._idle = asyncio.Event()
        self._idle.set()

    async def _on_cleanup(self, app: web.Application) -> None:
        """Overridden by services that hold resources."""

    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        endpoint = "other" if request.match_info.http_exception else request.path  # no label per unknown path
        try:
            self._admit(request)
            self.metrics.in_flight += 1
            self._idle.clear()  # type: ignore[union-attr]
            try:
                response = await handler(request)
            finally:
                self.metrics.in_flight -= 1
                if self.metrics.in_flight == 0:
                    self._idle.set()  # type: ignore[union-attr]
        except asyncio.CancelledError:  # the client went away: its grading was cancelled with it
            self.metrics.requests[(endpoint, 499)] += 1
            raise
        except _ANSWERED as exc:
            response = self._error_response(request, exc)
        self.metrics.requests[(endpoint, response.status)] += 1
        return response

    def _admit(self, request: web.Request) -> None:
        if request.path == "/health":
            return
        if self.token is not None:
            given = request.headers.get("Authorization", "")
            # a header that is not UTF-8 arrives with surrogate escapes: compared, not a 500
            if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), f"Bearer {self.token}".encode()):
                raise _BadRequest(401, "missing or wrong bearer token (Authorization: Bearer <token>)")
        if self._draining:
            raise _BadRequest(503, "the server is shutting down")

    def _error_response(self, request: web.Request, exc: Exception) -> web.Response:
        if isinstance(exc, JudgeOutage):  # the outage guard stopped the server: 503 with the judge's health
            return web.json_response({"error": str(exc), "health": exc.health}, status=503)
        status, message, code = 400, str(exc), None  # a ConfigError: the request asked for something wrong
        if isinstance(exc, _BadRequest):
            status, code = exc.status, exc.code
        elif isinstance(exc, RecursionError):
            message = "the body nests too deeply"
        elif isinstance(exc, UnicodeError):  # lone surrogates (\ud800 escapes) where text must be encoded
            message = f"the body holds text that is not valid Unicode ({exc})"
        elif isinstance(exc, web.HTTPRequestEntityTooLarge):
            status, message = 413, f"request body over the limit of {self.max_body} bytes"
        elif isinstance(exc, web.HTTPException):
            status, message = exc.status, exc.text or exc.reason
        elif isinstance(exc, (HttpProcessingError, RequestPayloadError)):  # e.g. a body that does not decompress
            message = f"unreadable body: {getattr(exc, 'message', None) or exc}"
        response = web.json_response(self._error_body(request, status, message, code), status=status)
        if status == 408:
            response.force_close()  # the rest of a slow body is not waited for
        if status == 503 and self.retry_after is not None:
            response.headers["Retry-After"] = str(self.retry_after)
        return response

    def _error_body(self, request: web.Request, status: int, message: str, code: str | None) -> dict[str, Any]:
        if request.path == CATALOG_PATH:  # the catalog document's error object
            return {"code": code or _DOC_CODES.get(status, "unknown"), "message": message, "status": "error"}
        return {"error": message}

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "draining" if self._draining else "ok", **self._about()})

    def _about(self) -> dict[str, Any]:  # what /health says besides the status
        return {}

    async def _metrics(self, request: web.Request) -> web.Response:
        if request.query.get("format") == "json":  # a --workers front summing its workers
            return web.json_response(self.metrics.counts())
        return web.Response(text=await self._metrics_text(), content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    async def _metrics_text(self) -> str:
        return self.metrics.text()

    async def _judge_templates(self, request: web.Request) -> web.Response:
        """The catalog's list; an ``idempotency_key`` seen before answers as it did (409 with another query)."""
        query = tuple(sorted((k, v) for k, v in request.query.items() if k != "idempotency_key"))
        key = request.query.get("idempotency_key")
        if key is not None and key in self._idempotent:
            seen_query, answer = self._idempotent[key]
            if seen_query != query:
                raise _BadRequest(409, f"idempotency_key {key!r} was already used with another query")
            return web.json_response(answer)
        unknown = sorted({k for k, _ in query} - {"language"})
        if unknown:
            raise _BadRequest(400, f"unknown query parameter(s) {unknown}; this list takes idempotency_key "
                                   f"(and language)", code="invalid_value")
        try:
            answer = listing(request.query.get("language") or None)
        except ConfigError as exc:
            raise _BadRequest(400, str(exc), code="invalid_value") from None
        if key is not None:
            if len(self._idempotent) >= 4096:  # bounded: the oldest key is forgotten
                self._idempotent.pop(next(iter(self._idempotent)))
            self._idempotent[key] = (query, answer)
        return web.json_response(answer)

    async def _body(self, request: web.Request) -> bytes:
        """The request's body (decompressed), within ``body_timeout`` (408) and ``max_body`` (413)."""
        try:
            return await asyncio.wait_for(request.read(), self.body_timeout)  # 413 past client_max_size
        except asyncio.TimeoutError:
            raise _BadRequest(408, f"the request body did not arrive within {self.body_timeout:g} s") from None

    async def _json(self, request: web.Request) -> Any:
        """The request's JSON body, within the time, size, depth and sample limits."""
        body = await self._body(request)
        try:
            data = json.loads(body)
        except RecursionError:
            raise _BadRequest(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None
        except ValueError as exc:
            raise _BadRequest(400, f"the body is not JSON ({exc})") from None
        if too_deep(data, MAX_JSON_DEPTH):
            raise _BadRequest(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels")
        items = data.get(_SAMPLES_KEY.get(request.path, "")) if isinstance(data, dict) else None
        if self.max_samples is not None and isinstance(items, list) and len(items) > self.max_samples:
            raise _BadRequest(413, f"{len(items)} samples in one request, over the limit of {self.max_samples} "
                                   f"(--max-samples-per-request); send them in several requests")
        return data

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (port 0: any free one); returns the base URL."""
        self._runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True,
                                     keepalive_timeout=self.header_timeout)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
        bound = sockets[0].getsockname()[1] if sockets else port
        self.url = f"http://{host}:{bound}"
        return self.url

    async def drain(self, timeout: float = 60.0) -> bool:
        """Refuse new requests (503) and wait for those in flight; True when done within ``timeout``."""
        self._draining = True
        if self._idle is None:
            return True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def stop(self, timeout: float = 60.0) -> bool:
        """Drain, then close the listener."""
        drained = await self.drain(timeout)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        return drained

    async def __aenter__(self):
        if self.url is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


def say(text: str, command: str = "serve") -> None:
    """A line for the operator of ``rewardjudge serve`` (or ``command``: ``pipeline receive``) on stderr."""
    print(f"rewardjudge {command}: {text}", file=sys.stderr, flush=True)
