#!/usr/bin/env bash
# OpenRLHF 0.11.2 with a rewardjudge grader as its remote reward model (flag names as its
# `python -m openrlhf.cli.train_ppo_ray --help` gives them; tests/test_openrlhf.py parses them with it).
#
# OpenRLHF has no per-sample mask, so a sample the judge could not score gets a stand-in reward:
# the mean of its group's usable rewards. That gives it advantage 0 and leaves its group's others
# unchanged only under dr_grpo with no KL in the reward (KL off here; --algo.kl.use_loss keeps it out
# of the reward) and no overlong / stop-properly reward penalty. `serve` refuses other estimators.
# Give OpenRLHF ONE --reward.remote_url: several comma-separated URLs split every group.
#
#   REWARDJUDGE_GRADER (demo), REWARDJUDGE_JUDGE (http://127.0.0.1:8000/v1), REWARDJUDGE_JUDGE_MODEL,
#   REWARDJUDGE_PORT (5000), N_SAMPLES (8), REWARDJUDGE_START_TIMEOUT (120 s), PYTHON (python3);
#   extra arguments go to OpenRLHF.
set -euo pipefail
N="${N_SAMPLES:-8}"
PORT="${REWARDJUDGE_PORT:-5000}"
START_TIMEOUT="${REWARDJUDGE_START_TIMEOUT:-120}"

# 1. the reward server (127.0.0.1 only). OpenRLHF's client sends no Authorization header: leave
#    REWARDJUDGE_SERVE_TOKEN unset, or put the server behind a proxy that adds it.
rewardjudge serve --grader "${REWARDJUDGE_GRADER:-demo}" --judge "${REWARDJUDGE_JUDGE:-http://127.0.0.1:8000/v1}" \
    ${REWARDJUDGE_JUDGE_MODEL:+--judge-model "$REWARDJUDGE_JUDGE_MODEL"} \
    --port "$PORT" --estimator dr_grpo --group-size "$N" &
SERVE_PID=$!
trap 'kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true' EXIT  # SIGTERM drains
deadline=$((SECONDS + START_TIMEOUT))
until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
    if ! kill -0 "$SERVE_PID" 2>/dev/null; then
        echo "openrlhf_remote_rm.sh: rewardjudge serve exited at start (its error is above)" >&2
        exit 1
    fi
    if (( SECONDS >= deadline )); then
        echo "openrlhf_remote_rm.sh: rewardjudge serve not answering after ${START_TIMEOUT}s on port $PORT" >&2
        exit 1
    fi
    sleep 0.5
done

# 2. OpenRLHF posts {"query", "prompts", "labels"} to the URL, one sample per request.
"${PYTHON:-python3}" -m openrlhf.cli.train_ppo_ray \
    --actor.model_name_or_path Qwen/Qwen2.5-0.5B-Instruct \
    --reward.remote_url "http://127.0.0.1:$PORT/get_reward" \
    --data.prompt_dataset "$HOME/data/prompts.jsonl" --data.input_key prompt --data.label_key answer \
    --data.apply_chat_template \
    --algo.advantage.estimator dr_grpo --rollout.n_samples_per_prompt "$N" --algo.kl.init_coef 0 \
    --rollout.batch_size 64 --train.batch_size 512 --train.micro_batch_size 4 --rollout.micro_batch_size 8 \
    --train.max_epochs 1 --actor.adam.lr 1e-6 --vllm.num_engines 1 "$@"
