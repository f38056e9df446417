"""``rewardjudge serve``: a grader as an HTTP reward server.

    rewardjudge serve --grader demo --judge http://127.0.0.1:8000/v1 --port 5000 --group-size 8

* ``POST /get_reward``: OpenRLHF's ``--remote_rm_url`` contract.
* ``POST /grade``: samples in, Grade records out.
* ``GET /health``, ``GET /metrics`` (Prometheus text).

It listens on 127.0.0.1 unless ``--host`` says otherwise; with ``--token``
(or ``$REWARDJUDGE_SERVE_TOKEN``) every endpoint but ``/health`` needs
``Authorization: Bearer <token>``. SIGTERM (or Ctrl-C) stops accepting,
answers the requests in flight, then exits.

``openrlhf_reward_func(spec, judge=URL)`` is the same grading as OpenRLHF's
``.py`` form: ``reward_func(queries, prompts, labels)``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from typing import Any, Sequence

from ..errors import ConfigError
from ._samples import DEFAULT_EOS, openrlhf_thread, sample_thread, split_chat_markup
from ._server import RewardServer, group_rewards

__all__ = ["DEFAULT_EOS", "RewardServer", "TOKEN_ENV", "add_parser", "group_rewards", "openrlhf_reward_func",
           "openrlhf_thread", "sample_thread", "split_chat_markup"]

#: environment variable holding the bearer token when --token is not given
TOKEN_ENV = "REWARDJUDGE_SERVE_TOKEN"


def add_parser(subparsers: Any) -> None:
    from ..evaluate._cli import JUDGE_HELP

    p = subparsers.add_parser("serve", help="serve a grader over HTTP (OpenRLHF /get_reward, /grade, /metrics)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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


class _OpenRLHFRewardFunc:
    """``reward_func(queries, prompts, labels)`` for OpenRLHF's ``.py`` form;
    picklable (the grader is built on first use in the process that calls it)."""

    def __init__(self, spec: Any, judge: str | None, judge_model: str | None, options: dict[str, Any]):
        self.spec, self.judge, self.judge_model, self.options = spec, judge, judge_model, options
        self._state: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "judge": self.judge, "judge_model": self.judge_model, "options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["spec"], state["judge"], state["judge_model"], state["options"])

    def _ensure(self):
        from .._sync import LoopThread

        with self._lock:
            if self._state is None:
                runner = LoopThread("rewardjudge-openrlhf")
                grader = runner.run(_build(self.spec, self.judge, self.judge_model))
                server = RewardServer(grader, **self.options)
                runner.run(server._on_startup(None))  # the batching window, on the runner's loop
                self._state = (runner, server)
            return self._state

    def __call__(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict[str, Any]:
        runner, server = self._ensure()
        n = len(queries)
        labels = [None] * n if labels is None else list(labels)
        prompts = [None] * n if prompts is None else list(prompts)
        if len(prompts) != n or len(labels) != n:
            raise ConfigError(f"reward_func got {n} queries, {len(prompts)} prompts, {len(labels)} labels")
        threads = [openrlhf_thread(q, p, lab, eos=server.eos, where=f"queries[{i}]")
                   for i, (q, p, lab) in enumerate(zip(queries, prompts, labels))]
        keys = [p if p is not None else q for p, q in zip(prompts, queries)]
        if server._groups is not None:
            async def grouped():
                return await asyncio.gather(*(server._groups.add(k, t) for k, t in zip(keys, threads)))
            results = runner.run(grouped())
        else:
            results = runner.run(server.grade_group(threads, keys))
        rewards = [r for _, r in results]
        return {"rewards": rewards, "scores": rewards,
                "extra_logs": {"unscored": [float(g.status == "unscored") for g, _ in results],
                               "penalized": [float(g.status == "penalized") for g, _ in results]}}


async def _build(spec: Any, judge: str | None, judge_model: str | None):
    from ..rl._verl_adapter import build_grader

    return build_grader(spec, judge, judge_model)


def openrlhf_reward_func(spec: Any, *, judge: str | None = None, judge_model: str | None = None,
                         **options: Any) -> _OpenRLHFRewardFunc:
    """OpenRLHF's ``.py`` reward form: put ``reward_func =
    openrlhf_reward_func("demo", judge="http://127.0.0.1:8000/v1")`` in a
    file and pass its path as ``--remote_rm_url``. OpenRLHF calls it from a
    thread with one sample; it answers like ``/get_reward`` (rewards,
    scores, extra_logs) with the same unscored handling. ``options`` are
    ``RewardServer``'s (``group_size``, ``unscored``...).
    """
    return _OpenRLHFRewardFunc(spec, judge, judge_model, dict(options))
