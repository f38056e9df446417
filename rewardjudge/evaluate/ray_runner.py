"""The same evaluation on Ray Data, for when one machine is not enough (see docs/evaluation.md):
the driver keeps ``evaluate_dataset``'s journal, resume and outputs; an actor pool grades the groups.
On a cluster pass ``ray_init={"address": "auto"}``; an SQLite ``cache`` is per node."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Callable, Iterator, Sequence

from .._sync import run_sync
from ..errors import ConfigError
from ..grade import Grade
from ..graders._base import Grader
from ..models import OpenAIModel
from ..models._cache import CachedModel, SQLiteCache
from ..thread import StringThread
from ._runner import EvalResult, aevaluate_dataset, use_seal_key
from ._spec import resolve_grader

__all__ = ["evaluate_dataset_ray"]


class _GraderActor:
    """One grader per judge endpoint, inside a Ray actor."""

    def __init__(self, grader_spec: Any, judge_urls: list[str], judge_model: str, concurrency: int,
                 cache: str | None, model_kwargs: dict[str, Any], seal_key: str | None = None):
        disk = SQLiteCache(cache) if cache else None
        self.clients = [OpenAIModel(url, judge_model, max_concurrency=concurrency, **model_kwargs)
                        for url in judge_urls]
        self.graders = [resolve_grader(grader_spec, CachedModel(m, cache=disk) if cache else m)
                        for m in self.clients]
        for g in self.graders:   # every actor seals as the driver's run does (resumes, caches)
            use_seal_key(g, seal_key)
        self.urls = judge_urls

    async def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        async def one(text: str) -> list[tuple[int, str, str]]:
            group = json.loads(text)
            rows = [int(r) for r in group["rows"]]
            threads = [StringThread([tuple(t) for t in d["turns"]], d["metadata"]) for d in group["threads"]]
            k = rows[0] % len(self.graders)
            grades = await self.graders[k].grade_batch(threads)
            return [(r, json.dumps(g.to_dict(), default=str, ensure_ascii=False), self.urls[k])
                    for r, g in zip(rows, grades)]

        try:
            done = [item for part in await asyncio.gather(*(one(text) for text in batch["group"])) for item in part]
        finally:
            # Ray Data gives an actor no async teardown: close connections after each
            # batch (the next batch reopens them) rather than leak them at exit
            await asyncio.gather(*(c.aclose() for c in self.clients))
        return {name: [item[i] for item in done] for i, name in enumerate(("row", "grade", "endpoint"))}


def _ray_runner(actor_kwargs: dict[str, Any], *, num_actors: int, batch_size: int) -> Callable:
    async def run(driver_grader: Grader, groups: Iterator[list[tuple[int, Any, str]]],
                  on_done: Callable[[int, str, Grade], None]) -> None:
        import ray
        items, digests = [], {}
        for group in groups:
            digests.update((i, digest) for i, _, digest in group)
            items.append({"group": json.dumps(
                {"rows": [i for i, _, _ in group],
                 "threads": [{"turns": t.turns, "metadata": t.metadata} for _, t, _ in group]},
                default=str, ensure_ascii=False)})
        if not items:
            return
        seal_key = use_seal_key(driver_grader, None)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False  # the driver's bar counts journaled rows
        ctx.execution_options.preserve_order = True  # rows reach the ordered writer in order
        ds = ray.data.from_items(items, override_num_blocks=max(1, min(len(items) // batch_size + 1,
                                                                         num_actors * 4)))
        graded = ds.map_batches(_GraderActor, batch_size=batch_size, concurrency=num_actors,
                                fn_constructor_kwargs={**actor_kwargs, "seal_key": seal_key},
                                num_cpus=0.5)  # graders wait on the network: let two share a core
        try:
            for batch in graded.iter_batches(batch_size=None, batch_format="numpy"):
                for row, text in zip(batch["row"], batch["grade"]):
                    g = json.loads(text)
                    if g.get("grader_version") != driver_grader.version:
                        raise ConfigError(f"a Ray actor built grader version {g.get('grader_version')} but the "
                                          f"driver's is {driver_grader.version}: the grader factory must build "
                                          f"the same grader everywhere")
                    on_done(int(row), digests[int(row)], Grade(**g))
        except ray.exceptions.RayTaskError as exc:
            cause = exc.as_instanceof_cause() if hasattr(exc, "as_instanceof_cause") else exc
            if isinstance(cause, ConfigError):
                raise ConfigError(str(cause).splitlines()[-1]) from exc
            raise

    return run


async def aevaluate_dataset_ray(data: Any, grader: Any, *, judge_urls: Sequence[str], judge_model: str,
                                num_actors: int = 2, batch_size: int = 64, concurrency: int = 32,
                                cache: str | os.PathLike | None = None,
                                model_kwargs: dict[str, Any] | None = None,
                                ray_init: dict[str, Any] | None = None, **kwargs: Any) -> EvalResult:
    """The async form of ``evaluate_dataset_ray`` (see there)."""
    if isinstance(grader, Grader):
        raise ConfigError("pass the grader as a SPEC string or a factory f(model) -> Grader: each Ray "
                          "actor builds its own (a Grader holds connections and cannot be shipped)")
    urls = [judge_urls] if isinstance(judge_urls, str) else list(judge_urls)
    if not urls:
        raise ConfigError("judge_urls needs at least one OpenAI-compatible URL")
    if num_actors < 1 or batch_size < 1 or concurrency < 1:
        raise ConfigError("num_actors, batch_size and concurrency must be >= 1")
    model_kwargs = dict(model_kwargs or {})
    # the driver's grader names the version in the manifest; it never calls the judge
    probe = OpenAIModel(urls[0], judge_model, **model_kwargs)
    driver_grader = resolve_grader(grader, probe)

    import ray
    started = not ray.is_initialized()
    if started:
        ray.init(**(ray_init or {}))
    try:
        actor_kwargs = dict(grader_spec=grader, judge_urls=urls, judge_model=judge_model, concurrency=concurrency,
                            cache=None if cache is None else str(cache), model_kwargs=model_kwargs)
        runner = _ray_runner(actor_kwargs, num_actors=num_actors, batch_size=batch_size)
        return await aevaluate_dataset(data, driver_grader, _runner=runner, **kwargs)
    finally:
        await probe.aclose()
        if started:
            ray.shutdown()


def evaluate_dataset_ray(data: Any, grader: Any, **options: Any) -> EvalResult:
    """``evaluate_dataset`` graded by a pool of Ray actors (options: docs/evaluation.md)."""
    return run_sync(aevaluate_dataset_ray(data, grader, **options))
