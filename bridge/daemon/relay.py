"""``agent-bridge connect``: a stdio ↔ daemon-socket byte relay.

A host that spawns a stdio server (every editor client; ``ssh HOST agent-bridge connect``
for remote use) gets the shared daemon instead, with no change on its side: bytes are
copied both ways as they come, with no framing of the relay's own.  The daemon is started
(detached, through :mod:`agent_bridge.processes`) when none is running.  At the host's EOF
the socket's write side is shut down, so the daemon sees an ordinary disconnect (the
host's sessions go on); when the daemon closes the connection the relay exits.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from agent_bridge.daemon.paths import DaemonPaths, prepare_dir

if TYPE_CHECKING:
    from agent_bridge.processes import Detached
    from agent_bridge.rpc.connection import ByteReceiver, ByteSender

__all__ = ["ConnectError", "connect", "relay", "start_daemon"]

_CHUNK = 256 * 1024
#: A daemon's log over this many bytes when ``connect`` starts the next daemon is moved
#: to ``<log>.1`` (replacing the one before): at most about twice this is kept.
LOG_KEEP_BYTES = 8 * 1024 * 1024


class ConnectError(Exception):
    """The daemon could not be reached or started; the message says why in one line."""


def start_daemon(paths: DaemonPaths, daemon_args: Sequence[str]) -> Detached:
    """Start ``agent-bridge daemon`` for ``paths`` in the background.  Raises
    :class:`ConnectError`."""
    from agent_bridge.processes import ProcessSpec, SpawnError, spawn_detached

    prepare_dir(paths)
    _rotate(paths.log)
    # The daemon is the bridge itself, not a provider: it gets this user's environment as
    # it is (the adapters filter what reaches provider processes).  It is the
    # environment of the first connect; later ones share the running daemon.
    env = dict(os.environ)
    argv = (
        sys.executable,
        "-P",  # never import from the working directory (a workspace's own modules)
        "-m",
        "agent_bridge",
        "daemon",
        "--state-dir",
        paths.state_dir,
        *daemon_args,
    )
    try:
        return spawn_detached(ProcessSpec(argv, None, env, name="agent-bridge daemon"), paths.log)
    except SpawnError as exc:
        raise ConnectError(f"cannot start the daemon: {exc.reason}") from None


async def _open(paths: DaemonPaths) -> anyio.abc.SocketStream | None:
    """A connection to the daemon of this state directory: at this environment's socket,
    else where the daemon that holds the state directory's lock says it listens (one
    started with another ``XDG_RUNTIME_DIR``)."""
    from agent_bridge.daemon.server import holder

    stream = await _connect_unix(paths.socket)
    if stream is None:
        found = holder(paths)
        if found is not None and found[1] is not None and found[1] != paths.socket:
            stream = await _connect_unix(found[1])
    return stream


async def _connect_unix(path: str) -> anyio.abc.SocketStream | None:
    try:
        return await anyio.connect_unix(path)
    except (FileNotFoundError, ConnectionRefusedError):
        return None


async def connect(
    paths: DaemonPaths,
    *,
    autostart: bool,
    daemon_args: Sequence[str] = (),
    timeout: float = 10,
    stopping_timeout: float = 30,
) -> anyio.abc.SocketStream:
    """Return a connection to the daemon, starting it first when ``autostart`` and none
    answers.  Raises :class:`ConnectError`.

    The daemon started here is watched while it gets ready: one that exits with an error
    ends the wait at once, with its one-line reason.  One that exits because another
    daemon holds the lock (two connects racing, or a daemon still closing its sessions
    after a stop: it no longer listens) is started again once that lock is free, for up
    to ``stopping_timeout`` seconds; ``timeout`` bounds each start."""
    stream = await _open(paths)
    if stream is not None:
        return stream
    if not autostart:
        raise ConnectError(f"no daemon is listening on {paths.socket}")
    from agent_bridge.daemon.server import read_pid

    give_up = anyio.current_time() + stopping_timeout
    daemon = start_daemon(paths, daemon_args)
    started = anyio.current_time()
    delay = 0.01
    while True:
        stream = await _open(paths)
        if stream is not None:
            return stream
        now = anyio.current_time()
        status = daemon.returncode
        if status is None:
            if now - started > timeout:
                raise ConnectError(
                    f"the daemon did not start listening on {paths.socket} in {timeout:g} s "
                    f"(see {paths.log})"
                )
        elif status != 0:
            raise ConnectError(_exited(paths, status))
        elif read_pid(paths) is None:
            # it found the lock taken, and that daemon is gone now: start ours again
            if now > give_up:
                break
            daemon = start_daemon(paths, daemon_args)
            started = anyio.current_time()
            delay = 0.01
            continue
        elif now > give_up:
            break
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.2)
    pid = read_pid(paths)
    holder = f" (pid {pid})" if pid else ""
    raise ConnectError(
        f"the daemon{holder} of this state directory is not listening on {paths.socket} "
        f"and did not stop in {stopping_timeout:g} s (see {paths.log})"
    )


def _rotate(log: str) -> None:
    """Move ``log`` to ``<log>.1`` when it holds more than :data:`LOG_KEEP_BYTES` (a daemon
    still writing the old one goes on writing it there)."""
    with contextlib.suppress(OSError):
        if os.stat(log).st_size > LOG_KEEP_BYTES:
            os.replace(log, log + ".1")


def _exited(paths: DaemonPaths, status: int) -> str:
    """Why the daemon this connect started exited before listening, in one line: its own
    one-line reason from the end of its log when it wrote one (never a traceback)."""
    how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
    reason = ""
    with contextlib.suppress(OSError):
        with open(paths.log, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(0, size - 4096))
            lines = log.read().decode(errors="replace").splitlines()
        last = lines[-1].strip() if lines else ""
        prefix = "agent-bridge: "
        if last.startswith(prefix) and len(last) <= 400:
            reason = f": {last[len(prefix) :]}"
    return f"the daemon {how} before listening{reason} (see {paths.log})"


async def relay(stream: anyio.abc.SocketStream, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
    """Copy stdin to ``stream`` and ``stream`` to stdout until the daemon closes."""
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream

    receive = FdReceiveStream(stdin_fd)
    send = FdSendStream(stdout_fd)

    async def upstream() -> None:
        await _copy(receive, stream)
        with contextlib.suppress(Exception):
            await stream.send_eof()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(upstream)
            await _copy(stream, send)
            tg.cancel_scope.cancel()
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()
        await receive.aclose()
        await send.aclose()


async def _copy(source: ByteReceiver, sink: ByteSender) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends or either side breaks (returns
    normally then)."""
    try:
        while True:
            await sink.send(await source.receive(_CHUNK))
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        pass
