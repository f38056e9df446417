"""The client CPU a grader may add per request and still keep 0.9x a bare aiohttp client.

Against the same fake judge as ``bench_throughput`` (100 ms, its own process),
at each concurrency: a bare ``aiohttp`` client; ``OpenAIModel.chat`` plus a
busy spin of S microseconds of CPU per request (half before the request, half
after the reply, where a grader renders and reads), for a ladder of S; and the
templated grader itself. Each figure is grades/s over bare aiohttp's in the
same repeat (interleaved repeats, each printed; the medians reported). The last
columns say what grading adds under that load: the grader's CPU per request minus
``chat``'s (S=0, or the first S given).

Where the client is CPU-bound, the largest S that keeps 0.9x is the budget a
grader has for its context, render and readout on this machine; compare it
with what grading adds.

Run: ``python -m bench.bench_budget [--conc 256,512] [--spins 0,25,50,75,100,150]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from .bench_throughput import (_bodies, _timed, _workers, medians, print_repeat, run_aiohttp,
                               run_rewardjudge)
from .common import ServerProcess, emit, print_table


async def run_chat_spin(url: str, conc: int, n: int, server: ServerProcess, payloads,
                        spin_us: float) -> dict:
    from rewardjudge.models import GenerationParams, OpenAIModel

    model = OpenAIModel(url, "fake-judge", api_key="bench", max_concurrency=conc, timeout=60.0,
                        max_retries=0)
    calls = [(p["messages"], p["response_format"]["json_schema"]["schema"]) for p in payloads]
    params = GenerationParams(temperature=payloads[0].get("temperature"),
                              max_tokens=payloads[0].get("max_tokens"))
    half = spin_us / 2e6
    clock = time.perf_counter

    def spin() -> None:
        end = clock() + half
        while clock() < end:
            pass

    async with model:
        async def one(i: int) -> None:
            spin()
            messages, schema = calls[i % len(calls)]
            if not (await model.chat(messages, params, json_schema=schema)).text:
                raise RuntimeError("empty reply")
            spin()

        await _workers(conc, conc, one)
        return await _timed(lambda k: _workers(conc, k, one), n, server)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m bench.bench_budget")
    p.add_argument("--latency", type=float, default=0.1, help="fake judge latency, seconds")
    p.add_argument("--conc", default="256,512", help="comma-separated concurrencies")
    p.add_argument("--spins", default="0,25,50,75,100,150",
                   help="comma-separated CPU microseconds added per request")
    p.add_argument("--rounds", type=int, default=8, help="requests per client = rounds x concurrency")
    p.add_argument("--repeats", type=int, default=3,
                   help="interleaved runs per client; each printed, medians reported")
    args = p.parse_args(argv)
    concs = [int(c) for c in args.conc.split(",") if c.strip()]
    spins = [float(s) for s in args.spins.split(",") if s.strip()]
    bodies = _bodies(64)
    rows, results = [], {}
    with ServerProcess(args.latency) as server:
        for conc in concs:
            n = conc * args.rounds
            runs: dict[str, list[dict]] = {}
            for rep in range(args.repeats):
                todo = [("aiohttp", lambda: run_aiohttp(server.url, conc, n, server, bodies)),
                        ("rewardjudge", lambda: run_rewardjudge(server.url, conc, n, server))]
                todo += [(f"spin {s:g}", lambda s=s: run_chat_spin(server.url, conc, n, server,
                                                                   bodies, s)) for s in spins]
                for name, make in todo:
                    runs.setdefault(name, []).append(asyncio.run(make()))
                print_repeat(conc, rep, runs)
            med = medians(runs)
            ratios = {name: r["vs_aiohttp"] for name, r in med.items() if name != "aiohttp"}
            fits = [s for s in spins if ratios[f"spin {s:g}"] >= 0.9]
            # per repeat, the grader's CPU per request minus chat's beside it; the median of those
            adds_us = statistics.median(1000 * (g["client_cpu_ms"] - c["client_cpu_ms"])
                                        for g, c in zip(runs["rewardjudge"], runs[f"spin {spins[0]:g}"]))
            results[str(conc)] = {"vs_aiohttp": ratios, "grading_adds_us": adds_us,
                                  "largest_spin_at_0.9x": max(fits) if fits else None}
            rows.append([conc] + [ratios[f"spin {s:g}"] for s in spins]
                        + [ratios["rewardjudge"], adds_us])
            print(f"  concurrency {conc}: grading {ratios['rewardjudge']:.2f}x aiohttp, adds "
                  f"{adds_us:.0f} us of CPU per request over chat", flush=True)
    print_table(f"grades/s over bare aiohttp's (latency {args.latency * 1000:.0f} ms): chat plus "
                f"S us of CPU per request, and the grader; the CPU grading adds over chat",
                ["concurrency"] + [f"S={s:g}" for s in spins] + ["grader", "grading adds us"], rows)
    out = {"latency_s": args.latency, "by_concurrency": results}
    emit("budget", out)
    return out


if __name__ == "__main__":
    main()
