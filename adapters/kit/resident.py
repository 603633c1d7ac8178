"""A resident child process per provider session.

Claude Code and Codex each run one long-lived CLI per session.  Starting it, noticing
that it exited, and stopping it are the same everywhere:

* :func:`start_resident` spawns through :mod:`agent_bridge.processes` (the one place the
  bridge starts processes) and turns a :class:`~agent_bridge.processes.SpawnError` into
  ``provider_unavailable`` naming what is missing;
* :meth:`ResidentChild.watch_exit` is the exit watcher: once the child has exited, its
  output reader gets a moment to drain what was written before, and if the output still
  has not ended (a grandchild holds the pipe open) the adapter's callback ends it;
* :meth:`ResidentChild.stop` is bounded (stdin EOF, SIGTERM, SIGKILL to the group, each
  with its own grace) and shielded from cancellation, so a cancelled owner leaks nothing;
* :meth:`ResidentChild.log_exit` logs the redacted stderr tail when the child ended
  unexpectedly (never sent to a host).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import anyio
import anyio.abc

from agent_bridge.adapters.kit.tasks import TaskSupervisor
from agent_bridge.errors import BridgeError
from agent_bridge.processes import ChildProcess, ProcessSpec, SpawnError, spawn

__all__ = ["LOG_TAIL_CHARS", "ResidentChild", "StopGraces", "start_resident"]

#: How much of the stderr tail goes into the log when the child ends unexpectedly.
LOG_TAIL_CHARS: Final = 4000


@dataclass(frozen=True, slots=True)
class StopGraces:
    """Seconds allowed after stdin EOF, after SIGTERM and after SIGKILL."""

    eof: float = 2.0
    term: float = 2.0
    kill: float = 2.0


class ResidentChild:
    """One running child of a session: the process, whether its output has ended, and
    whether the adapter is stopping it."""

    def __init__(
        self,
        child: ChildProcess,
        *,
        log: logging.Logger,
        label: str,
        graces: StopGraces = StopGraces(),
    ) -> None:
        self.child = child
        self.label = label
        self.graces = graces
        self._log = log
        #: Set by the adapter's reader when the child's stdout has ended.
        self.output_ended = anyio.Event()
        #: The adapter asked the child to stop (an exit is then expected).
        self.stopping = False

    @property
    def pid(self) -> int:
        """The child's pid (also its process-group id)."""
        return self.child.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped, else ``None``."""
        return self.child.returncode

    def mark_output_ended(self) -> None:
        """Record that the child's stdout has ended (the reader is done)."""
        self.output_ended.set()

    def watch_exit(
        self,
        tasks: TaskSupervisor,
        *,
        drain_grace: float,
        on_held_open: Callable[[int], None],
    ) -> None:
        """Start the exit watcher as a supervised task: after the child exits, wait up
        to ``drain_grace`` seconds for :meth:`mark_output_ended`; if the output is still
        open and the child is not being stopped, call ``on_held_open(exit_status)`` (which
        should end the reader).  Returns at once."""

        async def watch() -> None:
            code = await self.child.wait()
            with anyio.move_on_after(drain_grace):
                await self.output_ended.wait()
            if not self.output_ended.is_set() and not self.stopping:
                on_held_open(code)

        tasks.start(watch, name=f"{self.label} exit watcher")

    async def stop(self, *, eof_grace: float | None = None) -> int | None:
        """Stop the child and its process group (see :meth:`ChildProcess.stop`), bounded
        by the graces and shielded from cancellation; return the exit status, or ``None``
        if the child survived SIGKILL (logged).  Idempotent."""
        self.stopping = True
        graces = self.graces
        with anyio.CancelScope(shield=True):
            try:
                code = await self.child.stop(
                    eof_grace=graces.eof if eof_grace is None else eof_grace,
                    term_grace=graces.term,
                    kill_grace=graces.kill,
                )
            except TimeoutError:
                self._log.error("%s (pid %d) survived SIGKILL", self.label, self.pid)
                return None
        self._log.info("%s (pid %d) stopped with status %d", self.label, self.pid, code)
        return code

    def stderr_tail(self, limit: int = LOG_TAIL_CHARS) -> str:
        """The last ``limit`` characters of the child's stderr, redacted."""
        return self.child.stderr_tail()[-limit:]

    def log_exit(self, how: str) -> None:
        """Log (warning) that the child ended ``how``, with its exit status and the
        redacted stderr tail."""
        self._log.warning(
            "%s (pid %d) ended %s (exit status %s); stderr tail: %s",
            self.label,
            self.pid,
            how,
            self.returncode,
            self.stderr_tail().strip() or "(empty)",
        )


async def start_resident(
    spec: ProcessSpec,
    task_group: anyio.abc.TaskGroup,
    *,
    log: logging.Logger,
    label: str,
    missing: str,
    graces: StopGraces = StopGraces(),
) -> ResidentChild:
    """Spawn ``spec`` (its stderr drained by a task in ``task_group``) and return it
    running.  Raises ``provider_unavailable`` with ``details`` ``{"missing": missing,
    "reason": …}`` when it cannot be started (the reason is a fixed tag, never upstream
    text)."""
    try:
        child = await spawn(spec, task_group)
    except SpawnError as exc:
        log.warning("%s could not be started: %s", label, exc.reason)
        raise BridgeError(
            "provider_unavailable", details={"missing": missing, "reason": exc.reason}
        ) from None
    log.info("%s started (pid %d)", label, child.pid)
    return ResidentChild(child, log=log, label=label, graces=graces)
