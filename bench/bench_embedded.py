"""Seconds per grade on the embedded judge (SmolLM2-135M-Instruct on llama.cpp), per built-in grader.

What a new user meets first: ``spawn_judge()`` and the built-in graders. Each
grader grades the same varied samples one at a time (latency, not
throughput: one request in flight), on the spawned judge, and the benchmark
prints p50, p95 and the slowest seconds per sample, with how many grades
were scored and unscored (the judge's reply unreadable after the re-ask).

Graders: ``TemplatedPromptJudgeGrader`` with ``BinaryJudgeOutput`` and
``GradedJudgeOutput`` (the benchmarks' typical rubric template), the catalog
criteria ``completeness``, ``helpfulness`` and ``correctness``, a scorer
(numeric 1-5 with a reason), ``CandidateJudgeGrader`` (groups of four answers
to one question in one request: its seconds per sample are the request's
seconds over the four), ``ProbabilityJudgeGrader`` (one prefill, no
generation), and the graders asking for a verdict line (``bench.common.line_graders``: the
cookbook's unstructured "Respond with PASS or FAIL" and a declared ``Rating: [[{score}]]``).

Samples: questions of several kinds (facts, arithmetic, definitions,
instructions, code, writing) with right, wrong, hedged and long answers; the
answers differ in length from a word to ~120 words, so prompt lengths vary.

Run: ``python -m bench embedded`` or ``python bench/bench_embedded.py
[--samples 24] [--only catalog-completeness ...]``. About 5-10 minutes on 2
cores. Absolute seconds depend on the load the machine carries; the table
says what a user of a 2-core machine sees.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CRITERIA, SYSTEM_TEMPLATE, USER_TEMPLATE, emit, line_graders, print_table  # noqa: E402

LONG = ("Photosynthesis is the process by which green plants, algae and some bacteria turn light "
        "energy into chemical energy. In the chloroplasts, chlorophyll absorbs mostly red and blue "
        "light. The light-dependent reactions split water, release oxygen and make ATP and NADPH; "
        "the Calvin cycle then uses them to fix carbon dioxide into three-carbon sugars, which the "
        "plant builds into glucose, sucrose and starch. The overall balance is six carbon dioxide "
        "plus six water giving one glucose and six oxygen. Rates depend on light, temperature and "
        "carbon dioxide, and plants in hot dry places use C4 or CAM variants to save water.")

#: (question, reference, four answers: right, wrong, hedged or partial, long or off-topic)
ITEMS: list[tuple[str, str, list[str]]] = [
    ("What is the capital of Australia?", "Canberra",
     ["Canberra.", "Sydney is the capital of Australia.", "I think it might be Melbourne or Canberra.",
      "Australia's capital is Canberra, a planned city chosen in 1908 as a compromise between "
      "Sydney and Melbourne; Parliament moved there in 1927."]),
    ("What is 17 * 23?", "391",
     ["391", "17 * 23 = 401.", "About 400.", "17 * 23 = 17 * 20 + 17 * 3 = 340 + 51 = 391."]),
    ("Explain photosynthesis in two sentences.", "Plants use light to turn CO2 and water into sugar "
     "and oxygen.",
     ["Plants use light energy to turn carbon dioxide and water into sugar. Oxygen is released.",
      "Photosynthesis is how animals digest food.", "It has something to do with plants and the sun.",
      LONG]),
    ("Write a Python function that returns the square of a number.", "def square(x): return x * x",
     ["def square(x):\n    return x * x", "def square(x):\n    return x + x",
      "You could multiply the number by itself.",
      "Here is a function:\n\ndef square(x: float) -> float:\n    \"\"\"x squared.\"\"\"\n    return x ** 2"
      "\n\nprint(square(4))  # 16\n\nIt works for ints and floats alike."]),
    ("Who wrote 'Pride and Prejudice'?", "Jane Austen",
     ["Jane Austen.", "Charles Dickens wrote it.", "It was an English novelist, I believe Austen.",
      "Jane Austen wrote it; it was published in 1813 and follows Elizabeth Bennet and Mr Darcy."]),
    ("Give one tip to sleep better.", "Keep a regular sleep schedule.",
     ["Go to bed and wake up at the same time every day.", "Drink two coffees before bed.",
      "Sleep is important.", "Keep the bedroom dark, cool and quiet, avoid screens for an hour before "
      "bed, skip caffeine after noon, and keep the same wake-up time even at weekends."]),
    ("What is the boiling point of water at sea level in Celsius?", "100",
     ["100 degrees Celsius.", "90 degrees Celsius.", "Around 100, depending on the pressure.",
      "At standard sea-level pressure (101.325 kPa) pure water boils at 100 degrees Celsius."]),
    ("Translate 'thank you' into French.", "merci",
     ["Merci.", "Gracias.", "Maybe 'merci'?", "In French, 'thank you' is 'merci'; 'merci beaucoup' "
      "means 'thank you very much'."]),
]


def samples(n: int) -> list[Any]:
    """``n`` threads cycling through the items' answers (right, wrong, hedged, long)."""
    from rewardjudge import StringThread

    rows = [(q, ref, a) for k in range(4) for q, ref, answers in ITEMS for a in answers[k:k + 1]]
    out = []
    for i in range(n):
        q, ref, a = rows[i % len(rows)]
        out.append(StringThread([("user", q), ("assistant", a)],
                                metadata={"reference": ref}))
    return out


