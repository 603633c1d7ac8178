"""The output side of a :class:`~agent_bridge.rpc.connection.Connection`: one object.

It exists so that the connection's queue of output, its high-water mark and the task
that writes it have one owner.  Everything a connection sends is queued here: framed
bodies (:meth:`Outbox.write`), a read's replies as one chunk (:meth:`Outbox.insert`)
and notification bodies not framed yet (:meth:`Outbox.notify_encoded`: they wait, in
order, and all that waits is framed in one call when anything else is queued or the
output is written).  The output is written by the writer task (:meth:`Outbox.run`, one
write per batch) or, after a read, by the reader itself (:meth:`Outbox.flush_now`, one
write per read, no wake-up of the writer).

Backpressure: :attr:`Outbox.congested` is true while more than the high-water mark of
bytes wait; :meth:`Outbox.drained` waits until half of it is left.  A failed write
calls ``on_failure`` (the connection closes); after :meth:`close` nothing is queued.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final, Protocol

import anyio
import anyio.lowlevel

from agent_bridge.rpc.framing import FramingKind, frame_encoder, frames_encoder

__all__ = ["Outbox"]

log = logging.getLogger("agent_bridge.rpc")


class _Sender(Protocol):
    async def send(self, item: bytes) -> None: ...


#: A guess at a frame's header bytes (``Content-Length: N\r\n\r\n``), for the size of
#: output that is not framed yet; corrected when it is.
_FRAME_GUESS: Final = 24
#: The most output the reader writes itself (see :meth:`Outbox.flush_now`): a pipe's
#: capacity (rpc/pipes.py asks for 1 MiB), so what it writes usually goes in one system call.
_INLINE_WRITE_MAX: Final = 1 << 20
#: A write at least this large means output is streaming; the writer then lets the
#: producers run one more turn of the event loop before its next write, unless
#: :data:`_COALESCE_BYTES` already wait (see :meth:`Outbox.run`).
_STREAMING_BYTES: Final = 64 * 1024
_COALESCE_BYTES: Final = 256 * 1024


class Outbox:
    """The queued output of one connection and its writer.

    ``send`` is the byte stream written to (its ``send_nowait``, when it has one, is
    used by :meth:`flush_now`); ``kind`` the output framing; ``high_water`` the bytes
    waiting past which :attr:`congested` is true; ``on_failure`` is called once a write
    fails (after which :meth:`run` returns).
    """

    __slots__ = (
        "_drained",
        "_frames",
        "_high",
        "_name",
        "_on_failure",
        "_raw_bytes",
        "_raw_head",
        "_raw_tail",
        "_send",
        "_send_now",
        "_sending",
        "_wake",
        "closed",
        "frame",
        "holding",
        "out",
        "pending",
        "raw",
    )

    def __init__(
        self,
        send: _Sender,
        kind: FramingKind,
        high_water: int,
        *,
        name: str,
        on_failure: Callable[[], None],
    ) -> None:
        #: framed chunks waiting to be written, in order
        self.out: list[bytes] = []
        #: bytes waiting (framed chunks, the estimate of ``raw``'s, and a write the
        #: writer has taken but not finished)
        self.pending = 0
        #: Notification bodies queued by :meth:`notify_encoded`, each to be sent as
        #: ``_raw_head + body + _raw_tail``, not framed yet; ``_raw_bytes`` is their
        #: estimated framed size, counted in ``pending`` until they are framed.
        self.raw: list[bytes] = []
        self._raw_head = b""
        self._raw_tail = b""
        self._raw_bytes = 0
        #: frames one body in the output framing
        self.frame = frame_encoder(kind)
        self._frames = frames_encoder(kind)
        self._high = high_water
        self._name = name
        self._send = send
        self._send_now: Callable[[bytes], int] | None = getattr(send, "send_nowait", None)
        self._on_failure = on_failure
        self._wake: anyio.Event | None = None
        self._drained: anyio.Event | None = None
        #: while the writer is inside ``send``
        self._sending = False
        #: while the reader serves a read: its output is written by :meth:`flush_now`
        #: (the writer is not woken for it)
        self.holding = False
        self.closed = False

    def set_framing(self, kind: FramingKind) -> None:
        """Frame output as ``kind`` from now on (the input's framing, once detected)."""
        if self.raw:
            self.frame_raw()
        self.frame = frame_encoder(kind)
        self._frames = frames_encoder(kind)

    def write(self, body: bytes) -> None:
        """Frame ``body`` and queue it (after everything queued so far)."""
        if self.closed:
            return
        if self.raw:
            self.frame_raw()
        frame = self.frame(body)
        self.out.append(frame)
        self.pending += len(frame)
        wake = self._wake
        if wake is not None and not self.holding:
            # (while the reader serves a read, it writes what is queued itself)
            self._wake = None
            wake.set()

    def insert(self, data: bytes, at: int) -> None:
        """Queue framed ``data`` as one chunk at position ``at`` of :attr:`out`."""
        if self.closed:
            return
        self.out.insert(at, data)
        self.pending += len(data)
        wake = self._wake
        if wake is not None and not self.holding:
            # (while the reader serves a read, it writes what is queued itself)
            self._wake = None
            wake.set()

    def notify_encoded(
        self,
        bodies: Sequence[bytes],
        head: bytes = b"",
        tail: bytes = b"",
        size: int | None = None,
    ) -> bool:
        """Queue encoded notification bodies, each sent as ``head + body + tail``, not
        framed yet (``size``: the bytes of ``bodies`` together, if the caller counted
        them); return whether the output is now congested."""
        if self.closed:
            return False
        if self.raw and (head != self._raw_head or tail != self._raw_tail):
            self.frame_raw()
        self._raw_head = head
        self._raw_tail = tail
        self.raw += bodies
        if size is None:
            size = sum(map(len, bodies))
        size += len(bodies) * (len(head) + len(tail) + _FRAME_GUESS)
        self._raw_bytes += size
        self.pending += size
        wake = self._wake
        if wake is not None and not self.holding:
            self._wake = None
            wake.set()
        return self.pending > self._high

    def frame_raw(self) -> None:
        """Frame every waiting notification body in one call and queue the result."""
        data = self._frames(self.raw, self._raw_head, self._raw_tail)
        self.raw = []
        self.out.append(data)
        self.pending += len(data) - self._raw_bytes
        self._raw_bytes = 0

    @property
    def congested(self) -> bool:
        """Whether more than the high-water mark of output is waiting to be written.  A
        closed outbox never is: nothing of it will be written, and :meth:`drained`
        returns at once, so a writer that waits while congested would otherwise spin
        (a daemon's catch-up for a host gone while behind did, deaf to everything)."""
        return self.pending > self._high and not self.closed

    async def drained(self) -> None:
        """Wait until the output is at or below half its high water (or closed)."""
        while self.pending > self._high // 2 and not self.closed:
            if self._drained is None:
                self._drained = anyio.Event()
            await self._drained.wait()

    def close(self) -> None:
        """Queue nothing more; wake :meth:`drained` waiters."""
        self.closed = True
        if self._drained is not None:
            self._drained.set()

    async def flush(self, timeout: float = 5.0) -> None:
        """Wait (bounded) until everything queued so far has been written."""
        with anyio.move_on_after(timeout):
            while self.pending > 0 and not self.closed:
                await anyio.sleep(0.001)

    def _failed(self, exc: BaseException) -> None:
        log.info("%s: write failed (%s); closing", self._name, type(exc).__name__)
        self._on_failure()

    async def run(self) -> None:
        """Write the output as it is queued, until a write fails (then return)."""
        streaming = False
        # The running backend's event class, looked up once: ``anyio.Event()`` finds the
        # backend on every call (a few microseconds, once per wake-up of this loop).
        new_event: Callable[[], anyio.Event] = type(anyio.Event())
        while True:
            if not self.out and not self.raw:
                wake = self._wake = new_event()
                await wake.wait()
                continue
            if streaming and self.pending < _COALESCE_BYTES:
                # Fewer, larger writes while streaming: a pipe write costs less per
                # byte in large pieces, on both sides of the pipe.  At most one turn of
                # the event loop later, and only right after a large write.
                streaming = False
                await anyio.lowlevel.checkpoint()
                continue
            if self.raw:
                self.frame_raw()
            chunks, self.out = self.out, []
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            self._sending = True
            try:
                await self._send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                self._failed(exc)
                return
            finally:
                self._sending = False
            self._sent(len(data))
            streaming = len(data) >= _STREAMING_BYTES

    def _sent(self, size: int) -> None:
        """Account for ``size`` bytes written; wake :meth:`drained` waiters once the output
        is down to half its high water."""
        self.pending -= size
        drained = self._drained
        if drained is not None and self.pending <= self._high // 2:
            self._drained = None
            drained.set()

    def flush_now(self) -> None:
        """Write what is queued, at once, as far as the peer's pipe takes it without
        waiting (a read's replies go out in the read's own turn of the event loop, not in
        one of the writer's); the writer is woken for what is left.  Only while the
        writer is not itself inside ``send`` (the order of the bytes is kept), when the
        stream can (``send_nowait``) and for at most :data:`_INLINE_WRITE_MAX` bytes (the
        writer sends more without copying what a pipe did not take)."""
        if (
            not self._sending
            and self._send_now is not None
            and not self.closed
            and self.pending <= _INLINE_WRITE_MAX
        ):
            if self.raw:
                self.frame_raw()
            if self.out:
                chunks, self.out = self.out, []
                data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
                try:
                    written = self._send_now(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                    self._failed(exc)
                    return
                if written < len(data):
                    self.out.insert(0, data[written:])
                self._sent(written)
        if self.out or self.raw:
            wake = self._wake
            if wake is not None:
                self._wake = None
                wake.set()
