#!/usr/bin/env bash
# GRPO in verl 0.9 with a rewardjudge grader as the reward (needs verl's GPU stack: vLLM/SGLang, FSDP).
# An unscored sample (the judge failed) is a NaN marker from compute_score; the rewardjudge manager keeps
# the extra keys the same for every sample and the rewardjudge_grpo estimator runs verl's own GRPO over the
# scored and penalized samples only (unscored: advantage 0). Plain `grpo` would turn the group NaN and
# verl would skip the step. See rewardjudge/rl/verl_manager.py.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
export REWARDJUDGE_GRADER="${REWARDJUDGE_GRADER:-demo}"
export REWARDJUDGE_JUDGE="${REWARDJUDGE_JUDGE:-http://127.0.0.1:8000/v1}"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=rewardjudge_grpo \
    algorithm.norm_adv_by_std_in_grpo=true \
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
    trainer.n_gpus_per_node=1 trainer.nnodes=1 trainer.total_epochs=1 "$@"
