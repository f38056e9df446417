"""rewardjudge serve under 1,000 concurrent single-sample requests, with
one process and with ``--workers``.

The reward server (`python -m rewardjudge serve --grader demo`) and the fake
judge each run in their own process; this process fires 1,000 concurrent
POST /grade requests of one sample each, checks every one is answered with
the grade `grade_batch` gives the same samples, and prints p50/p99 latency,
requests/s and how many judge batches the batching window formed. It does
so for one process (no front) and for `--workers W` (a front routing each
prompt to one of W worker processes; W = min(4, CPUs)), and prints grades/s
of each and their ratio, measured in this one run. On a machine with few
cores the client, the judge, the front and the workers share them: the
ratio says what the front costs there, not what more cores would give.

    python -m bench serve
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from bench.common import ROOT, ServerProcess, emit, print_table

N = 1000
JUDGE_LATENCY = 0.05


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _samples():
    from rewardjudge.demo import demo_threads

    base = demo_threads(eval_mode=False)
    threads = [base[i % len(base)].with_metadata(request=i) for i in range(N)]
    # a group per request (its own prompt, as in training): --workers spreads them by this key
    samples = [{"messages": t.messages(), "metadata": t.metadata, "group": f"r{i}"} for i, t in enumerate(threads)]
    return threads, samples


async def _fire(url: str, samples) -> tuple[list, list[float], float]:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        async def one(sample):
            t0 = time.perf_counter()
            async with s.post(f"{url}/grade", json={"samples": [sample]},
                              timeout=aiohttp.ClientTimeout(total=300)) as r:
                body = await r.json()
                status = r.status
            return status, body, time.perf_counter() - t0

        t0 = time.perf_counter()
        results = await asyncio.gather(*(one(x) for x in samples))
        wall = time.perf_counter() - t0
    return [(st, b) for st, b, _ in results], [lat for _, _, lat in results], wall


async def _reference(judge_url: str, threads):
    from rewardjudge.demo import demo_grader
    from rewardjudge.models import OpenAIModel

    async with OpenAIModel(judge_url, "fake-judge", max_concurrency=256) as model:
        return await demo_grader(model).grade_batch(threads)


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


def _run(judge_url: str, samples, workers: int) -> dict:
    """One server (``workers`` > 1: the front and its workers) under the load; its figures."""
    port = _free_port()
    cmd = [sys.executable, "-m", "rewardjudge", "serve", "--grader", "demo", "--judge", judge_url,
           "--judge-model", "fake-judge", "--port", str(port), "--concurrency", "256"]
    if workers > 1:
        cmd += ["--workers", str(workers)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        replies, latencies, wall = asyncio.run(_fire(url, samples))
        metrics = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    finally:
        proc.terminate()
        proc.wait(60)
    lat = sorted(latencies)
    batches = _metric(metrics, "rewardjudge_batches_total")
    return {"replies": replies, "p50_s": round(statistics.median(lat), 4),
            "p99_s": round(lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))], 4),
            "grades_per_s": round(N / wall, 1), "batches": batches,
            "mean_batch": round(N / batches, 1) if batches else None}


def main() -> None:
    threads, samples = _samples()
    workers = max(2, min(4, os.cpu_count() or 1))
    with ServerProcess(JUDGE_LATENCY) as judge:
        runs = {1: _run(judge.url, samples, 1), workers: _run(judge.url, samples, workers)}
        reference = asyncio.run(_reference(judge.url, threads))

    rows, results, bad = [], {"requests": N, "judge_latency_s": JUDGE_LATENCY, "cpus": os.cpu_count()}, []
    for w, run in runs.items():
        replies = run.pop("replies")
        answered = sum(1 for st, _ in replies if st == 200)
        same = sum(1 for (st, body), ref in zip(replies, reference)
                   if st == 200 and body["grades"][0]["status"] == ref.status
                   and body["grades"][0]["value"] == ref.value)
        rows.append([w, answered, same, run["p50_s"], run["p99_s"], run["grades_per_s"], run["batches"],
                     run["mean_batch"]])
        results[f"workers_{w}"] = {"answered": answered, "same_as_grade_batch": same, **run}
        if answered != N or same != N:
            bad.append(f"--workers {w}: {N - answered} requests unanswered, {N - same} grades differ")
    results["ratio_grades_per_s"] = round(runs[workers]["grades_per_s"] / runs[1]["grades_per_s"], 2)
    print_table(f"rewardjudge serve: 1,000 concurrent single-sample POST /grade (fake judge, "
                f"{JUDGE_LATENCY * 1000:.0f} ms), 1 process vs --workers {workers} "
                f"(ratio {results['ratio_grades_per_s']}; {os.cpu_count()} CPUs)",
                ["workers", "answered", "same_as_grade_batch", "p50_s", "p99_s", "grades/s", "batches",
                 "mean_batch"], rows)
    emit("serve", results)
    if bad:
        raise SystemExit("; ".join(bad))


if __name__ == "__main__":
    main()
