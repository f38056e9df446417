"""A grader as an HTTP reward server (docs/serve.md).

    rewardjudge serve --grader demo --judge http://127.0.0.1:8000/v1 --port 5000 --estimator dr_grpo --group-size 8

POST /get_reward (OpenRLHF's --reward.remote_url; needs --estimator dr_grpo), POST /grade,
GET /health, GET /metrics. With --token (or $REWARDJUDGE_SERVE_TOKEN) every endpoint but /health
needs "Authorization: Bearer <token>". SIGTERM or Ctrl-C drains the requests in flight, then exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import sys
import threading
from typing import Any, AsyncIterator

from ..errors import ConfigError
from ..evaluate._spec import resolve_grader
from ..serve._groups import OPENRLHF_ESTIMATORS, check_estimator
from ..serve._http import DEFAULT_MAX_SAMPLES, serve_until, stop_event, stopped
from ..serve._server import RewardServer
from ..serve._workers import WorkerFront
from ._judge import JUDGE_HELP, open_judge

_WORKER_CMD = "from rewardjudge.commands._serve import worker_main; worker_main()"
TOKEN_ENV = "REWARDJUDGE_SERVE_TOKEN"


def _share_or_off(text: str) -> float | None:
    return None if text.strip().lower() in ("off", "none") else float(text)


_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--grader", dict(required=True, help="grader SPEC (as for `rewardjudge eval`): demo, "
                                          "module:attr, file.py:attr, scorer.json, catalog key")),
    ("--judge", dict(required=True, help=JUDGE_HELP)),
    ("--judge-model", dict(help="the model name on the judge server (default: its only model)")),
    ("--host", dict(default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")),
    ("--port", dict(type=int, default=5000)),
    ("--token", dict(help=f"bearer token required on every endpoint but /health (default ${TOKEN_ENV})")),
    ("--estimator", dict(choices=OPENRLHF_ESTIMATORS, help=(
        "OpenRLHF's --algo.advantage.estimator (/get_reward needs it). Only dr_grpo can give an unscored "
        "sample advantage 0 with its group's others unchanged (the others are refused), and only with the KL "
        "out of the reward (--algo.kl.use_loss or --algo.kl.init_coef 0) and no overlong/stop-properly penalty"))),
    ("--group-size", dict(type=int, help=(
        "samples per prompt (OpenRLHF's --rollout.n_samples_per_prompt; default: learned from the traffic). "
        "Give OpenRLHF ONE --reward.remote_url: several split every group across servers"))),
    ("--group-timeout", dict(type=float, default=60.0, help="seconds a prompt must be quiet before its group "
                             "counts as complete (its unscored samples flagged group_partial; default 60)")),
    ("--group-keep", dict(type=float, default=600.0, help="seconds a finished group's results are kept for late "
                                                          "samples and retries (default 600)")),
    ("--outage-threshold", dict(type=_share_or_off, default=0.5, help="stop when the unscored share of graded "
                                                                      "samples is over this (default 0.5; off: never)")),
    ("--outage-steps", dict(type=int, default=3, help="... in this many consecutive windows (default 3); then "
                                                      "every request gets 503 with the judge-health summary")),
    ("--outage-window", dict(type=int, default=64, help="graded samples per outage-guard step (default 64)")),
    ("--unscored", dict(default="group_mean", help="reward of a sample the judge could not score: group_mean "
                                                   "(default; advantage 0) or a number")),
    ("--unscored-fallback", dict(type=float, default=0.0, help="reward when a whole group is unscored (default "
                                                               "0.0: the group gets advantage 0)")),
    ("--batch-window", dict(type=float, default=0.005, help="seconds to gather concurrent samples into one batch "
                                                            "(default 0.005)")),
    ("--max-batch", dict(type=int, default=512)),
    ("--max-body", dict(type=int, default=8 << 20, help="largest request body in bytes (default 8 MiB)")),
    ("--max-samples-per-request", dict(type=int, default=DEFAULT_MAX_SAMPLES, help=(
        f"most samples one request may carry; more is 413 (default {DEFAULT_MAX_SAMPLES}; 0: no limit)"))),
    ("--body-timeout", dict(type=float, default=60.0, help="seconds a request body may take to arrive; slower is "
                                                           "408 (default 60)")),
    ("--header-timeout", dict(type=float, default=60.0, help="seconds a request's headers may take; slower (or an "
                                                             "idle keep-alive connection) is closed (default 60)")),
    ("--workers", dict(type=int, default=1, help="worker processes (default 1); above 1 a front on --port sends "
                                                 "each group's samples to one worker; /metrics sums them")),
    ("--drain-timeout", dict(type=float, default=120.0, help="seconds SIGTERM waits for requests in flight "
                                                             "(default 120)")),
    ("--concurrency", dict(type=int, help="judge requests in flight (default 64)")),
    ("--timeout", dict(type=float, default=60.0, help="seconds per judge request")),
    ("--max-retries", dict(type=int, default=3, help="retries per judge request")),
    ("--structured-output", dict(choices=["json_schema", "json_object", "none"], default="json_schema",
                                 help="how the reply schema is requested from a URL judge")),
)


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, options in _OPTIONS:
        p.add_argument(flag, **options)
    p.set_defaults(func=lambda args: asyncio.run(_serve(args)))


async def _serve(args: argparse.Namespace) -> int:
    check_estimator(args.estimator)  # refused before the judge is asked anything
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if args.workers > 1:  # a front routing each group to one of N worker processes
        return await serve_front(args, token)
    async with server_from_args(args, token) as server:
        drained = await serve_until(stop_event(), server, args, token,
                                    lambda url: f"{server.grader.grader_key} at {url}")
    return stopped(drained)


@contextlib.asynccontextmanager
async def server_from_args(args: Any, token: str | None) -> AsyncIterator[RewardServer]:
    """The RewardServer the CLI arguments describe, its judge open (one process, or each ``--workers`` worker)."""
    async with open_judge(args) as model:
        yield RewardServer(resolve_grader(args.grader, model), batch_window=args.batch_window,
                           max_batch=args.max_batch, group_size=args.group_size, group_timeout=args.group_timeout,
                           group_keep=args.group_keep, estimator=args.estimator,
                           outage_threshold=args.outage_threshold, outage_steps=args.outage_steps,
                           outage_window=args.outage_window, unscored=args.unscored,
                           unscored_fallback=args.unscored_fallback, token=token, max_body=args.max_body,
                           max_samples=args.max_samples_per_request or None, body_timeout=args.body_timeout,
                           header_timeout=args.header_timeout)


class _Workers:
    """N ``worker_main`` processes, each told the CLI arguments on its stdin."""

    def __init__(self, args: argparse.Namespace, n: int):
        self.token = secrets.token_urlsafe(24)
        settings = {k: v for k, v in vars(args).items() if k != "func"}
        settings.update(workers=1, host="127.0.0.1", port=0)
        self._line = json.dumps({"args": settings, "token": self.token}).encode() + b"\n"
        self.n = n
        self.procs: list[asyncio.subprocess.Process] = []
        self.urls: list[str] = []

    async def start(self) -> None:
        for _ in range(self.n):
            # a session of its own: Ctrl-C reaches the front only, which stops the workers in order
            proc = await asyncio.create_subprocess_exec(sys.executable, "-c", _WORKER_CMD, stdin=asyncio.subprocess.PIPE,
                                                        stdout=asyncio.subprocess.PIPE, start_new_session=True)
            self.procs.append(proc)
            proc.stdin.write(self._line)  # type: ignore[union-attr]
            await proc.stdin.drain()  # type: ignore[union-attr]
        for i, proc in enumerate(self.procs):
            line = "-"
            while line and not line.startswith("listening "):
                line = (await proc.stdout.readline()).decode()  # type: ignore[union-attr]
            if not line:
                raise ConfigError(f"worker {i} did not start (exit {await proc.wait()}); its error is above")
            self.urls.append(line.split(" ", 1)[1].strip())

    async def stop(self, timeout: float) -> bool:
        """SIGTERM every worker (each drains), then wait; True when all exited 0."""
        for proc in self.procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        ok = True
        for proc in self.procs:
            try:
                ok &= await asyncio.wait_for(proc.wait(), timeout + 5) == 0
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
                ok = False
        return ok


async def serve_front(args: argparse.Namespace, token: str | None) -> int:
    """``serve --workers N``: start the workers, then the front on ``--host:--port``; SIGTERM drains both."""
    stop = stop_event()
    workers = _Workers(args, args.workers)
    try:
        await workers.start()
        front = WorkerFront(workers.urls, workers.token, token=token, max_body=args.max_body,
                            max_samples=args.max_samples_per_request or None, body_timeout=args.body_timeout,
                            header_timeout=args.header_timeout)
        drained = await serve_until(stop, front, args, token,
                                    lambda url: f"{front.grader_key} at {url} with {args.workers} workers")
    finally:
        workers_ok = await workers.stop(args.drain_timeout)
    return stopped(drained and workers_ok)


def worker_main() -> None:
    """One worker: the CLI arguments and token come as a JSON line on stdin; it prints ``listening URL``
    and serves until SIGTERM or until its stdin closes (the front is gone)."""
    line = b""
    while not line.endswith(b"\n"):  # unbuffered: the lifeline thread reads the same fd later
        chunk = os.read(0, 65536)
        if not chunk:
            sys.exit("rewardjudge serve worker: no settings on stdin (started by serve --workers only)")
        line += chunk
    config = json.loads(line)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the front decides when a worker stops
    sys.exit(asyncio.run(_worker(argparse.Namespace(**config["args"]), config["token"])))


async def _worker(args: argparse.Namespace, token: str) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)

    def lifeline() -> None:  # stdin reaches end-of-file when the front exits, however it exits
        while os.read(0, 4096):
            pass
        try:
            loop.call_soon_threadsafe(stop.set)
        except RuntimeError:  # the loop has already closed: the worker is exiting anyway
            pass

    threading.Thread(target=lifeline, daemon=True).start()
    async with server_from_args(args, token) as server:
        server.worker = True
        url = await server.start("127.0.0.1", 0)
        print(f"listening {url}", flush=True)
        os.dup2(2, 1)  # nothing else on the pipe the front no longer reads: a full one would block us
        await stop.wait()
        drained = await server.stop(args.drain_timeout)
    return 0 if drained else 1
