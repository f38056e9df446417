"""``rewardjudge demo``: grade the bundled completions (``rewardjudge/demo.py``), on the embedded judge by default."""

from __future__ import annotations

import argparse
import asyncio

from ._judge import JUDGE_HELP, add_arguments, judge_options, open_judge


def _run(args: argparse.Namespace) -> int:
    from ..demo import run_demo   # here, not at import: `demo --help` must not load the grader stack

    async def demo() -> None:
        async with open_judge(args) as judge:
            await run_demo(judge, args.eval)
    asyncio.run(demo())
    return 0


def add_parser(sub) -> None:
    """The ``rewardjudge demo`` subcommand: ``--judge`` as ``eval`` and ``serve`` take it, ``embedded`` by default."""
    d = sub.add_parser("demo")
    add_arguments(d, judge_options("the model name on a URL judge (default: the one it serves)",
                                   JUDGE_HELP + "; default: embedded", required=False)[:3])
    d.set_defaults(judge="embedded")
    d.add_argument("--eval", action="store_true", help="evaluation penalties (0.0) instead of training (-1.0)")
    d.set_defaults(func=_run)
