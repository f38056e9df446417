"""The ``rewardjudge`` command."""

from __future__ import annotations

import argparse
import sys


def _demo(args: argparse.Namespace) -> int:
    from .demo import main as demo_main

    demo_main(args.judge_url, args.judge_model, args.eval)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rewardjudge", description="LLM-as-judge reward graders.")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="grade bundled structured completions on the embedded judge")
    d.add_argument("--judge-url", help="an OpenAI-compatible server (…/v1) instead of the embedded judge")
    d.add_argument("--judge-model", help="the model name on that server")
    d.add_argument("--eval", action="store_true", help="evaluation penalties (0.0) instead of training (-1.0)")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        from .errors import RewardJudgeError

        if isinstance(exc, RewardJudgeError):
            print(f"rewardjudge: error: {exc}", file=sys.stderr)
            code = 2
        else:
            raise
    sys.exit(code)
