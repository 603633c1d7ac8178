"""``agent-bridge daemon``: one runtime per user and state directory, on a Unix socket.

Every connection gets its own bridge-protocol front-end over the same runtime, so several
hosts can attach to one live session: each has its own event cursor and backpressure,
every interaction is offered to each host that can answer its kind and settled by the
first valid answer (the others' requests are withdrawn).  A host that disconnects — or
sends ``shutdown`` and ``exit`` — detaches: its sessions go on; ``session/close`` closes a
session for everyone.  Interactions that no attached host can answer wait and are offered
again when a host attaches.

Safety: the socket lives in a 0700 directory (:mod:`~agent_bridge.daemon.paths`) with mode
0600, and each peer's uid is checked with ``SO_PEERCRED``; another user's connection is
closed at once.  One daemon per state directory: an ``flock`` on the lock file, and one on
``<state dir>/daemon.lock`` (naming the socket) whatever the socket directory; a socket
file left by a dead daemon is replaced.  The daemon exits after ``idle_timeout`` seconds
with no host and no active run, and on SIGTERM/SIGINT (closing every session, as
``serve`` does at its host's EOF).  A crash is recovered from the journal by the next one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import signal
import socket
import stat
import struct
import sys
from typing import Any

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

from agent_bridge.daemon.paths import DaemonPaths, PathError, prepare_dir

__all__ = ["DaemonRunning", "LockedDaemon", "holder", "read_pid", "run_daemon"]

log = logging.getLogger("agent_bridge.daemon")

_PEERCRED = struct.Struct("3i")  # pid, uid, gid


class DaemonRunning(Exception):
    """Another daemon holds the lock for this state directory; ``socket`` is where it
    listens (``None`` when it did not say)."""

    def __init__(self, socket: str | None) -> None:
        super().__init__(socket)
        self.socket = socket


def _take(path: str) -> int:
    """Open ``path`` (0600) and take its ``flock``; return the descriptor.  Raises
    :class:`DaemonRunning` when another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _holder_of(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise DaemonRunning(holder[1] if holder else None) from None
        raise
    return fd


class LockedDaemon:
    """The single-instance locks, held for the daemon's lifetime: the socket directory's
    (holding the pid) and the state directory's (holding the pid and the socket), so that
    one daemon serves a state directory whatever ``XDG_RUNTIME_DIR`` each was given."""

    def __init__(self, paths: DaemonPaths) -> None:
        prepare_dir(paths)
        self._fds: list[int] = []
        try:
            for path in (paths.state_lock, paths.lock):
                if path is not None:
                    self._fds.append(_take(path))
        except BaseException:
            for fd in self._fds:
                os.close(fd)
            raise
        for fd in self._fds:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n{paths.socket}\n".encode())

    def release(self) -> None:
        """Give the locks up (closing the files)."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)
        self._fds.clear()


def _holder_of(fd: int) -> tuple[int, str | None] | None:
    """What a lock file names: the pid and the socket of its daemon (``None``: nothing
    usable)."""
    lines = os.pread(fd, 4200, 0).decode(errors="replace").splitlines()
    if not lines or not lines[0].strip().isdigit():
        return None
    socket_path = lines[1].strip() if len(lines) > 1 and os.path.isabs(lines[1].strip()) else None
    return int(lines[0].strip()), socket_path


def _held(path: str | None) -> tuple[int, str | None] | None:
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return _holder_of(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def holder(paths: DaemonPaths) -> tuple[int, str | None] | None:
    """The daemon serving this state directory, whatever socket directory it was given:
    its pid and the socket it listens on (``None`` for an older one that did not say);
    ``None`` when none runs."""
    return _held(paths.state_lock) or _held(paths.lock)


def read_pid(paths: DaemonPaths) -> int | None:
    """The pid of the daemon holding the lock, or ``None`` when none runs."""
    found = holder(paths)
    return None if found is None else found[0]


def peer_uid(stream: anyio.abc.SocketStream) -> int | None:
    """The uid of the process at the other end of a Unix socket (``SO_PEERCRED``)."""
    raw: socket.socket = stream.extra(SocketAttribute.raw_socket)  # noqa: S610 - anyio, not SQL
    try:
        data = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    except (OSError, AttributeError):
        return None
    return int(_PEERCRED.unpack(data)[1])


async def _listen(paths: DaemonPaths) -> anyio.abc.SocketListener:
    """Bind the socket, replacing a stale one (we hold the lock, so no daemon owns it).
    Anything else in its place (a directory, a file) is not ours to delete: raises
    :class:`PathError` (one line), as for any other failure to bind."""
    try:
        mode = os.lstat(paths.socket).st_mode
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise PathError(f"cannot use {paths.socket}: {exc.strerror}") from None
    else:
        if not stat.S_ISSOCK(mode):
            raise PathError(f"{paths.socket} is in the way of the daemon's socket (not a socket)")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(paths.socket)
    old = os.umask(0o177)
    try:
        listener = await anyio.create_unix_listener(paths.socket)
        os.chmod(paths.socket, 0o600)
    except OSError as exc:
        raise PathError(f"cannot listen on {paths.socket}: {exc.strerror}") from None
    finally:
        os.umask(old)
    return listener


async def _stop_listening(paths: DaemonPaths, listener: anyio.abc.SocketListener) -> None:
    """Remove the socket and close the listener (idempotent): from here on a ``connect``
    finds no daemon (and starts the next once this one is gone) instead of queueing on a
    daemon that will never accept it."""
    with contextlib.suppress(OSError):
        os.unlink(paths.socket)
    with anyio.CancelScope(shield=True):
        await listener.aclose()


class _Daemon:
    """The accept loop, the per-connection front-ends and the idle timer."""

    def __init__(self, runtime: Any, frontend_options: dict[str, Any], idle_timeout: float):
        self.runtime = runtime
        self.frontend_options = frontend_options
        self.idle_timeout = idle_timeout
        self.connections = 0
        self.activity = anyio.Event()
        self.frontends: set[Any] = set()

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        from agent_bridge.frontends.bridge_protocol import BridgeFrontend

        uid = peer_uid(stream)
        if uid != os.getuid():
            log.warning("refused a connection from uid %s", uid)
            await stream.aclose()
            return
        self.connections += 1
        self._poke()
        frontend = None
        try:
            frontend = BridgeFrontend(
                self.runtime, stream, stream, owns_runtime=False, **self.frontend_options
            )
            self.frontends.add(frontend)
            await frontend.serve()
        finally:
            self.frontends.discard(frontend)
            self.connections -= 1
            self._poke()
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def flush_hosts(self, timeout: float = 2.0) -> None:
        """Let every connection write what it was given (bounded: a host that does not
        read is not waited for past ``timeout``)."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for frontend in list(self.frontends):
                    tg.start_soon(frontend.conn.flush, timeout)

    def _poke(self) -> None:
        self.activity.set()
        self.activity = anyio.Event()

    def idle(self) -> bool:
        if self.connections:
            return False
        return not any(s.active_runs for s in self.runtime.sessions.values())

    async def exit_when_idle(self, scope: anyio.CancelScope) -> None:
        if self.idle_timeout <= 0:
            return
        while True:
            if self.idle():
                with anyio.move_on_after(self.idle_timeout) as waited:
                    await self.activity.wait()
                if waited.cancelled_caught and self.idle():
                    log.info("idle for %.0f s: exiting", self.idle_timeout)
                    scope.cancel()
                    return
            else:
                with anyio.move_on_after(1.0):
                    await self.activity.wait()


async def run_daemon(
    paths: DaemonPaths,
    runtime: Any,
    *,
    idle_timeout: float,
    frontend_options: dict[str, Any],
    ready: Any = None,
) -> None:
    """Serve ``runtime`` on the daemon socket until SIGTERM/SIGINT or idle exit; the
    caller holds the :class:`LockedDaemon`.  Raises :class:`PathError`."""
    listener = await _listen(paths)
    daemon = _Daemon(runtime, frontend_options, idle_timeout)
    try:
        async with runtime, anyio.create_task_group() as hosts:
            accepting = anyio.CancelScope()

            async def stop_on_signal() -> None:
                # the first signal stops the daemon in order; the handlers are given back
                # then, so a second one ends it at once
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        accepting.cancel()
                        return

            hosts.start_soon(stop_on_signal)
            hosts.start_soon(daemon.exit_when_idle, accepting)
            if ready is not None:
                ready()
            with accepting:
                await listener.serve(daemon.handle, hosts)
            # Stopping.  First nobody connects to a daemon that is going away; then every
            # session is closed (up to the interrupt grace) while the hosts are still
            # attached, so each sees its sessions' last events (``session.closed``, reason
            # ``shutdown``), as it would over ``serve``; then they are disconnected.
            await _stop_listening(paths, listener)
            await runtime.shutdown()
            await daemon.flush_hosts()
            hosts.cancel_scope.cancel()
    finally:
        await _stop_listening(paths, listener)


def _leave_the_working_directory() -> None:
    """Work in the user's home directory (``/`` when it cannot be entered), as a daemon
    started over SSH does.  The daemon serves every host: where a session without a
    ``workspace`` runs (and what a relative path in its options means) must not be the
    directory of whichever host happened to start it, nor should the daemon hold that
    directory (a project, a removable disk) for its lifetime.  Done once the command line's
    paths are resolved and the journal is open."""
    for directory in (os.path.expanduser("~"), "/"):
        with contextlib.suppress(OSError):
            os.chdir(directory)
            return


def main(
    paths: DaemonPaths,
    runtime_factory: Any,
    *,
    idle_timeout: float,
    frontend_options: dict[str, Any],
) -> int:
    """Take the lock and serve; return the exit code (0; 1 with one line on stderr when
    the directory is unsafe; 0 with a note when a daemon already runs)."""
    try:
        lock = LockedDaemon(paths)
    except DaemonRunning as running:
        sys.stderr.write(
            f"agent-bridge: a daemon already serves {running.socket or paths.socket}\n"
        )
        return 0
    except (PathError, OSError) as exc:
        sys.stderr.write(f"agent-bridge: cannot start the daemon: {exc}\n")
        return 1

    def say_listening() -> None:
        until = (
            f"exits after {idle_timeout:g} s with no host"
            if idle_timeout > 0
            else "runs until stopped"
        )
        sys.stderr.write(
            f"agent-bridge daemon: listening on {paths.socket} (pid {os.getpid()}, journal "
            f"{paths.state_dir}); hosts attach with `agent-bridge connect`; {until}; "
            "Ctrl-C or `agent-bridge daemon --stop` stops it\n"
        )
        sys.stderr.flush()

    try:
        runtime = runtime_factory()
        _leave_the_working_directory()
        anyio.run(
            lambda: run_daemon(
                paths,
                runtime,
                idle_timeout=idle_timeout,
                frontend_options=frontend_options,
                ready=say_listening,
            )
        )
    except KeyboardInterrupt:
        return 130
    except PathError as exc:
        sys.stderr.write(f"agent-bridge: cannot start the daemon: {exc}\n")
        return 1
    finally:
        lock.release()
    return 0
