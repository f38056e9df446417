"""The ``rewardjudge`` command.

Each subcommand lives beside what it drives and registers itself through an
``add_parser(subparsers)`` function listed in ``_COMMAND_MODULES``.

Options are accepted before or after the subcommand that defines them: the
global ones (``--log-level``) anywhere, and a command group's own (``scorers
--registry DIR``) after any of its subcommands too (``rewardjudge scorers
create f.json --registry DIR``). ``build_parser`` copies each parser's
options into the parsers below it, unless a subcommand has an option of the
same name (``scorers show --version`` stays the scorer's version;
``rewardjudge --version`` is the package's).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import logging
import sys

# modules that define add_parser(subparsers); each parser sets func=callable(args) -> exit code
_COMMAND_MODULES = [
    "rewardjudge.demo",
    "rewardjudge.evaluate._cli",
    "rewardjudge.templates._cli",
    "rewardjudge.scorers._cli",
    "rewardjudge.catalog",
    "rewardjudge.serve._cli",
]


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _share_options(parser: argparse.ArgumentParser) -> None:
    """Copy ``parser``'s options into its subcommands' parsers (recursively),
    with a suppressed default so that a value given before the subcommand
    is kept when the option is not repeated after it."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for child in set(action.choices.values()):
            for option in parser._actions:
                if (not option.option_strings or isinstance(option, (argparse._HelpAction,
                                                                     argparse._VersionAction))
                        or any(s in child._option_string_actions for s in option.option_strings)):
                    continue
                shared = copy.copy(option)
                shared.default = argparse.SUPPRESS
                shared.required = False
                child._add_action(shared)
            _share_options(child)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="rewardjudge", description="LLM-as-judge reward graders.")
    p.add_argument("--version", action="version", version=f"rewardjudge {__version__}")
    p.add_argument("--log-level", choices=_LOG_LEVELS, type=str.upper, default=None,
                   help="print the library's log messages from this level on (default: warnings)")
    sub = p.add_subparsers(dest="command", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    _share_options(p)
    return p


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "log_level", None):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("rewardjudge: %(levelname)s: %(message)s"))
        logger = logging.getLogger("rewardjudge")
        logger.addHandler(handler)
        logger.setLevel(args.log_level)
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
