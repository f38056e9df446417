"""``rewardjudge templates compile|check|list|show|translate`` (docs/templates.md). Exit codes: 0 all good;
1 the check found problems, or ``translate`` left keys out; 2 a usage error."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from ..errors import ConfigError
from ._judge import add_subcommands, judge_options, open_judge

# each command imports the template stack where it runs: `templates --help` must not load pybars3


def _root(args: argparse.Namespace):
    from ..templates._bundle import TEMPLATES_DIR
    root = Path(args.root) if args.root else TEMPLATES_DIR
    if not root.is_dir():
        raise ConfigError(f"--root {root} is not a folder")
    return root


def _compile(args: argparse.Namespace) -> int:
    from ..templates._bundle import compile_bundles
    reports = compile_bundles(_root(args), languages=args.language or None, write=not args.check)
    for r in reports:
        print(r.summary())
    if args.check and any(r.stale for r in reports):
        print("stale bundle(s): run `rewardjudge templates compile`", file=sys.stderr)
        return 1
    return 0


def _print_problems(root: Path) -> list[str]:
    from ..templates._bundle import check_bundles
    problems = check_bundles(root)
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return problems


def _check(args: argparse.Namespace) -> int:
    if _print_problems(_root(args)):
        return 1
    print("bundles are up to date and consistent")
    return 0


def _list(args: argparse.Namespace) -> int:
    from ..templates._prompts import default_library
    lib = default_library()
    udir = args.prompts
    languages = lib.languages(udir)
    have = {lang: set(lib.keys(lang, udir)) for lang in languages}
    for cls, method in lib.keys("en", udir):
        langs = " ".join(lang for lang in languages if (cls, method) in have[lang])
        print(f"{cls + '/' + method:<52} {langs}")
    print(f"{len(have['en'])} prompts; languages: {', '.join(languages)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from ..templates._prompts import prompt_source
    cls, sep, method = args.key.partition("/")
    if not sep or not cls or not method:
        raise ConfigError(f"give the prompt as GraderClass/method, got {args.key!r}")
    sys.stdout.write(prompt_source(cls, method, args.language, multimodal=args.multimodal,
                                   user_dir=args.prompts))
    return 0


def _translate(args: argparse.Namespace) -> int:
    from ..templates._bundle import bundle_path, load_bundle, merge_bundles, render_bundle
    from ..templates._prompts import DEFAULT_USER_DIR, _slug, default_library, user_dirs
    from ._translate import translate_bundle
    language = _slug(args.language)
    root = _root(args) if args.contribute else None
    # --contribute writes into a source checkout only (a pyproject.toml beside the package)
    if root is not None and (not (root.parent.parent / "pyproject.toml").is_file() or "site-packages" in root.parts):
        raise ConfigError(f"--contribute writes the translation's sources into a source checkout of "
                          f"rewardjudge (git clone, then pip install -e .); {root} is not one")
    out = Path(args.out) if args.out else (user_dirs() or [DEFAULT_USER_DIR])[0]
    lib = default_library()
    english: dict = {}
    for _, b in reversed(lib.chain("en")):
        english = merge_bundles(english, b)
    if args.api_key:
        os.environ["OPENAI_API_KEY"] = args.api_key  # read by the judge model this process builds

    async def run():  # the one judge factory: URL (checked first) or embedded
        async with open_judge(args, timeout=120.0, max_retries=3, structured_output="none") as model:
            return await translate_bundle(model, language, english, retries=args.retries,
                                          keys=args.key or None)

    bundle, report = asyncio.run(run())
    print(report.summary())
    if root is not None:
        return _contribute(bundle, language, root) or (1 if report.failed else 0)
    out.mkdir(parents=True, exist_ok=True)
    path = bundle_path(out, language)
    if path.is_file():
        old = load_bundle(path)
        bundle = {**old, **merge_bundles(old, bundle)}
    path.write_text(render_bundle(bundle), encoding="utf-8")
    print(f"wrote {path} (a draft: review it; it is read from {json.dumps(str(out))} by default, or "
          f"from $REWARDJUDGE_PROMPTS; use it with REWARDJUDGE_LANGUAGE={language})")
    return 1 if report.failed else 0


def _contribute(bundle: dict, language: str, root: Path) -> int:
    """Write ``bundle`` as ``.txt`` sources under ``prompts.<language>/``, compile and check; 1 on a problem."""
    from ..templates._bundle import bundle_entries, compile_bundles, entry_key
    base = root / f"prompts.{language}"
    sources = {**{f"_fragments/{name}": text for name, text in bundle.get("fragments", {}).items()},
               **{entry_key(s, c, m): text for s, c, m, text in bundle_entries(bundle)}}
    for key, text in sources.items():
        path = base / f"{key}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for r in compile_bundles(root, languages=[language]):
        print(r.summary())
    problems = _print_problems(root)
    print(f"contributed {len(sources)} source(s) under {base}; "
          + ("the check found problems" if problems else "the bundles check clean: review and commit them"))
    return 1 if problems else 0


_ROOT = ("--root", {"help": "a templates folder (default: the package's own)"})
_PROMPTS = ("--prompts", {"help": "a user bundle folder (default: $REWARDJUDGE_PROMPTS)"})


def add_parser(sub) -> None:
    add_subcommands(sub.add_parser("templates"), "templates_command", {
        "compile": (_compile, "compile the .txt prompt sources into bundle.<lang>.json", [
            ("--language", {"action": "append", "help": "only this language (repeatable)"}),
            ("--check", {"action": "store_true", "help": "write nothing; exit 1 if a bundle is stale"}), _ROOT]),
        "check": (_check, "exit 1 if a bundle is stale or a translation is inconsistent", [_ROOT]),
        "list": (_list, "list the built-in prompts and their languages", [_PROMPTS]),
        "show": (_show, "print one built-in prompt (fragments inlined)", [
            ("key", {"help": "GraderClass/method, e.g. CriterionJudgeGrader/system"}),
            ("--language", {"help": "e.g. fr (default: $REWARDJUDGE_LANGUAGE or en)"}),
            ("--multimodal", {"action": "store_true", "help": "the variant for image input, if any"}),
            _PROMPTS]),
        "translate": (_translate, "draft a translation bundle with a judge model", [
            ("language", {"help": "the target language slug, e.g. fr, hindi, pt_br"}),
            *judge_options("the model name (default: the server's only model)",
                           "an OpenAI-compatible server URL ending in /v1, or 'embedded'")[:2],
            ("--api-key", {"help": "the server's API key (default: $OPENAI_API_KEY)"}),
            ("--out", {"help": "the user bundle folder to write bundle.<LANG>.json into"}),
            ("--key", {"action": "append", "help": "only this key (repeatable), e.g. "
                                                   "CriterionJudgeGrader/system or _fragments/reply_as_json"}),
            ("--retries", {"type": int, "default": 1, "help": "re-asks per refused key (default 1)"}),
            ("--contribute", {"action": "store_true", "help": (
                "write the translation as .txt sources into this source checkout's prompts.<LANG>/ "
                "(not a user folder), compile its bundle and check them all")}),
            ("--root", {"help": "with --contribute: a templates folder (default: the package's own)"})])})
