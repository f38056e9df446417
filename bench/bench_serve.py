"""rewardjudge serve under 1,000 concurrent single-sample requests.

The reward server (`python -m rewardjudge serve --grader demo`) and the fake
judge each run in their own process; this process fires 1,000 concurrent
POST /grade requests of one sample each, checks every one is answered with
the grade `grade_batch` gives the same samples, and prints p50/p99 latency,
requests/s and how many judge batches the batching window formed.

    python -m bench serve
"""

from __future__ import annotations

import asyncio
import json
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
    samples = [{"messages": t.messages(), "metadata": t.metadata} for t in threads]
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


def main() -> None:
    threads, samples = _samples()
    with ServerProcess(JUDGE_LATENCY) as judge:
        port = _free_port()
        proc = subprocess.Popen([sys.executable, "-m", "rewardjudge", "serve", "--grader", "demo", "--judge",
                                 judge.url, "--judge-model", "fake-judge", "--port", str(port),
                                 "--concurrency", "256"], cwd=ROOT, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"{url}/health", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.1)
            replies, latencies, wall = asyncio.run(_fire(url, samples))
            metrics = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
        finally:
            proc.terminate()
            proc.wait(30)
        reference = asyncio.run(_reference(judge.url, threads))

    answered = sum(1 for st, _ in replies if st == 200)
    same = sum(1 for (st, body), ref in zip(replies, reference)
               if st == 200 and body["grades"][0]["status"] == ref.status
               and body["grades"][0]["value"] == ref.value)
    lat = sorted(latencies)
    p50 = statistics.median(lat)
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
    batches = _metric(metrics, "rewardjudge_batches_total")
    results = {"requests": N, "answered": answered, "same_as_grade_batch": same, "p50_s": round(p50, 4),
               "p99_s": round(p99, 4), "req_per_s": round(N / wall, 1), "judge_latency_s": JUDGE_LATENCY,
               "batches": batches, "mean_batch": round(N / batches, 1) if batches else None}
    print_table("rewardjudge serve: 1,000 concurrent single-sample POST /grade (fake judge, "
                f"{JUDGE_LATENCY * 1000:.0f} ms)", list(results), [list(results.values())])
    emit("serve", results)
    if answered != N or same != N:
        raise SystemExit(f"{N - answered} requests unanswered, {N - same} grades differ from grade_batch")


if __name__ == "__main__":
    main()
