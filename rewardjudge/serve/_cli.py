"""``rewardjudge serve``: the subcommand (its help text is the package docstring)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Any

from ._groups import OPENRLHF_ESTIMATORS, check_estimator
from ._server import DEFAULT_MAX_SAMPLES, build_server

#: environment variable holding the bearer token when --token is not given
TOKEN_ENV = "REWARDJUDGE_SERVE_TOKEN"


def add_parser(subparsers: Any) -> None:
    from ..evaluate._cli import JUDGE_HELP

    p = subparsers.add_parser("serve", description=sys.modules[__package__].__doc__,  # the package's docstring
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grader", required=True, help="grader SPEC (as for `rewardjudge eval`): demo, "
                                                   "module:attr, file.py:attr, scorer.json, catalog key")
    p.add_argument("--judge", required=True, help=JUDGE_HELP)
    p.add_argument("--judge-model", help="the model name on the judge server (default: its only model)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--token", help=f"bearer token required on every endpoint but /health (default ${TOKEN_ENV})")
    p.add_argument("--estimator", choices=OPENRLHF_ESTIMATORS,
                   help="OpenRLHF's --algo.advantage.estimator (trusted; /get_reward needs it). Only dr_grpo can "
                        "give a sample the judge could not score advantage 0 with its group's others unchanged "
                        "(OpenRLHF has no per-sample mask); the others are refused at start. dr_grpo stays exact "
                        "only with the KL out of the reward (--algo.kl.use_loss or --algo.kl.init_coef 0) and no "
                        "overlong / stop-properly reward penalty")
    p.add_argument("--group-size", type=int,
                   help="samples per prompt (OpenRLHF's --rollout.n_samples_per_prompt). A group is a prompt's "
                        "samples; without this the size is learned from the traffic. A scored sample is answered "
                        "at once, an unscored one when its group is complete. Give OpenRLHF ONE "
                        "--reward.remote_url: several comma-separated URLs split every group across servers")
    p.add_argument("--group-timeout", type=float, default=60.0,
                   help="seconds a prompt must be quiet before its group counts as complete without reaching "
                        "its size (its unscored samples are then flagged group_partial; default 60)")
    p.add_argument("--group-keep", type=float, default=600.0,
                   help="seconds a finished group's results are kept for late samples and retries (default 600)")
    p.add_argument("--outage-threshold", type=_share_or_off, default=0.5,
                   help="stop when the unscored share of graded samples is over this (default 0.5; off: never)")
    p.add_argument("--outage-steps", type=int, default=3,
                   help="... in this many consecutive windows (default 3); stopped, every request gets 503 with "
                        "the judge-health summary, and OpenRLHF's run stops on the missing reward")
    p.add_argument("--outage-window", type=int, default=64,
                   help="graded samples per outage-guard step (default 64)")
    p.add_argument("--unscored", default="group_mean",
                   help="reward of a sample the judge could not score: group_mean (default; advantage 0) "
                        "or a number")
    p.add_argument("--unscored-fallback", type=float, default=0.0,
                   help="reward when a whole group is unscored (default 0.0: the group gets advantage 0)")
    p.add_argument("--batch-window", type=float, default=0.005,
                   help="seconds to gather concurrent samples into one batch (default 0.005)")
    p.add_argument("--max-batch", type=int, default=512)
    p.add_argument("--max-body", type=int, default=8 << 20, help="largest request body in bytes (default 8 MiB)")
    p.add_argument("--max-samples-per-request", type=int, default=DEFAULT_MAX_SAMPLES,
                   help=f"most samples one request may carry; more is 413 (default {DEFAULT_MAX_SAMPLES}; 0: no limit)")
    p.add_argument("--body-timeout", type=float, default=60.0,
                   help="seconds a request body may take to arrive; slower is 408 (default 60)")
    p.add_argument("--header-timeout", type=float, default=60.0,
                   help="seconds a request's headers may take from the connection opening or the previous "
                        "response on it; slower (or an idle keep-alive connection) is closed (default 60)")
    p.add_argument("--workers", type=int, default=1,
                   help="worker processes (default 1). Above 1, a front process listens on --port and sends "
                        "each group's samples (a /get_reward prompt, a /grade group or prompt) to one worker on "
                        "an internal loopback port; /metrics is summed over the workers")
    p.add_argument("--drain-timeout", type=float, default=120.0,
                   help="seconds SIGTERM waits for requests in flight (default 120)")
    p.add_argument("--concurrency", type=int, help="judge requests in flight (default 64)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per judge request")
    p.add_argument("--max-retries", type=int, default=3, help="retries per judge request")
    p.add_argument("--structured-output", choices=["json_schema", "json_object", "none"],
                   default="json_schema", help="how the reply schema is requested from a URL judge")
    p.set_defaults(func=_main)


async def _serve(args: argparse.Namespace) -> int:
    from ..evaluate._cli import _judge
    from ..evaluate._spec import resolve_grader

    check_estimator(args.estimator)  # refused before the judge is asked anything
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if args.workers > 1:  # a front routing each group to one of N worker processes
        from ._workers import serve_front

        return await serve_front(args, token)
    async with _judge(args) as model:
        grader = resolve_grader(args.grader, model)
        server = build_server(args, grader, token)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        url = await server.start(args.host, args.port)
        print(f"rewardjudge serve: {grader.grader_key} at {url} (POST /get_reward, POST /grade, GET /health, "
              f"GET /metrics){'; bearer token required' if token else ''}", file=sys.stderr, flush=True)
        await stop.wait()
        print("rewardjudge serve: draining requests in flight...", file=sys.stderr, flush=True)
        drained = await server.stop(args.drain_timeout)
        print(f"rewardjudge serve: stopped ({'drained' if drained else 'drain timed out'})",
              file=sys.stderr, flush=True)
    return 0 if drained else 1


def _share_or_off(text: str) -> float | None:
    return None if text.strip().lower() in ("off", "none") else float(text)


def _main(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))
