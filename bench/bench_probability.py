"""Probability grades vs generated verdicts, and batched vs one-at-a-time prefill.

On the embedded judge (SmolLM2-135M-Instruct), the same samples are graded:

* over llama-cpp-python's server (``spawn_judge()``): ``ProbabilityJudgeGrader``
  (one prefill, the grade's distribution from the top-20 logprobs after
  "Grade: ") vs ``TemplatedPromptJudgeGrader`` generating a reasoning-then-grade
  JSON verdict (``GradedJudgeOutput``, up to ``--max-tokens`` tokens);
* in process (``TorchModel``): the same two, plus the probability grader
  with ``max_batch_size=1`` (one prefill per sample) vs the default batched
  prefill (every sample of the batch in one forward pass).

Each path is warmed up on one sample first. Time per grade is the wall time
of the best of ``--repeats`` ``grade_batch`` runs divided by the number of
samples; the JSON line holds the
ratios (this machine is shared and noisy: absolute times are context only).

Run: ``python bench/bench_probability.py [--items 8] [--max-tokens 96]
[--repeats 2] [--dtype auto] [--no-server] [--no-torch]``.

TorchModel's throughput on a GPU (a random-weight Llama from a config, against
bare forwards, with and without prefix sharing) is ``bench/bench_torch.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CRITERIA, SYSTEM_TEMPLATE, USER_TEMPLATE, emit, print_table, sample_thread  # noqa: E402


REPEATS = 2


async def _time_batch(grader, threads, *, warm_all: bool = True) -> tuple[float, list[Any]]:
    """Best of ``REPEATS`` timed ``grade_batch`` runs, per grade (the machine is shared)."""
    # warm-up: compiles, caches, and the first forward at each batch shape (slow on CPU)
    await grader.grade_batch(threads if warm_all else threads[:1])
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        grades = await grader.grade_batch(threads)
        best = min(best, time.perf_counter() - start)
    return best / len(threads), grades


def _generated_grader(model, max_tokens: int):
    from rewardjudge.graders import GradedJudgeOutput, TemplatedPromptJudgeGrader

    # reply_retries=0: a re-ask after an unreadable verdict would be timed too
    return TemplatedPromptJudgeGrader("generated", model, SYSTEM_TEMPLATE, USER_TEMPLATE,
                                      output_model=GradedJudgeOutput, temperature=0.0,
                                      template_variables={"criteria": CRITERIA},
                                      max_tokens=max_tokens, reply_retries=0)


def _summary(grades) -> str:
    scored = sum(g.status == "scored" for g in grades)
    tokens = [g.usage.get("completion_tokens", 0) for g in grades]
    return f"{scored}/{len(grades)} scored, {sum(tokens) / max(1, len(tokens)):.0f} tok out"


async def run(args) -> dict[str, Any]:
    from rewardjudge.graders import ProbabilityJudgeGrader
    from rewardjudge.models import TorchModel, spawn_judge

    threads = [sample_thread(i) for i in range(args.items)]
    rows: list[list[Any]] = []
    out: dict[str, Any] = {"items": args.items, "max_tokens": args.max_tokens,
                           "repeats": REPEATS, "cpus": os.cpu_count()}
    if not args.no_server:
        async with spawn_judge(n_threads=os.cpu_count()) as judge:
            p_s, p_grades = await _time_batch(ProbabilityJudgeGrader("p", judge), threads)
            g_s, g_grades = await _time_batch(_generated_grader(judge, args.max_tokens), threads,
                                              warm_all=False)
        rows += [["llama.cpp server", "probability (1 prefill, top-20)", p_s, _summary(p_grades)],
                 ["llama.cpp server", "generated reasoning + grade", g_s, _summary(g_grades)]]
        out.update(server_probability_s=p_s, server_generated_s=g_s,
                   server_generated_over_probability=g_s / p_s)
    if not args.no_torch:
        t0 = time.perf_counter()
        batched = TorchModel.load(dtype=args.dtype, max_batch_tokens=args.batch_tokens)
        load_s = time.perf_counter() - t0
        single = TorchModel(batched.model, batched.tokenizer, max_batch_size=1)
        b_s, b_grades = await _time_batch(ProbabilityJudgeGrader("p", batched), threads)
        o_s, _ = await _time_batch(ProbabilityJudgeGrader("p", single), threads)
        tg_s, tg_grades = await _time_batch(_generated_grader(batched, args.max_tokens), threads,
                                            warm_all=False)
        await batched.aclose()
        await single.aclose()
        dtype = str(batched.model.dtype).replace("torch.", "")
        limit = f"{batched.max_batch_size} prompts / {batched.max_batch_tokens} tokens"
        rows += [[f"TorchModel ({dtype})", f"probability, batched prefill (<= {limit})", b_s,
                  _summary(b_grades)],
                 [f"TorchModel ({dtype})", "probability, one prefill at a time", o_s, ""],
                 [f"TorchModel ({dtype})", "generated reasoning + grade (batched)", tg_s,
                  _summary(tg_grades)]]
        out.update(torch_dtype=dtype, torch_load_s=load_s, torch_batched_probability_s=b_s,
                   torch_single_probability_s=o_s, torch_generated_s=tg_s,
                   torch_one_at_a_time_over_batched=o_s / b_s,
                   torch_generated_over_probability=tg_s / b_s)
        if "server_probability_s" in out:
            out["server_probability_over_torch_batched"] = out["server_probability_s"] / b_s
    print_table(f"Time per grade, embedded SmolLM2-135M, {args.items} samples, "
                f"{os.cpu_count()} CPU core(s)", ["judge", "grading", "s / grade", "grades"], rows)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="bench_probability", description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=8, help="samples per measurement")
    p.add_argument("--max-tokens", type=int, default=96, help="generation budget of a verdict")
    p.add_argument("--repeats", type=int, default=2, help="timed runs per measurement (best kept)")
    p.add_argument("--dtype", default="auto", help="TorchModel dtype (auto, float32, bfloat16)")
    p.add_argument("--batch-tokens", type=int, default=None,
                   help="TorchModel max_batch_tokens (default: its CPU/GPU default)")
    p.add_argument("--no-server", action="store_true", help="skip the llama.cpp server")
    p.add_argument("--no-torch", action="store_true", help="skip TorchModel")
    args = p.parse_args(argv)
    global REPEATS
    REPEATS = max(1, args.repeats)
    warnings.simplefilter("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    out = asyncio.run(run(args))
    emit("probability", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()})
    return out


if __name__ == "__main__":
    main()
