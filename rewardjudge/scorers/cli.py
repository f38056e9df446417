"""``rewardjudge scorers create|show|versions|update|list`` over a scorer registry folder.

The registry folder is ``--registry DIR``, else ``$REWARDJUDGE_SCORERS``,
else ``./scorers``. A scorer file for ``create``/``update`` is JSON in the
shape ``{"name", "description"?, "config": {"model", "prompt_template",
"output_spec", "params"?, "template_engine"?}}`` (``-`` reads stdin);
``--template FILE`` replaces ``config.prompt_template`` with a file's text.

Exit codes: 0 done; 2 an invalid scorer, config or file (the message says
what to fix); 3 no such scorer or version.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError

REGISTRY_ENV = "REWARDJUDGE_SCORERS"


def _registry(args: argparse.Namespace):
    from .registry import ScorerRegistry

    return ScorerRegistry(args.registry or os.environ.get(REGISTRY_ENV) or "scorers")


def _read_json(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def _print_scorer(scorer, as_json: bool) -> None:
    if as_json:
        print(json.dumps(scorer.to_dict(), indent=2, ensure_ascii=False))
        return
    c = scorer.config
    print(f"{scorer.slug}  {scorer.name}")
    if scorer.description:
        print(f"  description: {scorer.description}")
    print(f"  version:     {scorer.version_number} ({scorer.version})")
    print(f"  model:       {c.model}")
    print(f"  engine:      {c.template_engine}")
    print(f"  output:      {c.output_spec.describe()}")
    print(f"  params:      {json.dumps(c.params.to_dict()) if c.params.to_dict() else '(server defaults)'}")
    print(f"  variables:   {', '.join(scorer.variables) or '(none)'}")


def _guard(fn):
    """Map 'not found' to exit code 3; other config errors reach cli.main (exit 2)."""
    def run(args: argparse.Namespace) -> int:
        from .registry import ScorerNotFound

        try:
            return fn(args)
        except ScorerNotFound as exc:
            print(f"rewardjudge: not found: {exc}", file=sys.stderr)
            return 3
    return run


def _file_payload(args: argparse.Namespace) -> dict[str, Any]:
    data = _read_json(args.file) if args.file else {}
    if not isinstance(data, dict):
        raise ConfigError(f"{args.file} must hold a JSON object with 'name' and 'config'")
    if args.template:
        config = data.get("config")
        if not isinstance(config, dict):
            raise ConfigError("--template needs a file whose 'config' is an object to put it in")
        data["config"] = {**config, "prompt_template": _read_text(args.template)}
    if args.name is not None:
        data["name"] = args.name
    if args.description is not None:
        data["description"] = args.description
    return data


@_guard
def _create(args: argparse.Namespace) -> int:
    if not args.file:
        raise ConfigError("scorers create needs a scorer JSON file (or - for stdin)")
    scorer = _registry(args).create_from_dict(_file_payload(args))
    _print_scorer(scorer, args.json)
    return 0


@_guard
def _update(args: argparse.Namespace) -> int:
    data = _file_payload(args)
    registry = _registry(args)
    before = registry.get(args.slug)
    scorer = registry.update(args.slug, name=data.get("name"), description=data.get("description"),
                             config=data.get("config"))
    _print_scorer(scorer, args.json)
    if not args.json:
        made = scorer.version != before.version and len(scorer.history) > len(before.history)
        print("  -> new version" if made else "  -> no new version (config unchanged)")
    return 0


@_guard
def _show(args: argparse.Namespace) -> int:
    registry = _registry(args)
    scorer = registry.get(args.slug)
    if args.version is not None:
        v = registry.version(args.slug, args.version)
        from .scorer import Scorer

        scorer = Scorer(scorer.name, v.config, scorer.description, slug=scorer.slug,
                        history=scorer.history, created_at=scorer.created_at,
                        updated_at=scorer.updated_at)
    _print_scorer(scorer, args.json)
    if args.template and not args.json:
        print("  template:\n" + "\n".join("    " + line for line in
                                          scorer.config.prompt_template.splitlines()))
    return 0


@_guard
def _versions(args: argparse.Namespace) -> int:
    registry = _registry(args)
    scorer = registry.get(args.slug)
    versions = registry.versions(args.slug)
    if args.json:
        print(json.dumps([v.to_dict() for v in versions], indent=2, ensure_ascii=False))
        return 0
    for v in versions:
        mark = "*" if v.id == scorer.version and v.number == scorer.version_number else " "
        print(f"{mark} {v.number:>3}  {v.id[:16]}  {v.created_at}  {v.config.model}  "
              f"{v.config.output_spec.describe()}")
    return 0


@_guard
def _list(args: argparse.Namespace) -> int:
    scorers = _registry(args).find(args.query) if args.query else _registry(args).list()
    if args.json:
        print(json.dumps([s.to_dict() for s in scorers], indent=2, ensure_ascii=False))
        return 0
    for s in scorers:
        print(f"{s.slug:<40} v{s.version_number:<3} {s.name}")
    if not scorers:
        print("(no scorers)")
    return 0


def add_parser(sub) -> None:
    """The ``rewardjudge scorers`` command group."""
    p = sub.add_parser("scorers", help="create, inspect and version scorers in a registry folder")
    p.add_argument("--registry", help=f"registry folder (default: ${REGISTRY_ENV} or ./scorers)")
    ssub = p.add_subparsers(dest="scorers_command", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--json", action="store_true", help="print JSON")

    c = ssub.add_parser("create", help="save a new scorer from a JSON file (a new slug every time)")
    c.add_argument("file", nargs="?", help="scorer JSON: {name, description?, config}; - for stdin")
    c.add_argument("--name", help="override the file's name")
    c.add_argument("--description", help="override the file's description")
    c.add_argument("--template", help="read config.prompt_template from this file")
    common(c)
    c.set_defaults(func=_create)

    u = ssub.add_parser("update", help="change name/description/config; a new config hash makes a version")
    u.add_argument("slug")
    u.add_argument("file", nargs="?", help="scorer JSON with the fields to change; - for stdin")
    u.add_argument("--name")
    u.add_argument("--description")
    u.add_argument("--template", help="read config.prompt_template from this file")
    common(u)
    u.set_defaults(func=_update)

    s = ssub.add_parser("show", help="show a scorer (its current version, or --version)")
    s.add_argument("slug")
    s.add_argument("--version", help="a version number, id or id prefix (8+ hex)")
    s.add_argument("--template", action="store_true", help="also print the prompt template")
    common(s)
    s.set_defaults(func=_show)

    v = ssub.add_parser("versions", help="list a scorer's versions (* = current)")
    v.add_argument("slug")
    common(v)
    v.set_defaults(func=_versions)

    ls = ssub.add_parser("list", help="list scorers (optionally those whose name contains QUERY)")
    ls.add_argument("query", nargs="?")
    common(ls)
    ls.set_defaults(func=_list)
