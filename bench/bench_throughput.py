"""Throughput against a fake judge with fixed latency, next to other clients.

The fake server (``python -m rewardjudge.testing --latency L``) runs in its own
process on loopback. At each concurrency ``c`` the ceiling is ``c / L``
requests per second; every client's figure is its fraction of that ceiling:

* ``rewardjudge``: ``TemplatedPromptJudgeGrader(...).grade_batch(samples)`` over
  ``OpenAIModel(max_concurrency=c)``: render, request, parse, Grade.
* ``chat``: ``c`` workers calling ``OpenAIModel.chat`` with the very same
  messages and schema, no grading: rewardjudge's transport alone (retry
  loop, structured-output choice, aiohttp, reply parse).
* ``aiohttp``: ``c`` workers sending the very same requests with a bare
  ``aiohttp.ClientSession`` (serialize the payload, post, read, ``json.loads``
  the reply), no grading: the floor a Python client on aiohttp pays.

Where the client is CPU-bound (high concurrency on a small machine) grades/s
follow CPU per request: ``chat`` vs ``aiohttp`` is the transport's cost,
``rewardjudge`` vs ``chat`` the grading's (``bench_overhead`` breaks it down).
* ``AsyncOpenAI``: the ``openai`` package's async client (its defaults), ``c``
  workers sending the same messages, no grading.
* ``sequential``: a naive loop, one request after another with the ``openai``
  package's sync client (the same at every concurrency, so measured once).

The server's own CPU per request is printed beside the clients': it must be
well below theirs or the benchmark would measure the server.

Run: ``python -m bench.bench_throughput [--latency 0.1] [--conc 1,8,64,512]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from typing import Any, Awaitable, Callable

from .common import (CRITERIA, SYSTEM_TEMPLATE, USER_TEMPLATE, ServerProcess, emit, print_table,
                     sample_thread)

DEFAULT_CONC = (1, 4, 16, 64, 128, 256, 512)


def _grader(url: str, conc: int):
    from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
    from rewardjudge.models import OpenAIModel

    model = OpenAIModel(url, "fake-judge", api_key="bench", max_concurrency=conc, timeout=60.0,
                        max_retries=0)
    return TemplatedPromptJudgeGrader("bench", model, SYSTEM_TEMPLATE, USER_TEMPLATE,
                                      template_variables={"criteria": CRITERIA}, temperature=0.0,
                                      max_tokens=256)


async def _workers(conc: int, n: int, one: Callable[[int], Awaitable[Any]]) -> None:
    """``conc`` workers share ``n`` request indexes."""
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            await one(i)

    await asyncio.gather(*(worker() for _ in range(conc)))


async def _timed(run: Callable[[int], Awaitable[None]], n: int, server: ServerProcess) -> dict:
    gc.collect()
    s0, c0, t0 = server.cpu_s(), time.process_time(), time.perf_counter()
    await run(n)
    wall = time.perf_counter() - t0
    return {"rps": n / wall, "client_cpu_ms": 1000 * (time.process_time() - c0) / n,
            "server_cpu_ms": 1000 * (server.cpu_s() - s0) / n}


async def run_rewardjudge(url: str, conc: int, n: int, server: ServerProcess) -> dict:
    grader = _grader(url, conc)
    samples = [sample_thread(i) for i in range(n)]
    async with grader.model:
        await grader.grade_batch(samples[:conc])  # open the connections

        async def run(k: int) -> None:
            grades = await grader.grade_batch(samples[:k])
            bad = [g for g in grades if g.status != "scored"]
            if bad:
                raise RuntimeError(f"{len(bad)} grades not scored, e.g. {bad[0].error}")

        return await _timed(run, n, server)


def _bodies(n: int) -> list[dict]:
    """The request payloads rewardjudge sends for samples 0..n-1, as a judge server
    receives them (recorded by an in-process fake server, whatever the grader's internals)."""
    from rewardjudge.testing import FakeJudgeServer

    with FakeJudgeServer() as recorder:
        grader = _grader(recorder.url, 8)
        asyncio.run(grader.grade_batch([sample_thread(i) for i in range(n)]))
        payloads = list(recorder.requests)
    if len(payloads) != n:
        raise RuntimeError(f"expected {n} recorded requests, got {len(payloads)}")
    return payloads


async def run_chat(url: str, conc: int, n: int, server: ServerProcess, payloads) -> dict:
    from rewardjudge.models import GenerationParams, OpenAIModel

    model = OpenAIModel(url, "fake-judge", api_key="bench", max_concurrency=conc, timeout=60.0,
                        max_retries=0)
    calls = [(p["messages"], p["response_format"]["json_schema"]["schema"]) for p in payloads]
    params = GenerationParams(temperature=payloads[0].get("temperature"),
                              max_tokens=payloads[0].get("max_tokens"))
    async with model:
        async def one(i: int) -> None:
            messages, schema = calls[i % len(calls)]
            if not (await model.chat(messages, params, json_schema=schema)).text:
                raise RuntimeError("empty reply")

        await _workers(conc, conc, one)
        return await _timed(lambda k: _workers(conc, k, one), n, server)


async def run_aiohttp(url: str, conc: int, n: int, server: ServerProcess, payloads) -> dict:
    import aiohttp

    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc),
                                     headers=headers) as session:
        endpoint = url + "/chat/completions"

        async def one(i: int) -> None:
            # what a bare client does per request: serialize, post, read, decode
            async with session.post(endpoint, data=json.dumps(payloads[i % len(payloads)]).encode()) as r:
                data = json.loads(await r.read())
                if r.status != 200 or not data["choices"][0]["message"]["content"]:
                    raise RuntimeError(f"bad reply {r.status}")

        await _workers(conc, conc, one)
        return await _timed(lambda k: _workers(conc, k, one), n, server)


