"""Judging spans from files or an OTLP/HTTP receiver, resumably (docs/pipelines.md)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterable, Iterable, Iterator, Mapping

import numpy as np
from aiohttp import web

from .._sync import run_sync
from ..errors import ConfigError
from ..evaluate._journal import Journal, lock_folder, read_records
from ..grade import Grade
from ..graders.templated_prompt_judge import ScorerGrader
from ..serve._http import _BadRequest, _HTTPService
from ._otlp import SEMCONV_VERSION, Span, _pb, decode_request, span_thread, spans_of
from ._pipeline import JudgeConfig, PipelineConfig

__all__ = ["OtlpReceiver", "PipelineRun", "SpanJudge", "arun_pipeline", "result_key", "run_pipeline"]

log = logging.getLogger("rewardjudge")
RESULTS = "results.jsonl"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def result_key(trace_id: str, span_id: str, scorer_version: str) -> int:
    """64-bit digest of a result's identity (trace, span, scorer version)."""
    digest = hashlib.sha256(f"{trace_id}:{span_id}:{scorer_version}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class _Seen:
    """A set of 64-bit keys at 8 bytes each: a sorted array, plus a small set merged into it."""

    MERGE_AT = 65_536

    def __init__(self) -> None:
        self._base = np.empty(0, dtype=np.uint64)
        self._new: set[int] = set()

    def add(self, key: int) -> None:
        self._new.add(key)
        if len(self._new) >= self.MERGE_AT:
            self._merge()

    def _merge(self) -> None:
        self._base = np.union1d(self._base, np.fromiter(self._new, dtype=np.uint64, count=len(self._new)))
        self._new.clear()

    def __contains__(self, key: int) -> bool:
        if key in self._new:
            return True
        i = int(np.searchsorted(self._base, np.uint64(key)))
        return i < len(self._base) and int(self._base[i]) == key


@dataclass
class _Tally:
    """What one scorer version's results add up to (bounded: counts and sums)."""

    statuses: Counter = field(default_factory=Counter)
    labels: Counter = field(default_factory=Counter)
    score_sum: float = 0.0
    score_n: int = 0

    def add(self, record: Mapping[str, Any]) -> None:
        self.statuses[record["status"]] += 1
        if record.get("score_label") is not None:
            self.labels[record["score_label"]] += 1
        if isinstance(record.get("score_value"), (int, float)):
            self.score_sum += record["score_value"]
            self.score_n += 1

    def to_dict(self) -> dict[str, Any]:
        n = sum(self.labels.values())
        return {"statuses": dict(self.statuses), "labels": dict(self.labels),
                "label_shares": {k: v / n for k, v in self.labels.items()} if n else {},
                "mean_score": self.score_sum / self.score_n if self.score_n else None}


@dataclass
class PipelineRun:
    """Counts of a run, per scorer version tallies, and the results when there is no output folder."""

    spans_read: int = 0
    spans_selected: int = 0
    judged_now: int = 0
    already_done: int = 0
    tallies: dict[str, _Tally] = field(default_factory=dict)
    results: list[dict[str, Any]] | None = None
    output: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"spans_read": self.spans_read, "spans_selected": self.spans_selected,
                "judged_now": self.judged_now, "already_done": self.already_done,
                "semconv": SEMCONV_VERSION, "scorers": {k: t.to_dict() for k, t in self.tallies.items()}}

    def __str__(self) -> str:
        lines = [f"spans read: {self.spans_read}  selected: {self.spans_selected}  judged now: "
                 f"{self.judged_now}  already done: {self.already_done}"]
        for key, t in self.tallies.items():
            d = t.to_dict()
            mean = f"  mean score {d['mean_score']:.3f}" if d["mean_score"] is not None else ""
            labels = f"  labels {d['labels']}" if d["labels"] else ""
            lines.append(f"  {key}: {d['statuses']}{mean}{labels}")
        return "\n".join(lines)


