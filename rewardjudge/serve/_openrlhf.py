"""OpenRLHF's ``.py`` reward form: ``reward_func(queries, prompts, labels)``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Sequence

from ..errors import ConfigError
from ._samples import openrlhf_thread
from ._server import RewardServer


class _OpenRLHFRewardFunc:
    """``reward_func(queries, prompts, labels)`` for OpenRLHF's ``.py`` form;
    picklable (the grader is built on first use in the process that calls it)."""

    def __init__(self, spec: Any, judge: str | None, judge_model: str | None, options: dict[str, Any]):
        self.spec, self.judge, self.judge_model, self.options = spec, judge, judge_model, options
        self._state: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "judge": self.judge, "judge_model": self.judge_model, "options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["spec"], state["judge"], state["judge_model"], state["options"])

    def _ensure(self):
        from .._sync import LoopThread

        with self._lock:
            if self._state is None:
                runner = LoopThread("rewardjudge-openrlhf")
                grader = runner.run(_build(self.spec, self.judge, self.judge_model))
                server = RewardServer(grader, **self.options)
                runner.run(server._on_startup(None))  # the batching window, on the runner's loop
                self._state = (runner, server)
            return self._state

    def __call__(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict[str, Any]:
        runner, server = self._ensure()
        n = len(queries)
        labels = [None] * n if labels is None else list(labels)
        prompts = [None] * n if prompts is None else list(prompts)
        if len(prompts) != n or len(labels) != n:
            raise ConfigError(f"reward_func got {n} queries, {len(prompts)} prompts, {len(labels)} labels")
        threads = [openrlhf_thread(q, p, lab, eos=server.eos, where=f"queries[{i}]")
                   for i, (q, p, lab) in enumerate(zip(queries, prompts, labels))]
        keys = [p if p is not None else q for p, q in zip(prompts, queries)]
        if server._groups is not None:
            async def grouped():
                return await asyncio.gather(*(server._groups.add(k, t) for k, t in zip(keys, threads)))
            results = runner.run(grouped())
        else:
            results = runner.run(server.grade_group(threads, keys))
        rewards = [r for _, r in results]
        return {"rewards": rewards, "scores": rewards,
                "extra_logs": {"unscored": [float(g.status == "unscored") for g, _ in results],
                               "penalized": [float(g.status == "penalized") for g, _ in results]}}


async def _build(spec: Any, judge: str | None, judge_model: str | None):
    from ..rl._verl_adapter import build_grader

    return build_grader(spec, judge, judge_model)


def openrlhf_reward_func(spec: Any, *, judge: str | None = None, judge_model: str | None = None,
                         **options: Any) -> _OpenRLHFRewardFunc:
    """OpenRLHF's ``.py`` reward form: put ``reward_func =
    openrlhf_reward_func("demo", judge="http://127.0.0.1:8000/v1")`` in a
    file and pass its path as ``--remote_rm_url``. OpenRLHF calls it from a
    thread with one sample; it answers like ``/get_reward`` (rewards,
    scores, extra_logs) with the same unscored handling. ``options`` are
    ``RewardServer``'s (``group_size``, ``unscored``...).
    """
    return _OpenRLHFRewardFunc(spec, judge, judge_model, dict(options))
