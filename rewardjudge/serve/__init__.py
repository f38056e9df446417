"""``rewardjudge serve``: a grader as an HTTP reward server (docs/serve.md).

``POST /get_reward`` (OpenRLHF's ``--reward.remote_url``, needs ``--estimator dr_grpo``),
``POST /grade``, ``GET /health``, ``GET /metrics``. OpenRLHF's ``.py`` form is refused.
The names load on first use: the command line's parser imports this package without aiohttp.
"""

from .._lazy import lazy_getattr as _lazy_getattr

_LAZY = {"RewardServer": "._server", "ServerOptions": "._server", "openrlhf_reward_func": "._groups"}

__all__ = sorted(_LAZY)

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
