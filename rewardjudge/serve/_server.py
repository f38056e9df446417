"""RewardServer: a grader behind HTTP, on aiohttp's web server."""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import statistics
from collections import Counter
from typing import Any, Hashable, Sequence

from aiohttp import web

from ..errors import ConfigError
from ..grade import Grade
from ..graders._base import Grader
from ..rl._health import UNSCORED_KINDS, unscored_kind
from ..rl._trl_adapter import reads_images
from ..thread import StringThread
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
            values = usable.get(key)
            out.append(statistics.fmean(values) if values else float(fallback))
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
            task = asyncio.ensure_future(self._grade(items))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

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


class _GroupBuffer:
    """Holds single-sample requests until ``size`` samples of one prompt have
    arrived (or ``timeout`` passed), then grades them as one group."""

    def __init__(self, server: "RewardServer", size: int, timeout: float):
        self.server, self.size, self.timeout = server, size, timeout
        self._open: dict[Hashable, list] = {}
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}

    async def add(self, key: Hashable, thread: StringThread) -> tuple[Grade, float]:
        fut = asyncio.get_running_loop().create_future()
        members = self._open.setdefault(key, [])
        members.append((thread, fut))
        if len(members) >= self.size:
            self._flush(key)
        elif len(members) == 1:
            self._timers[key] = asyncio.get_running_loop().call_later(self.timeout, self._flush, key)
        return await fut

    def _flush(self, key: Hashable) -> None:
        members = self._open.pop(key, None)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if members:
            asyncio.ensure_future(self._run(members))

    async def _run(self, members: list) -> None:
        try:
            results = await self.server.grade_group([t for t, _ in members])
        except Exception as exc:
            for _, fut in members:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), result in zip(members, results):
            if not fut.done():
                fut.set_result(result)


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


