"""RewardServer: a grader behind HTTP, on aiohttp's web server."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Hashable, Literal, Optional, Sequence, Union

from aiohttp import web
from pydantic import Field, StrictInt


from ..errors import ConfigError, JudgeOutage
from ..grade import Grade
from ..graders._base import Grader
from ..graders._schedule import groups
from ..rl._health import OutageGuard, OutageOptions
from ..thread import StringThread
from ._groups import PromptGroups, check_estimator, group_rewards
from ._http import DEFAULT_MAX_SAMPLES, _BadRequest, _HTTPService, _Metrics, say
from ._samples import DEFAULT_EOS, grade_body, openrlhf_body, openrlhf_thread

__all__ = ["RewardServer", "group_rewards"]


class _Batcher:
    """Samples submitted within ``window`` seconds are graded in one ``grade_batch`` call."""

    def __init__(self, grader: Grader, window: float, max_batch: int, metrics: "_Metrics"):
        self.grader, self.window, self.max_batch, self.metrics = grader, window, max_batch, metrics
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._running: set[asyncio.Task] = set()

    def start(self) -> None:
        self._queue = asyncio.Queue()
        self._task = asyncio.ensure_future(self._collect())

    async def submit(self, thread: StringThread, request: object) -> Grade:
        """``thread``'s Grade; ``request`` names the call it came with (its samples stay together)."""
        fut = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((thread, fut, request))  # type: ignore[union-attr]
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
        """Grade ``items`` in a task of its own, cancelled once every caller waiting for them is."""
        task = asyncio.ensure_future(self._grade(items))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

        def gone(fut: asyncio.Future) -> None:
            if all(f.cancelled() for _, f, _ in items) and not task.done():
                task.cancel()

        for _, fut, _ in items:
            fut.add_done_callback(gone)

    async def _grade(self, items: list) -> None:
        self.metrics.batches += 1
        self.metrics.batched_samples += len(items)
        try:
            grades = await self.grader.grade_batch([t for t, _, _ in items])
        except Exception as exc:  # a usage error (template, config): its own request hears it
            requests = groups(items, lambda item: item[2])
            if len(requests) > 1:  # one request's bad sample must not fail the other requests batched with it,
                # nor split them: each is graded again whole (a group judge sees its samples together)
                self.metrics.batches -= 1
                self.metrics.batched_samples -= len(items)
                live = [[item for item in r if not item[1].done()] for r in requests]
                await asyncio.gather(*(self._grade(r) for r in live if r))
                return
            for _, fut, _ in items:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut, _), grade in zip(items, grades):
            if not fut.done():
                fut.set_result(grade)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)


NO_ESTIMATOR = ("/get_reward needs the estimator OpenRLHF runs (serve --estimator, RewardServer(estimator=...)): "
                "only dr_grpo can give a sample the judge could not score advantage 0 without moving its group; "
                "run OpenRLHF with --algo.advantage.estimator dr_grpo and serve with --estimator dr_grpo")


def _client_alive(request: web.Request) -> bool:
    transport = request.transport
    return transport is not None and not transport.is_closing()


class ServerOptions(OutageOptions):
    """``RewardServer``'s keyword options (docs/serve.md); every number finite: a NaN reward poisons a trainer."""

    batch_window: float = Field(0.005, ge=0, description="must be >= 0 seconds")
    max_batch: StrictInt = Field(512, ge=1, description="must be an int >= 1")
    group_size: Optional[StrictInt] = Field(None, ge=1, description="must be a positive int (or None)")
    group_timeout: float = Field(60.0, gt=0, description="must be > 0 seconds")
    group_keep: float = Field(600.0, ge=0, description="must be >= 0 seconds")
    estimator: Any = None
    outage_window: StrictInt = Field(64, ge=1, description="must be a positive int (graded samples)")
    unscored: Union[Literal["group_mean"], float] = Field("group_mean",
                                                          description="must be 'group_mean' or a finite number")
    unscored_fallback: float = Field(0.0, description="must be a finite number")
    token: Any = None
    max_body: Any = 8 << 20
    eos: Any = DEFAULT_EOS
    max_samples: Any = DEFAULT_MAX_SAMPLES
    body_timeout: Any = 60.0
    header_timeout: Any = 60.0


