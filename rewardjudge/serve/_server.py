"""RewardServer: a grader behind HTTP, on aiohttp's web server."""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import os
import sys
from collections import Counter
from typing import Any, Hashable, Sequence

from aiohttp import web

from ..errors import ConfigError, JudgeOutage
from ..grade import Grade
from ..graders._base import Grader
from ..rl._health import UNSCORED_KINDS, OutageGuard, unscored_kind
from ..rl._trl_adapter import reads_images
from ..thread import StringThread
from ._groups import PromptGroups, check_estimator, stand_in
from ._samples import DEFAULT_EOS, openrlhf_thread, sample_thread

__all__ = ["RewardServer", "group_rewards"]


def group_rewards(grades: Sequence[Grade], groups: Sequence[Hashable], *,
                  unscored: str | float = "group_mean", fallback: float = 0.0) -> list[float]:
    """The reward a trainer without a mask gets for each grade.

    Scored and penalized grades give their value. An unscored grade gives,
    with ``unscored="group_mean"``, the mean of the usable (scored or
    penalized) rewards of its group (same ``groups`` key), so that a
    group-relative baseline gives it advantage 0 and leaves the group's mean
    unchanged; ``fallback`` when the whole group is unscored (any constant
    gives the group advantage 0). A number instead of ``"group_mean"`` is used
    as is.

    >>> from rewardjudge import Grade
    >>> group_rewards([Grade(1.0, "g"), Grade(0.0, "g"), Grade(None, "g")], ["p", "p", "p"])
    [1.0, 0.0, 0.5]
    """
    if len(grades) != len(groups):
        raise ConfigError(f"{len(groups)} group keys for {len(grades)} grades")
    usable: dict[Hashable, list[float]] = {}
    for g, key in zip(grades, groups):
        if g.status != "unscored":
            usable.setdefault(key, []).append(float(g.value))  # type: ignore[arg-type]
    out = []
    for g, key in zip(grades, groups):
        if g.status != "unscored":
            out.append(float(g.value))  # type: ignore[arg-type]
        elif unscored == "group_mean":
            out.append(stand_in(usable.get(key, ()), fallback))
        else:
            out.append(float(unscored))
    return out


class _Batcher:
    """Samples submitted within ``window`` seconds are graded in one
    ``grade_batch`` call (at most ``max_batch`` at a time); batches overlap."""

    def __init__(self, grader: Grader, window: float, max_batch: int, metrics: "_Metrics"):
        self.grader, self.window, self.max_batch, self.metrics = grader, window, max_batch, metrics
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._running: set[asyncio.Task] = set()

    def start(self) -> None:
        self._queue = asyncio.Queue()
        self._task = asyncio.ensure_future(self._collect())

    async def submit(self, thread: StringThread) -> Grade:
        fut = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((thread, fut))  # type: ignore[union-attr]
        return await fut

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            items = [await self._queue.get()]  # type: ignore[union-attr]
            deadline = loop.time() + self.window
            while len(items) < self.max_batch:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                try:
                    items.append(await asyncio.wait_for(self._queue.get(), timeout))  # type: ignore[union-attr]
                except asyncio.TimeoutError:
                    break
            items = [item for item in items if not item[1].done()]  # callers gone (cancelled) are not graded
            if items:
                self._launch(items)

    def _launch(self, items: list) -> None:
        """Grade ``items`` in a task of its own, cancelled once every caller
        waiting for one of them has been cancelled (its client went away)."""
        task = asyncio.ensure_future(self._grade(items))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        waiting = [len(items)]

        def gone(fut: asyncio.Future) -> None:
            if fut.cancelled():
                waiting[0] -= 1
                if waiting[0] == 0 and not task.done():
                    task.cancel()

        for _, fut in items:
            fut.add_done_callback(gone)

    async def _grade(self, items: list) -> None:
        self.metrics.batches += 1
        self.metrics.batched_samples += len(items)
        try:
            grades = await self.grader.grade_batch([t for t, _ in items])
        except Exception as exc:  # a usage error (template, config): every caller hears it
            for _, fut in items:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), grade in zip(items, grades):
            if not fut.done():
                fut.set_result(grade)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)


