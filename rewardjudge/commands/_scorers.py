"""``rewardjudge scorers create|show|versions|update|list|test|delete`` over a registry folder (docs/scorers.md).
Exit codes: 0 done; 1 ``test --judge`` left a sample unscored; 2 a usage error; 3 no such scorer."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from .._validate import json_value
from ..errors import ConfigError
from ..thread import StringThread
from ._judge import add_arguments, add_subcommands, check_torch_judge, judge_kind, judge_options, open_judge, url_model

# the scorers (and the grader stack under them) are imported where a subcommand runs: `--help` stays light
REGISTRY_OPTION = ("--registry", {"help": "registry folder (default: $REWARDJUDGE_SCORERS or ./scorers)"})


def registry(args: argparse.Namespace):
    from ..evaluate._spec import registry_folder
    from ..scorers._registry import ScorerRegistry
    return ScorerRegistry(registry_folder(args.registry))


def _read_text(path: str, stdin: bool = False) -> str:
    try:
        return sys.stdin.read() if stdin and path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def _print_json(data: Any) -> int:
    print(json.dumps(data, indent=2, ensure_ascii=False))
    return 0


def _print_scorer(scorer, as_json: bool) -> None:
    if as_json:
        _print_json(scorer.to_dict())
        return
    c = scorer.config
    print(f"{scorer.slug}  {scorer.name}")
    rows = {"description": scorer.description, "version": f"{scorer.version_number} ({scorer.version})",
            "model": c.model, "engine": c.template_engine, "output": c.output_spec.describe(),
            "params": json.dumps(c.params.to_dict()) if c.params.to_dict() else "(server defaults)",
            "variables": ", ".join(scorer.variables) or "(none)"}
    for label, value in rows.items():
        if value or label != "description":
            print(f"  {label + ':':<13}{value}")


def _guard(fn):
    """Map 'not found' to exit code 3; other config errors reach cli.main (exit 2)."""
    def run(args: argparse.Namespace) -> int:
        from ..scorers._registry import ScorerNotFound
        try:
            return fn(args)
        except ScorerNotFound as exc:
            print(f"rewardjudge: not found: {exc}", file=sys.stderr)
            return 3
    return run


def _file_payload(args: argparse.Namespace) -> dict[str, Any]:
    data = json_value(_read_text(args.file, stdin=True), args.file) if args.file else {}
    if not isinstance(data, dict):
        raise ConfigError(f"{args.file} must hold a JSON object with 'name' and 'config'")
    if args.template:
        config = data.get("config")
        if not isinstance(config, dict):
            raise ConfigError("--template needs a file whose 'config' is an object to put it in")
        data["config"] = {**config, "prompt_template": _read_text(args.template)}
    data.update({k: getattr(args, k) for k in ("name", "description") if getattr(args, k) is not None})
    return data


def _create(args: argparse.Namespace) -> int:
    if not args.file:
        raise ConfigError("scorers create needs a scorer JSON file (or - for stdin)")
    scorer = registry(args).create_from_dict(_file_payload(args))
    _print_scorer(scorer, args.json)
    return 0


def _update(args: argparse.Namespace) -> int:
    data = _file_payload(args)
    reg = registry(args)
    before = reg.get(args.slug)
    scorer = reg.update(args.slug, **{k: data.get(k) for k in ("name", "description", "config")})
    _print_scorer(scorer, args.json)
    if not args.json:
        made = scorer.version != before.version and len(scorer.history) > len(before.history)
        print("  -> new version" if made else "  -> no new version (config unchanged)")
    return 0


def _show(args: argparse.Namespace) -> int:
    reg = registry(args)
    scorer = reg.get(args.slug)
    if args.version is not None:   # the scorer as it was at that version
        scorer.config = reg.version(args.slug, args.version).config
    _print_scorer(scorer, args.json)
    if args.template and not args.json:
        print("  template:\n" + "\n".join("    " + line for line in
                                          scorer.config.prompt_template.splitlines()))
    return 0


def _versions(args: argparse.Namespace) -> int:
    reg = registry(args)
    scorer = reg.get(args.slug)
    versions = reg.versions(args.slug)
    if args.json:
        return _print_json([v.to_dict() for v in versions])
    for v in versions:
        mark = "*" if v.id == scorer.version and v.number == scorer.version_number else " "
        print(f"{mark} {v.number:>3}  {v.id[:16]}  {v.created_at}  {v.config.model}  "
              f"{v.config.output_spec.describe()}")
    return 0


def _list(args: argparse.Namespace) -> int:
    scorers = registry(args).find(args.query) if args.query else registry(args).list()
    if args.json:
        return _print_json([s.to_dict() for s in scorers])
    for s in scorers:
        print(f"{s.slug:<40} v{s.version_number:<3} {s.name}")
    if not scorers:
        print("(no scorers)")
    return 0


def _read_samples(path: str) -> list:
    text = _read_text(path, stdin=True)
    try:
        data = json.loads(text)
        rows = data if isinstance(data, list) else [data]
    except ValueError:   # JSON lines
        rows = [json_value(line, f"{path} line {n}")
                for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not rows:
        raise ConfigError(f"{path} holds no sample")
    return [_sample(row, f"{path} sample {i}") for i, row in enumerate(rows, 1)]


def _sample(row: Any, where: str):
    if not isinstance(row, dict):
        raise ConfigError(f"{where} must be an object with 'messages' and/or 'metadata'")
    unknown = sorted(set(row) - {"messages", "metadata", "attributes", "prompt", "completion"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; expected messages, metadata "
                          f"(or attributes), prompt, completion")
    metadata = row.get("metadata", row.get("attributes")) or {}
    if not isinstance(metadata, dict):
        raise ConfigError(f"{where}: metadata must be an object")
    try:
        # the metadata as given (the grader runs in eval mode): no key of ours stands in for one of the sample's
        thread = StringThread.from_messages(row.get("messages") or [], metadata)
        if isinstance(row.get("prompt"), str):
            thread = thread.user(row["prompt"])
        if isinstance(row.get("completion"), str):
            thread = thread.assistant(row["completion"])
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return thread


def split_map(pairs: list[str] | None, example: str = "question=turn:user") -> dict[str, str]:
    """``--map VAR=SOURCE`` options as {var: source}."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        var, sep, source = pair.partition("=")
        if not sep or not var.strip():
            raise ConfigError(f"--map takes VAR=SOURCE (e.g. {example}), got {pair!r}")
        out[var.strip()] = source.strip()
    return out