async def run_openai(url: str, conc: int, n: int, server: ServerProcess, payloads) -> dict:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)
    try:
        async def one(i: int) -> None:
            p = payloads[i % len(payloads)]
            r = await client.chat.completions.create(
                model="fake-judge", messages=p["messages"], temperature=p.get("temperature"),
                max_tokens=p.get("max_tokens"), response_format=p["response_format"])
            if not r.choices[0].message.content:
                raise RuntimeError("empty reply")

        await _workers(conc, conc, one)
        return await _timed(lambda k: _workers(conc, k, one), n, server)
    finally:
        await client.close()


def run_sequential(url: str, n: int, payloads) -> float:
    """Requests per second of a plain loop with the sync openai client."""
    import openai

    with openai.OpenAI(base_url=url, api_key="bench", max_retries=0) as client:
        t0 = time.perf_counter()
        for i in range(n):
            p = payloads[i % len(payloads)]
            client.chat.completions.create(model="fake-judge", messages=p["messages"],
                                           temperature=p.get("temperature"),
                                           max_tokens=p.get("max_tokens"),
                                           response_format=p["response_format"])
        return n / (time.perf_counter() - t0)


def medians(runs: dict[str, list[dict]], base: str = "aiohttp") -> dict[str, dict]:
    """Each client's median over its repeats: requests/s, CPU per request, and ``vs_<base>``,
    the median of its ratio to the ``base`` run of the same repeat (runs are interleaved)."""
    out = {}
    for name, rs in runs.items():
        ratios = [r["rps"] / b["rps"] for r, b in zip(rs, runs[base])]
        out[name] = {k: statistics.median(r[k] for r in rs)
                     for k in ("rps", "client_cpu_ms", "server_cpu_ms")}
        out[name][f"vs_{base}"] = statistics.median(ratios)
    return out


def print_repeat(conc: int, rep: int, runs: dict[str, list[dict]], base: str = "aiohttp") -> None:
    """One line per repeat: each client's ratio to ``base`` in that repeat and its CPU per request."""
    b = runs[base][rep]["rps"]
    print(f"  concurrency {conc}, repeat {rep + 1}: " + ", ".join(
        f"{name} {rs[rep]['rps'] / b:.2f}x {1000 * rs[rep]['client_cpu_ms']:.0f} us/req"
        for name, rs in runs.items()), flush=True)