class RewardServer(_HTTPService):
    """A grader served over HTTP (docs/serve.md); the options are the fields of ``ServerOptions``."""

    def __init__(self, grader: Grader, **options: Any):
        if not isinstance(grader, Grader):
            raise ConfigError(f"RewardServer needs a Grader, got {type(grader).__name__}")
        grader.require_rewards("the reward server")
        o = self.options = ServerOptions(**options)
        self.estimator = check_estimator(o.estimator)
        if self.estimator is not None and o.unscored != "group_mean":
            raise ConfigError(f"unscored={o.unscored!r} is not exact for {self.estimator}: only the group mean "
                              f"(unscored='group_mean') gives an unscored sample advantage 0")
        self._guard, self.outage_window = OutageGuard(o.outage_threshold, o.outage_steps), o.outage_window
        self._window: list[Grade] = []
        self.outage: JudgeOutage | None = None
        self._told_estimator = False
        super().__init__(token=o.token, max_body=o.max_body, max_samples=o.max_samples,
                         body_timeout=o.body_timeout, header_timeout=o.header_timeout)
        self.grader, self.unscored, self.unscored_fallback = grader, o.unscored, o.unscored_fallback
        self.worker = False  # a --workers worker: each /grade grade carries its pid
        self.eos, self.images = tuple(o.eos), bool(getattr(grader, "reads_images", False))
        self._batcher = _Batcher(grader, o.batch_window, o.max_batch, self.metrics)
        self._groups = PromptGroups(self._grade_one, size=o.group_size, quiet=o.group_timeout, keep=o.group_keep,
                                    fallback=o.unscored_fallback)

    async def grade_group(self, threads: Sequence[StringThread],
                          groups: Sequence[Hashable] | None = None) -> list[tuple[Grade, float]]:
        """Grade ``threads``, each with its reward (``group_rewards``); ``JudgeOutage`` once the guard stopped us."""
        if self.outage is not None:
            raise self.outage
        request = object()   # this call's samples are graded again together if their batch fails
        grades = list(await asyncio.gather(*(self._batcher.submit(t, request) for t in threads)))
        self.metrics.record(grades)
        self._observe(grades)
        keys = list(groups) if groups is not None else [0] * len(grades)
        rewards = group_rewards(grades, keys, unscored=self.unscored, fallback=self.unscored_fallback)
        return list(zip(grades, rewards))

    def _observe(self, grades: Sequence[Grade]) -> None:
        if self._guard.threshold is None or self.outage is not None:
            return
        self._window.extend(grades)
        while len(self._window) >= self.outage_window:
            step, self._window = self._window[:self.outage_window], self._window[self.outage_window:]
            try:
                self._guard.observe(step)
            except JudgeOutage as exc:
                self.outage = exc
                say(f"{exc} Every request now gets 503; restart serve once the judge works.")
                raise

    async def _grade_one(self, thread: StringThread) -> Grade:
        return (await self.grade_group([thread]))[0][0]

    async def _on_startup(self, app: web.Application) -> None:
        await super()._on_startup(app)
        self._batcher.start()

    async def _on_cleanup(self, app: web.Application) -> None:
        await self._batcher.close()

    async def _get_reward(self, request: web.Request) -> web.Response:
        queries, prompts, labels, keys = openrlhf_body(await self._json(request))
        threads = [openrlhf_thread(q, p, lab, eos=self.eos, where=f"query[{i}]")
                   for i, (q, p, lab) in enumerate(zip(queries, prompts, labels))]
        if self.estimator is None:
            if not self._told_estimator:
                self._told_estimator = True
                say(f"/get_reward refused: {NO_ESTIMATOR}")
            raise _BadRequest(500, NO_ESTIMATOR)
        if self.outage is not None:  # before the samples join their groups (503)
            raise self.outage
        results = await self._in_groups(request, keys, queries, prompts, labels, threads)  # outage: 503
        rewards = [r for _, r, _ in results]
        return web.json_response({
            "rewards": rewards, "scores": rewards,
            "extra_logs": {"unscored": [float(g.status == "unscored") for g, _, _ in results],
                           "penalized": [float(g.status == "penalized") for g, _, _ in results],
                           "group_partial": [float(not exact) for _, _, exact in results]}})

    async def _in_groups(self, request: web.Request, keys: list, queries: list, prompts: list, labels: list,
                         threads: list[StringThread]) -> list[tuple[Grade, float, bool]]:
        # a retry is the same sample again: answered from the first grading
        dkeys = [json.dumps([q, p, lab], sort_keys=True, default=str) for q, p, lab in zip(queries, prompts, labels)]
        entries = [self._groups.submit(k, d, t, request, _client_alive) for k, d, t in zip(keys, dkeys, threads)]
        delivered = False  # the client left (cancelled), an outage, a usage error: kept for a retry
        try:
            results = await asyncio.gather(*(asyncio.shield(e.task) for e in entries))
            delivered = _client_alive(request)
        finally:
            for d, e in zip(dkeys, entries):
                self._groups.finish(d, e, request, delivered)
        return results

    async def _grade(self, request: web.Request) -> web.Response:
        threads, keys = grade_body(await self._json(request), images=self.images)
        results = await self.grade_group(threads, keys)
        worker = {"worker": os.getpid()} if self.worker else {}
        return web.json_response({"grades": [
            {"value": g.value, "status": g.status, "reward": r, "reasoning": g.reasoning, "error": g.error,
             "grader_key": g.grader_key, "grader_version": g.grader_version,
             "extra": json.loads(json.dumps(g.extra, default=str)), **worker} for g, r in results]})

    def _about(self) -> dict[str, Any]:
        return {"grader": self.grader.grader_key}

    def __repr__(self) -> str:
        return f"RewardServer({self.grader.grader_key!r}, url={self.url!r})"
