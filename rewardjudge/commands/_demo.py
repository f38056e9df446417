"""``rewardjudge demo``: grade the bundled completions (``rewardjudge/demo.py``) on the embedded judge."""

from __future__ import annotations

import argparse


def _run(args: argparse.Namespace) -> int:
    from ..demo import main   # here, not at import: `demo --help` must not load the grader stack
    main(args.judge_url, args.judge_model, args.eval)
    return 0


def add_parser(sub) -> None:
    """The ``rewardjudge demo`` subcommand."""
    d = sub.add_parser("demo")
    d.add_argument("--judge-url", help="an OpenAI-compatible server (.../v1) instead of the embedded judge")
    d.add_argument("--judge-model", help="the model name on that server")
    d.add_argument("--eval", action="store_true", help="evaluation penalties (0.0) instead of training (-1.0)")
    d.set_defaults(func=_run)
