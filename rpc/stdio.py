"""Byte streams over this process's own file descriptors (stdin/stdout).

anyio offers no stream over an inherited pipe, so these wrap a file descriptor in
non-blocking mode and wait for readiness with ``anyio.wait_readable``/``wait_writable``.
A descriptor that cannot be polled (a regular file redirected to stdin) falls back to
blocking reads in a worker thread.  The original blocking mode is restored on close.
"""

from __future__ import annotations

import errno
import os
import stat

import anyio
import anyio.to_thread

from agent_bridge.rpc.pipes import widen_pipe

__all__ = ["FdReceiveStream", "FdSendStream"]


def _pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class FdReceiveStream:
    """Reads from ``fd``; ``receive`` raises ``anyio.EndOfStream`` at EOF.  ``prefix``:
    bytes already read from ``fd`` by someone else, returned first."""

    def __init__(self, fd: int, prefix: bytes = b"") -> None:
        self._fd = fd
        self._prefix = prefix
        self._pollable = _pollable(fd)
        self._was_blocking = os.get_blocking(fd)
        if self._pollable:
            os.set_blocking(fd, False)
            widen_pipe(fd)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """Return the next chunk of at most ``max_bytes``; raise ``EndOfStream`` at EOF."""
        if self._prefix:
            data, self._prefix = self._prefix[:max_bytes], self._prefix[max_bytes:]
            return data
        if not self._pollable:
            data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes)
        else:
            while True:
                try:
                    data = os.read(self._fd, max_bytes)
                    break
                except BlockingIOError:
                    await anyio.wait_readable(self._fd)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        """Restore the descriptor's blocking mode (the descriptor stays open)."""
        if self._pollable:
            os.set_blocking(self._fd, self._was_blocking)


class FdSendStream:
    """Writes to ``fd``; ``send`` raises ``anyio.BrokenResourceError`` when the reader is gone."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pollable = _pollable(fd)
        self._was_blocking = os.get_blocking(fd)
        if self._pollable:
            os.set_blocking(fd, False)
            widen_pipe(fd)

    async def send(self, item: bytes) -> None:
        """Write all of ``item``, waiting for the pipe to accept it."""
        view = memoryview(item)
        while view:
            try:
                if self._pollable:
                    written = os.write(self._fd, view)
                else:
                    written = await anyio.to_thread.run_sync(os.write, self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except OSError as exc:
                if exc.errno in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
                    raise anyio.BrokenResourceError from None
                raise
            view = view[written:]

    async def aclose(self) -> None:
        """Restore the descriptor's blocking mode (the descriptor stays open)."""
        if self._pollable:
            os.set_blocking(self._fd, self._was_blocking)
