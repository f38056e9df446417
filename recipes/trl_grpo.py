"""TRL's GRPOTrainer rewarded by a structured-output LLM judge through ``trl_reward_func``.

The dataset is conversational (a system message asking for JSON, the
question) with a ``reference`` column; the adapter hands that column to the
grader as thread metadata, where the judge prompt reads it as
``{{metadata.reference}}``. Completions the judge could not grade come back
as ``None``, which TRL leaves out of the group baselines (advantage 0). The
judge-health metrics appear in TRL's logs under ``judge/analysis-grader/``,
each completion's status and reason in its completions table, and
``reward.attach(trainer)`` makes the closing ``trainer.evaluate()`` use the
evaluation penalty (0.0) for malformed JSON instead of the training one (-1.0).

Launch commands:

    # CPU, the embedded judge (SmolLM2-135M on llama.cpp's server), a tiny random policy
    python recipes/trl_grpo.py --steps 2
    # CPU, the scripted judge (no server), 10% judge failures, after a JSON warm-up so that
    # the tiny policy writes some valid JSON (without it every completion is penalized)
    python recipes/trl_grpo.py --judge scripted --judge-fail-rate 0.1 --sft-steps 60 --steps 2
    # CPU, SmolLM2-135M-Instruct as the policy (~8 s a step)
    python recipes/trl_grpo.py --policy smollm2 --judge scripted --steps 2
    # GPU, a real judge server and a real policy checkpoint
    python recipes/trl_grpo.py --device cuda --policy /models/Qwen2.5-0.5B-Instruct \\
        --judge-url http://judge:8000/v1 --judge-model Qwen/Qwen2.5-7B-Instruct \\
        --steps 200 --batch-size 32 --num-generations 8 --max-new-tokens 128 --lr 1e-6
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grpo_torch import (INSTRUCTIONS, QUESTIONS, load_policy, make_grader, scripted_judge,  # noqa: E402
                        warmup_sft)

from rewardjudge.rl import trl_reward_func  # noqa: E402


def dataset(rows):
    from datasets import Dataset

    return Dataset.from_list([{"prompt": [{"role": "system", "content": INSTRUCTIONS},
                                          {"role": "user", "content": q}],
                               "reference": ref} for q, ref in rows])


def run(args: argparse.Namespace, judge) -> dict[str, Any]:
    import torch
    from trl import GRPOConfig, GRPOTrainer

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    model, tok = load_policy(args.policy, "cpu", torch.float32)  # the trainer places it
    if args.sft_steps:
        print({"sft_steps": args.sft_steps, "sft_loss": warmup_sft(model, tok, args.sft_steps)}, flush=True)
    on_gpu = device.startswith("cuda")
    with contextlib.ExitStack() as stack:
        out_dir = args.output_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="trl-grpo-"))
        config = GRPOConfig(
            output_dir=out_dir, use_cpu=not on_gpu, bf16=on_gpu and torch.cuda.is_bf16_supported(),
            activation_checkpointing=False,  # faster on CPU; the NOTES' gradient_checkpointing=False
            per_device_train_batch_size=args.batch_size, num_generations=args.num_generations,
            per_device_eval_batch_size=args.num_generations, num_generations_eval=args.num_generations,
            max_completion_length=args.max_new_tokens, max_steps=args.steps, learning_rate=args.lr,
            logging_steps=1, save_strategy="no", report_to=args.report_to, seed=args.seed,
            disable_tqdm=True, log_completions=False)
        reward = trl_reward_func(make_grader(judge))
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config,
                              train_dataset=dataset(QUESTIONS[2:]), eval_dataset=dataset(QUESTIONS[:1]),
                              processing_class=tok)
        reward.attach(trainer)  # evaluation penalties while trainer.evaluate() runs
        trainer.train()
        metrics = trainer.evaluate()
    return {"log_history": trainer.state.log_history, "eval": metrics, "reward": reward}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", default="tiny", help="tiny, smollm2 or a checkpoint directory")
    p.add_argument("--judge", choices=["embedded", "scripted"], default="embedded")
    p.add_argument("--judge-url", help="an OpenAI-compatible judge server, .../v1")
    p.add_argument("--judge-model", default="judge")
    p.add_argument("--judge-fail-rate", type=float, default=0.0, help="scripted judge: share of 503s")
    p.add_argument("--device", default="auto", help="cpu, cuda or auto")
    p.add_argument("--sft-steps", type=int, default=0,
                   help="supervised warm-up steps on gold JSON answers first (a tiny random policy "
                        "never writes valid JSON: without ~40-60 of these every completion is penalized "
                        "and the judge is never asked)")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8, help="completions per device per step")
    p.add_argument("--num-generations", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=24)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", help="default: a temporary directory")
    p.add_argument("--report-to", default="none", help="none, wandb, tensorboard...")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
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
