"""The same evaluation on Ray Data, for when one machine is not enough.

``evaluate_dataset_ray`` keeps the driver's side of ``evaluate_dataset``
(loading, column mapping, the journal, resume, results and reports) and
hands the grading to a Ray Data pipeline: ``map_batches`` over an actor pool
of graders. Each actor builds its own graders (graders hold connections and
compiled templates, so they are built where they run, from a SPEC string or
a picklable factory ``f(model) -> Grader``), one per judge endpoint.

The unit of work is a group of rows sharing a prompt, as in
``evaluate_dataset``: an actor hands it whole to one ``grade_batch`` call,
and the group whose first row is ``i`` goes to endpoint
``i % len(judge_urls)`` (even and reproducible). Finished rows stream back
to the driver in order, which journals and writes them as they arrive: a
killed driver resumes like a single-process run. The driver holds the
pending rows' threads (as JSON) while Ray runs.

Local use::

    from rewardjudge.evaluate.ray_runner import evaluate_dataset_ray
    result = evaluate_dataset_ray("answers.jsonl", "demo",
                                  judge_urls=["http://10.0.0.5:8000/v1", "http://10.0.0.6:8000/v1"],
                                  judge_model="judge", output_dir="runs/v1", num_actors=4)

On a cluster: start Ray on the nodes (``ray start --head`` on one,
``ray start --address=HEAD:6379`` on the others), run the script on the
head node (or submit it with ``ray job submit --working-dir . -- python
eval.py``), and call ``ray.init(address="auto")`` before
``evaluate_dataset_ray`` (or pass ``ray_init={"address": "auto"}``). The
judge URLs must be reachable from every worker node; a module named in a
``module:attribute`` SPEC must be importable there too (ship it with
``ray_init={"runtime_env": {"working_dir": "."}}``). ``output_dir`` and
the data path are read and written by the driver only. An SQLite ``cache``
path is opened by every actor on its own node (shared by the actors of one
node, WAL-safe; not shared between nodes).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Callable, Iterator, Sequence

from .._sync import run_sync
from ..errors import ConfigError
from ..grade import Grade
from ..graders._base import Grader
from ._runner import EvalResult, aevaluate_dataset
from ._spec import resolve_grader

__all__ = ["evaluate_dataset_ray"]


def _models(judge_urls: Sequence[str], judge_model: str, concurrency: int, cache: str | None,
            model_kwargs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    from ..models import OpenAIModel
    from ..models._cache import CachedModel, SQLiteCache

    disk = SQLiteCache(cache) if cache else None
    clients, models = [], []
    for url in judge_urls:
        m = OpenAIModel(url, judge_model, max_concurrency=concurrency, **model_kwargs)
        clients.append(m)
        models.append(CachedModel(m, cache=disk) if cache else m)
    return clients, models


class _GraderActor:
    """One grader per judge endpoint, inside a Ray actor."""

    def __init__(self, grader_spec: Any, judge_urls: list[str], judge_model: str, concurrency: int,
                 cache: str | None, model_kwargs: dict[str, Any], seal_key: str | None = None):
        self.clients, self.models = _models(judge_urls, judge_model, concurrency, cache, model_kwargs)
        self.graders = [resolve_grader(grader_spec, m) for m in self.models]
        if seal_key is not None:   # every actor seals as the driver's run does (resumes, caches)
            from ..readouts._seal import Sealer

            for g in self.graders:
                if getattr(g, "_sealer", None) is not None:
                    g._sealer = Sealer(bytes.fromhex(seal_key))
        self.urls = judge_urls

    async def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        from ..thread import StringThread

        n = len(self.graders)

        async def one(text: str) -> tuple[list[int], list[str], str]:
            group = json.loads(text)
            rows = [int(r) for r in group["rows"]]
            threads = [StringThread([tuple(t) for t in d["turns"]], d["metadata"]) for d in group["threads"]]
            grades = await self.graders[rows[0] % n].grade_batch(threads)
            return rows, [json.dumps(g.to_dict(), default=str, ensure_ascii=False) for g in grades], \
                self.urls[rows[0] % n]

        try:
            done = await asyncio.gather(*(one(text) for text in batch["group"]))
        finally:
            # Ray Data gives an actor no async teardown: close connections after each
            # batch (the next batch reopens them) rather than leak them at exit
            await asyncio.gather(*(c.aclose() for c in self.clients))
        rows, grades, endpoints = [], [], []
        for r, g, url in done:
            rows += r
            grades += g
            endpoints += [url] * len(r)
        return {"row": rows, "grade": grades, "endpoint": endpoints}


def _ray_runner(grader_spec: Any, judge_urls: list[str], judge_model: str, *, num_actors: int,
                batch_size: int, concurrency: int, cache: str | None, model_kwargs: dict[str, Any],
                expected_version: str) -> Callable:
    async def run(_driver_grader: Grader, groups: Iterator[list[tuple[int, Any, str]]],
                  on_done: Callable[[int, str, Grade], None]) -> None:
        import ray

        items, digests = [], {}
        for group in groups:
            for i, _, digest in group:
                digests[i] = digest
            items.append({"group": json.dumps(
                {"rows": [i for i, _, _ in group],
                 "threads": [{"turns": t.turns, "metadata": t.metadata} for _, t, _ in group]},
                default=str, ensure_ascii=False)})
        if not items:
            return
        sealer = getattr(_driver_grader, "_sealer", None)
        seal_key = None if sealer is None else sealer.key_hex()
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False  # the driver's bar counts journaled rows
        ctx.execution_options.preserve_order = True  # rows reach the ordered writer in order
        ds = ray.data.from_items(items, override_num_blocks=max(1, min(len(items) // batch_size + 1,
                                                                         num_actors * 4)))
        graded = ds.map_batches(
            _GraderActor, batch_size=batch_size, concurrency=num_actors,
            fn_constructor_kwargs=dict(grader_spec=grader_spec, judge_urls=judge_urls,
                                       judge_model=judge_model, concurrency=concurrency, cache=cache,
                                       model_kwargs=model_kwargs, seal_key=seal_key),
            num_cpus=0.5)  # graders wait on the network: let two share a core
        try:
            for batch in graded.iter_batches(batch_size=None, batch_format="numpy"):
                for row, text in zip(batch["row"], batch["grade"]):
                    g = json.loads(text)
                    if g.get("grader_version") != expected_version:
                        raise ConfigError(f"a Ray actor built grader version {g.get('grader_version')} but the "
                                          f"driver's is {expected_version}: the grader factory must build the "
                                          f"same grader everywhere")
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
    """The async form of ``evaluate_dataset_ray``."""
    if isinstance(grader, Grader):
        raise ConfigError("pass the grader as a SPEC string or a factory f(model) -> Grader: each Ray "
                          "actor builds its own (a Grader holds connections and cannot be shipped)")
    urls = [judge_urls] if isinstance(judge_urls, str) else list(judge_urls)
    if not urls:
        raise ConfigError("judge_urls needs at least one OpenAI-compatible URL")
    if num_actors < 1 or batch_size < 1 or concurrency < 1:
        raise ConfigError("num_actors, batch_size and concurrency must be >= 1")
    model_kwargs = dict(model_kwargs or {})
    from ..models import OpenAIModel

    # the driver's grader names the version in the manifest; it never calls the judge
    probe = OpenAIModel(urls[0], judge_model, **model_kwargs)
    driver_grader = resolve_grader(grader, probe)

    import ray

    started = False
    if not ray.is_initialized():
        ray.init(**(ray_init or {}))
        started = True
    try:
        runner = _ray_runner(grader, urls, judge_model, num_actors=num_actors, batch_size=batch_size,
                             concurrency=concurrency, cache=None if cache is None else str(cache),
                             model_kwargs=model_kwargs, expected_version=driver_grader.version)
        return await aevaluate_dataset(data, driver_grader, _runner=runner, **kwargs)
    finally:
        await probe.aclose()
        if started:
            ray.shutdown()


def evaluate_dataset_ray(data: Any, grader: Any, *, judge_urls: Sequence[str], judge_model: str,
                         num_actors: int = 2, batch_size: int = 64, concurrency: int = 32,
                         cache: str | os.PathLike | None = None, model_kwargs: dict[str, Any] | None = None,
                         ray_init: dict[str, Any] | None = None, **kwargs: Any) -> EvalResult:
    """``evaluate_dataset`` with the grading done by a pool of Ray actors.

    ``grader``: a SPEC string (see ``resolve_grader``) or a picklable
    factory ``f(model) -> Grader``. ``judge_urls``: OpenAI-compatible
    endpoints; the group (rows sharing a prompt, see the module doc) whose
    first row is ``i`` goes to ``judge_urls[i % len(judge_urls)]``, whole.
    ``num_actors`` actors grade ``batch_size`` groups per call with up to
    ``concurrency`` requests in flight per endpoint per actor. ``cache``: an
    SQLite judge cache per node. ``model_kwargs`` go to each ``OpenAIModel``
    (timeout, structured_output...). ``ray_init``: arguments for
    ``ray.init`` when Ray is not running yet (it is then shut down at the
    end). Every other keyword (``columns``, ``output_dir``, ``mode``,
    ``retry_unscored``, ``progress``...) is ``evaluate_dataset``'s; the
    output, journal and resume are the same.
    """
    options = dict(locals())
    extra = options.pop("kwargs")
    return run_sync(aevaluate_dataset_ray(**options, **extra))
