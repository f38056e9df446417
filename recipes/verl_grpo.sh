#!/usr/bin/env bash
# GRPO in verl 0.9 on gsm8k with a rewardjudge grader as the reward (needs verl's GPU stack: vLLM/SGLang, FSDP).
#
# The default grader is the catalog's `correctness`: the judge compares the response's final answer with
# gsm8k's reference (verl passes it as ground_truth; rewardjudge hands it to the grader as `reference`),
# so right answers get 1.0 and wrong ones 0.0 whatever format the policy writes. Any judge server with an
# OpenAI-compatible API works (REWARDJUDGE_JUDGE, e.g. `python -m rewardjudge serve` or vLLM).
#
# A judge failure never becomes a number: compute_score marks it (NaN) for the rewardjudge manager, and the
# rewardjudge_grpo estimator runs verl's own GRPO over the scored samples only (failed ones, and a sample
# left alone in its group, get advantage 0). The manager refuses at start an estimator that cannot do that,
# and compute_score raises at the first failure under any other manager. More than 50% of a step's samples
# unscored for 3 steps in a row stops the run (JudgeOutage); change or turn off (null) with the last two
# algorithm.rewardjudge options.
#
# What it prints per step: one line from the estimator,
#   [rewardjudge] rewardjudge_grpo: 2048 samples, unscored 12 (1%), lone usable in a failed group 0
# then verl's console logger's metrics dict (critic/score/mean is NaN in a step with a failure: verl 0.9.1
# logs no reward_extra_info in training; validation logs val-aux/<source>/unscored/mean@N and the other
# judge keys).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
export REWARDJUDGE_GRADER="${REWARDJUDGE_GRADER:-correctness}"
export REWARDJUDGE_JUDGE="${REWARDJUDGE_JUDGE:-http://127.0.0.1:8000/v1}"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=rewardjudge_grpo \
    algorithm.norm_adv_by_std_in_grpo=true \
    +algorithm.rewardjudge.outage_threshold=0.5 \
    +algorithm.rewardjudge.outage_steps=3 \
    data.train_files="$HOME/data/gsm8k/train.parquet" \
    data.val_files="$HOME/data/gsm8k/test.parquet" \
    data.train_batch_size=256 data.max_prompt_length=512 data.max_response_length=512 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    reward.reward_manager.source=importlib \
    reward.reward_manager.module.path=pkg://rewardjudge.rl.verl_manager \
    reward.reward_manager.name=RewardJudgeManager \
    reward.custom_reward_function.path="$HERE/verl_grpo_reward.py" \
    reward.custom_reward_function.name=compute_score \
    trainer.logger='["console"]' \
    trainer.n_gpus_per_node=1 trainer.nnodes=1 trainer.total_epochs=1 "$@"
