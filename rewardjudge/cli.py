"""The ``rewardjudge`` command: each command's module registers it through ``add_parser(subparsers)``."""

from __future__ import annotations

import argparse
import copy
import importlib
import logging
import sys
from types import SimpleNamespace

from . import __version__
from .errors import RewardJudgeError

#: command -> (the module whose add_parser(subparsers) defines it, its one-line help). Only the
#: module of the command being run is imported: `rewardjudge --help` loads no grader stack.
_COMMANDS = {
    "demo": ("rewardjudge.commands._demo", "grade bundled structured completions on the embedded judge"),
    "eval": ("rewardjudge.commands._eval", "grade every row of a dataset (resumable)"),
    "compare": ("rewardjudge.commands._eval", "paired difference between two evaluation outputs (b - a)"),
    "plot": ("rewardjudge.evaluate._plot", "draw an evaluation run's judge health (statuses, latency, unscored "
                                           "by kind over rows) to a PNG"),
    "templates": ("rewardjudge.commands._templates", "compile, check and list the built-in prompt bundles"),
    "scorers": ("rewardjudge.commands._scorers", "create, inspect, version, try and delete scorers in a "
                                            "registry folder"),
    "catalog": ("rewardjudge.commands._catalog", "list the built-in judge criteria (or show one)"),
    "serve": ("rewardjudge.commands._serve", "serve a grader over HTTP (OpenRLHF /get_reward, /grade, /metrics)"),
    "pipeline": ("rewardjudge.commands._pipeline", "judge OpenTelemetry GenAI spans with pinned scorer versions "
                                           "(judge-v1; OTLP files or an OTLP/HTTP receiver; resumable)"),
}


def _chosen(argv: list[str]) -> str | None:
    """The command named in ``argv`` (the first word that is one), if any."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)  # its value
        elif word in _COMMANDS or not word.startswith("-"):
            return word if word in _COMMANDS else None
    return None


def _share_options(parser: argparse.ArgumentParser) -> None:
    """Copy ``parser``'s options into its subcommands' parsers (recursively), with a suppressed
    default so that a value given before the subcommand is kept."""
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


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``argv``, only the named command's module is imported."""
    p = argparse.ArgumentParser(prog="rewardjudge", description="LLM-as-judge reward graders.")
    p.add_argument("--version", action="version", version=f"rewardjudge {__version__}")
    p.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper, default=None,
                   help="print the library's log messages from this level on (default: warnings)")
    sub = p.add_subparsers(dest="command", required=True)
    chosen = None if argv is None else _chosen(argv)
    modules = dict.fromkeys(module for name, (module, _) in _COMMANDS.items() if argv is None or name == chosen)
    # what a module's add_parser gets: the subparsers, each command's help taken from _COMMANDS
    commands = SimpleNamespace(add_parser=lambda name, **kw: sub.add_parser(name, help=_COMMANDS[name][1], **kw))
    for module in modules:
        importlib.import_module(module).add_parser(commands)
    for name, (_, help_text) in _COMMANDS.items():
        if name not in sub.choices:  # listed for --help; never run (its module was not asked for)
            sub.add_parser(name, help=help_text)
    _share_options(p)
    return p


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
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
    except RewardJudgeError as exc:
        print(f"rewardjudge: error: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code or 0)
