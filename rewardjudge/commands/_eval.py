"""``rewardjudge eval`` and ``rewardjudge compare``.

    rewardjudge eval answers.jsonl --judge http://127.0.0.1:8000/v1 --judge-model judge \\
        --grader correctness --output runs/v1
    rewardjudge eval answers.jsonl --judge embedded --grader my_graders.py:make --output runs/v1
    rewardjudge compare runs/v1 runs/v2

Running the same ``eval`` command again resumes (finished rows are read from
``runs/v1/journal.jsonl``). Columns not given with --columns are mapped only
from names that leave no doubt; the mapping is printed before grading.

Exit codes:
  0    done (rows may be unscored, unless --fail-on-unscored)
  2    usage error (bad option, column, grader or data)
  3    done, but every row is unscored (the judge was unreachable)
  4    done, some rows unscored, and --fail-on-unscored was given
  5    stopped: the judge went down (finished rows are kept: rerun to resume,
       with --retry-unscored to grade the failed rows again)
  130  interrupted (rerun the same command to resume)

Before any row, a URL judge is checked (reachable, model known, one request
answered) and a scorer's template variables are checked against the data
columns (see docs/evaluation.md): else a usage error, exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from typing import Any

from ..errors import ConfigError, JudgeOutage
from ..evaluate._report import compare
from ._judge import JUDGE_HELP, add_arguments, check_torch_judge, judge_kind, judge_options, open_judge


def add_parser(sub) -> None:
    # --judge not required: a Grader that brings its own judge model needs none
    judge = judge_options("the model name on the server (default: a scorer's config.model when the server lists "
                          "it, else the server's only model, from GET /v1/models); with --judge torch, a local "
                          "checkpoint folder or .gguf (default: the embedded model)", required=False)
    p = sub.add_parser("eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p, [
        ("data", dict(help="a .jsonl/.json/.parquet/.arrow/.csv file, a save_to_disk folder, or a hub name")),
        ("--grader", dict(required=True, help="a catalog key (plain-text answers; rewardjudge catalog), 'demo' "
                          "(JSON answers as in the bundled demo data), module:attribute, path/to/file.py:attribute "
                          "(a Grader, or a function taking the judge model and returning one) or a scorer")),
        ("--output -o", dict(required=True, help="output folder (rerun to resume)")),
        *judge,
        ("--allow-model-override", dict(action="store_true", help="run a scorer version on a judge model other "
                                        "than its config.model (the grades record judge_model); without it a "
                                        "mismatch is a usage error")),
        ("--columns", dict(help="role=column pairs, e.g. prompt=question,completion=answer,reference=gold,"
                           "metadata=id (roles: prompt, messages, completion, reference, system, metadata); "
                           "default: common names")),
        ("--split", dict(help="the split to grade when the data has several")),
        ("--mode", dict(choices=("eval", "train"), default="eval",
                        help="penalty for malformed answers: evaluation (0.0, default) or training (-1.0)")),
        ("--cache", dict(help="SQLite file caching judge replies (shared across runs and processes)")),
        ("--retry-unscored", dict(action="store_true",
                                  help="grade again the rows left unscored (judge failures) by earlier runs")),
        ("--overwrite", dict(action="store_true", help="discard earlier results in --output")),
        ("--limit", dict(type=int, help="grade only the first N rows")),
        ("--formats", dict(default="parquet,jsonl", help="outputs: parquet, jsonl, arrow")),
        ("--no-progress", dict(action="store_true", help="no progress bar")),
        ("--fail-on-unscored", dict(action="store_true", help="exit 4 when any row is unscored (a judge failure or "
                                    "unreadable input), so CI sees a partial outage; without it only an "
                                    "all-unscored run fails (exit 3)"))])
    p.set_defaults(func=_eval_command)

    c = sub.add_parser("compare", description="Each run's mean, median (p50), bootstrap interval and label counts, "
                                   "and the paired difference b - a over rows valued in both.")
    add_arguments(c, [("a", dict(help="an evaluation output folder (or its results.jsonl)")),
                      ("b", dict(help="another one over the same rows")),
                      ("--confidence", dict(type=float, default=0.95)),
                      ("--json", dict(action="store_true", help="print JSON"))])
    c.set_defaults(func=_compare_command)


async def _run_eval(args: argparse.Namespace):
    from ..evaluate._data import detect_columns, load_data
    from ..evaluate._runner import EvalOptions, aevaluate_dataset
    from ..evaluate._spec import bind_spec, spec_target
    from ..graders._base import Grader
    from ..graders.templated_prompt_judge import ScorerGrader
    from ..scorers import Scorer
    # what can be checked without a judge is checked before one is asked or spawned
    target = spec_target(args.grader)
    if args.judge is None and not isinstance(target, Grader):  # only a Grader with its own judge model
        raise ConfigError(f"--judge is required: {JUDGE_HELP}")
    if args.judge is not None:
        judge_kind(args.judge)
    data = load_data(args.data, split=args.split)
    scorer = target if isinstance(target, Scorer) else None
    columns = args.columns if scorer is None else _check_scorer_variables(scorer.bind(None), args.columns, data)
    notes = detect_columns(columns, data.column_names)[1]
    print("columns:\n" + "".join(f"  {note}\n" for note in notes), end="", file=sys.stderr)
    options = EvalOptions(columns=columns, output_dir=args.output, mode=args.mode, retry_unscored=args.retry_unscored,
                          overwrite=args.overwrite, progress=not args.no_progress, concurrency=args.concurrency,
                          split=args.split, limit=args.limit,
                          formats=tuple(f.strip() for f in args.formats.split(",") if f.strip()))
    if args.judge is None:
        return await aevaluate_dataset(args.data, target, options)
    async with open_judge(args, scorer.config.model if scorer is not None else None) as model:
        if args.cache:
            from ..models._cache import CachedModel
            model = CachedModel(model, cache=args.cache)
        if scorer is not None:
            grader = ScorerGrader(scorer, model, allow_model_override=args.allow_model_override)
        else:
            grader = bind_spec(args.grader, target, model)
            if getattr(grader, "binding", None) is not None:  # a scorer built by a module:attribute factory
                columns = _check_scorer_variables(grader.binding, columns, data)
        check_torch_judge(args, grader)
        try:
            return await aevaluate_dataset(args.data, grader, options, columns=columns)
        finally:
            if args.cache:
                await model.aclose()


def _check_scorer_variables(binding: Any, columns: Any, data: Any) -> Any:
    """Every scorer variable read from metadata must find its key; one named like an unmapped column gets
    it (said on stderr); any other is a usage error (it would render empty on every row)."""
    from ..evaluate._data import Columns, detect_columns
    names = list(data.column_names)
    cols = detect_columns(columns, names)[0]
    # the metadata keys a row's thread gets (object columns add their keys, per the first 20 rows)
    keys = {*cols.metadata, "row", "eval", *(("reference",) if cols.reference else ())}
    for row in data.select(range(min(len(data), 20))).to_list() if cols.metadata else ():
        keys.update(k for col in cols.metadata if isinstance(row.get(col), dict) for k in row[col])
    added, unknown = [], []
    for var, source in binding.mapping.items():
        if var in binding.shadowed or not source.startswith("metadata:"):
            continue
        key = source.partition(":")[2]
        if key in keys or key.split(".")[0] in keys:
            continue
        if key in names:
            added.append(key)
        else:
            unknown.append(f"{var!r}" if key == var else f"{var!r} (metadata:{key})")
    who = f"scorer {binding.scorer_slug or binding.scorer_name!r}"
    if unknown:
        raise ConfigError(
            f"{who} reads {', '.join(unknown)}, which is no column of the data, no metadata key and no "
            f"built-in variable, so it would render empty on every row: fix the variable's name in the "
            f"template, or map a column to it (--columns metadata=COLUMN, the column named like the "
            f"variable); columns are {names}")
    if not added:
        return columns
    print(f"{who}: variable(s) {', '.join(added)} read the column(s) of the same name (added as "
          f"--columns metadata=...)", file=sys.stderr)
    given = Columns.parse(columns)
    return given.model_copy(update={"metadata": (*given.metadata, *added)})


def _run_interruptible(coro: Any) -> Any:
    """``asyncio.run(coro)``: the first Ctrl-C waits for the rows in flight (journaled), the second stops at once."""
    import signal
    async def main() -> Any:
        task, hits = asyncio.current_task(), []

        def on_sigint() -> None:
            hits.append(1)
            if len(hits) > 1:
                print("rewardjudge: stopped at once; rerun the same command to resume", file=sys.stderr, flush=True)
                os._exit(130)
            print("\nrewardjudge: interrupted: waiting for the judge's answers to the rows in flight so they are "
                  "journaled (Ctrl-C again to stop at once); rerun the same command to resume",
                  file=sys.stderr, flush=True)
            task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signal handlers here (Windows, a thread)
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_sigint)
        return await coro

    try:
        return asyncio.run(main())  # it cancels what is left and closes the loop (its signal handler too)
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None


def _eval_command(args: argparse.Namespace) -> int:
    try:
        result = _run_interruptible(_run_eval(args))
    except JudgeOutage as exc:
        print(f"rewardjudge: {exc}\nfinished rows are kept in {args.output}: rerun the same command to resume "
              f"(add --retry-unscored to grade the failed rows again)", file=sys.stderr)
        return 5
    s = result.summary
    print(f"graded now: {result.graded_now}  already done: {result.resumed}")
    print(s)
    for kind, path in sorted(result.files.items()):
        print(f"{kind}: {path}")
    unscored = s.counts.get("unscored", 0)
    if unscored:
        print(f"{unscored} row(s) unscored (judge failures or unreadable input, see grade_error): fix "
              f"the cause, then rerun with --retry-unscored to grade only those", file=sys.stderr)
    if s.n and s.counts.get("penalized", 0) == s.n:
        print("every row was penalized (see grade_error): the grader could read none of the answers; 'demo' "
              "grades JSON answers such as {\"answer\": ..., \"confidence\": \"high\"}, catalog keys plain text",
              file=sys.stderr)
    if s.n and unscored == s.n:
        return 3
    if unscored and args.fail_on_unscored:
        print(f"--fail-on-unscored: {unscored} of {s.n} row(s) unscored; exit 4", file=sys.stderr)
        return 4
    return 0


def _compare_command(args: argparse.Namespace) -> int:
    comparison = compare(args.a, args.b, confidence=args.confidence)
    print(json.dumps(comparison.to_dict(), indent=2) if args.json else comparison)
    return 0