def groups(n: int) -> list[list[Any]]:
    """Groups of the four answers to one question, ``n`` samples in all (rounded up to 4)."""
    from rewardjudge import StringThread

    out = []
    for g in range(-(-n // 4)):
        q, ref, answers = ITEMS[g % len(ITEMS)]
        out.append([StringThread([("user", q), ("assistant", a)], metadata={"reference": ref})
                    for a in answers])
    return out


def graders(judge: Any) -> dict[str, Any]:
    from rewardjudge import catalog
    from rewardjudge.graders._candidate_judge import CandidateJudgeGrader
    from rewardjudge.graders._outputs import BinaryJudgeOutput, GradedJudgeOutput
    from rewardjudge.graders._probability_judge import ProbabilityJudgeGrader
    from rewardjudge.graders.templated_prompt_judge import ScorerGrader, TemplatedPromptJudgeGrader
    from rewardjudge.scorers import Scorer, ScorerConfig

    scorer = Scorer("Answer quality", ScorerConfig.from_dict({
        "model": judge.name, "output_spec": {"type": "numeric", "min": 1, "max": 5},
        "prompt_template": "Question: {{question}}\nAnswer: {{answer}}\n"
                           "Score the answer from 1 (wrong or useless) to 5 (correct and complete).\n"
                           "{{output_instructions}}",
        "params": {"temperature": 0}}))
    return {
        "templated-binary": TemplatedPromptJudgeGrader(
            "templated-binary", judge, SYSTEM_TEMPLATE, USER_TEMPLATE, BinaryJudgeOutput,
            template_variables={"criteria": CRITERIA}),
        "templated-graded": TemplatedPromptJudgeGrader(
            "templated-graded", judge, SYSTEM_TEMPLATE, USER_TEMPLATE, GradedJudgeOutput,
            template_variables={"criteria": CRITERIA}),
        "catalog-completeness": catalog.grader("completeness", judge),
        "catalog-helpfulness": catalog.grader("helpfulness", judge),
        "catalog-correctness": catalog.grader("correctness", judge),
        "scorer": ScorerGrader(scorer, judge, {"question": "turn:user", "answer": "completion"}),
        "candidate": CandidateJudgeGrader("candidate", judge, batch_size=4, seed=0),
        "probability": ProbabilityJudgeGrader("probability", judge),
        **dict(zip(("templated-label", "templated-form"), line_graders(judge))),
    }


def percentile(values: list[float], q: float) -> float:
    """The q-quantile, linear between order statistics (q=0.95: p95)."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


async def run(n: int, only: list[str] | None) -> dict[str, dict[str, Any]]:
    from rewardjudge.models import spawn_judge

    results: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    async with spawn_judge() as judge:
        print(f"judge ready in {time.perf_counter() - t0:.1f} s: {judge!r}, structured_output="
              f"{judge.structured_output}, grammar={judge.accepts_grammar}", flush=True)
        # one warm-up request (first-request costs are not a grader's)
        await judge.chat([{"role": "user", "content": "Say OK."}])
        for name, grader in graders(judge).items():
            if only and name not in only:
                continue
            secs: list[float] = []
            statuses: dict[str, int] = {}
            attempts = 0
            why: list[str] = []
            start = time.perf_counter()
            if name == "candidate":
                for group in groups(n):
                    t = time.perf_counter()
                    grades = await grader.grade_batch(group)
                    per = (time.perf_counter() - t) / len(group)
                    secs += [per] * len(group)
                    for g in grades:
                        statuses[g.status] = statuses.get(g.status, 0) + 1
                        if g.status == "unscored":
                            why.append(str(g.error)[:160])
                    attempts += len({tuple(r["ids"]) for g in grades for r in g.extra["requests"]})
            else:
                for sample in samples(n):
                    t = time.perf_counter()
                    g = await grader.grade(sample)
                    secs.append(time.perf_counter() - t)
                    statuses[g.status] = statuses.get(g.status, 0) + 1
                    attempts += g.attempts
                    if g.status == "unscored":
                        why.append(str(g.error)[:160])
            row = {"n": len(secs), "scored": statuses.get("scored", 0),
                   "unscored": statuses.get("unscored", 0),
                   "other": sum(v for k, v in statuses.items() if k not in ("scored", "unscored")),
                   "p50_s": statistics.median(secs), "p95_s": percentile(secs, 0.95),
                   "max_s": max(secs), "requests": attempts,
                   "wall_s": time.perf_counter() - start}
            results[name] = row
            print(f"  {name}: p50 {row['p50_s']:.2f} s, p95 {row['p95_s']:.2f} s, "
                  f"scored {row['scored']}/{row['n']} ({row['wall_s']:.0f} s)", flush=True)
            for reason in why[:3]:
                print(f"    unscored: {reason}", flush=True)
    return results


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=24, help="samples per grader (default 24)")
    p.add_argument("--only", nargs="*", help="grader names to run (default: all)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    results = asyncio.run(run(args.samples, args.only))
    print_table(f"Seconds per sample on the embedded judge (spawn_judge(), one request at a time; "
                f"{args.samples} samples per grader; candidate: groups of 4, request seconds / 4)",
                ["grader", "n", "scored", "unscored", "p50 s", "p95 s", "max s", "HTTP requests"],
                [[k, r["n"], r["scored"], r["unscored"], r["p50_s"], r["p95_s"], r["max_s"],
                  r["requests"]] for k, r in results.items()])
    worst = max((r["p95_s"] for r in results.values()), default=0.0)
    print(f"\nslowest p95: {worst:.2f} s (target: <= 10 s per sample); "
          f"whole run {time.perf_counter() - t0:.0f} s")
    emit("embedded", {"samples": args.samples, "graders": results, "worst_p95_s": worst})


if __name__ == "__main__":
    main()
