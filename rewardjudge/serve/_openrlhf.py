"""OpenRLHF's ``.py`` reward form (``reward_func(queries, prompts, labels)``): refused, with the HTTP form named."""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import ConfigError

PY_FORM_REFUSED = (
    "OpenRLHF's .py reward form cannot keep judge failures out of training: OpenRLHF calls reward_func with one "
    "sample at a time through asyncio.to_thread (a pool of a few threads) and swallows what it raises, and a "
    "sample the judge could not score needs its group's other rewards before it can be answered, so waiting for "
    "them would hold the pool until a timeout (6 prompts x 4 samples took 26 s) and answering at once would be a "
    "made-up number. Use the HTTP form: `rewardjudge serve --grader SPEC --judge URL --estimator dr_grpo "
    "--group-size N` and OpenRLHF's `--reward.remote_url http://127.0.0.1:5000/get_reward` with "
    "`--algo.advantage.estimator dr_grpo --rollout.n_samples_per_prompt N` (recipes/openrlhf_remote_rm.sh).")


def openrlhf_reward_func(spec: Any = None, *, judge: str | None = None, judge_model: str | None = None,
                         **options: Any) -> NoReturn:
    """Refuses OpenRLHF's ``.py`` reward form when OpenRLHF loads the file (ConfigError naming the HTTP form)."""
    raise ConfigError(PY_FORM_REFUSED)