def _record(span: Span, pipeline: str, jc: JudgeConfig, grade: Grade, prompt: str | None) -> dict[str, Any]:
    scored, score = grade.status == "scored", grade.extra.get("score")
    numeric = scored and isinstance(score, (int, float)) and not isinstance(score, bool)
    out = {"trace_id": span.trace_id, "span_id": span.span_id, "parent_span_id": span.parent_span_id or None,
           "span_name": span.name, "pipeline": pipeline, "scorer": jc.label,
           "scorer_version": jc.scorer_version, "scorer_version_number": jc.scorer_version_number,
           "status": grade.status, "score_value": float(score) if numeric else None,
           "score_label": grade.extra.get("label") if scored else None,
           "explanation": grade.reasoning if scored else None, "value": grade.value if scored else None,
           "error": grade.error, "judge_model": grade.extra.get("judge_model"),
           "missing_variables": grade.extra.get("missing_variables", []), "attempts": grade.attempts,
           "latency_s": grade.latency_s, "usage": grade.usage or None,
           "judged_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if prompt is not None:
        out["prompt"] = prompt
    return out


class SpanJudge:
    """Judges spans for one pipeline; ``judge`` is an ``InferenceModel`` or a mapping from ``config.model`` to one."""

    def __init__(self, pipeline: PipelineConfig, judge: Any, *, output_dir: str | os.PathLike | None = None,
                 keep_prompts: bool = False, retry_unscored: bool = False, allow_model_override: bool = False,
                 reply_retries: int = 1):
        self.pipeline, self.keep_prompts = pipeline, keep_prompts
        self.graders = []
        for jc in pipeline.pipeline_configs:
            model = judge.get(jc.config.model) if isinstance(judge, Mapping) else judge
            if model is None:
                raise ConfigError(f"no judge for model {jc.config.model!r} (scorer {jc.label!r})")
            self.graders.append((jc, ScorerGrader(jc.binding, model, mode="eval", reply_retries=reply_retries,
                                                  allow_model_override=allow_model_override)))
        out = None if output_dir is None else Path(output_dir)
        self.run = PipelineRun(results=[] if out is None else None, output=out)
        self.seen = _Seen()
        self.journal: Journal | None = None
        self._lock_fd: int | None = None
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            self._lock_fd = lock_folder(out, "pipeline run")
            self._scan(out / RESULTS, retry_unscored)
            self.journal = Journal(out / RESULTS)

    def _scan(self, path: Path, retry_unscored: bool) -> None:
        """Index finished results (a torn last line is cut away and judged again)."""
        def key(rec: dict[str, Any]) -> None:
            rec["_key"] = result_key(rec["trace_id"], rec["span_id"], rec["scorer_version"])

        for _, rec in read_records(path, key):
            if not (retry_unscored and rec.get("status") == "unscored"):
                self.seen.add(rec["_key"])

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def wants(self, span: Span) -> bool:
        self.run.spans_read += 1
        if not self.pipeline.wants(span):
            return False
        self.run.spans_selected += 1
        return True

    def _prompt(self, grader: Any, thread: Any) -> str | None:
        try:
            return grader.render(grader.neutralized(thread))[0]
        except Exception:  # a completion the binding cannot read: the grade says why
            return None

    async def judge_spans(self, spans: list[Span]) -> None:
        """Judge selected spans with every pinned version (skipping done results)."""
        threads: dict[int, Any] = {}
        broken: dict[int, str] = {}
        for i, span in enumerate(spans):
            try:
                threads[i] = span_thread(span)
            except ConfigError as exc:
                broken[i] = f"unreadable span: {exc}"

        async def one(jc: JudgeConfig, grader: Any) -> list[tuple[int, Grade]]:
            todo = [i for i, s in enumerate(spans) if result_key(s.trace_id, s.span_id, jc.scorer_version)
                    not in self.seen]
            self.run.already_done += len(spans) - len(todo)
            ok = [i for i in todo if i in threads]
            grades = await grader.grade_batch([threads[i] for i in ok]) if ok else []
            return list(zip(ok, grades)) + [(i, grader.unscored(broken[i])) for i in todo if i in broken]

        per_config = await asyncio.gather(*(one(jc, g) for jc, g in self.graders))
        for (jc, grader), done in zip(self.graders, per_config):
            for i, grade in done:
                prompt = self._prompt(grader, threads[i]) if self.keep_prompts and i in threads else None
                self._write(_record(spans[i], self.pipeline.name, jc, grade, prompt))

    def _write(self, record: dict[str, Any]) -> None:
        key = result_key(record["trace_id"], record["span_id"], record["scorer_version"])
        if self.journal is not None:
            self.journal.append(record)
        else:
            self.run.results.append(record)
        self.seen.add(key)
        self.run.judged_now += 1
        label = f"{record['scorer']}@{record['scorer_version'][:12]}"
        self.run.tallies.setdefault(label, _Tally()).add(record)


async def _aiter(spans: Iterable[Span] | AsyncIterable[Span]):
    if hasattr(spans, "__aiter__"):
        async for s in spans:
            yield s
    else:
        for s in spans:
            yield s


async def arun_pipeline(pipeline: PipelineConfig, spans: Iterable[Span] | AsyncIterable[Span], judge: Any, *,
                        output_dir: str | os.PathLike | None = None, keep_prompts: bool = False,
                        retry_unscored: bool = False, allow_model_override: bool = False,
                        batch_size: int = 64) -> PipelineRun:
    """Judge the selected ``spans`` with every pinned version into ``output_dir`` (resumes) or ``run.results``."""
    if batch_size < 1:
        raise ConfigError("batch_size must be >= 1")
    sj = SpanJudge(pipeline, judge, output_dir=output_dir, keep_prompts=keep_prompts,
                   retry_unscored=retry_unscored, allow_model_override=allow_model_override)
    try:
        chunk: list[Span] = []
        async for span in _aiter(spans):
            if sj.wants(span):
                chunk.append(span)
            if len(chunk) >= batch_size:
                await sj.judge_spans(chunk)
                chunk = []
        if chunk:
            await sj.judge_spans(chunk)
    finally:
        sj.close()
    return sj.run


def run_pipeline(pipeline: PipelineConfig, spans: Iterable[Span], judge: Any, **kwargs: Any) -> PipelineRun:
    """``arun_pipeline`` from synchronous code (also inside a running loop)."""
    return run_sync(arun_pipeline(pipeline, spans, judge, **kwargs))


def read_results(output_dir: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Every result line of an output folder, one at a time (for a key judged again, the last wins)."""
    path = Path(output_dir) / RESULTS
    with open(path, "rb") as f:
        for line in f:
            if line.endswith(b"\n") and line.strip():
                yield json.loads(line)


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
