"""A resident JSON-RPC child: the process of a session that speaks JSON-RPC to the bridge.

The Codex app-server and every ACP agent are the same kind of child: one long-lived
process per session, newline-delimited JSON-RPC on its stdin and stdout (with or without
the ``"jsonrpc"`` member), driven by the project's own
:class:`~agent_bridge.rpc.connection.Connection` so that every request the adapter sends
is in the request-ID ledger and all of them fail at once at EOF.  What is the same for
both lives here once:

* :func:`start_rpc_child` builds the process spec (a bad argv or environment is
  ``invalid_option`` naming the adapter's option), spawns the child through the kit's
  resident child (:mod:`~agent_bridge.adapters.kit.resident`), opens the connection,
  starts the adapter's serve task and the exit watcher (a grandchild that holds the
  output open after the child exited gets the connection closed);
* :func:`open_rpc_child` is a session's ``open()``: spawn, handshake, and on any
  failure stop the child (shielded) before the error goes on;
* :class:`RpcChild` is the running child: :meth:`~RpcChild.call` (a request bounded in
  time; cancelling the caller settles it without telling the peer),
  :meth:`~RpcChild.failure` (a failed request classified: timeout, the child gone — with
  its exit status — or ``None`` for the peer's own error, which the adapter classifies),
  :meth:`~RpcChild.serve` and :meth:`~RpcChild.stop`;
* :func:`probe_rpc` is the short-lived variant for ``providers/list`` with ``probe``:
  start, ask, stop, bounded in time, ``None`` when anything failed.

What happens at EOF (which run fails, how) stays the adapter's: it passes its own serve
coroutine, which calls :meth:`RpcChild.serve` and then decides.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio
import anyio.abc

from agent_bridge.adapters.kit.resident import ResidentChild, StopGraces, start_resident
from agent_bridge.adapters.kit.tasks import TaskSupervisor
from agent_bridge.errors import BridgeError, ProviderFailure
from agent_bridge.processes import ProcessSpec, SpawnError, redact, spawn
from agent_bridge.rpc.connection import Connection, Method
from agent_bridge.rpc.errors import ConnectionClosed, RequestTimedOut, RpcError
from agent_bridge.rpc.ledger import LedgerEntry
from agent_bridge.rpc.messages import LOGGED_PROSE_CHARS, loggable

__all__ = [
    "RpcChild",
    "RpcChildSpec",
    "open_rpc_child",
    "probe_rpc",
    "prose",
    "request_quietly",
    "start_rpc_child",
]


def prose(text: str) -> str:
    """A child's prose (an error message it answered) as a log line may show it:
    redacted, cut at :data:`~agent_bridge.rpc.messages.LOGGED_PROSE_CHARS` and escaped
    unless printable (:func:`~agent_bridge.rpc.messages.loggable`), so a newline in it
    cannot forge a log record and an escape sequence cannot reach a terminal."""
    return loggable(redact(text), LOGGED_PROSE_CHARS)


T = TypeVar("T")
P = ParamSpec("P")

#: How long :meth:`RpcChild.failure` waits for the exit status of a child that went away.
EXIT_STATUS_WAIT = 2.0


@dataclass(frozen=True, slots=True)
class RpcChildSpec:
    """What to start and how to speak to it."""

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str]
    #: The child in log lines and failure details (``"codex app-server"``).
    label: str
    #: The process name (:attr:`ProcessSpec.name`) and the connection's name.
    name: str
    #: What ``provider_unavailable`` names as missing when the child cannot start.
    missing: str
    #: The option ``invalid_option`` names when argv, cwd or env cannot make a process.
    option: str
    #: Whether messages carry ``"jsonrpc": "2.0"`` (ACP) or not (Codex).
    jsonrpc: bool
    graces: StopGraces
    #: After the child exits, how long its output may stay open before the connection
    #: is closed (messages written before the exit are read meanwhile).
    drain_grace: float


async def request_quietly(
    conn: Connection,
    method: str,
    params: Any,
    *,
    timeout: float | None = None,
    result_type: Any = Any,
) -> Any:
    """Send a request on ``conn`` and return its result (decoded as ``result_type``).
    Raises :class:`RpcError` as :meth:`Connection.request` does; a cancelled caller
    settles the request as cancelled without telling the child (the bridge's
    ``$/cancelRequest`` is no method of ACP or Codex: a child is stopped instead)."""
    entry: LedgerEntry[Any] = conn.open_request(
        method, params, result_type=result_type, timeout=timeout
    )
    try:
        return await conn.wait(entry)
    except anyio.get_cancelled_exc_class():
        conn.cancel_request(entry, notify_peer=False)
        raise


class RpcChild:
    """One running JSON-RPC child of a session and the connection to it."""

    __slots__ = ("_log", "conn", "label", "ready", "resident")

    def __init__(
        self, resident: ResidentChild, conn: Connection, *, label: str, log: logging.Logger
    ) -> None:
        self.resident = resident
        self.conn = conn
        self.label = label
        self._log = log
        #: Set by the adapter once its handshake succeeded (until then the handshake's
        #: own error reporting covers an EOF).
        self.ready = False

    @property
    def closed(self) -> bool:
        """Whether the connection has ended (the child's output is done, or the
        connection was closed)."""
        return self.resident.output_ended.is_set() or self.conn.closed

    async def call(
        self, method: str, params: Any, *, timeout: float, result_type: Any = Any
    ) -> Any:
        """Send a request and return its result (decoded as ``result_type``).  Raises
        :class:`RpcError` (:class:`RequestTimedOut` after ``timeout`` seconds,
        :class:`ConnectionClosed` when the child went away first); a cancelled caller
        settles the request as cancelled without telling the child."""
        return await request_quietly(
            self.conn, method, params, timeout=timeout, result_type=result_type
        )

    async def failure(
        self, exc: RpcError, method: str, *, exit_is_unavailable: bool
    ) -> ProviderFailure | None:
        """Classify a failed request ``method``: ``provider_timeout`` when it timed out;
        when the child went away, its exit (status and redacted stderr tail) is logged
        and the result is ``provider_unavailable`` if ``exit_is_unavailable`` and the
        status is non-zero (a configuration or installation problem at start-up), else
        ``provider_crashed``.  ``None`` for an error the child answered (the adapter
        classifies it; what the child said goes to the log only)."""
        if isinstance(exc, RequestTimedOut):
            self._log.warning("%s: %s timed out", self.label, method)
            return ProviderFailure("provider_timeout", f"{method} timed out")
        if isinstance(exc, ConnectionClosed):
            code = await self.exit_status(EXIT_STATUS_WAIT)
            self.resident.log_exit(f"during {method}")
            if exit_is_unavailable and code not in (None, 0):
                return ProviderFailure("provider_unavailable", f"{self.label} exited with {code}")
            return ProviderFailure("provider_crashed", f"{self.label} exited during {method}")
        return None

    async def exit_status(self, wait: float) -> int | None:
        """The child's exit status, waiting at most ``wait`` seconds; ``None`` if it is
        still running then."""
        code: int | None = None
        with anyio.move_on_after(wait):
            code = await self.resident.child.wait()
        return code

    async def serve(self) -> None:
        """Serve the connection until the child's EOF (or :meth:`close`); the output
        is then marked ended, however this returns."""
        try:
            await self.conn.run()
        finally:
            self.resident.mark_output_ended()

    def held_open(self, status: int) -> None:
        """The child exited but a process it started still holds its stdout: end the
        connection (the serve task then sees EOF)."""
        self._log.warning(
            "%s exited (status %s) but its output is still held open; closing the connection",
            self.label,
            status,
        )
        self.conn.close()

    async def stop(self) -> None:
        """Stop the child (bounded, shielded) and close the connection."""
        await self.resident.stop()
        self.conn.close()


async def start_rpc_child(
    spec: RpcChildSpec,
    task_group: anyio.abc.TaskGroup,
    tasks: TaskSupervisor,
    *,
    log: logging.Logger,
    methods: Mapping[str, Method],
    notifications: Mapping[str, Method],
    serve: Callable[[RpcChild], Awaitable[None]],
) -> RpcChild:
    """Spawn the child of ``spec`` (its stderr drained in ``task_group``), open the
    connection that serves ``methods`` (the child's requests) and ``notifications``,
    start ``serve(child)`` and the exit watcher as supervised tasks, and return the
    child running.  ``serve`` should await :meth:`RpcChild.serve` and then handle the
    EOF.  Raises ``invalid_option`` (naming ``spec.option``) when argv, cwd or env cannot
    make a process, ``provider_unavailable`` when the child cannot be started."""
    try:
        process = ProcessSpec(spec.argv, cwd=spec.cwd, env=spec.env, name=spec.name)
    except (TypeError, ValueError):
        raise BridgeError("invalid_option", details={"option": spec.option}) from None
    resident = await start_resident(
        process,
        task_group,
        log=log,
        label=spec.label,
        missing=spec.missing,
        graces=spec.graces,
    )
    conn = Connection(
        resident.child.stdout,
        resident.child.stdin,
        methods=methods,
        notifications=notifications,
        framing="newline",
        jsonrpc=spec.jsonrpc,
        name=spec.name,
    )
    child = RpcChild(resident, conn, label=spec.label, log=log)
    tasks.start(serve, child, name="connection")
    resident.watch_exit(tasks, drain_grace=spec.drain_grace, on_held_open=child.held_open)
    return child


async def open_rpc_child(
    spawn: Callable[[], Awaitable[RpcChild]],
    forget: Callable[[], None],
    handshake: Callable[Concatenate[RpcChild, P], Awaitable[None]],
    *args: P.args,
    **kwargs: P.kwargs,
) -> None:
    """Open a session's child: ``spawn()`` it, then ``handshake(child, *args, **kwargs)``.
    When the handshake raises (or is cancelled) the child is stopped, shielded from the
    cancellation, then ``forget()`` (the session drops its reference) and the error goes
    on unchanged.  Returns nothing; raises whatever ``spawn`` or ``handshake`` raised."""
    child = await spawn()
    try:
        await handshake(child, *args, **kwargs)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await child.stop()
        forget()
        raise


async def probe_rpc(
    process: ProcessSpec,
    ask: Callable[[Connection], Awaitable[T]],
    *,
    jsonrpc: bool,
    timeout: float,
    log: logging.Logger,
) -> T | None:
    """Start ``process``, serve a connection to it, return ``await ask(conn)`` and stop
    the child (with everything it started).  ``ask`` should send its requests with
    :func:`request_quietly` (a timeout then tells the child nothing before it is
    stopped).  ``None`` when the child could not be
    started, ``ask`` did not finish within ``timeout`` seconds, or a request failed
    (logged, redacted).  Never raises for the child's behaviour."""
    result: T | None = None
    async with anyio.create_task_group() as tg:
        # Inside the group: an error raised here must not come out as an ExceptionGroup.
        try:
            child = await spawn(process, tg)
        except (SpawnError, OSError) as exc:
            log.info("%s could not start: %s", process.name, type(exc).__name__)
            return None
        conn = Connection(
            child.stdout, child.stdin, framing="newline", jsonrpc=jsonrpc, name=process.name
        )
        tg.start_soon(conn.run)
        try:
            with anyio.move_on_after(timeout):
                result = await ask(conn)
        except RpcError as exc:
            log.info("%s: %s", process.name, prose(exc.message))
        finally:
            with contextlib.suppress(TimeoutError):
                await child.stop(eof_grace=1.0, term_grace=1.0, kill_grace=2.0)
            conn.close()
    return result
