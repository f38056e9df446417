"""Reward fidelity on the embedded judge (SmolLM2-135M-Instruct): variance, order, agreement.

Three measurements, each on an arithmetic set the benchmark generates
("What is 37 + 58?", answered right or wrong by a seeded rule, so the key is
known without a judge):

(a) **Sampled grade vs expected value, at temperature 1.** Each item is graded
    ``--repeats`` times by ``ProbabilityJudgeGrader`` (the expected grade under
    the judge's distribution after "Grade: ") and ``--repeats`` times by the
    same grader over a judge that *samples* the grade token at temperature 1
    (``TorchModel.chat``, one token, after the same prefix: what a judge asked
    for its grade at temperature 1 answers). Both estimate the same mean; the
    figures are the reward's variance across repeats of one item (the noise a
    trainer sees), its mean gap between the two, and the spread of the mean
    reward between items (the signal).
(b) **Candidate judging, fixed order vs per-request shuffle.** Groups of four
    candidates, judged together by ``CandidateJudgeGrader`` at temperature 0 on
    ``spawn_judge()`` (llama.cpp): with ``shuffle=False`` in each of the four
    rotations of the group (every candidate at every position once), and with
    ``shuffle=True`` (a new order per request) ``--shuffles`` times. Printed:
    valid replies, a candidate's spread across orderings, and how far its grade
    in one fixed order, or its mean over the shuffled requests, is from its
    grade averaged over all positions (the position bias each one keeps).
(c) **Agreement with the key.** ``ProbabilityJudgeGrader`` (binary and graded
    scales) on ``--items`` right and wrong answers: mean reward of right vs
    wrong answers, ROC AUC, and accuracy at the 0.5 threshold.

(a) and (c) run on ``TorchModel`` over the embedded GGUF (exact
probabilities, prefix sharing); (b) needs generation and runs on the
llama.cpp server. A few minutes on 2 cores.

Run: ``python -m bench fidelity`` or ``python bench/bench_fidelity.py [--items 40]
[--repeats 8] [--var-items 8] [--groups 2] [--shuffles 4] [--skip a b c]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit, print_table  # noqa: E402


# --------------------------------------------------------------------------
# the arithmetic set
# --------------------------------------------------------------------------
def arithmetic_items(n: int, seed: int = 0) -> list[tuple[str, str, bool]]:
    """``n`` (question, answer, is_right) items, half right; a wrong answer is off by a
    small or a place-value slip (1, 2, 10 or 11 either way)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = rng.randint(12, 89), rng.randint(12, 89)
        right = i % 2 == 0
        value = a + b if right else a + b + rng.choice([-11, -10, -2, -1, 1, 2, 10, 11])
        answer = rng.choice(["{a} + {b} = {v}.", "The answer is {v}.", "{v}", "It is {v}."])
        out.append((f"What is {a} + {b}?", answer.format(a=a, b=b, v=value), right))
    return out