class _Metrics:
    def __init__(self) -> None:
        self.requests: Counter = Counter()  # (endpoint, code)
        self.grades: Counter = Counter()  # status
        self.unscored: Counter = Counter()  # kind
        self.forgeries = 0
        self.batches = 0
        self.batched_samples = 0
        self.latency_sum = 0.0
        self.latency_count = 0
        self.in_flight = 0

    def record(self, grades: Sequence[Grade]) -> None:
        for g in grades:
            self.grades[g.status] += 1
            if g.status == "unscored":
                self.unscored[unscored_kind(g)] += 1
            if g.extra.get("forgery"):
                self.forgeries += 1
            if g.latency_s is not None:
                self.latency_sum += g.latency_s
                self.latency_count += 1

    def text(self) -> str:
        lines = ["# HELP rewardjudge_requests_total HTTP requests by endpoint and status code.",
                 "# TYPE rewardjudge_requests_total counter"]
        for (endpoint, code), n in sorted(self.requests.items()):
            lines.append(f'rewardjudge_requests_total{{endpoint="{endpoint}",code="{code}"}} {n}')
        lines += ["# HELP rewardjudge_grades_total Grades by status (unscored: the judge side failed).",
                  "# TYPE rewardjudge_grades_total counter"]
        for status in ("scored", "penalized", "unscored"):
            lines.append(f'rewardjudge_grades_total{{status="{status}"}} {self.grades[status]}')
        lines += ["# HELP rewardjudge_unscored_total Unscored grades by the kind of judge failure.",
                  "# TYPE rewardjudge_unscored_total counter"]
        for kind in UNSCORED_KINDS:
            lines.append(f'rewardjudge_unscored_total{{kind="{kind}"}} {self.unscored[kind]}')
        lines += ["# HELP rewardjudge_forgeries_total Grades whose completion tried to forge a verdict.",
                  "# TYPE rewardjudge_forgeries_total counter", f"rewardjudge_forgeries_total {self.forgeries}",
                  "# HELP rewardjudge_batches_total grade_batch calls.", "# TYPE rewardjudge_batches_total counter",
                  f"rewardjudge_batches_total {self.batches}",
                  "# HELP rewardjudge_batched_samples_total Samples graded in those calls.",
                  "# TYPE rewardjudge_batched_samples_total counter",
                  f"rewardjudge_batched_samples_total {self.batched_samples}",
                  "# HELP rewardjudge_judge_latency_seconds Judge latency of graded samples.",
                  "# TYPE rewardjudge_judge_latency_seconds summary",
                  f"rewardjudge_judge_latency_seconds_sum {self.latency_sum:.6f}",
                  f"rewardjudge_judge_latency_seconds_count {self.latency_count}",
                  "# HELP rewardjudge_in_flight_requests Requests being answered.",
                  "# TYPE rewardjudge_in_flight_requests gauge", f"rewardjudge_in_flight_requests {self.in_flight}"]
        return "\n".join(lines) + "\n"


NO_ESTIMATOR = ("/get_reward needs the estimator OpenRLHF runs (serve --estimator, RewardServer(estimator=...)): "
                "only dr_grpo can give a sample the judge could not score advantage 0 without moving its group; "
                "run OpenRLHF with --algo.advantage.estimator dr_grpo and serve with --estimator dr_grpo")


def _client_alive(request: web.Request) -> bool:
    """The request's client still waits for the answer."""
    transport = request.transport
    return transport is not None and not transport.is_closing()


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
_ENDPOINTS = ("/get_reward", "/grade", "/health", "/metrics", CATALOG_PATH)
#: the catalog document's error codes by HTTP status
_DOC_CODES = {400: "bad_request", 401: "not_authenticated", 408: "temporarily_unavailable",
              409: "idempotency_key_already_used", 503: "temporarily_unavailable"}


