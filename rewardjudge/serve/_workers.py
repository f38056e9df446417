"""The front of ``rewardjudge serve --workers N`` (docs/serve.md): each group's samples go to one worker."""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any, Sequence

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

from ._http import _HTTPService, _Metrics
from ._samples import grade_body, openrlhf_body

__all__ = ["WorkerFront", "route"]


def route(key: str, n: int) -> int:
    """The worker (0..n-1) of a group key (``group_key``): the same key, the same worker, in every process."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % n


def _merge(values: list, parts: list[list[int]], n: int) -> Any:
    """The workers' replies to a split request as one (per-sample lists put back in order)."""
    first = values[0]
    if all(isinstance(v, list) and len(v) == len(ix) for v, ix in zip(values, parts)):
        out: list = [None] * n
        for v, ix in zip(values, parts):
            for item, i in zip(v, ix):
                out[i] = item
        return out
    if all(isinstance(v, dict) for v in values):
        return {k: _merge([v.get(k) for v in values], parts, n) for k in first}
    return first


class WorkerFront(_HTTPService):
    """The public side of ``--workers``: routes each group's samples to one worker (``route``)."""

    def __init__(self, worker_urls: Sequence[str], worker_token: str, **limits: Any):
        super().__init__(**limits)  # token, max_body, max_samples, body_timeout, header_timeout
        self.workers = list(worker_urls)
        self._auth = {"Authorization": f"Bearer {worker_token}"}
        self._session: ClientSession | None = None
        self.grader_key: str | None = None

    async def _on_startup(self, app: web.Application) -> None:
        await super()._on_startup(app)
        # no total timeout: grading takes what the judge takes; a client that gives up cancels it
        self._session = ClientSession(connector=TCPConnector(limit=0), timeout=ClientTimeout(total=None))
        async with self._session.get(f"{self.workers[0]}/health", headers=self._auth) as r:
            self.grader_key = (await r.json()).get("grader")

    async def _on_cleanup(self, app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    async def _post(self, worker: int, path: str, body: bytes) -> tuple[int, bytes]:
        async with self._session.post(f"{self.workers[worker]}{path}", data=body,  # type: ignore[union-attr]
                                      headers={**self._auth, "Content-Type": "application/json"}) as r:
            return r.status, await r.read()

    async def _route(self, request: web.Request, data: dict, keys: Sequence[str]) -> web.Response:
        n = len(keys)
        parts: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            parts.setdefault(route(key, len(self.workers)), []).append(i)
        if len(parts) == 1:  # the common case: the body as it came, the reply as it goes
            [worker] = parts
            status, body = await self._post(worker, request.path, await request.read())
            return web.Response(status=status, body=body, content_type="application/json")
        workers = list(parts)
        bodies = [json.dumps({k: [v[i] for i in parts[w]] if isinstance(v, list) and len(v) == n else v
                              for k, v in data.items()}).encode() for w in workers]
        replies = await asyncio.gather(*(self._post(w, request.path, b) for w, b in zip(workers, bodies)))
        for status, body in replies:
            if status != 200:  # one part refused: the request is
                return web.Response(status=status, body=body, content_type="application/json")
        merged = _merge([json.loads(body) for _, body in replies], [parts[w] for w in workers], n)
        return web.json_response(merged)

    async def _get_reward(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        return await self._route(request, data, openrlhf_body(data)[3])

    async def _grade(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        # images=True: any well-formed sample has a key here; the worker refuses what its grader cannot read
        return await self._route(request, data, grade_body(data, images=True)[1])

    def _about(self) -> dict[str, Any]:
        return {"grader": self.grader_key, "workers": len(self.workers)}

    async def _metrics_text(self) -> str:
        async def one(url: str) -> dict[str, Any]:
            async with self._session.get(f"{url}/metrics", params={"format": "json"},  # type: ignore[union-attr]
                                         headers=self._auth) as r:
                return await r.json()

        total = _Metrics()
        total.requests, total.in_flight = self.metrics.requests, self.metrics.in_flight  # the front's own
        for counts in await asyncio.gather(*(one(u) for u in self.workers)):
            total.add(counts)
        return total.text() + ("# HELP rewardjudge_workers Worker processes behind this front.\n"
                               f"# TYPE rewardjudge_workers gauge\nrewardjudge_workers {len(self.workers)}\n")
