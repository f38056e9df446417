"""A grader as an HTTP reward server (docs/serve.md); names load on first use (no aiohttp for ``--help``)."""

from .._lazy import lazy_getattr as _lazy_getattr

_LAZY = {"RewardServer": "._server", "ServerOptions": "._server", "openrlhf_reward_func": "._groups"}

__all__ = sorted(_LAZY)

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
