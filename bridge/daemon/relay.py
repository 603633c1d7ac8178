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
    from agent_bridge.rpc.connection import ByteReceiver, ByteSender

__all__ = ["ConnectError", "connect", "relay", "start_daemon"]

_CHUNK = 256 * 1024


class ConnectError(Exception):
    """The daemon could not be reached or started; the message says why in one line."""


def start_daemon(paths: DaemonPaths, daemon_args: Sequence[str]) -> int:
    """Start ``agent-bridge daemon`` for ``paths`` in the background; return its pid.
    Raises :class:`ConnectError`."""
    from agent_bridge.processes import ProcessSpec, SpawnError, spawn_detached

    prepare_dir(paths)
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
    try:
        return await anyio.connect_unix(paths.socket)
    except (FileNotFoundError, ConnectionRefusedError):
        return None


async def connect(
    paths: DaemonPaths, *, autostart: bool, daemon_args: Sequence[str] = (), timeout: float = 10
) -> anyio.abc.SocketStream:
    """Return a connection to the daemon, starting it first when ``autostart`` and none
    answers.  Raises :class:`ConnectError`."""
    stream = await _open(paths)
    if stream is not None:
        return stream
    if not autostart:
        raise ConnectError(f"no daemon is listening on {paths.socket}")
    start_daemon(paths, daemon_args)
    delay = 0.01
    with anyio.move_on_after(timeout):
        while True:
            stream = await _open(paths)
            if stream is not None:
                return stream
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.2)
    raise ConnectError(f"the daemon did not start listening on {paths.socket} (see {paths.log})")


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
