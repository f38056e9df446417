"""The one bridge from synchronous code to the library's coroutines: ``LoopThread`` (an event loop
in a daemon thread, long-lived where connections should stay warm) and ``run_sync`` (a fresh one per call).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import weakref
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")

__all__ = ["LoopThread", "run_sync"]

_LIVE: "weakref.WeakSet[LoopThread]" = weakref.WeakSet()


class LoopThread:
    """An event loop in a daemon thread; ``run`` blocks until a coroutine is done. ``close()`` ends it
    as ``asyncio.run`` ends its loop; open ones are closed at interpreter exit."""

    def __init__(self, name: str = "rewardjudge-loop"):
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        _LIVE.add(self)

    @property
    def loop(self) -> "asyncio.AbstractEventLoop | None":
        """The loop calls run on: None before the first ``run`` and after ``close``."""
        return self._loop

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
            raise RuntimeError("a synchronous entry point was called from its own worker loop; "
                               "await the async form instead")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        if thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(_wind_down(), loop).result(30)
            except Exception:  # a wedged task: stop the loop anyway
                pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
        if not loop.is_running():
            loop.close()

    def __enter__(self) -> "LoopThread":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


async def _wind_down() -> None:
    """What ``asyncio.run`` does before closing its loop."""
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks(loop) if t is not me]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    await loop.shutdown_asyncgens()
    await loop.shutdown_default_executor()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code, also inside a running loop, on a fresh
    ``LoopThread`` closed before returning."""
    with LoopThread("rewardjudge-sync") as runner:
        return runner.run(coro)


@atexit.register
def _close_all() -> None:
    for runner in list(_LIVE):
        runner.close()