async def _grade_samples(binding, samples: list, args: argparse.Namespace) -> list:
    from ..graders.templated_prompt_judge import ScorerGrader
    if judge_kind(args.judge) == "url":  # config.model (or --judge-model), one try per request
        judge_cm = url_model(argparse.Namespace(**vars(args), max_retries=0), args.judge_model or binding.config.model)
    else:
        check_torch_judge(args, binding)  # a scorer is a chat grader: refused on a CPU torch judge before loading it
        judge_cm = open_judge(args, max_retries=0)
    async with judge_cm as judge:
        # --judge-model, like --judge embedded/torch, names another model on purpose: the override is explicit
        asked = getattr(judge, "name", None) or binding.config.model
        grader = ScorerGrader(binding, judge, reply_retries=0, mode="eval", language=args.language,
                              allow_model_override=asked != binding.config.model)
        return await grader.grade_batch(samples)


def _test(args: argparse.Namespace) -> int:
    from ..scorers._binding import MalformedCompletion
    from ..scorers._fields import scorer_result
    scorers = registry(args)
    scorer = scorers.get(args.slug)
    binding = scorers.bind(args.slug, split_map(args.map), version=args.version)
    samples = _read_samples(args.input)
    results = []
    for thread in samples:
        try:
            prompt, missing = binding.render(thread, language=args.language)
            results.append({"prompt": prompt, "missing_variables": missing})
        except MalformedCompletion as exc:
            results.append({"prompt": None, "error": f"malformed completion: {exc}"})
    grades = asyncio.run(_grade_samples(binding, samples, args)) if args.judge else None
    for r, g in zip(results, grades or ()):
        r["grade"] = {**scorer_result(g), "raw_reply": g.raw_reply}
    if args.json:
        _print_json({"slug": scorer.slug, "version": binding.version, "model": binding.config.model,
                     "mapping": binding.mapping, "samples": results})
    else:
        _print_test(scorer, binding, results)
    return 1 if grades is not None and any(g.status == "unscored" for g in grades) else 0


