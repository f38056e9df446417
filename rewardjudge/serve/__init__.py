"""``rewardjudge serve``: a grader as an HTTP reward server (docs/serve.md).

``POST /get_reward`` (OpenRLHF's ``--reward.remote_url``, needs ``--estimator dr_grpo``),
``POST /grade``, ``GET /health``, ``GET /metrics``. OpenRLHF's ``.py`` form is refused.
"""

from ._openrlhf import openrlhf_reward_func
from ._server import RewardServer

__all__ = ["RewardServer", "openrlhf_reward_func"]
