"""Client instructions per request, counted by callgrind: a load-independent measure of the CPU
grading adds.

Against the fake judge of ``bench_throughput`` (its own process, 20 ms), at one concurrency,
each client runs under ``valgrind --tool=callgrind`` with counting switched on only around
its measured requests (after the warm-up that opens the connections): bare ``aiohttp``,
``OpenAIModel.chat`` and the templated grader's ``grade_batch``, the very clients
``bench_throughput`` times. Instructions do not follow the machine's load; they do follow how
many replies each event-loop turn finds ready, so repeats differ by a few percent.
"grading adds" is the grader's count less ``chat``'s; "transport" is ``chat``'s less bare
aiohttp's.

``--stages``: instead, the instructions of one grade in a tight loop over ``ScriptedModel``
(``bench_overhead``'s grader and samples, no server): each stage replayed alone over the
arguments whole grades passed it (screen, context, render, seal, read, grade), whole grades,
the judge's own ``chat`` and an empty event-loop turn; "glue" is the whole grade less the
judge, the loop and the stages. Deterministic: the same code counts the same. ``--baseline
PATH`` counts another checkout's ``rewardjudge`` too (a ``git worktree`` of an earlier commit),
in the same run, for a before/after table.

Needs valgrind (skipped without it). A run takes 1-2 minutes.

Run: ``python -m bench.bench_instructions [--conc 256] [--requests 512]``,
``python -m bench.bench_instructions --stages [--samples 256] [--baseline PATH] [--typographic]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import bench_throughput as tp
from .common import ROOT, ServerProcess, emit, print_table

CLIENTS = ("aiohttp", "chat", "rewardjudge")


async def _measured(run, n: int, server) -> dict:
    """``bench_throughput._timed`` in the child: counting on around the ``n`` measured requests."""
    switch = ["callgrind_control", "-i"]
    subprocess.run([*switch, "on", str(os.getpid())], stdout=subprocess.DEVNULL, check=True)
    await run(n)
    subprocess.run([*switch, "off", str(os.getpid())], stdout=subprocess.DEVNULL, check=True)
    return {}


def child(client: str, url: str, conc: int, n: int) -> None:
    tp._timed = _measured   # the clients' own code, with counting where they time
    bodies = tp._bodies(64)
    if client == "rewardjudge":
        asyncio.run(tp.run_rewardjudge(url, conc, n, None))
    elif client == "chat":
        asyncio.run(tp.run_chat(url, conc, n, None, bodies))
    else:
        asyncio.run(tp.run_aiohttp(url, conc, n, None, bodies))


def _count(client: str, url: str, conc: int, n: int, folder: str) -> float:
    out = os.path.join(folder, f"{client}.callgrind")
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
           sys.executable, "-m", "bench.bench_instructions", "--child", client, "--url", url,
           "--conc", str(conc), "--requests", str(n)]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = Path(out).read_text(errors="replace")
    totals = re.findall(r"^(?:totals|summary):\s*(\d+)", text, re.M)   # a header's summary may say 0
    if not totals:
        raise RuntimeError(f"no instruction total in {out}")
    return max(map(int, totals)) / n


# --------------------------------------------------------------------------
# --stages: one grade in a tight loop, stage by stage
# --------------------------------------------------------------------------
STAGE_ROWS = ("screen", "context", "render", "seal", "read", "grade", "glue", "grader only", "whole grade",
              "judge (ScriptedModel.chat)", "event loop")


def _callgrind(*args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(os.getpid())], stdout=subprocess.DEVNULL, check=True)


def stages_child(n: int, checkout: str, typographic: bool = False) -> None:
    """Under callgrind: each stage replayed ``n`` times, the whole grade, the judge and the loop,
    each counted alone and dumped under its name; ``checkout``: where rewardjudge is imported from."""
    if checkout:
        sys.path.insert(0, checkout)
    import rewardjudge

    where = Path(rewardjudge.__file__).resolve().parent.parent
    if where != (Path(checkout) if checkout else ROOT):
        raise RuntimeError(f"rewardjudge imported from {where}, not {checkout or ROOT}")
    from .bench_overhead import _STAGE_METHODS, _cycle, _drive, _grader, _nothing, _record
    from .common import sample_thread

    grader, model = _grader()
    samples = [sample_thread(i, typographic=typographic) for i in range(n)]
    loop = asyncio.new_event_loop()
    calls = _record(grader, model, loop, samples)

    def counted(label: str, fn) -> None:
        fn()
        fn()
        _callgrind("-z")
        _callgrind("-i", "on")
        for _ in range(n):
            fn()
        _callgrind("-i", "off")
        _callgrind("-d", label)

    def replay(names):
        steps = [(_cycle(calls[name]), getattr(grader, name)) for name in names]

        def call():
            for following, method in steps:
                args, kw = following()
                method(*args, **kw)
        return call

    for stage, names in _STAGE_METHODS.items():
        counted(stage, replay(names))
    next_sample, chat = _cycle(samples), _cycle(calls["chat"])

    def whole():
        model.calls.clear()
        loop.run_until_complete(grader.grade(next_sample()))

    def judge():
        model.calls.clear()
        args, kw = chat()
        _drive(model.chat(*args, **kw))

    counted("whole", whole)
    counted("judge", judge)
    counted("loop", lambda: loop.run_until_complete(_nothing()))


def _stage_counts(n: int, checkout: str, folder: str, typographic: bool) -> dict[str, float]:
    out = os.path.join(folder, f"stages{len(os.listdir(folder))}")
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p",
           sys.executable, "-m", "bench.bench_instructions", "--samples", str(n), "--stages-child", checkout,
           *(["--typographic"] if typographic else [])]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    per: dict[str, float] = {}
    for path in Path(folder).glob(os.path.basename(out) + ".*"):
        text = path.read_text(errors="replace")
        label = re.search(r"^desc: Trigger: dump (\w+)$", text, re.M)
        totals = re.findall(r"^(?:totals|summary):\s*(\d+)", text, re.M)
        if label and totals:
            per[label.group(1)] = max(map(int, totals)) / n
    whole, judge, loop = per.pop("whole"), per.pop("judge"), per.pop("loop")
    only = whole - judge - loop
    return {**per, "glue": only - sum(per.values()), "grader only": only, "whole grade": whole,
            "judge (ScriptedModel.chat)": judge, "event loop": loop}


def stages_main(n: int, baseline: str | None, typographic: bool = False) -> dict:
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        if baseline:
            runs["baseline"] = _stage_counts(n, str(Path(baseline).resolve()), folder, typographic)
        runs["this checkout"] = _stage_counts(n, "", folder, typographic)
    names = list(runs)
    rows = [[row, *(runs[k][row] / 1000 for k in names)] for row in STAGE_ROWS]
    if baseline:
        for row in rows:
            row.append(f"{row[2] / row[1]:.2f}" if row[1] > 0 else "")
    kind = "typographic" if typographic else "ASCII"
    print_table(f"Instructions per grade (thousands), {n} {kind} grades in a tight loop over ScriptedModel, callgrind",
                ["stage", *names, *(["this / baseline"] if baseline else [])], rows)
    out = {"samples": n, "typographic": typographic, "per_grade": runs}
    emit("instructions_stages", out)
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m bench.bench_instructions")
    p.add_argument("--conc", type=int, default=256, help="requests in flight")
    p.add_argument("--requests", type=int, default=512, help="measured requests per client")
    p.add_argument("--latency", type=float, default=0.02, help="fake judge latency, seconds")
    p.add_argument("--stages", action="store_true", help="one grade's stages in a tight loop instead")
    p.add_argument("--samples", type=int, default=256, help="--stages: grades counted per stage")
    p.add_argument("--baseline", help="--stages: another checkout whose rewardjudge is counted too")
    p.add_argument("--typographic", action="store_true",
                   help="--stages: samples with a curly quote and an en dash (bench_overhead's)")
    p.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--stages-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.url, args.conc, args.requests)
        return {}
    if args.stages_child is not None:
        stages_child(args.samples, args.stages_child, args.typographic)
        return {}
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed: no instruction counts")
        out = {"skipped": "no valgrind"}
        emit("instructions", out)
        return out
    if args.stages:
        return stages_main(args.samples, args.baseline, args.typographic)
    per: dict[str, float] = {}
    with ServerProcess(args.latency) as server, tempfile.TemporaryDirectory() as folder:
        for client in CLIENTS:
            per[client] = _count(client, server.url, args.conc, args.requests, folder)
            print(f"  {client}: {per[client] / 1000:.0f}k instructions per request", flush=True)
    out = {"concurrency": args.conc, "requests": args.requests, "per_request": per,
           "grading_adds": per["rewardjudge"] - per["chat"], "transport_adds": per["chat"] - per["aiohttp"]}
    print_table(f"Client instructions per request (thousands) at concurrency {args.conc}, callgrind",
                ["bare aiohttp", "OpenAIModel.chat", "grader", "grading adds", "chat - aiohttp"],
                [[per["aiohttp"] / 1000, per["chat"] / 1000, per["rewardjudge"] / 1000,
                  out["grading_adds"] / 1000, out["transport_adds"] / 1000]])
    emit("instructions", out)
    return out


if __name__ == "__main__":
    main()