def _row(conc: int, n: int, limit: float, med: dict[str, dict], seq: float | None) -> dict:
    """One concurrency's figures: fractions of the limit, ratios, CPU per request."""
    rj, raw, chat, oa = med["rewardjudge"], med["aiohttp"], med["chat"], med.get("openai")
    return {
        "concurrency": conc, "requests": n,
        "rewardjudge": rj["rps"] / limit, "chat": chat["rps"] / limit,
        "aiohttp": raw["rps"] / limit,
        "openai": oa["rps"] / limit if oa else None,
        "sequential": seq / limit if seq else None,
        "rj_vs_aiohttp": rj["vs_aiohttp"],
        "chat_vs_aiohttp": chat["vs_aiohttp"],
        "rj_vs_openai": rj["rps"] / oa["rps"] if oa else None,
        "rj_cpu_ms": rj["client_cpu_ms"], "chat_cpu_ms": chat["client_cpu_ms"],
        "aiohttp_cpu_ms": raw["client_cpu_ms"],
        "openai_cpu_ms": oa["client_cpu_ms"] if oa else None,
        "server_cpu_ms": raw["server_cpu_ms"],
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m bench.bench_throughput")
    p.add_argument("--latency", type=float, default=0.1, help="fake judge latency, seconds")
    p.add_argument("--conc", default=",".join(map(str, DEFAULT_CONC)),
                   help="comma-separated concurrencies")
    p.add_argument("--rounds", type=int, default=8, help="requests per client = rounds x concurrency")
    p.add_argument("--repeats", type=int, default=3,
                   help="runs of rewardjudge, chat and aiohttp per concurrency, interleaved; "
                        "medians reported")
    p.add_argument("--no-openai", action="store_true", help="skip the openai package's clients")
    args = p.parse_args(argv)
    concs = [int(c) for c in args.conc.split(",") if c.strip()]
    lat = args.latency
    rows, results = [], {}
    bodies = _bodies(64)
    with ServerProcess(lat) as server:
        seq = None if args.no_openai else run_sequential(server.url, max(5, int(1 / lat)), bodies)
        for conc in concs:
            n = max(conc * args.rounds, 8)
            runs: dict[str, list[dict]] = {}
            for rep in range(args.repeats):
                # interleaved so a noisy moment on the shared machine hits both
                for name, fn in (("aiohttp", run_aiohttp), ("chat", run_chat),
                                 ("rewardjudge", None)):
                    r = (asyncio.run(run_rewardjudge(server.url, conc, n, server)) if fn is None
                         else asyncio.run(fn(server.url, conc, n, server, bodies)))
                    runs.setdefault(name, []).append(r)
                print_repeat(conc, rep, runs)
            med = medians(runs)
            if not args.no_openai:
                try:   # the SDK timing out (at 512 it may) must not lose the table
                    med["openai"] = asyncio.run(run_openai(server.url, conc, n, server, bodies))
                except Exception as exc:  # noqa: BLE001
                    print(f"  concurrency {conc}: the openai client failed: {exc!r}", flush=True)
            row = _row(conc, n, conc / lat, med, seq)
            results[str(conc)] = row
            rows.append(list(row.values()))
            print(f"  concurrency {conc}: rewardjudge {row['rewardjudge']:.3f} of the limit, "
                  f"{row['rj_vs_aiohttp']:.2f}x aiohttp (chat alone {row['chat_vs_aiohttp']:.2f}x)",
                  flush=True)
    print_table(f"Throughput as a fraction of concurrency/latency (latency {lat * 1000:.0f} ms, "
                f"fake server in its own process; cpu = ms of CPU per request)",
                list(rows and results[str(concs[0])].keys()), rows)
    # the fake server must cost less than the clients it serves, or this would
    # measure the server (/proc counts 10 ms ticks: meaningless below ~100 requests)
    sized = [r for r in results.values() if r["requests"] >= 500]
    server_ok = all(r["server_cpu_ms"] < min(r["rj_cpu_ms"], r["chat_cpu_ms"], r["aiohttp_cpu_ms"])
                    for r in sized)
    print(f"\nfake server CPU per request below every client's: {'yes' if server_ok else 'NO'}"
          + (f"; bare aiohttp at concurrency 64 reaches {results['64']['aiohttp']:.2f} of the limit"
             if "64" in results else ""))
    out = {"latency_s": lat, "by_concurrency": results, "server_cheaper_than_clients": server_ok}
    emit("throughput", out)
    return out


if __name__ == "__main__":
    main()
