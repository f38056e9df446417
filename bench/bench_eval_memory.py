"""Peak memory of offline evaluation at 50,000 and 1,000,000 rows.

``evaluate_dataset`` grades a JSONL dataset with the demo grader against the
fake judge (``python -m rewardjudge.testing``, its own process, no latency)
and writes ``results.parquet``, ``results.jsonl``, ``summary.json`` and the
histogram. Each size runs in fresh interpreters, and each reads its peak
resident set (``ru_maxrss``):

* ``convert``: ``load_data(path)`` alone, the first time: ``datasets``
  turning the JSONL into its Arrow cache (``datasets``' own cost, paid once
  per file; a later run maps the cache);
* ``evaluate``: the run itself, on the converted file: after the imports and
  the load (``loaded``), and at the end (``peak``).

Memory that grew with the rows would show as a larger ``peak`` at a million
rows; the target is a million-row peak within 100 MB of the 50,000-row
peak.

Every eighth answer is malformed (penalized without a judge call), so the
results hold both outcomes.

Run: ``python -m bench.bench_eval_memory [--rows 50000,1000000] [--concurrency 64]``
(the million rows take several minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import ROOT, ServerProcess, emit, print_table


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def write_data(path: Path, rows: int) -> None:
    good = json.dumps({"answer": "Paris is the capital of France.", "confidence": "high"})
    with open(path, "w") as f:
        for i in range(rows):
            completion = "{not json" if i % 8 == 3 else good
            f.write(json.dumps({"question": f"What is the capital of country {i}?",
                                "completion": completion, "id": i}) + "\n")


def convert(data: str) -> None:
    """The first load of a file (in its own interpreter)."""
    from rewardjudge.evaluate._data import load_data

    load_data(data)
    print("RESULT " + json.dumps({"peak_mb": _rss_mb()}), flush=True)


def child(data: str, out: str, url: str, concurrency: int) -> None:
    """One measured run (in its own interpreter)."""
    import logging

    logging.getLogger("rewardjudge").setLevel(logging.ERROR)
    from rewardjudge.demo import demo_grader
    from rewardjudge.evaluate import evaluate_dataset
    from rewardjudge.evaluate._data import load_data
    from rewardjudge.models import OpenAIModel

    load_data(data)  # the Arrow cache built by convert(): mapped
    loaded = _rss_mb()
    t0 = time.perf_counter()
    model = OpenAIModel(url, "fake", max_concurrency=concurrency, timeout=120)
    result = evaluate_dataset(data, demo_grader(model), columns="metadata=id", output_dir=out,
                              progress=False, concurrency=concurrency)
    seconds = time.perf_counter() - t0
    print("RESULT " + json.dumps({
        "rows": result.summary.n, "counts": result.summary.counts, "seconds": seconds,
        "loaded_mb": loaded, "peak_mb": _rss_mb(),
        "results_jsonl_mb": os.path.getsize(result.files["jsonl"]) / 2**20}), flush=True)


def _run(code: str, what: str, cache: Path) -> dict:
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(line[len("RESULT "):])


def measure(rows: int, url: str, concurrency: int, tmp: Path) -> dict:
    data = tmp / f"data_{rows}.jsonl"
    write_data(data, rows)
    cache = tmp / f"hf_cache_{rows}"  # a fresh datasets cache: the first load really converts
    converted = _run(f"from bench.bench_eval_memory import convert; convert({str(data)!r})",
                     f"converting {rows} rows", cache)
    result = _run(f"from bench.bench_eval_memory import child; "
                  f"child({str(data)!r}, {str(tmp / f'out_{rows}')!r}, {url!r}, {concurrency})",
                  f"evaluating {rows} rows", cache)
    data.unlink()
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(tmp / f"out_{rows}", ignore_errors=True)
    return {**result, "convert_mb": converted["peak_mb"]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.bench_eval_memory", description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="50000,1000000", help="comma-separated row counts")
    p.add_argument("--concurrency", type=int, default=64)
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.rows.split(",") if x.strip()]
    results = {}
    with ServerProcess(0.0) as server, tempfile.TemporaryDirectory(prefix="rj-evalmem-") as tmp:
        for rows in sizes:
            results[rows] = measure(rows, server.url, args.concurrency, Path(tmp))
    table = [[f"{rows:,}", r["convert_mb"], r["loaded_mb"], r["peak_mb"], r["peak_mb"] - r["loaded_mb"],
              r["seconds"], rows / r["seconds"], r["results_jsonl_mb"]] for rows, r in results.items()]
    print_table("peak RSS (MB): datasets' first conversion of the JSONL, then evaluate_dataset "
                "(demo grader, fake judge in its own process)",
                ["rows", "convert peak", "eval: after load", "eval: peak", "peak - load", "run s", "rows/s",
                 "results.jsonl MB"], table)
    out = {"rows": sizes, "peak_mb": [results[r]["peak_mb"] for r in sizes],
           "loaded_mb": [results[r]["loaded_mb"] for r in sizes],
           "convert_mb": [results[r]["convert_mb"] for r in sizes]}
    if len(sizes) >= 2:
        growth = results[sizes[-1]]["peak_mb"] - results[sizes[0]]["peak_mb"]
        out["growth_mb"] = growth
        print(f"\nevaluate_dataset peak at {sizes[-1]:,} rows - peak at {sizes[0]:,} rows: {growth:+.1f} MB "
              f"(target: within 100 MB)")
        conv = results[sizes[-1]]["convert_mb"] - results[sizes[0]]["convert_mb"]
        out["convert_growth_mb"] = conv
        print(f"datasets' JSONL conversion peak, same sizes: {conv:+.1f} MB")
    emit("eval_memory", out)


if __name__ == "__main__":
    main()