class _BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class RewardServer:
    """A grader served over HTTP.

    Endpoints:

    * ``POST /get_reward``: OpenRLHF's remote reward contract. Body
      ``{"query": [str], "prompts": [str], "labels": [any]}``; reply
      ``{"rewards": [float], "scores": [float], "extra_logs": {"unscored":
      [0|1], "penalized": [0|1]}}``. An unscored sample's reward is its
      group's mean of usable rewards (``unscored="group_mean"``) or the
      number given.
    * ``POST /grade``: ``{"samples": [{"messages": [...]} | {"prompt": ...,
      "completion": ..., "metadata": {...}, "group": key}]}``; reply
      ``{"grades": [{"value", "status", "reward", "reasoning", "error",
      "grader_version", "extra"}]}``. Samples of one request that share a
      ``group`` key (default: their prompt) form a group.
    * ``GET /health`` (never needs the token), ``GET /metrics`` (Prometheus
      text: requests, grades by status, unscored by kind, forgeries,
      batches, judge latency).

    Samples arriving within ``batch_window`` seconds are graded together.
    With ``group_size`` (OpenRLHF's ``n_samples_per_prompt``), ``/get_reward``
    samples that share a prompt wait for each other (at most
    ``group_timeout`` s) so that an unscored one gets its group's mean.
    ``token`` (when set) must come as ``Authorization: Bearer <token>`` on
    every endpoint but ``/health``. Bodies over ``max_body`` bytes get 413.
    """

    def __init__(self, grader: Grader, *, batch_window: float = 0.005, max_batch: int = 512,
                 group_size: int | None = None, group_timeout: float = 30.0,
                 unscored: str | float = "group_mean", unscored_fallback: float = 0.0,
                 token: str | None = None, max_body: int = 8 << 20, eos: Sequence[str] = DEFAULT_EOS):
        if not isinstance(grader, Grader):
            raise ConfigError(f"RewardServer needs a Grader, got {type(grader).__name__}")
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
        if batch_window < 0 or max_batch < 1:
            raise ConfigError("batch_window must be >= 0 and max_batch >= 1")
        self.grader = grader
        self.unscored = unscored
        self.unscored_fallback = float(unscored_fallback)
        self.token = token or None
        self.max_body = int(max_body)
        self.eos = tuple(eos)
        self.images = reads_images(grader)
        self.metrics = _Metrics()
        self._batcher = _Batcher(grader, batch_window, max_batch, self.metrics)
        self._groups = _GroupBuffer(self, group_size, group_timeout) if group_size else None
        self._draining = False
        self._idle: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self.url: str | None = None

    # -- grading ------------------------------------------------------------
    async def grade_group(self, threads: Sequence[StringThread],
                          groups: Sequence[Hashable] | None = None) -> list[tuple[Grade, float]]:
        """Grade ``threads`` (through the batching window) and give each its
        reward (``group_rewards``; one group unless ``groups`` says otherwise)."""
        grades = list(await asyncio.gather(*(self._batcher.submit(t) for t in threads)))
        self.metrics.record(grades)
        keys = list(groups) if groups is not None else [0] * len(grades)
        rewards = group_rewards(grades, keys, unscored=self.unscored, fallback=self.unscored_fallback)
        return list(zip(grades, rewards))

    # -- HTTP ---------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body, middlewares=[self._middleware])
        app.router.add_post("/get_reward", self._get_reward)
        app.router.add_post("/grade", self._grade)
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app: web.Application) -> None:
        self._idle = asyncio.Event()
        self._idle.set()
        self._batcher.start()

    async def _on_cleanup(self, app: web.Application) -> None:
        await self._batcher.close()

    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        endpoint = request.path if request.path in ("/get_reward", "/grade", "/health", "/metrics") else "other"
        try:
            if self.token is not None and request.path != "/health":
                given = request.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
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
        except _BadRequest as exc:
            response = web.json_response({"error": str(exc)}, status=exc.status)
        except ConfigError as exc:
            response = web.json_response({"error": str(exc)}, status=400)
        except web.HTTPRequestEntityTooLarge:
            response = web.json_response(
                {"error": f"request body over the limit of {self.max_body} bytes"}, status=413)
        except web.HTTPException as exc:
            response = web.json_response({"error": exc.text or exc.reason}, status=exc.status)
        self.metrics.requests[(endpoint, response.status)] += 1
        return response

    async def _json(self, request: web.Request) -> Any:
        body = await request.read()  # raises 413 past client_max_size
        try:
            return json.loads(body)
        except ValueError as exc:
            raise _BadRequest(400, f"the body is not JSON ({exc})") from None

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
        keys = [p if p is not None else q for p, q in zip(prompts, queries)]
        if self._groups is not None:
            results = await asyncio.gather(*(self._groups.add(k, t) for k, t in zip(keys, threads)))
        else:
            results = await self.grade_group(threads, keys)
        rewards = [r for _, r in results]
        return web.json_response({
            "rewards": rewards, "scores": rewards,
            "extra_logs": {"unscored": [float(g.status == "unscored") for g, _ in results],
                           "penalized": [float(g.status == "penalized") for g, _ in results]}})

    async def _grade(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        samples = data.get("samples") if isinstance(data, dict) else None
        if not isinstance(samples, list) or not samples:
            raise _BadRequest(400, 'expected {"samples": [{"messages": [...]} or {"prompt": ..., '
                                   '"completion": ...}, ...]}')
        threads = [sample_thread(s, f"samples[{i}]", images=self.images) for i, s in enumerate(samples)]
        keys = [s.get("group", json.dumps(t.context_turns(), sort_keys=True))
                for s, t in zip(samples, threads)]
        try:
            keys = [k if isinstance(k, Hashable) else json.dumps(k, sort_keys=True, default=str) for k in keys]
        except TypeError:
            raise _BadRequest(400, "a sample's group must be a str or number") from None
        results = await self.grade_group(threads, keys)
        return web.json_response({"grades": [
            {"value": g.value, "status": g.status, "reward": r, "reasoning": g.reasoning, "error": g.error,
             "grader_key": g.grader_key, "grader_version": g.grader_version,
             "extra": json.loads(json.dumps(g.extra, default=str))}
            for g, r in results]})

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "draining" if self._draining else "ok",
                                  "grader": self.grader.grader_key})

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=self.metrics.text(), content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    # -- life cycle -----------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (port 0: any free one); returns the base URL."""
        self._runner = web.AppRunner(self.app(), access_log=None)
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

    async def __aenter__(self) -> "RewardServer":
        if self.url is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"RewardServer({self.grader.grader_key!r}, url={self.url!r})"
