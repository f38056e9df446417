"""TRL's GRPOTrainer rewarded by an LLM judge through ``trl_reward_func``.

The dataset is conversational (a system message, the question) with a
``reference`` column; the adapter hands that column to the grader as thread
metadata, where the judge prompt reads it as ``{{metadata.reference}}``.

Tasks (``--task``):

* ``plain`` (default): the policy answers in words and the judge reads the
  completion as it is: every completion is judged, so even a tiny random
  policy gets rewards that differ within a group (a learning signal).
* ``json``: the system message asks for ``{"answer": ..., "confidence": ...}``
  JSON (the cookbook's ``AnalysisOutput``); malformed JSON is penalized
  without asking the judge. A tiny random policy never writes JSON: give it
  a supervised warm-up first (``--sft-steps 60``), else every completion is
  penalized and the loss is 0.

Completions the judge could not grade come back as ``None``, which TRL
leaves out of the group baselines (advantage 0). Each step prints one line
(reward mean, unscored rate, judge p50 latency, loss; TRL's own dict printer
is removed) and appends its full metrics, judge health included
(``judge/analysis-grader/...``), to a JSONL file (``--metrics``, default
``OUTPUT_DIR/metrics.jsonl``). ``reward.attach(trainer)`` makes the closing
``trainer.evaluate()`` use the evaluation penalty (0.0) for malformed JSON
instead of the training one (-1.0). TRL's loss is ~0 by construction with one
update per generation batch (the advantages of a group sum to 0); ``grad-norm``
on the step line shows the update.

Launch commands:

    # CPU, the embedded judge (SmolLM2-135M on llama.cpp's server), a tiny random policy
    python recipes/trl_grpo.py --steps 2
    # CPU, the scripted judge (no server), 10% judge failures
    python recipes/trl_grpo.py --judge scripted --judge-fail-rate 0.1 --steps 2
    # CPU, JSON answers after a JSON warm-up so that the tiny policy writes some valid JSON
    python recipes/trl_grpo.py --judge scripted --task json --sft-steps 60 --steps 2
    # CPU, SmolLM2-135M-Instruct as the policy (~8 s a step)
    python recipes/trl_grpo.py --policy smollm2 --judge scripted --steps 2
    # GPU, a real judge server and a real policy checkpoint
    python recipes/trl_grpo.py --device cuda --policy /models/Qwen2.5-0.5B-Instruct \\
        --judge-url http://judge:8000/v1 --judge-model Qwen/Qwen2.5-7B-Instruct \\
        --steps 200 --batch-size 32 --num-generations 8 --max-new-tokens 128 --lr 1e-6
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grpo_torch import (INSTRUCTIONS, PLAIN_INSTRUCTIONS, QUESTIONS, MetricsFile,  # noqa: E402
                        default_output_dir, load_policy, make_grader, scripted_judge, step_line,
                        warmup_sft)

from rewardjudge.rl import trl_reward_func  # noqa: E402


def dataset(rows, instructions: str = PLAIN_INSTRUCTIONS):
    from datasets import Dataset

    return Dataset.from_list([{"prompt": [{"role": "system", "content": instructions},
                                          {"role": "user", "content": q}],
                               "reference": ref} for q, ref in rows])


def _is_train_step(logs: dict[str, Any]) -> bool:
    """A per-step training log (not evaluation, not the closing summary)."""
    return "loss" in logs and not any(k.startswith("eval_") for k in logs) and "train_runtime" not in logs


def step_record(step: int, logs: dict[str, Any], key: str, seconds: float | None = None) -> dict[str, Any]:
    """The JSONL record of one step: TRL's logs with a few names of our own up
    front (``reward/groups_varied``: the share of groups whose rewards differ,
    from TRL's ``frac_reward_zero_std``)."""
    frac_zero = logs.get("frac_reward_zero_std")
    return {"step": step, "loss": logs.get("loss"), "step_s": seconds,
            "reward/mean": logs.get(f"rewards/{key}/mean", logs.get("reward")),
            "reward/groups_varied": None if frac_zero is None else 1.0 - frac_zero,
            **logs}


def metrics_callback(path: str, steps: int, key: str):
    """A TrainerCallback that prints one line per step and writes the full
    logs to ``path`` (JSONL, one record per training step)."""
    from transformers import TrainerCallback

    class StepMetrics(TrainerCallback):
        def __init__(self):
            self.file = MetricsFile(path)
            self.records: list[dict[str, Any]] = []
            self.started = time.perf_counter()

        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = dict(logs or {})
            logs.pop("total_flos", None)
            if not state.is_world_process_zero:
                return
            if _is_train_step(logs):
                record = step_record(state.global_step, logs, key, time.perf_counter() - self.started)
                self.records.append(record)
                self.file.write(record)
                print(step_line(state.global_step, steps, reward=record["reward/mean"],
                                varied=record["reward/groups_varied"],
                                unscored=logs.get(f"judge/{key}/unscored_rate"),
                                p50=logs.get(f"judge/{key}/latency_p50"), loss=record["loss"],
                                grad_norm=logs.get("grad_norm"), seconds=record["step_s"]), flush=True)
            elif any(k.startswith("eval_") for k in logs):
                print("eval  " + step_line(state.global_step, steps,
                                           reward=logs.get(f"eval_rewards/{key}/mean"),
                                           unscored=logs.get(f"eval_judge/{key}/unscored_rate"),
                                           p50=logs.get(f"eval_judge/{key}/latency_p50"),
                                           loss=logs.get("eval_loss")).split("  ", 1)[1], flush=True)

        def on_train_end(self, args, state, control, **kwargs):
            self.file.close()

    return StepMetrics()


def run(args: argparse.Namespace, judge) -> dict[str, Any]:
    import torch
    from transformers import PrinterCallback, ProgressCallback
    from trl import GRPOConfig, GRPOTrainer

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    model, tok = load_policy(args.policy, "cpu", torch.float32)  # the trainer places it
    if args.sft_steps:
        loss = warmup_sft(model, tok, args.sft_steps)
        print(f"warm-up: {args.sft_steps} supervised steps on gold JSON, loss {loss:.4f}", flush=True)
    on_gpu = device.startswith("cuda")
    structured = args.task == "json"
    instructions = INSTRUCTIONS if structured else PLAIN_INSTRUCTIONS
    config = GRPOConfig(
        output_dir=args.output_dir, use_cpu=not on_gpu, bf16=on_gpu and torch.cuda.is_bf16_supported(),
        activation_checkpointing=False,  # faster on CPU; the NOTES' gradient_checkpointing=False
        per_device_train_batch_size=args.batch_size, num_generations=args.num_generations,
        per_device_eval_batch_size=args.num_generations, num_generations_eval=args.num_generations,
        max_completion_length=args.max_new_tokens, max_steps=args.steps, learning_rate=args.lr,
        logging_steps=1, save_strategy="no", report_to=args.report_to, seed=args.seed,
        disable_tqdm=True, log_completions=False)
    grader = make_grader(judge, structured=structured)
    reward = trl_reward_func(grader)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config,
                          train_dataset=dataset(QUESTIONS[2:], instructions),
                          eval_dataset=dataset(QUESTIONS[:1], instructions), processing_class=tok)
    for noisy in (PrinterCallback, ProgressCallback):  # they print each step's whole dict
        trainer.remove_callback(noisy)
    steps = metrics_callback(args.metrics, args.steps, grader.grader_key)
    trainer.add_callback(steps)
    reward.attach(trainer)  # evaluation penalties while trainer.evaluate() runs
    print(f"metrics: {args.metrics}", flush=True)
    try:
        trainer.train()
    finally:
        steps.file.close()
    metrics = trainer.evaluate()
    return {"log_history": trainer.state.log_history, "steps": steps.records, "eval": metrics,
            "reward": reward, "metrics_path": args.metrics}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", default="tiny", help="tiny, smollm2 or a checkpoint directory")
    p.add_argument("--judge", choices=["embedded", "scripted"], default="embedded")
    p.add_argument("--judge-url", help="an OpenAI-compatible judge server, .../v1")
    p.add_argument("--judge-model", default="judge")
    p.add_argument("--judge-fail-rate", type=float, default=0.0, help="scripted judge: share of 503s")
    p.add_argument("--task", choices=["plain", "json"], default="plain",
                   help="plain: answers in words, every completion judged; json: AnalysisOutput JSON, "
                        "malformed JSON penalized without asking the judge")
    p.add_argument("--device", default="auto", help="cpu, cuda or auto")
    p.add_argument("--sft-steps", type=int, default=0,
                   help="supervised warm-up steps on gold JSON answers first (with --task json: a tiny "
                        "random policy never writes valid JSON; without ~40-60 of these every completion "
                        "is penalized and the judge is never asked)")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8, help="completions per device per step")
    p.add_argument("--num-generations", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=24)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", help="TRL's output directory (default: runs/trl_grpo-<time>)")
    p.add_argument("--metrics", help="append each step's full metrics (judge health included) to this "
                                     "JSONL file (default: OUTPUT_DIR/metrics.jsonl)")
    p.add_argument("--report-to", default="none", help="none, wandb, tensorboard...")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    args.output_dir = args.output_dir or default_output_dir("trl_grpo")
    args.metrics = args.metrics or os.path.join(args.output_dir, "metrics.jsonl")
    if args.judge_url:
        from rewardjudge.models import OpenAIModel

        # created outside any loop: the client binds to TRL's reward loop on first use
        return run(args, OpenAIModel(args.judge_url, args.judge_model))
    if args.judge == "scripted":
        return run(args, scripted_judge(args.judge_fail_rate, args.seed))
    from rewardjudge.models import spawn_judge

    with spawn_judge() as judge:  # the synchronous form: TRL runs the reward function on its own loop
        return run(args, judge)


if __name__ == "__main__":
    main(sys.argv[1:])
