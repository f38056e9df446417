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
import multiprocessing
import os
import secrets
import signal
import sys
from typing import Any, AsyncIterator, Callable

from ..errors import ConfigError
from ..serve._groups import OPENRLHF_ESTIMATORS, check_estimator
from ._judge import add_arguments, judge_options, open_judge

# the grader and HTTP stacks are imported where a server starts, not here: `serve --help` stays light
TOKEN_ENV = "REWARDJUDGE_SERVE_TOKEN"
#: the listening address of serve and pipeline receive
HOST_OPTION = ("--host", {"default": "127.0.0.1",
                          "help": "address to listen on (default 127.0.0.1: this machine only)"})


def _share_or_off(text: str) -> float | None:
    return None if text.strip().lower() in ("off", "none") else float(text)


_OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("--grader", dict(required=True, help="grader SPEC (as for `rewardjudge eval`): demo, "
                                          "module:attr, file.py:attr, scorer.json, catalog key")),
    *judge_options("the model name on the judge server (default: its only model)"),
    HOST_OPTION,
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
    ("--max-samples-per-request", dict(type=int, help=(
        "most samples one request may carry; more is 413 (default: the server's, 8192; 0: no limit)"))),
    ("--body-timeout", dict(type=float, default=60.0, help="seconds a request body may take to arrive; slower is "
                                                           "408 (default 60)")),
    ("--header-timeout", dict(type=float, default=60.0, help="seconds a request's headers may take; slower (or an "
                                                             "idle keep-alive connection) is closed (default 60)")),
    ("--workers", dict(type=int, default=1, help="worker processes (default 1); above 1 a front on --port sends "
                                                 "each group's samples to one worker; /metrics sums them")),
    ("--drain-timeout", dict(type=float, default=120.0, help="seconds SIGTERM waits for requests in flight "
                                                             "(default 120)")),
]


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p, _OPTIONS).set_defaults(func=lambda args: asyncio.run(_serve(args)))


def _http_limits(args: argparse.Namespace, token: str | None) -> dict[str, Any]:
    """The HTTP options a server and the ``--workers`` front share."""
    from ..serve._http import DEFAULT_MAX_SAMPLES
    n = args.max_samples_per_request
    return dict(token=token, max_body=args.max_body, max_samples=DEFAULT_MAX_SAMPLES if n is None else n or None,
                body_timeout=args.body_timeout, header_timeout=args.header_timeout)


