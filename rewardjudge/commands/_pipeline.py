"""``rewardjudge pipeline``: judge-v1 live evaluation of OpenTelemetry GenAI spans (docs/pipelines.md).

    rewardjudge pipeline pin --registry scorers --scorer helpfulness-1a2b3c4d \\
        --map product='attr("app.product")' --name support-live --sampling-rate 0.25 -o live.json
    rewardjudge pipeline run live.json traces.jsonl --judge http://127.0.0.1:8000/v1 --output runs/live
    rewardjudge pipeline receive live.json --judge http://127.0.0.1:8000/v1 --output runs/live

``run`` reads OTLP files (JSON or protobuf, .gz too); ``receive`` listens for OTLP/HTTP on
127.0.0.1:4318. Both write one line per span and pinned version to OUTPUT/results.jsonl and resume
on rerun. Spans are read with GenAI semantic conventions v{semconv}.

Exit codes: 0 done; 2 usage error; 3 every result unscored (judge down); 130 interrupted (rerun to resume).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections import Counter
from itertools import chain
from typing import Any

from .. import spans
from .._validate import json_value
from ..errors import ConfigError
from ._judge import add_subcommands, judge_kind, judge_options, open_judge, url_model
from ._scorers import REGISTRY_OPTION, registry, split_map
from ._serve import HOST_OPTION, serve_until, stop_event

# `spans` is a lazy door: its names load when a subcommand runs, so `pipeline --help` stays light
TOKEN_ENV = "REWARDJUDGE_PIPELINE_TOKEN"  # the receiver's bearer token when --token is not given
_PIN_ARGUMENTS = [
    ("--scorer", {"action": "append", "required": True, "metavar": "SLUG[@VERSION]|FILE.json",
                  "help": "a registry scorer (current version, or @number / @id prefix) or a scorer JSON "
                          "file; repeat for several"}),
    REGISTRY_OPTION,
    ("--map", {"action": "append", "default": [], "metavar": "VAR=SOURCE",
               "help": "where a variable comes from: attr(\"key\"), transcript, input_messages, "
                       "output_messages, format_input_transcript(\"key\"), format_output_transcript(\"key\"), "
                       "literal:TEXT (given to every pinned scorer that reads VAR; unmapped: the span "
                       "attribute of its name, empty when absent)"}),
    ("--name", {"required": True, "help": "the pipeline's name"}),
    ("--filter", {"help": "span filter as JSON, e.g. '{\"span_name\": \"chat *\", \"attributes\": "
                          "{\"service.name\": \"support\"}}' (default: GenAI chat/agent spans)"}),
    ("--sampling-rate", {"type": float, "default": 1.0,
                         "help": "share of traces judged, decided from the trace id (default 1.0)"}),
    ("--output -o", {"required": True, "help": "the pipeline JSON file to write"}),
]
_JUDGE_ARGUMENTS = [  # the options of run and receive
    ("pipeline", {"help": "a judge-v1 pipeline JSON file (rewardjudge pipeline pin)"}),
    *judge_options("ask this model for every pinned version (default: each version's own config.model, by "
                   "name, on the --judge server)"),
    ("--output -o", {"required": True, "help": "output folder (results.jsonl; rerun to resume)"}),
    ("--keep-prompts", {"action": "store_true",
                        "help": "also keep each rendered judge prompt (it holds the span's text)"}),
    ("--retry-unscored", {"action": "store_true", "help": "judge again results left unscored"}),
    ("--batch-size", {"type": int, "default": 64, "help": "spans judged together (default 64)"}),
]
_RUN_ARGUMENTS = [
    ("spans", {"nargs": "+", "help": "OTLP files (.json/.jsonl, .pb/.binpb, optionally .gz)"}),
    ("--format", {"choices": ("json", "protobuf"),
                  "help": "the files' encoding (default: from each file's name, else its first bytes)"}),
]
_RECEIVE_ARGUMENTS = [
    HOST_OPTION,
    ("--port", {"type": int, "default": 4318, "help": "port (default 4318, OTLP/HTTP's)"}),
    ("--token", {"help": f"bearer token required on /v1/traces (default ${TOKEN_ENV})"}),
    ("--max-pending", {"type": int, "default": 10_000, "help": "selected spans waiting for the judge; beyond, "
                                                               "503 with Retry-After (default 10000)"}),
    ("--max-body", {"type": int, "default": 16 << 20, "help": "largest request body (default 16 MiB)"}),
    ("--drain-timeout", {"type": float, "default": 120.0,
                         "help": "seconds SIGTERM waits for queued spans to be judged (default 120)"}),
]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("pipeline", description=__doc__.format(semconv=spans.SEMCONV_VERSION),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_subcommands(p, "pipeline_command", {
        "pin": (_pin, "write a judge-v1 pipeline pinning scorer versions (copies of their configs)", _PIN_ARGUMENTS),
        "run": (lambda args: asyncio.run(_arun(args)), "judge the spans of OTLP files (JSON or protobuf)",
                _JUDGE_ARGUMENTS + _RUN_ARGUMENTS),
        "receive": (lambda args: asyncio.run(_areceive(args)),
                    "an OTLP/HTTP receiver (POST /v1/traces) judging what it receives",
                    _JUDGE_ARGUMENTS + _RECEIVE_ARGUMENTS)})


def _pin(args: argparse.Namespace) -> int:
    from ..evaluate._spec import scorer_from_file
    from ..scorers._builtins import BUILTIN_NAMES
    mapping = split_map(args.map, "product='attr(\"app.product\")'")
    configs = []
    for ref in args.scorer:
        if ref.endswith(".json") and os.path.exists(ref):
            scorer, version = scorer_from_file(ref), None
        else:
            slug, _, version = ref.partition("@")
            scorer = registry(args).get(slug)
            version = registry(args).version(slug, version or None).number
        wanted = set(scorer.variables) | BUILTIN_NAMES
        configs.append(spans.JudgeConfig.pin(scorer, {k: v for k, v in mapping.items() if k in wanted},
                                             version=version))
    unused = set(mapping) - {k for c in configs for k in c.mapping}
    if unused:
        raise ConfigError(f"--map names {sorted(unused)}, which no pinned scorer reads")
    flt = spans.SpanFilter.from_dict(json_value(args.filter, "--filter") if args.filter else None)
    pipeline = spans.PipelineConfig(args.name, configs, flt, args.sampling_rate)
    pipeline.save(args.output)
    for c in configs:
        print(f"pinned {c.label} version {c.scorer_version_number or '?'} ({c.scorer_version[:12]}) "
              f"mapping {c.binding.mapping}")
    print(f"wrote {args.output}")
    return 0


@contextlib.asynccontextmanager
async def _judges(args: argparse.Namespace, pipeline: Any):
    """The judge for each pinned version: one model per config.model on a URL server (not probed: a resumed run
    with nothing left asks the judge nothing), or one for all."""
    from ..models._discover import served_models
    if args.judge_model or judge_kind(args.judge) != "url":
        async with open_judge(args) as model:
            yield model, True
        return
    names = sorted({c.config.model for c in pipeline.pipeline_configs})
    served = served_models(args.judge, args.timeout)
    missing = [n for n in names if served is not None and n not in served]
    if missing:
        raise ConfigError(f"the judge at {args.judge} does not serve {missing} (the pinned versions' model); it "
                          f"lists {served}: pass --judge-model NAME to run them on another model")
    async with contextlib.AsyncExitStack() as stack:
        yield {n: await stack.enter_async_context(url_model(args, n)) for n in names}, False


def _report(run: Any) -> int:
    print(run)
    print(f"results: {run.output / 'results.jsonl'}")
    statuses = sum((t.statuses for t in run.tallies.values()), Counter())
    total = sum(statuses.values())
    if total and statuses.get("unscored", 0) == total:
        print("every result is unscored (the judge failed): fix it, then rerun with --retry-unscored", file=sys.stderr)
        return 3
    return 0


async def _arun(args: argparse.Namespace) -> int:
    pipeline = spans.PipelineConfig.load(args.pipeline)
    for path in args.spans:
        if not os.path.exists(path):
            raise ConfigError(f"no such spans file: {path}")
    read = chain.from_iterable(spans.read_otlp_file(path, args.format) for path in args.spans)
    async with _judges(args, pipeline) as (judge, override):
        run = await spans.arun_pipeline(pipeline, read, judge, output_dir=args.output, keep_prompts=args.keep_prompts,
                                  retry_unscored=args.retry_unscored, allow_model_override=override,
                                  batch_size=args.batch_size)
    return _report(run)


async def _areceive(args: argparse.Namespace) -> int:
    pipeline = spans.PipelineConfig.load(args.pipeline)
    token = args.token or os.environ.get(TOKEN_ENV) or None
    async with _judges(args, pipeline) as (judge, override):
        sj = spans.SpanJudge(pipeline, judge, output_dir=args.output, keep_prompts=args.keep_prompts,
                             retry_unscored=args.retry_unscored, allow_model_override=override)
        receiver = spans.OtlpReceiver(sj, token=token, max_body=args.max_body, max_pending=args.max_pending,
                                      batch_size=args.batch_size)
        try:  # draining judges the spans already received
            drained = await serve_until(stop_event(), receiver, args, lambda url: (
                f"{pipeline.name} receiving OTLP/HTTP at {url}/v1/traces (GenAI semconv v{spans.SEMCONV_VERSION})"
                f"{'; bearer token required' if token else ''}"), command="pipeline")
        finally:
            sj.close()
    _report(sj.run)
    return 0 if drained else 1
