#!/usr/bin/env bash
# OpenRLHF with a rewardjudge grader as its remote reward model.
# 1. the reward server (127.0.0.1 only; --group-size = --n_samples_per_prompt so that a sample the judge
#    could not score gets its group's mean reward, i.e. advantage 0, instead of a NaN or a fake 0)
set -euo pipefail
export REWARDJUDGE_SERVE_TOKEN="${REWARDJUDGE_SERVE_TOKEN:-}"
rewardjudge serve --grader "${REWARDJUDGE_GRADER:-demo}" --judge "${REWARDJUDGE_JUDGE:-http://127.0.0.1:8000/v1}" \
    --port 5000 --group-size 8 &
SERVE_PID=$!
trap 'kill -TERM $SERVE_PID; wait $SERVE_PID' EXIT   # SIGTERM drains requests in flight
until curl -sf http://127.0.0.1:5000/health >/dev/null; do sleep 0.5; done

# 2. OpenRLHF posts {"query", "prompts", "labels"} to the URL, one sample per request.
#    (OpenRLHF's client sends no Authorization header: leave REWARDJUDGE_SERVE_TOKEN empty here, or put
#    the server behind a proxy that adds it.) The .py form also works:
#    --remote_rm_url my_reward.py with  reward_func = openrlhf_reward_func("demo", judge=URL, group_size=8)
python3 -m openrlhf.cli.train_ppo_ray \
    --pretrain Qwen/Qwen2.5-0.5B-Instruct \
    --remote_rm_url http://127.0.0.1:5000/get_reward \
    --prompt_data "$HOME/data/prompts.jsonl" --input_key prompt --label_key answer --apply_chat_template \
    --advantage_estimator group_norm --n_samples_per_prompt 8 \
    --rollout_batch_size 64 --train_batch_size 512 --micro_train_batch_size 4 --micro_rollout_batch_size 8 \
    --max_epochs 1 --actor_learning_rate 1e-6 --init_kl_coef 0.0 --vllm_num_engines 1 "$@"
