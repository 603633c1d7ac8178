"""The pipes of a provider child process, as anyio byte streams, and the subprocess
protocol that feeds them.

Why this module exists: ``anyio.open_process`` cannot run code in the child before
``exec``, so :mod:`agent_bridge.processes.spawning` drives
:meth:`asyncio.loop.subprocess_exec` itself, and these classes turn asyncio's protocol
callbacks into bounded, flow-controlled streams: stdout/stderr pause the pipe at a
high-water mark (a child that writes while nobody reads blocks in ``write()`` instead of
growing our memory), stdin waits while the pipe is full, and :class:`TailBuffer` keeps
only the last bytes of stderr.  Nothing here starts a process.
"""

from __future__ import annotations

import asyncio
from typing import Final

import anyio
import anyio.abc
import anyio.lowlevel

__all__ = ["ChildProtocol", "PipeReceiveStream", "PipeSendStream", "TailBuffer"]

# Bytes buffered from a child's stdout (or stderr, between drain reads) before reading
# from the pipe is paused; the child then blocks in write() instead of us growing memory.
_READ_HIGH_WATER: Final = 256 * 1024
_READ_LOW_WATER: Final = _READ_HIGH_WATER // 4


class PipeReceiveStream(anyio.abc.ByteReceiveStream):
    """The read end of a child's stdout or stderr pipe, as an anyio byte stream.

    Fed by the subprocess protocol; pauses the pipe once ``_READ_HIGH_WATER`` bytes are
    buffered and resumes below ``_READ_LOW_WATER``.  ``receive`` raises
    :class:`anyio.EndOfStream` at EOF and :class:`anyio.ClosedResourceError` after
    ``aclose``.  ``aclose`` never raises (other than by cancellation).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._eof = False
        self._closed = False
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._waiter: anyio.Event | None = None
        self._receiving = False

    def _attach(self, transport: asyncio.BaseTransport | None) -> None:
        if isinstance(transport, asyncio.ReadTransport):
            self._transport = transport

    def _wake(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
            self._waiter = None

    def _feed(self, data: bytes) -> None:
        if self._closed:
            return
        self._buffer += data
        self._wake()
        if (
            not self._paused
            and len(self._buffer) >= _READ_HIGH_WATER
            and self._transport is not None
            and not self._transport.is_closing()
        ):
            self._transport.pause_reading()
            self._paused = True

    def _feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def close_now(self) -> None:
        """Close our end of the pipe at once, discarding buffered data; never raises."""
        self._closed = True
        self._buffer.clear()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
        self._wake()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """Return up to ``max_bytes`` (at least one) bytes from the pipe.

        Raises :class:`anyio.EndOfStream` once the child's end is closed and all data has
        been returned, :class:`anyio.ClosedResourceError` after ``aclose``, and
        :class:`anyio.BusyResourceError` if another task is already receiving.
        """
        if max_bytes < 1:
            raise ValueError("max_bytes must be a positive integer")
        if self._receiving:
            raise anyio.BusyResourceError("receiving from")
        self._receiving = True
        try:
            await anyio.lowlevel.checkpoint()
            while True:
                if self._closed:
                    raise anyio.ClosedResourceError
                if self._buffer:
                    break
                if self._eof:
                    raise anyio.EndOfStream
                waiter = self._waiter = anyio.Event()
                await waiter.wait()
        finally:
            self._receiving = False
        chunk = bytes(self._buffer[:max_bytes])
        del self._buffer[:max_bytes]
        if self._paused and len(self._buffer) <= _READ_LOW_WATER:
            self._paused = False
            if self._transport is not None and not self._transport.is_closing():
                self._transport.resume_reading()
        return chunk

    async def aclose(self) -> None:
        """Close our end of the pipe; buffered data is discarded.  Idempotent."""
        self.close_now()
        await anyio.lowlevel.checkpoint()


class PipeSendStream(anyio.abc.ByteSendStream):
    """The write end of a child's stdin pipe, as an anyio byte stream.

    ``send`` waits while the pipe's write buffer is above asyncio's high-water mark.  It
    raises :class:`anyio.BrokenResourceError` once the child has closed its end (e.g.
    exited) and :class:`anyio.ClosedResourceError` after ``aclose``.  ``aclose`` flushes
    what is buffered in the background and never raises (other than by cancellation).
    """

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self._transport = transport
        self._closed = False
        self._lost = False
        self._paused = False
        self._waiter: anyio.Event | None = None

    def _wake(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
            self._waiter = None

    def _pause(self) -> None:
        self._paused = True

    def _resume(self) -> None:
        self._paused = False
        self._wake()

    def _connection_lost(self) -> None:
        self._lost = True
        self._wake()

    def abort(self) -> None:
        """Close the pipe now, dropping unsent data: the child sees EOF at once."""
        self._closed = True
        transport = self._transport
        # abort() on a pipe transport that is already shutting down would schedule its
        # connection_lost twice; only abort if it is open or still flushing data.
        if not self._lost and (not transport.is_closing() or transport.get_write_buffer_size() > 0):
            transport.abort()
        self._wake()

    async def send(self, item: bytes) -> None:
        """Write ``item`` to the child's stdin, waiting while the pipe is full."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise anyio.ClosedResourceError
        if self._lost or self._transport.is_closing():
            raise anyio.BrokenResourceError
        self._transport.write(item)
        while self._paused:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._lost:
                raise anyio.BrokenResourceError
            waiter = self._waiter = anyio.Event()
            await waiter.wait()
        await anyio.lowlevel.cancel_shielded_checkpoint()

    async def aclose(self) -> None:
        """Close our end of stdin (the child sees EOF once buffered data is written)."""
        if not self._closed:
            self._closed = True
            if not self._lost and not self._transport.is_closing():
                self._transport.close()
            self._wake()
        await anyio.lowlevel.checkpoint()


class ChildProtocol(asyncio.SubprocessProtocol):
    """Routes asyncio's subprocess callbacks to the streams and the exit event."""

    def __init__(self) -> None:
        self.stdout = PipeReceiveStream()
        self.stderr = PipeReceiveStream()
        self.stdin: PipeSendStream | None = None
        self.exited = anyio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self.stdin = PipeSendStream(stdin)
        self.stdout._attach(transport.get_pipe_transport(1))
        self.stderr._attach(transport.get_pipe_transport(2))

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.stdout._feed(data)
        elif fd == 2:
            self.stderr._feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 0:
            if self.stdin is not None:
                self.stdin._connection_lost()
        elif fd == 1:
            self.stdout._feed_eof()
        elif fd == 2:
            self.stderr._feed_eof()

    def process_exited(self) -> None:
        self.exited.set()

    def pause_writing(self) -> None:
        if self.stdin is not None:
            self.stdin._pause()

    def resume_writing(self) -> None:
        if self.stdin is not None:
            self.stdin._resume()


class TailBuffer:
    """Keeps the last ``limit`` bytes written to it and counts all of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._data = bytearray()

    def append(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.limit == 0:
            return
        if len(chunk) >= self.limit:
            self._data[:] = chunk[-self.limit :]
            return
        self._data += chunk
        excess = len(self._data) - self.limit
        if excess > 0:
            del self._data[:excess]

    @property
    def truncated(self) -> bool:
        """Whether older bytes were discarded (more arrived than are kept)."""
        return self.total > len(self._data)

    def getvalue(self) -> bytes:
        """Return the bytes kept (the last ``limit`` written)."""
        return bytes(self._data)
