"""A private event loop in a daemon thread, for sync entry points that are
called many times (verl calls ``compute_score`` once per sample).

``asyncio.run`` per call would build a new loop every time, and a judge client
bound to the previous loop (its HTTP session, its concurrency limit) would be
thrown away on every sample. One long-lived loop keeps connections warm and
works whether or not the caller's thread already runs a loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on one background loop; ``run`` blocks until done."""

    def __init__(self, name: str = "rewardjudge-rl-loop"):
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._ensure()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError("a synchronous reward function was called from its own worker loop; "
                               "await the async form instead")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            loop.close()
