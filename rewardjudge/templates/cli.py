"""``rewardjudge templates compile|check|list|show``: the built-in prompt bundles.

Exit codes: 0 done / all good; 1 the check found problems (stale bundle,
translation using variables its English prompt lacks); 2 a usage error
(bad source layout, invalid template, unknown key).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError


def _root(args: argparse.Namespace):
    from pathlib import Path

    from .bundle import TEMPLATES_DIR

    root = Path(args.root) if args.root else TEMPLATES_DIR
    if not root.is_dir():
        raise ConfigError(f"--root {root} is not a folder")
    return root


def _compile(args: argparse.Namespace) -> int:
    from .bundle import compile_bundles

    reports = compile_bundles(_root(args), languages=args.language or None, write=not args.check)
    for r in reports:
        print(r.summary())
    if args.check and any(r.stale for r in reports):
        print("stale bundle(s): run `rewardjudge templates compile`", file=sys.stderr)
        return 1
    return 0


def _check(args: argparse.Namespace) -> int:
    from .bundle import check_bundles

    problems = check_bundles(_root(args))
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    if not problems:
        print("bundles are up to date and consistent")
    return 1 if problems else 0


def _list(args: argparse.Namespace) -> int:
    from .prompts import default_library

    lib = default_library()
    languages = lib.languages()
    have = {lang: set(lib.keys(lang)) for lang in languages}
    for cls, method in lib.keys("en"):
        langs = " ".join(lang for lang in languages if (cls, method) in have[lang])
        print(f"{cls + '/' + method:<52} {langs}")
    print(f"{len(have['en'])} prompts; languages: {', '.join(languages)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from .prompts import prompt_source

    cls, sep, method = args.key.partition("/")
    if not sep or not cls or not method:
        raise ConfigError(f"give the prompt as GraderClass/method, got {args.key!r}")
    sys.stdout.write(prompt_source(cls, method, args.language))
    return 0


def add_parser(sub) -> None:
    """The ``rewardjudge templates`` command group."""
    p = sub.add_parser("templates", help="compile, check and list the built-in prompt bundles")
    tsub = p.add_subparsers(dest="templates_command", required=True)
    c = tsub.add_parser("compile", help="compile the .txt prompt sources into bundle.<lang>.json")
    c.add_argument("--language", action="append", help="only this language (repeatable)")
    c.add_argument("--check", action="store_true", help="write nothing; exit 1 if a bundle is stale")
    c.add_argument("--root", help="a templates folder (default: the package's own)")
    c.set_defaults(func=_compile)
    k = tsub.add_parser("check", help="exit 1 if a bundle is stale or a translation is inconsistent")
    k.add_argument("--root", help="a templates folder (default: the package's own)")
    k.set_defaults(func=_check)
    ls = tsub.add_parser("list", help="list the built-in prompts and their languages")
    ls.set_defaults(func=_list)
    s = tsub.add_parser("show", help="print one built-in prompt")
    s.add_argument("key", help="GraderClass/method, e.g. CriterionJudgeGrader/system")
    s.add_argument("--language", help="e.g. fr (default: $REWARDJUDGE_LANGUAGE or en)")
    s.set_defaults(func=_show)