def thread(question: str, answer: str):
    from rewardjudge import StringThread

    return StringThread([("user", question), ("assistant", answer)])


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(a random right answer scores above a random wrong one), ties counted half."""
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


# --------------------------------------------------------------------------
# (a) a judge that samples its grade token at temperature 1
# --------------------------------------------------------------------------
def sampling_judge(inner):
    """``inner`` (a TorchModel) answering ``grade_distribution`` with one sampled token:
    all the probability on the grade it drew at temperature 1, none when it drew
    something else (the grader then leaves the grade unscored)."""
    from rewardjudge.models import GenerationParams, InferenceModel
    from rewardjudge.models._base import TokenDistribution

    class SampledGrade(InferenceModel):
        name = f"sampled:{inner.name}"
        continues_prefix = inner.continues_prefix

        async def chat(self, messages, params=None, *, json_schema=None):
            return await inner.chat(messages, params, json_schema=json_schema)

        async def grade_distribution(self, messages, choices, params=None):
            reply = await inner.chat(messages, GenerationParams(temperature=1.0, max_tokens=1))
            drawn = reply.text.strip()
            return TokenDistribution({c: float(c == drawn) for c in choices}, top_k=1,
                                     usage=reply.usage, raw={"drawn": reply.text})

    return SampledGrade()


async def measure_variance(judge, items, repeats: int) -> dict[str, Any]:
    from rewardjudge.graders import ProbabilityJudgeGrader

    threads = [thread(q, a) for q, a, _ in items]
    expected = ProbabilityJudgeGrader("expected", judge, scale="graded", min_valid_mass=0.0)
    sampled = ProbabilityJudgeGrader("sampled", sampling_judge(judge), scale="graded",
                                     min_valid_mass=0.0)
    runs: dict[str, list[list[float | None]]] = {"expected": [], "sampled": []}
    t0 = time.perf_counter()
    for _ in range(repeats):
        for name, grader in (("expected", expected), ("sampled", sampled)):
            grades = await grader.grade_batch(threads)
            runs[name].append([g.value if g.status == "scored" else None for g in grades])
    elapsed = time.perf_counter() - t0
    per_item = []
    for i in range(len(items)):
        e = [r[i] for r in runs["expected"] if r[i] is not None]
        s = [r[i] for r in runs["sampled"] if r[i] is not None]
        per_item.append({"expected": e, "sampled": s})
    rows, out = [], {"a_items": len(items), "a_repeats": repeats, "a_seconds": elapsed}
    for name in ("expected", "sampled"):
        values = [p[name] for p in per_item if len(p[name]) >= 2]
        within = statistics.fmean(statistics.pvariance(v) for v in values)
        means = [statistics.fmean(v) for v in values]
        between = statistics.pvariance(means)
        valid = sum(len(p[name]) for p in per_item) / (len(items) * repeats)
        rows.append([name, valid, statistics.fmean(means), within, between,
                     between / within if within > 0 else None])
        out[f"a_{name}_within_item_variance"] = within
        out[f"a_{name}_between_item_variance"] = between
        out[f"a_{name}_valid_fraction"] = valid
    # equal mean: per item, the sampled mean against the expected value, in standard errors
    gaps, zs = [], []
    for p in per_item:
        if p["expected"] and len(p["sampled"]) >= 2:
            ev = statistics.fmean(p["expected"])
            sm = statistics.fmean(p["sampled"])
            se = (statistics.pvariance(p["sampled"]) / len(p["sampled"])) ** 0.5
            gaps.append(sm - ev)
            if se > 0:
                zs.append((sm - ev) / se)
    out["a_mean_gap_sampled_minus_expected"] = statistics.fmean(gaps) if gaps else None
    out["a_mean_abs_gap"] = statistics.fmean(abs(g) for g in gaps) if gaps else None
    out["a_rms_z"] = (statistics.fmean(z * z for z in zs)) ** 0.5 if zs else None
    ratio = out["a_sampled_within_item_variance"] / out["a_expected_within_item_variance"] \
        if out["a_expected_within_item_variance"] > 0 else None
    out["a_variance_ratio_sampled_over_expected"] = ratio
    print_table(f"(a) Reward of one item over {repeats} repeats, graded scale (0-4 -> 0-1), "
                f"{len(items)} arithmetic items, embedded judge ({judge.name})",
                ["reward", "valid", "mean reward", "variance within an item",
                 "variance between items", "between / within"], rows)
    print(f"sampled minus expected, mean over items: {out['a_mean_gap_sampled_minus_expected']:+.4f} "
          f"(mean |gap| {out['a_mean_abs_gap']:.4f}; RMS of gap / its standard error: "
          f"{out['a_rms_z'] if out['a_rms_z'] is not None else float('nan'):.2f}, ~1 when the "
          f"means agree)")
    return out


# --------------------------------------------------------------------------
# (b) candidate order
# --------------------------------------------------------------------------
async def measure_order(groups: list[list[tuple[str, str, bool]]], shuffles: int) -> dict[str, Any]:
    from rewardjudge.graders import CandidateJudgeGrader
    from rewardjudge.models import spawn_judge

    fixed_grades: dict[tuple[int, int], dict[int, float]] = {}   # (group, cand) -> {position: grade}
    shuffled: dict[tuple[int, int], list[float]] = {}
    requests = valid = 0
    t0 = time.perf_counter()
    async with spawn_judge() as judge:
        fixed = CandidateJudgeGrader("fixed", judge, scale="graded", batch_size=4, shuffle=False,
                                     temperature=0.0, max_rounds=1)
        for gi, group in enumerate(groups):
            n = len(group)
            for rot in range(n):
                order = [(k + rot) % n for k in range(n)]
                grades = await fixed.grade_batch([thread(group[k][0], group[k][1]) for k in order])
                requests += 1
                for pos, (k, g) in enumerate(zip(order, grades)):
                    if g.status == "scored":
                        valid += 1
                        fixed_grades.setdefault((gi, k), {})[pos] = g.value
            for s in range(shuffles):
                shuffling = CandidateJudgeGrader("shuffled", judge, scale="graded", batch_size=4,
                                                 shuffle=True, seed=1000 * gi + s, temperature=0.0,
                                                 max_rounds=1)
                grades = await shuffling.grade_batch([thread(q, a) for q, a, _ in group])
                requests += 1
                for k, g in enumerate(grades):
                    if g.status == "scored":
                        valid += 1
                        shuffled.setdefault((gi, k), []).append(g.value)
    elapsed = time.perf_counter() - t0
    candidates = sum(len(g) for g in groups) * (4 + shuffles)
    out: dict[str, Any] = {"b_requests": requests, "b_candidate_grades": candidates,
                           "b_valid_grades": valid, "b_seconds": elapsed}
    spreads, fixed_bias, shuffle_bias, shuffle_sd = [], [], [], []
    for key, by_pos in fixed_grades.items():
        if len(by_pos) < 2:
            continue
        avg = statistics.fmean(by_pos.values())
        spreads.append(max(by_pos.values()) - min(by_pos.values()))
        if 0 in by_pos:  # the grade the canonical (unrotated) order gives it, every time
            fixed_bias.append(abs(by_pos[0] - avg))
        if len(shuffled.get(key, [])) >= 2:
            shuffle_bias.append(abs(statistics.fmean(shuffled[key]) - avg))
            shuffle_sd.append(statistics.pstdev(shuffled[key]))
    out.update(b_spread_across_positions=statistics.fmean(spreads) if spreads else None,
               b_fixed_order_abs_bias=statistics.fmean(fixed_bias) if fixed_bias else None,
               b_shuffle_mean_abs_bias=statistics.fmean(shuffle_bias) if shuffle_bias else None,
               b_shuffle_sd_across_requests=statistics.fmean(shuffle_sd) if shuffle_sd else None,
               b_candidates_measured=len(spreads))
    print(f"\n(b) Candidate judging on spawn_judge() (llama.cpp), temperature 0, {len(groups)} "
          f"group(s) of 4: {requests} requests, {valid} of {candidates} candidate grades valid "
          f"({elapsed:.0f} s)")
    if not spreads:
        print("    no candidate was graded in two positions: the order effect cannot be measured "
              "on this judge (its replies do not follow the <candidate id> protocol)")
    else:
        print_table("    a candidate's grade (reward 0-1) across orderings",
                    ["figure", "value"],
                    [["spread (max - min) across the 4 positions", out["b_spread_across_positions"]],
                     ["fixed order: |grade - position-averaged grade|", out["b_fixed_order_abs_bias"]],
                     [f"per-request shuffle: |mean of {shuffles} - position-averaged|",
                      out["b_shuffle_mean_abs_bias"]],
                     ["per-request shuffle: SD across requests", out["b_shuffle_sd_across_requests"]],
                     ["candidates measured", len(spreads)]])
    return out


# --------------------------------------------------------------------------
# (c) agreement with the key
# --------------------------------------------------------------------------
async def measure_agreement(judge, items) -> dict[str, Any]:
    from rewardjudge.graders import ProbabilityJudgeGrader

    threads = [thread(q, a) for q, a, _ in items]
    rows, out = [], {"c_items": len(items)}
    for scale in ("binary", "graded"):
        grader = ProbabilityJudgeGrader("key", judge, scale=scale, min_valid_mass=0.0)
        t0 = time.perf_counter()
        grades = await grader.grade_batch(threads)
        elapsed = time.perf_counter() - t0
        right = [g.value for g, it in zip(grades, items) if it[2] and g.status == "scored"]
        wrong = [g.value for g, it in zip(grades, items) if not it[2] and g.status == "scored"]
        scored = [(g.value, it[2]) for g, it in zip(grades, items) if g.status == "scored"]
        acc = sum((v >= 0.5) == r for v, r in scored) / len(scored) if scored else None
        a = auc(right, wrong) if right and wrong else None
        mass = statistics.fmean(g.extra["valid_mass"] for g in grades if g.status == "scored")
        rows.append([scale, len(scored), statistics.fmean(right), statistics.fmean(wrong),
                     statistics.fmean(right) - statistics.fmean(wrong), a, acc, mass, elapsed])
        out.update({f"c_{scale}_mean_right": statistics.fmean(right),
                    f"c_{scale}_mean_wrong": statistics.fmean(wrong), f"c_{scale}_auc": a,
                    f"c_{scale}_accuracy_at_0.5": acc, f"c_{scale}_valid_mass": mass})
    print_table(f"(c) Probability grade vs the programmatic key, {len(items)} arithmetic items "
                f"(half right), embedded judge ({judge.name})",
                ["scale", "scored", "mean right", "mean wrong", "gap", "ROC AUC", "accuracy @0.5",
                 "mass on grades", "s"], rows)
    return out


async def run(args) -> dict[str, Any]:
    from rewardjudge.models import spawn_judge

    out: dict[str, Any] = {"cpus": os.cpu_count()}
    items = arithmetic_items(args.items, seed=0)
    if "a" not in args.skip or "c" not in args.skip:
        async with spawn_judge(backend="torch") as judge:
            if "c" not in args.skip:
                out.update(await measure_agreement(judge, items))
            if "a" not in args.skip:
                out.update(await measure_variance(judge, arithmetic_items(args.var_items, seed=1),
                                                  args.repeats))
    if "b" not in args.skip:
        pool = arithmetic_items(4 * args.groups, seed=2)
        groups = []
        for gi in range(args.groups):  # one question, two right and two wrong answers
            q = pool[4 * gi][0]
            a, b = (int(x) for x in q[len("What is "):-1].split(" + "))
            answers = [f"{a} + {b} = {a + b}.", f"The answer is {a + b + 10}.",
                       f"It is {a + b}.", f"{a} + {b} = {a + b - 1}."]
            groups.append([(q, ans, ans.endswith(f"{a + b}.")) for ans in answers])
        out.update(await measure_order(groups, args.shuffles))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="bench_fidelity", description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=40, help="(c) arithmetic items, half right")
    p.add_argument("--var-items", type=int, default=8, help="(a) items graded repeatedly")
    p.add_argument("--repeats", type=int, default=8, help="(a) gradings of each item, per way")
    p.add_argument("--groups", type=int, default=2, help="(b) groups of 4 candidates")
    p.add_argument("--shuffles", type=int, default=4, help="(b) shuffled requests per group")
    p.add_argument("--skip", nargs="*", default=[], choices=["a", "b", "c"])
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    t0 = time.perf_counter()
    out = asyncio.run(run(args))
    out["seconds"] = time.perf_counter() - t0
    emit("fidelity", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()})
    return out


if __name__ == "__main__":
    main()