def stop_event(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> asyncio.Event:
    """An event ``signals`` set (default: SIGTERM or Ctrl-C)."""
    stop = asyncio.Event()
    for sig in signals:
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    return stop


async def serve_until(stop: asyncio.Event, service: Any, args: argparse.Namespace, announce: Callable[[str], str],
                      command: str = "serve") -> bool:
    """Listen on ``--host:--port``, say ``announce(url)``, serve until ``stop``, then drain (``--drain-timeout``);
    True when drained. Used by ``serve`` and ``pipeline receive``."""
    from ..serve._http import say
    try:
        url = await service.start(args.host, args.port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc}") from None
    say(announce(url), command)
    await stop.wait()
    say("draining: finishing the work in flight...", command)
    return await service.stop(args.drain_timeout)


def _stopped(drained: bool) -> int:
    from ..serve._http import say
    say(f"stopped ({'drained' if drained else 'drain timed out'})")
    return 0 if drained else 1


def _endpoints(token: str | None) -> str:
    return f"(POST /get_reward, POST /grade, GET /health, GET /metrics){'; bearer token required' if token else ''}"


async def _serve(args: argparse.Namespace) -> int:
    check_estimator(args.estimator)  # refused before the judge is asked anything
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if args.workers > 1:  # a front routing each group to one of N worker processes
        return await serve_front(args, token)
    async with server_from_args(args, token) as server:
        drained = await serve_until(stop_event(), server, args,
                                    lambda url: f"{server.grader.grader_key} at {url} {_endpoints(token)}")
    return _stopped(drained)


@contextlib.asynccontextmanager
async def server_from_args(args: Any, token: str | None) -> AsyncIterator[Any]:
    """The RewardServer the CLI arguments describe, its judge open (one process, or each ``--workers`` worker)."""
    from ..evaluate._spec import bind_spec, spec_target
    from ..serve import RewardServer, ServerOptions
    target = spec_target(args.grader)  # checked before a judge is asked or spawned
    options = {k: v for k, v in vars(args).items() if k in ServerOptions.model_fields}
    async with open_judge(args) as model:
        yield RewardServer(bind_spec(args.grader, target, model), **{**options, **_http_limits(args, token)})


class _Workers:
    """N worker processes (``multiprocessing``'s spawn: a fresh interpreter each), each given the CLI
    arguments and the front's token; each answers its URL on a pipe once it listens."""

    def __init__(self, args: argparse.Namespace, n: int):
        self.token = secrets.token_urlsafe(24)
        settings = {k: v for k, v in vars(args).items() if k != "func"}
        settings.update(workers=1, host="127.0.0.1", port=0)
        spawn = multiprocessing.get_context("spawn")
        self.pipes = [spawn.Pipe(duplex=False) for _ in range(n)]
        self.procs = [spawn.Process(target=_worker_main, args=(settings, self.token, send), name=f"worker {i}")
                      for i, (_, send) in enumerate(self.pipes)]
        self.urls: list[str] = []

    async def start(self) -> None:
        for proc, (_, send) in zip(self.procs, self.pipes):
            proc.start()
            send.close()  # the worker's end: a worker that dies unheard closes the pipe (EOFError)
        for proc, (receive, _) in zip(self.procs, self.pipes):
            try:
                self.urls.append(await asyncio.to_thread(receive.recv))
            except EOFError:
                await asyncio.to_thread(proc.join)
                raise ConfigError(f"{proc.name} did not start (exit {proc.exitcode}); its error is above") from None

    async def stop(self, timeout: float) -> bool:
        """SIGTERM every worker (each drains), then wait; True when all exited 0."""
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            if proc.pid is not None:
                await asyncio.to_thread(proc.join, timeout + 5)
            if proc.exitcode is None and proc.pid is not None:
                proc.kill()
                await asyncio.to_thread(proc.join)
        return all(proc.exitcode == 0 for proc in self.procs)


async def serve_front(args: argparse.Namespace, token: str | None) -> int:
    """``serve --workers N``: start the workers, then the front on ``--host:--port``; SIGTERM drains both."""
    from ..evaluate._spec import spec_target
    from ..serve._workers import WorkerFront
    spec_target(args.grader)  # a bad grader name is one error here, not one per worker
    stop = stop_event()
    workers = _Workers(args, args.workers)
    try:
        await workers.start()
        front = WorkerFront(workers.urls, workers.token, **_http_limits(args, token))
        drained = await serve_until(stop, front, args, lambda url: f"{front.grader_key} at {url} with "
                                                                   f"{args.workers} workers {_endpoints(token)}")
    finally:
        workers_ok = await workers.stop(args.drain_timeout)
    return _stopped(drained and workers_ok)


def _worker_main(settings: dict[str, Any], token: str, send: Any) -> None:
    """One worker process: serves until SIGTERM, or until the front is gone however it went."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the front, which stops the workers in order
    sys.exit(asyncio.run(_worker(argparse.Namespace(**settings), token, send)))


async def _worker(args: argparse.Namespace, token: str, send: Any) -> int:
    stop = stop_event((signal.SIGTERM,))
    asyncio.get_running_loop().add_reader(multiprocessing.parent_process().sentinel,  # type: ignore[union-attr]
                                          stop.set)
    async with server_from_args(args, token) as server:
        server.worker = True
        send.send(await server.start("127.0.0.1", 0))
        send.close()
        await stop.wait()
        drained = await server.stop(args.drain_timeout)
    return 0 if drained else 1
