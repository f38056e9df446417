"""The ``rewardjudge`` command.

Each subcommand lives beside what it drives and registers itself through an
``add_parser(subparsers)`` function listed in ``_COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# modules that define add_parser(subparsers); each parser sets func=callable(args) -> exit code
_COMMAND_MODULES = [
    "rewardjudge.demo",
    "rewardjudge.evaluate.cli",
    "rewardjudge.templates.cli",
    "rewardjudge.scorers.cli",
    "rewardjudge.catalog",
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rewardjudge", description="LLM-as-judge reward graders.")
    sub = p.add_subparsers(dest="command", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
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
    sys.exit(code or 0)
