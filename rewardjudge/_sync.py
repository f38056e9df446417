"""Run a coroutine from synchronous code, with or without a running loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, or, where a loop already runs in this thread
    (Jupyter), the same on a fresh loop in a worker thread.

    The library's one sync bridge. Each call's loop ends with
    ``asyncio.run``'s clean-up, which closes what was opened on it (an
    ``OpenAIModel``'s HTTP session closes with its loop), so repeated calls
    leave nothing open behind them."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
