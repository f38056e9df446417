"""``rewardjudge serve``: the subcommand (its help text is the package docstring)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Any

from ._server import RewardServer

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
    p.add_argument("--group-size", type=int, help="samples per prompt (OpenRLHF's --n_samples_per_prompt): "
                                                  "/get_reward waits for a prompt's whole group")
    p.add_argument("--group-timeout", type=float, default=30.0,
                   help="seconds a partial group waits for its other samples (default 30)")
    p.add_argument("--unscored", default="group_mean",
                   help="reward of a sample the judge could not score: group_mean (default; advantage 0) "
                        "or a number")
    p.add_argument("--unscored-fallback", type=float, default=0.0,
                   help="reward when a whole group is unscored (default 0.0: the group gets advantage 0)")
    p.add_argument("--batch-window", type=float, default=0.005,
                   help="seconds to gather concurrent samples into one batch (default 0.005)")
    p.add_argument("--max-batch", type=int, default=512)
    p.add_argument("--max-body", type=int, default=8 << 20, help="largest request body in bytes (default 8 MiB)")
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

    token = args.token or os.environ.get(TOKEN_ENV) or None
    async with _judge(args) as model:
        grader = resolve_grader(args.grader, model)
        server = RewardServer(grader, batch_window=args.batch_window, max_batch=args.max_batch,
                              group_size=args.group_size, group_timeout=args.group_timeout,
                              unscored=args.unscored, unscored_fallback=args.unscored_fallback,
                              token=token, max_body=args.max_body)
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


def _main(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))