def _too_deep(obj: Any, limit: int) -> bool:
    """Whether ``obj`` nests lists and objects more than ``limit`` deep (no recursion)."""
    stack = [(obj, 1)] if isinstance(obj, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in (node.values() if isinstance(node, dict) else node):
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def sample_keys(samples: Sequence[Any], threads: Sequence[StringThread]) -> list[Hashable]:
    """The group key of each ``/grade`` sample: its ``group``, else its prompt (the
    thread's context turns). The ``--workers`` front routes by the same keys."""
    keys = [s.get("group", json.dumps(t.context_turns(), sort_keys=True)) for s, t in zip(samples, threads)]
    try:
        return [k if isinstance(k, Hashable) else json.dumps(k, sort_keys=True, default=str) for k in keys]
    except (TypeError, ValueError):
        raise _BadRequest(400, "a sample's group must be a str or number") from None


class _HTTPService:
    """The HTTP layer of ``RewardServer`` and of the ``--workers`` front: the
    bearer token, body and sample limits, read timeouts, request metrics,
    cancellation of a request whose client went away, draining.

    A handler is cancelled when its client disconnects (aiohttp's
    ``handler_cancellation``), which cancels the grading it waits for. A
    request's headers must arrive within ``header_timeout`` s of its
    connection opening or of the previous response on it (aiohttp's
    keep-alive timer; an idle keep-alive connection is closed then too), its
    body within ``body_timeout`` s (else 408 and the connection is closed).
    More than ``max_samples`` samples in one request is 413; a body that is
    not JSON, nests deeper than ``MAX_JSON_DEPTH`` or has the wrong shape is
    400."""

    def __init__(self, *, token: str | None, max_body: int, max_samples: int | None,
                 body_timeout: float, header_timeout: float):
        if max_samples is not None and (isinstance(max_samples, bool) or not isinstance(max_samples, int)
                                        or max_samples < 1):
            raise ConfigError(f"max_samples must be a positive int or None, got {max_samples!r}")
        if not body_timeout > 0 or not header_timeout > 0:
            raise ConfigError("body_timeout and header_timeout must be > 0 seconds")
        self.token = token or None
        self.max_body = int(max_body)
        self.max_samples = max_samples
        self.body_timeout = float(body_timeout)
        self.header_timeout = float(header_timeout)
        self.metrics = _Metrics()
        self._draining = False
        self._idle: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self.url: str | None = None
        self._idempotent: dict[str, tuple[tuple, dict]] = {}  # idempotency_key -> (query, answer)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body, middlewares=[self._middleware])
        # the endpoints: each service (one server, or the --workers front) answers them its way
        app.router.add_post("/get_reward", self._get_reward)
        app.router.add_post("/grade", self._grade)
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get(CATALOG_PATH, self._judge_templates)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app: web.Application) -> None:
        self._idle = asyncio.Event()
        self._idle.set()

    async def _on_cleanup(self, app: web.Application) -> None:
        pass

    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        endpoint = request.path if request.path in _ENDPOINTS else "other"
        try:
            if self.token is not None and request.path != "/health":
                given = request.headers.get("Authorization", "")
                # a header that is not UTF-8 arrives with surrogate escapes: compared, not a 500
                if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"),
                                           f"Bearer {self.token}".encode()):
                    raise _BadRequest(401, "missing or wrong bearer token (Authorization: Bearer <token>)")
            if self._draining and request.path != "/health":
                raise _BadRequest(503, "the server is shutting down")
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
        except _BadRequest as exc:
            if request.path == CATALOG_PATH:  # the catalog document's error object
                body = {"code": exc.code or _DOC_CODES.get(exc.status, "unknown"), "message": str(exc),
                        "status": "error"}
            else:
                body = {"error": str(exc)}
            response = web.json_response(body, status=exc.status)
            if exc.status == 408:
                response.force_close()  # the rest of a slow body is not waited for
        except ConfigError as exc:
            response = web.json_response({"error": str(exc)}, status=400)
        except JudgeOutage as exc:  # the outage guard stopped the server (grade_group)
            response = web.json_response({"error": str(exc), "health": exc.health}, status=503)
        except RecursionError:
            response = web.json_response({"error": "the body nests too deeply"}, status=400)
        except UnicodeError as exc:  # lone surrogates (\ud800 escapes) where text must be encoded
            response = web.json_response({"error": f"the body holds text that is not valid Unicode ({exc})"},
                                         status=400)
        except web.HTTPRequestEntityTooLarge:
            response = web.json_response(
                {"error": f"request body over the limit of {self.max_body} bytes"}, status=413)
        except web.HTTPException as exc:
            response = web.json_response({"error": exc.text or exc.reason}, status=exc.status)
        self.metrics.requests[(endpoint, response.status)] += 1
        return response

    async def _judge_templates(self, request: web.Request) -> web.Response:
        """The catalog's list as its document answers it; ``language`` (ours)
        picks the criteria's language. An ``idempotency_key`` seen before
        answers as it did, or 409 ``idempotency_key_already_used`` when it came
        with another query."""
        from ..catalog import listing

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

    async def _json(self, request: web.Request) -> Any:
        """The request's JSON body, within ``body_timeout``, ``max_body``,
        ``MAX_JSON_DEPTH`` and ``max_samples``."""
        try:
            body = await asyncio.wait_for(request.read(), self.body_timeout)  # 413 past client_max_size
        except asyncio.TimeoutError:
            raise _BadRequest(408, f"the request body did not arrive within {self.body_timeout:g} s") from None
        try:
            data = json.loads(body)
        except RecursionError:
            raise _BadRequest(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None
        except ValueError as exc:
            raise _BadRequest(400, f"the body is not JSON ({exc})") from None
        if _too_deep(data, MAX_JSON_DEPTH):
            raise _BadRequest(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels")
        items = data.get(_SAMPLES_KEY.get(request.path, "")) if isinstance(data, dict) else None
        if self.max_samples is not None and isinstance(items, list) and len(items) > self.max_samples:
            raise _BadRequest(413, f"{len(items)} samples in one request, over the limit of {self.max_samples} "
                                   f"(--max-samples-per-request); send them in several requests")
        return data

    # -- life cycle -----------------------------------------------------------
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
        """Refuse new requests (503) and wait for those in flight; True when
        they all finished within ``timeout``."""
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


class RewardServer(_HTTPService):
    """A grader served over HTTP.

    Endpoints:

    * ``POST /get_reward``: OpenRLHF's remote reward contract. Body
      ``{"query": [str], "prompts": [str], "labels": [any]}``; reply
      ``{"rewards": [float], "scores": [float], "extra_logs": {"unscored":
      [0|1], "penalized": [0|1], "group_partial": [0|1]}}``. It needs
      ``estimator`` (OpenRLHF's ``--algo.advantage.estimator``; only
      ``dr_grpo`` can be kept exact, the others are refused here): a usable
      sample is answered at once with its value; an unscored one waits for
      its group (samples with the same prompt) and gets the mean of its
      usable rewards, i.e. advantage 0 with the others unchanged.
    * ``POST /grade``: ``{"samples": [{"messages": [...]} | {"prompt": ...,
      "completion": ..., "metadata": {...}, "group": key}]}``; reply
      ``{"grades": [{"value", "status", "reward", "reasoning", "error",
      "grader_version", "extra"}]}``. Samples of one request that share a
      ``group`` key (default: their prompt) form a group.
    * ``GET /health`` (never needs the token), ``GET /metrics`` (Prometheus
      text: requests, grades by status, unscored by kind, forgeries,
      batches, judge latency).

    Samples arriving within ``batch_window`` seconds are graded together.
    A ``/get_reward`` group is complete when ``group_size`` samples of its
    prompt have come (OpenRLHF's ``--rollout.n_samples_per_prompt``; learned
    from the traffic when not given), or when its prompt has been quiet for
    ``group_timeout`` s (an unscored sample answered that way is flagged
    ``group_partial``); a late sample gets its group's known results (kept
    ``group_keep`` s). A retried request (identical, its first client gone)
    is answered from the first one's grading. Several comma-separated
    ``--reward.remote_url`` servers split every group (OpenRLHF rotates
    samples over them): use one URL per run.
    ``outage_threshold``/``outage_steps``: when more than that share of
    graded samples is unscored in ``outage_steps`` consecutive windows of
    ``outage_window`` samples (``OutageGuard``), every later request gets
    503 with the judge-health summary: OpenRLHF's client gives up on the
    sample and the run stops (None is no reward). ``outage_threshold=None``
    turns it off.
    ``token`` (when set) must come as ``Authorization: Bearer <token>`` on
    every endpoint but ``/health``. Bodies over ``max_body`` bytes, or of more
    than ``max_samples`` samples, get 413; a body slower than ``body_timeout``
    s gets 408, headers slower than ``header_timeout`` s a closed connection;
    a malformed body 400. A request whose client disconnects is cancelled,
    and its samples are no longer graded.
    """

    def __init__(self, grader: Grader, *, batch_window: float = 0.005, max_batch: int = 512,
                 group_size: int | None = None, group_timeout: float = 60.0, group_keep: float = 600.0,
                 estimator: str | None = None, outage_threshold: float | None = 0.5, outage_steps: int = 3,
                 outage_window: int = 64,
                 unscored: str | float = "group_mean", unscored_fallback: float = 0.0,
                 token: str | None = None, max_body: int = 8 << 20, eos: Sequence[str] = DEFAULT_EOS,
                 max_samples: int | None = DEFAULT_MAX_SAMPLES, body_timeout: float = 60.0,
                 header_timeout: float = 60.0):
        if not isinstance(grader, Grader):
            raise ConfigError(f"RewardServer needs a Grader, got {type(grader).__name__}")
        grader.require_rewards("the reward server")
        if group_size is not None and (isinstance(group_size, bool) or not isinstance(group_size, int)
                                       or group_size < 1):
            raise ConfigError(f"group_size must be a positive int, got {group_size!r}")
        if unscored != "group_mean":
            try:
                unscored = float(unscored)
            except (TypeError, ValueError):
                raise ConfigError(f"unscored must be 'group_mean' or a number, got {unscored!r}") from None
            if not math.isfinite(unscored):
                raise ConfigError("unscored must be finite: a NaN reward poisons a trainer without a mask")
        self.estimator = check_estimator(estimator)
        if self.estimator is not None and unscored != "group_mean":
            raise ConfigError(f"unscored={unscored!r} is not exact for {self.estimator}: only the group mean "
                              f"(unscored='group_mean') gives an unscored sample advantage 0")
        if group_timeout <= 0 or group_keep < 0:
            raise ConfigError("group_timeout must be > 0 and group_keep >= 0")
        if isinstance(outage_window, bool) or not isinstance(outage_window, int) or outage_window < 1:
            raise ConfigError(f"outage_window must be a positive int (graded samples), got {outage_window!r}")
        self._guard = OutageGuard(outage_threshold, outage_steps)
        self.outage_window = outage_window
        self._window: list[Grade] = []
        self.outage: JudgeOutage | None = None
        self._told_estimator = False
        if batch_window < 0 or max_batch < 1:
            raise ConfigError("batch_window must be >= 0 and max_batch >= 1")
        super().__init__(token=token, max_body=max_body, max_samples=max_samples,
                         body_timeout=body_timeout, header_timeout=header_timeout)
        self.grader = grader
        #: a ``--workers`` worker: each /grade grade says which process graded it (``worker``: its pid)
        self.worker = False
        self.unscored = unscored
        self.unscored_fallback = float(unscored_fallback)
        self.eos = tuple(eos)
        self.images = reads_images(grader)
        self._batcher = _Batcher(grader, batch_window, max_batch, self.metrics)
        self._groups = PromptGroups(self._grade_one, size=group_size, quiet=group_timeout, keep=group_keep,
                                    fallback=self.unscored_fallback)

    # -- grading ------------------------------------------------------------
    async def grade_group(self, threads: Sequence[StringThread],
                          groups: Sequence[Hashable] | None = None) -> list[tuple[Grade, float]]:
        """Grade ``threads`` (through the batching window) and give each its
        reward (``group_rewards``; one group unless ``groups`` says otherwise).
        Raises ``JudgeOutage`` once the outage guard has stopped the server."""
        if self.outage is not None:
            raise self.outage
        grades = list(await asyncio.gather(*(self._batcher.submit(t) for t in threads)))
        self.metrics.record(grades)
        self._observe(grades)
        keys = list(groups) if groups is not None else [0] * len(grades)
        rewards = group_rewards(grades, keys, unscored=self.unscored, fallback=self.unscored_fallback)
        return list(zip(grades, rewards))

    def _observe(self, grades: Sequence[Grade]) -> None:
        """The outage guard's steps are windows of ``outage_window`` graded samples."""
        if self._guard.threshold is None or self.outage is not None:
            return
        self._window.extend(grades)
        while len(self._window) >= self.outage_window:
            step, self._window = self._window[:self.outage_window], self._window[self.outage_window:]
            try:
                self._guard.observe(step)
            except JudgeOutage as exc:
                self.outage = exc
                print(f"rewardjudge serve: {exc} Every request now gets 503; restart serve once the judge "
                      f"works.", file=sys.stderr, flush=True)
                raise

    async def _grade_one(self, thread: StringThread) -> Grade:
        return (await self.grade_group([thread]))[0][0]

    # -- HTTP ---------------------------------------------------------------
    async def _on_startup(self, app: web.Application) -> None:
        await super()._on_startup(app)
        self._batcher.start()

    async def _on_cleanup(self, app: web.Application) -> None:
        await self._batcher.close()

    async def _get_reward(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        if not isinstance(data, dict) or not isinstance(data.get("query"), list):
            raise _BadRequest(400, 'expected {"query": [str], "prompts": [str], "labels": [...]}')
        queries = data["query"]
        n = len(queries)
        prompts = data.get("prompts")
        labels = data.get("labels")
        prompts = [None] * n if prompts is None else prompts
        labels = [None] * n if labels is None else labels
        if not isinstance(prompts, list) or len(prompts) != n:
            raise _BadRequest(400, f"prompts must be a list of {n} str (one per query)")
        if not isinstance(labels, list) or len(labels) != n:
            raise _BadRequest(400, f"labels must be a list of {n} values (one per query)")
        threads = [openrlhf_thread(q, p, lab, eos=self.eos, where=f"query[{i}]")
                   for i, (q, p, lab) in enumerate(zip(queries, prompts, labels))]
        if self.estimator is None:
            if not self._told_estimator:
                self._told_estimator = True
                print(f"rewardjudge serve: /get_reward refused: {NO_ESTIMATOR}", file=sys.stderr, flush=True)
            raise _BadRequest(500, NO_ESTIMATOR)
        if self.outage is not None:
            return self._outage_response()
        # the group is the prompt (OpenRLHF sends each sample with its prompt); a retry is the same sample again
        keys = [p if isinstance(p, str) else json.dumps(p if p is not None else q, sort_keys=True, default=str)
                for p, q in zip(prompts, queries)]
        dkeys = [json.dumps([q, p, lab], sort_keys=True, default=str) for q, p, lab in zip(queries, prompts, labels)]
        alive = _client_alive
        entries = [self._groups.submit(k, d, t, request, alive) for k, d, t in zip(keys, dkeys, threads)]
        try:
            results = await asyncio.gather(*(asyncio.shield(e.task) for e in entries))
        except BaseException as exc:  # the client left (cancelled), an outage, a usage error
            for d, e in zip(dkeys, entries):
                self._groups.finish(d, e, request, delivered=False)
            if isinstance(exc, JudgeOutage):
                return self._outage_response()
            raise
        delivered = _client_alive(request)
        for d, e in zip(dkeys, entries):
            self._groups.finish(d, e, request, delivered)
        rewards = [r for _, r, _ in results]
        return web.json_response({
            "rewards": rewards, "scores": rewards,
            "extra_logs": {"unscored": [float(g.status == "unscored") for g, _, _ in results],
                           "penalized": [float(g.status == "penalized") for g, _, _ in results],
                           "group_partial": [float(not exact) for _, _, exact in results]}})

    def _outage_response(self) -> web.Response:
        return web.json_response({"error": str(self.outage), "health": self.outage.health},  # type: ignore[union-attr]
                                 status=503)

    async def _grade(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        samples = data.get("samples") if isinstance(data, dict) else None
        if not isinstance(samples, list) or not samples:
            raise _BadRequest(400, 'expected {"samples": [{"messages": [...]} or {"prompt": ..., '
                                   '"completion": ...}, ...]}')
        threads = [sample_thread(s, f"samples[{i}]", images=self.images) for i, s in enumerate(samples)]
        results = await self.grade_group(threads, sample_keys(samples, threads))
        worker = {"worker": os.getpid()} if self.worker else {}
        return web.json_response({"grades": [
            {"value": g.value, "status": g.status, "reward": r, "reasoning": g.reasoning, "error": g.error,
             "grader_key": g.grader_key, "grader_version": g.grader_version,
             "extra": json.loads(json.dumps(g.extra, default=str)), **worker}
            for g, r in results]})

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "draining" if self._draining else "ok",
                                  "grader": self.grader.grader_key})

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=self.metrics.text(), content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    def __repr__(self) -> str:
        return f"RewardServer({self.grader.grader_key!r}, url={self.url!r})"


def build_server(args: Any, grader: Any, token: str | None) -> RewardServer:
    """The RewardServer the arguments describe (one process, or each ``--workers`` worker)."""
    return RewardServer(grader, batch_window=args.batch_window, max_batch=args.max_batch,
                        group_size=args.group_size, group_timeout=args.group_timeout,
                        group_keep=args.group_keep, estimator=args.estimator,
                        outage_threshold=args.outage_threshold, outage_steps=args.outage_steps,
                        outage_window=args.outage_window,
                        unscored=args.unscored, unscored_fallback=args.unscored_fallback,
                        token=token, max_body=args.max_body,
                        max_samples=args.max_samples_per_request or None, body_timeout=args.body_timeout,
                        header_timeout=args.header_timeout)
