"""verl custom reward function: a rewardjudge grader as verl's compute_score.

Point verl at this file (see recipes/verl_grpo.sh, which also names the
rewardjudge manager and estimator this needs). The grader is built from a SPEC
inside whichever process calls it (verl's reward loop workers), so nothing
unpicklable travels.

    REWARDJUDGE_GRADER  grader SPEC (default: correctness, the catalog's
                        reference check: gsm8k's ground_truth is the reference;
                        e.g. my_graders.py:make for your own)
    REWARDJUDGE_JUDGE   judge server URL ending in /v1 (default http://127.0.0.1:8000/v1)
    REWARDJUDGE_JUDGE_MODEL  the model name on it (default: its only model)
"""

import os

from rewardjudge.rl import verl_compute_score

# sync and picklable; run it under the rewardjudge manager (a judge failure raises under any other)
compute_score = verl_compute_score(
    os.environ.get("REWARDJUDGE_GRADER", "correctness"),
    judge=os.environ.get("REWARDJUDGE_JUDGE", "http://127.0.0.1:8000/v1"),
    judge_model=os.environ.get("REWARDJUDGE_JUDGE_MODEL") or None,
)
