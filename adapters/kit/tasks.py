"""Supervised background tasks of a provider session.

An adapter runs readers, watchers and per-request waiters in the session's task group
(:attr:`agent_bridge.spi.SessionContext.task_group`), which belongs to the runtime.  An
exception escaping from one of them would tear that group down — and with it every other
task of the session.  :class:`TaskSupervisor` starts each coroutine inside a guard: the
exception is logged (type and redacted message; the traceback only at ``DEBUG``, redacted
too; nothing reaches a host) and handed to the adapter's failure callback as a classified
error code, so the adapter can fail its active run instead of hanging or crashing.
Every supervised task has its own cancel scope, so :meth:`TaskSupervisor.cancel_all`
ends them together on ``dispose``.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from agent_bridge.errors import ProviderFailure
from agent_bridge.redaction import redact
from agent_bridge.wire.errors import ErrorCode

__all__ = ["FailureHandler", "TaskSupervisor", "classify_exception"]

#: Called with the error code and a log-only detail when a supervised task fails.
FailureHandler = Callable[[ErrorCode, str], None]


def classify_exception(exc: BaseException) -> ErrorCode:
    """The error code a failed task stands for: a :class:`ProviderFailure`'s own code,
    else ``provider_contract`` (the adapter broke: a bug, an unexpected record)."""
    if isinstance(exc, ProviderFailure):
        return exc.error_code
    return "provider_contract"


class TaskSupervisor:
    """Starts guarded tasks in one task group, on behalf of one session.

    ``owner`` names the session in log lines (``"claude session"``); ``on_failure`` is
    called (synchronously, from the failed task) with the classified code and a detail
    for the log.  A failure callback that itself raises is logged and ignored.
    """

    __slots__ = ("_closed", "_log", "_on_failure", "_owner", "_scopes", "_tg")

    def __init__(
        self,
        task_group: anyio.abc.TaskGroup,
        log: logging.Logger,
        *,
        owner: str,
        on_failure: FailureHandler | None = None,
    ) -> None:
        self._tg = task_group
        self._log = log
        self._owner = owner
        self._on_failure = on_failure
        #: the scopes of the tasks not yet ended (made on first use: an idle session's
        #: supervisor costs no set)
        self._scopes: set[anyio.CancelScope] | None = None
        self._closed = False

    @property
    def active(self) -> int:
        """How many supervised tasks are started and not yet ended."""
        return len(self._scopes) if self._scopes else 0

    def start(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Start ``fn(*args)`` in the task group, guarded (see the class docstring).
        Returns at once.  After :meth:`cancel_all` a new task is cancelled as it starts."""
        label: str = name or str(getattr(fn, "__name__", "task"))
        scope = anyio.CancelScope()
        if self._closed:
            scope.cancel()
        scopes = self._scopes
        if scopes is None:
            scopes = self._scopes = set()
        scopes.add(scope)

        async def guarded() -> None:
            try:
                with scope:
                    await fn(*args)
            except Exception as exc:
                self._failed(label, exc)
            finally:
                scopes.discard(scope)

        self._tg.start_soon(guarded, name=f"{self._owner}: {label}")

    def cancel_all(self) -> None:
        """Cancel every supervised task, and every one started later.  Returns at once;
        the tasks end at their next checkpoint."""
        self._closed = True
        for scope in list(self._scopes or ()):
            scope.cancel()

    def _failed(self, label: str, exc: Exception) -> None:
        code = classify_exception(exc)
        self._log.error(
            "%s: task %s failed (%s): %s",
            self._owner,
            label,
            type(exc).__name__,
            redact(str(exc))[:2000],
        )
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug(
                "%s: task %s traceback:\n%s",
                self._owner,
                label,
                redact("".join(traceback.format_exception(exc))),
            )
        if self._on_failure is None:
            return
        try:
            self._on_failure(code, f"{label} failed ({type(exc).__name__})")
        except Exception:
            self._log.error("%s: the failure callback of %s raised", self._owner, label)
