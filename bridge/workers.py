"""The bridge's worker threads: a bounded pool that shrinks when idle.

Blocking calls (journal reads and the journal's close) run here, not in anyio's default
thread pool.  anyio's pool allows 40 threads and retires an idle one only when a *later*
call comes in, so a burst of pipelined history requests left 40 threads behind for the
life of the process (issue 11, case 7: 2 threads became 42 after 40,000 requests).  This
pool starts a thread only when more jobs wait than threads are idle, never more than
``max_workers`` (:data:`MAX_WORKERS`), and each thread exits by itself after
``idle_seconds`` without work.

A caller that is cancelled still waits for its job to finish (as ``anyio.to_thread``
does by default): a thread cannot be interrupted, and the job may hold a lock.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["MAX_WORKERS", "WorkerPool", "run_sync", "shared_pool"]

T = TypeVar("T")

MAX_WORKERS: Final = 4
IDLE_SECONDS: Final = 2.0


class _Job:
    __slots__ = ("args", "error", "event", "func", "loop", "result", "token")

    def __init__(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.func = func
        self.args = args
        self.event = anyio.Event()
        self.token = anyio.lowlevel.current_token()
        native = self.token.native_token
        self.loop = native if isinstance(native, asyncio.AbstractEventLoop) else None
        self.result: Any = None
        self.error: BaseException | None = None

    def wake(self) -> None:
        try:
            if self.loop is not None:
                self.loop.call_soon_threadsafe(self.event.set)
            else:
                anyio.from_thread.run_sync(self.event.set, token=self.token)
        except RuntimeError:  # the event loop is gone: nobody is waiting any more
            pass


class WorkerPool:
    """See the module docstring."""

    def __init__(
        self,
        max_workers: int = MAX_WORKERS,
        idle_seconds: float = IDLE_SECONDS,
        name: str = "agent-bridge-worker",
    ) -> None:
        self.max_workers = max_workers
        self.idle_seconds = idle_seconds
        self.name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        #: the most threads alive at once so far
        self.peak = 0

    @property
    def threads(self) -> int:
        """How many worker threads are alive now."""
        return self._threads

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """Run ``func(*args)`` in a worker thread and return (or raise) what it does."""
        job = _Job(func, args)
        with self._lock:
            self._jobs.put(job)
            if self._jobs.qsize() > self._idle and self._threads < self.max_workers:
                self._threads += 1
                self.peak = max(self.peak, self._threads)
                threading.Thread(target=self._main, name=self.name, daemon=True).start()
        with anyio.CancelScope(shield=True):
            await job.event.wait()
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[no-any-return]

    def _main(self) -> None:
        jobs = self._jobs
        lock = self._lock
        while True:
            with lock:
                self._idle += 1
            try:
                job = jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with lock:
                    self._idle -= 1
                    if jobs.empty():
                        self._threads -= 1
                        return
                continue
            with lock:
                self._idle -= 1
            try:
                job.result = job.func(*job.args)
            except BaseException as exc:  # handed to the caller, raised there
                job.error = exc
            job.wake()
            del job


_pool = WorkerPool()


async def run_sync(func: Callable[..., T], *args: Any) -> T:
    """Run ``func(*args)`` in the process's shared bounded pool (see the module docstring)."""
    return await _pool.run(func, *args)


def shared_pool() -> WorkerPool:
    """The pool :func:`run_sync` uses (for tests and diagnostics)."""
    return _pool
