"""``rewardjudge catalog [KEY] [--json] [--prompt]``: the built-in judge criteria (``rewardjudge/catalog.py``)."""

from __future__ import annotations

import json

from ..errors import ConfigError


def _cli(args) -> int:
    try:
        return _show(args)
    except ConfigError as exc:
        if not args.json:
            raise
        # the catalog document's error object: {code, message, status: "error"}
        code = "not_found" if str(exc).startswith("unknown criterion") else "invalid_value"
        print(json.dumps({"code": code, "message": str(exc), "status": "error"}, ensure_ascii=False))
        return 2


def _show(args) -> int:
    from .. import catalog   # here, not at import: `catalog --help` must not load the grader stack
    if args.key:
        c = catalog.get(args.key, args.language)
        if args.json:
            print(json.dumps(c.to_dict(), indent=2, ensure_ascii=False))
        else:
            print(f"{c.key}: {c.name}\n  {c.description}\n  requires: "
                  f"{', '.join(c.requires) or '(nothing beyond the conversation)'}\n\n{c.criterion}")
            if args.prompt:
                print("\n--- default system prompt template ---\n"
                      + catalog.default_system_prompt_template(args.language))
        return 0
    if args.json:
        print(json.dumps(catalog.listing(args.language), indent=2, ensure_ascii=False))
        return 0
    for c in catalog.list_criteria(args.language):
        needs = f" (needs {', '.join(c.requires)})" if c.requires else ""
        print(f"{c.key:<22} {c.name}{needs}\n{'':<22} {c.description}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("catalog")
    p.add_argument("key", nargs="?", help="show this criterion")
    p.add_argument("--language", help="e.g. fr (default: $REWARDJUDGE_LANGUAGE or en)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--prompt", action="store_true", help="with KEY: also print the system prompt template")
    p.set_defaults(func=_cli)
