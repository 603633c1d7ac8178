"""A session's tasks, run in the runtime's task group: no task group or host task per
session.

A session hands its provider a task group (:attr:`agent_bridge.spi.SessionContext.task_group`)
whose tasks end when the session closes.  An anyio task group of its own would need a
task hosting it for the session's whole life, and with its cancel scopes and task handle
that is about 6 KB per session, idle or not.  :class:`SessionTasks` is that task group as
far as the session and its provider can tell (``start_soon``, ``start``, ``create_task``,
``cancel``), but each task runs in the runtime's group inside a cancel scope of its own,
made only while the task runs: an idle session costs one small object.

:meth:`SessionTasks.cancel` cancels every task of the session, and every one started
later as it starts; ``finished`` is set once it was called and no task of the session is
left (what leaving the ``async with`` of a task group would have said).  An exception
escaping from a task ends the runtime's group, as it did through the session's group.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Iterator
from contextvars import Context
from typing import Any, Literal, TypeVar, cast

import anyio
import anyio.abc

from agent_bridge.runtime.flag import Flag

__all__ = ["SessionTasks"]

T = TypeVar("T")


class SessionTasks(anyio.abc.TaskGroup):
    """The tasks of one session, in ``group`` (the runtime's task group); ``finished``
    is set once :meth:`cancel` was called and none of them is left."""

    __slots__ = ("_cancelled", "_group", "_live", "_scopes", "finished")

    def __init__(self, group: anyio.abc.TaskGroup, finished: Flag) -> None:
        self._group = group
        self.finished = finished
        self._cancelled = False
        #: tasks created and not yet ended (started or not)
        self._live = 0
        #: the cancel scopes of the tasks running now (made on first use)
        self._scopes: set[anyio.CancelScope] | None = None

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled

    @property
    def cancel_scope(self) -> anyio.CancelScope:  # type: ignore[override]
        """Not available: the tasks have a cancel scope each, not one in common; use
        :meth:`cancel`.  Raises :class:`AttributeError`."""
        raise AttributeError(
            "a session's tasks have no common cancel scope; SessionTasks.cancel() ends them"
        )

    def cancel(self, reason: str | None = None) -> None:
        """Cancel every task of the session now, and every one started later as it
        starts.  Returns at once; ``finished`` is set when the last one has ended."""
        self._cancelled = True
        if self._scopes:
            for scope in list(self._scopes):
                scope.cancel()
        if self._live == 0:
            self.finished.set()

    def create_task(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        name: object = None,
        context: Context | None = None,
    ) -> anyio.TaskHandle[T]:
        """Run ``coro`` as a task of the session (in the runtime's group); return its
        handle (whose value is ``None`` when the session's close ended the task)."""
        wrapped = cast("Coroutine[Any, Any, T]", self._run(coro))
        try:
            with self._counted():
                return self._group.create_task(wrapped, name=name, context=context)
        except BaseException:
            wrapped.close()  # never started
            raise

    if not hasattr(anyio.abc.TaskGroup, "create_task"):  # pragma: no cover - anyio < 4.14

        def start_soon(  # type: ignore[misc,override]  # final from anyio 4.14, abstract before
            self,
            func: Callable[..., Coroutine[Any, Any, Any]],
            *args: object,
            name: object = None,
        ) -> None:
            """Start ``func(*args)`` as a task of the session (anyio before 4.14, where
            ``start_soon`` is the primitive and ``create_task`` does not exist)."""
            with self._counted():
                self._group.start_soon(self._run_call, func, args, name=name)

    async def start(
        self,
        func: Callable[..., Coroutine[Any, Any, Any]],
        *args: object,
        name: object = None,
        return_handle: Literal[False, True] = False,
    ) -> Any:
        """Start ``func(*args, task_status=…)`` as a task of the session and return what
        it passes to ``task_status.started()`` (its handle too with ``return_handle``)."""
        # counted by _run_started itself: start() returns only once the task has run
        if return_handle:
            return await self._group.start(
                self._run_started, func, args, name=name, return_handle=True
            )
        return await self._group.start(self._run_started, func, args, name=name)

    async def __aenter__(self) -> SessionTasks:
        raise RuntimeError("a session's tasks are not entered: the runtime's group runs them")

    async def __aexit__(self, *exc: object) -> bool:
        raise RuntimeError("a session's tasks are not entered: the runtime's group runs them")

    async def _run(self, coro: Coroutine[Any, Any, T]) -> T | None:
        scope = self._enter()
        try:
            with scope:
                return await coro
            return None  # cancelled (the session closed)
        finally:
            self._leave(scope)

    async def _run_call(
        self, func: Callable[..., Coroutine[Any, Any, T]], args: tuple[object, ...]
    ) -> T | None:
        return await self._run(func(*args))

    async def _run_started(
        self,
        func: Callable[..., Coroutine[Any, Any, Any]],
        args: tuple[object, ...],
        *,
        task_status: anyio.abc.TaskStatus[Any],
    ) -> Any:
        self._live += 1
        scope = self._enter()
        try:
            with scope:
                return await func(*args, task_status=task_status)
            return None
        finally:
            self._leave(scope)

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """Count one more task while it is handed to the runtime's group (synchronously);
        uncount it if that fails (the group has ended)."""
        self._live += 1
        try:
            yield
        except BaseException:
            self._live -= 1
            if self._cancelled and self._live == 0:
                self.finished.set()
            raise

    def _enter(self) -> anyio.CancelScope:
        scope = anyio.CancelScope()
        if self._cancelled:
            scope.cancel()
        scopes = self._scopes
        if scopes is None:
            scopes = self._scopes = set()
        scopes.add(scope)
        return scope

    def _leave(self, scope: anyio.CancelScope) -> None:
        if self._scopes is not None:
            self._scopes.discard(scope)
        self._live -= 1
        if self._cancelled and self._live == 0:
            self.finished.set()