def _print_test(scorer, binding, results: list[dict[str, Any]]) -> None:
    print(f"{scorer.slug}  version {binding.version[:12]}  model {binding.config.model}  "
          f"engine {binding.config.template_engine}")
    print("  mapping: " + (", ".join(f"{k} <- {v}" for k, v in binding.mapping.items()) or "(none)"))
    for i, r in enumerate(results, 1):
        print(f"--- sample {i} ---")
        if r["prompt"] is None:
            print(f"(not rendered: {r['error']}; a grade would be penalized)")
        else:
            print(r["prompt"])
            if r["missing_variables"]:
                print(f"(no value, rendered empty: {', '.join(r['missing_variables'])})")
        g = r.get("grade")
        if g is not None:
            label = g["score_label"]
            shown = (g["value"] if label is None else label if g["value"] is None
                     else f"{g['value']} ({label})")
            print(f"=> {g['status']} {shown}  judge_model: {g['judge_model']}")
            print(f"   {'explanation: ' + str(g['explanation']) if g['status'] == 'scored' else g['error']}")


def _delete(args: argparse.Namespace) -> int:
    reg = registry(args)
    scorer = reg.get(args.slug)
    reg.delete(args.slug)
    print(f"deleted {scorer.slug} ({scorer.name}, {len(scorer.history)} version(s))")
    return 0


_SLUG = ("slug", {})
_TEMPLATE_FILE = ("--template", {"help": "read config.prompt_template from this file"})
_JSON = ("--json", {"action": "store_true", "help": "print JSON"})
#: subcommand -> (its function, its help, its arguments); --registry comes from the group (cli._share_options)
_SUBCOMMANDS = {
    "create": (_create, "save a new scorer from a JSON file (a new slug every time)", [
        ("file", {"nargs": "?", "help": "scorer JSON: {name, description?, config}; - for stdin"}),
        ("--name", {"help": "override the file's name"}),
        ("--description", {"help": "override the file's description"}), _TEMPLATE_FILE, _JSON]),
    "update": (_update, "change name/description/config; a new config hash makes a version", [
        _SLUG, ("file", {"nargs": "?", "help": "scorer JSON with the fields to change; - for stdin"}),
        ("--name", {}), ("--description", {}), _TEMPLATE_FILE, _JSON]),
    "show": (_show, "show a scorer (its current version, or --version)", [
        _SLUG, ("--version", {"help": "a version number, id or id prefix (8+ hex)"}),
        ("--template", {"action": "store_true", "help": "also print the prompt template"}), _JSON]),
    "versions": (_versions, "list a scorer's versions (* = current)", [_SLUG, _JSON]),
    "list": (_list, "list scorers (optionally those whose name contains QUERY)",
             [("query", {"nargs": "?"}), _JSON]),
    "test": (_test, "render a scorer's prompt on sample inputs (and, with --judge, grade them with one "
                    "judge call each)", [
        _SLUG,
        ("--input", {"required": True, "help": "samples: a JSON object, a JSON list or JSON lines of "
                                               "{messages, metadata}; - for stdin"}),
        ("--map", {"action": "append", "metavar": "VAR=SOURCE",
                   "help": "bind a variable (e.g. question=turn:user); unmapped ones read metadata"}),
        ("--version", {"help": "a version number, id or id prefix (default: current)"}),
        *judge_options("ask for this model instead of the scorer's config.model (an explicit override; grades "
                       "record it); with --judge torch, a local checkpoint folder or .gguf",
                       "grade each sample on an OpenAI-compatible server URL ending in /v1, 'embedded' (spawn the "
                       "bundled SmolLM2-135M judge; noise verdicts) or 'torch' (the in-process transformers "
                       "judge); the embedded and torch judges answer in place of the scorer's config.model",
                       required=False)[:3],   # --judge, --judge-model, --timeout: one try per request
        ("--language", {"help": "language of the built-in output_instructions"}), _JSON]),
    "delete": (_delete, "delete a scorer and every version of it", [_SLUG]),
}


def add_parser(sub) -> None:
    add_subcommands(add_arguments(sub.add_parser("scorers"), [REGISTRY_OPTION]), "scorers_command",
                    {name: (_guard(func), *rest) for name, (func, *rest) in _SUBCOMMANDS.items()})
