"""``rewardjudge serve``: the subcommand (its help text is the package docstring)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from ..evaluate._cli import JUDGE_HELP
from ._groups import OPENRLHF_ESTIMATORS, check_estimator
from ._http import DEFAULT_MAX_SAMPLES, serve_until, stop_event, stopped
from ._server import server_from_args
from ._workers import serve_front

#: environment variable holding the bearer token when --token is not given
TOKEN_ENV = "REWARDJUDGE_SERVE_TOKEN"


def _share_or_off(text: str) -> float | None:
    return None if text.strip().lower() in ("off", "none") else float(text)


#: the subcommand's options: (flag, add_argument keywords)
_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--grader", dict(required=True, help="grader SPEC (as for `rewardjudge eval`): demo, "
                                          "module:attr, file.py:attr, scorer.json, catalog key")),
    ("--judge", dict(required=True, help=JUDGE_HELP)),
    ("--judge-model", dict(help="the model name on the judge server (default: its only model)")),
    ("--host", dict(default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")),
    ("--port", dict(type=int, default=5000)),
    ("--token", dict(help=f"bearer token required on every endpoint but /health (default ${TOKEN_ENV})")),
    ("--estimator", dict(
        choices=OPENRLHF_ESTIMATORS,
        help="OpenRLHF's --algo.advantage.estimator (trusted; /get_reward needs it). Only dr_grpo can "
             "give a sample the judge could not score advantage 0 with its group's others unchanged "
             "(OpenRLHF has no per-sample mask); the others are refused at start. dr_grpo stays exact "
             "only with the KL out of the reward (--algo.kl.use_loss or --algo.kl.init_coef 0) and no "
             "overlong / stop-properly reward penalty")),
    ("--group-size", dict(
        type=int,
        help="samples per prompt (OpenRLHF's --rollout.n_samples_per_prompt). A group is a prompt's "
             "samples; without this the size is learned from the traffic. A scored sample is answered "
             "at once, an unscored one when its group is complete. Give OpenRLHF ONE "
             "--reward.remote_url: several comma-separated URLs split every group across servers")),
    ("--group-timeout", dict(
        type=float, default=60.0,
        help="seconds a prompt must be quiet before its group counts as complete without reaching "
             "its size (its unscored samples are then flagged group_partial; default 60)")),
    ("--group-keep", dict(type=float, default=600.0, help="seconds a finished group's results are kept for late "
                                                          "samples and retries (default 600)")),
    ("--outage-threshold", dict(type=_share_or_off, default=0.5, help="stop when the unscored share of graded "
                                                                      "samples is over this (default 0.5; off: never)")),
    ("--outage-steps", dict(
        type=int, default=3,
        help="... in this many consecutive windows (default 3); stopped, every request gets 503 with "
             "the judge-health summary, and OpenRLHF's run stops on the missing reward")),
    ("--outage-window", dict(type=int, default=64, help="graded samples per outage-guard step (default 64)")),
    ("--unscored", dict(default="group_mean", help="reward of a sample the judge could not score: group_mean "
                                                   "(default; advantage 0) or a number")),
    ("--unscored-fallback", dict(type=float, default=0.0, help="reward when a whole group is unscored (default "
                                                               "0.0: the group gets advantage 0)")),
    ("--batch-window", dict(type=float, default=0.005, help="seconds to gather concurrent samples into one batch "
                                                            "(default 0.005)")),
    ("--max-batch", dict(type=int, default=512)),
    ("--max-body", dict(type=int, default=8 << 20, help="largest request body in bytes (default 8 MiB)")),
    ("--max-samples-per-request", dict(
        type=int, default=DEFAULT_MAX_SAMPLES,
        help=f"most samples one request may carry; more is 413 (default {DEFAULT_MAX_SAMPLES}; 0: no limit)")),
    ("--body-timeout", dict(type=float, default=60.0, help="seconds a request body may take to arrive; slower is "
                                                           "408 (default 60)")),
    ("--header-timeout", dict(
        type=float, default=60.0,
        help="seconds a request's headers may take from the connection opening or the previous "
             "response on it; slower (or an idle keep-alive connection) is closed (default 60)")),
    ("--workers", dict(
        type=int, default=1,
        help="worker processes (default 1). Above 1, a front process listens on --port and sends "
             "each group's samples (a /get_reward prompt, a /grade group or prompt) to one worker on "
             "an internal loopback port; /metrics is summed over the workers")),
    ("--drain-timeout", dict(type=float, default=120.0, help="seconds SIGTERM waits for requests in flight "
                                                             "(default 120)")),
    ("--concurrency", dict(type=int, help="judge requests in flight (default 64)")),
    ("--timeout", dict(type=float, default=60.0, help="seconds per judge request")),
    ("--max-retries", dict(type=int, default=3, help="retries per judge request")),
    ("--structured-output", dict(choices=["json_schema", "json_object", "none"], default="json_schema",
                                 help="how the reply schema is requested from a URL judge")),
)


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", description=sys.modules[__package__].__doc__,  # the package's docstring
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, options in _OPTIONS:
        p.add_argument(flag, **options)
    p.set_defaults(func=_main)


async def _serve(args: argparse.Namespace) -> int:
    check_estimator(args.estimator)  # refused before the judge is asked anything
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if args.workers > 1:  # a front routing each group to one of N worker processes
        return await serve_front(args, token)
    async with server_from_args(args, token) as server:
        drained = await serve_until(stop_event(), server, args, token,
                                    lambda url: f"{server.grader.grader_key} at {url}")
    return stopped(drained)


def _main(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))
