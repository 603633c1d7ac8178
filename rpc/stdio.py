"""Byte streams over this process's own file descriptors (stdin/stdout).

anyio offers no stream over an inherited pipe, so these wrap a file descriptor in
non-blocking mode and wait for readiness with ``anyio.wait_readable``/``wait_writable``.
A descriptor that cannot be polled (a regular file redirected to stdin) falls back to
blocking reads in a worker thread.  Every read yields to the event loop, also when input
was already there (a descriptor that is always readable, such as ``/dev/zero``, would
otherwise starve the loop: no signal handler, timer or writer would ever run).  The
original blocking mode is restored on close.

On asyncio the receiving descriptor stays registered with the event loop between waits
while it is read (``anyio.wait_readable`` registers and unregisters it each time: two
system calls and a handle per wait, per request batch of a pipelined peer).

A reader that handles each chunk synchronously can be driven by the stream instead:
:meth:`FdReceiveStream.pump` calls it from the event loop's own readiness callback, one
read a call (so it still yields between reads), without a task wake-up, a future or a
read that finds nothing per chunk (what :meth:`~FdReceiveStream.receive` costs a
ping-pong peer on every round trip).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
from collections.abc import Callable

import anyio
import anyio.lowlevel
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
        #: asyncio's loop once a wait found it running (``None`` before, or elsewhere)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._asyncio: bool | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._watching = False  # whether ``fd`` is registered with ``_loop``
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
            waited = False
            while True:
                try:
                    data = os.read(self._fd, max_bytes)
                    break
                except BlockingIOError:
                    await self._readable()
                    waited = True
            if not waited:
                # Input that is always there (``< /dev/zero``, a peer that never stops
                # writing) must not keep the event loop from everything else: signal
                # handlers, writers, timers run between reads.
                await anyio.lowlevel.checkpoint()
        if not data:
            raise anyio.EndOfStream
        return data

    async def pump(self, on_data: Callable[[bytes], bool], max_bytes: int = 65536) -> None:
        """Read chunks of at most ``max_bytes`` and hand each to ``on_data`` as it arrives,
        until ``on_data`` returns ``False`` (then return; call again to go on).  Raises
        ``anyio.EndOfStream`` at EOF, and what ``on_data`` raised.

        On asyncio with a descriptor that can be polled, ``on_data`` is called from the
        event loop's readiness callback for the descriptor (see the module docstring);
        elsewhere it is a loop over :meth:`receive`.
        """
        while self._prefix:
            if not on_data(await self.receive(max_bytes)):
                return
        loop = self._loop if self._asyncio else None
        if loop is None and self._pollable and self._asyncio is None:
            try:
                loop = self._loop = asyncio.get_running_loop()
            except RuntimeError:  # another event loop than asyncio's
                self._asyncio = False
            else:
                self._asyncio = True
        if loop is None or not self._pollable:
            while on_data(await self.receive(max_bytes)):
                pass
            return
        done: asyncio.Future[None] = loop.create_future()
        fd = self._fd
        readv = os.readv
        # Each read goes into this one buffer and is copied out at its own size: a fresh
        # ``os.read(fd, 256 KiB)`` is a mapping of its own (mmap, page faults, mremap to
        # the size read, munmap: three system calls more per read than the read itself).
        buffer = bytearray(max_bytes)
        into = [buffer]
        view = memoryview(buffer)

        def ready() -> None:
            try:
                size = readv(fd, into)
            except BlockingIOError:
                return
            except BaseException as exc:
                if not done.done():
                    done.set_exception(exc)
                return
            data = view[:size].tobytes()
            try:
                if not data:
                    if not done.done():
                        done.set_exception(anyio.EndOfStream())
                elif not on_data(data) and not done.done():
                    done.set_result(None)
            except BaseException as exc:
                if not done.done():
                    done.set_exception(exc)
            if done.done():
                self._unwatch()  # nothing more is read until the next call

        try:
            loop.add_reader(fd, ready)
        except OSError:
            # Not a descriptor epoll takes (``< /dev/zero``: always readable, never waited
            # for by receive either).
            while on_data(await self.receive(max_bytes)):
                pass
            return
        self._watching = True
        try:
            await done
        finally:
            self._unwatch()

    async def _readable(self) -> None:
        """Wait until the descriptor is readable (see the module docstring)."""
        loop = self._loop
        if loop is None:
            if self._asyncio is None:
                try:
                    self._loop = asyncio.get_running_loop()
                except RuntimeError:  # another event loop than asyncio's
                    self._asyncio = False
                else:
                    self._asyncio = True
            if self._loop is None:
                await anyio.wait_readable(self._fd)
                return
            loop = self._loop
        waiter = self._waiter = loop.create_future()
        if not self._watching:
            loop.add_reader(self._fd, self._on_readable)
            self._watching = True
        try:
            await waiter
        finally:
            self._waiter = None

    def _on_readable(self) -> None:
        waiter = self._waiter
        if waiter is None:
            # Nobody is waiting (the reader is busy, or holds back for back-pressure):
            # stop watching, or the loop would spin on a readable descriptor.
            self._unwatch()
        elif not waiter.done():
            waiter.set_result(None)

    def _unwatch(self) -> None:
        if self._watching and self._loop is not None:
            self._watching = False
            with contextlib.suppress(Exception):  # the loop may be closed already
                self._loop.remove_reader(self._fd)

    async def aclose(self) -> None:
        """Stop watching the descriptor and restore its blocking mode (it stays open)."""
        self._unwatch()
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

    def send_nowait(self, item: bytes) -> int:
        """Write as much of ``item`` as the pipe takes without waiting; return how many
        bytes that was (0 for a descriptor that cannot be polled: :meth:`send` writes
        it).  Raises ``anyio.BrokenResourceError`` when the reader is gone."""
        if not self._pollable:
            return 0
        try:
            return os.write(self._fd, item)
        except BlockingIOError:
            return 0
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
                raise anyio.BrokenResourceError from None
            raise

    async def aclose(self) -> None:
        """Restore the descriptor's blocking mode (the descriptor stays open)."""
        if self._pollable:
            os.set_blocking(self._fd, self._was_blocking)
