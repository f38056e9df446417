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

Needs valgrind (skipped without it). A run takes 1-2 minutes.

Run: ``python -m bench.bench_instructions [--conc 256] [--requests 512]``.
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


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m bench.bench_instructions")
    p.add_argument("--conc", type=int, default=256, help="requests in flight")
    p.add_argument("--requests", type=int, default=512, help="measured requests per client")
    p.add_argument("--latency", type=float, default=0.02, help="fake judge latency, seconds")
    p.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.url, args.conc, args.requests)
        return {}
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed: no instruction counts")
        out = {"skipped": "no valgrind"}
        emit("instructions", out)
        return out
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
