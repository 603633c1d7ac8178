"""The journal's writer process: the bridge's side, and the choice between it and the thread.

Why this module exists: the writer *thread* (:mod:`agent_bridge.journal.writer`) shares
the bridge's interpreter lock with the event loop; a writer *process* does not, at the
price of every envelope crossing a pipe.  :func:`choose_writer` decides for
``--journal-writer auto``: the thread, on every number of CPUs measured (1 and 2 with
``taskset``, extrapolated to more from each thread's CPU per event: ``docs/journal.md``,
"The writer's choice").

:class:`ProcessWriter` has the thread writer's face (``queue``, ``submitted``, ``start``,
``stop``, ``join``, ``halt``, ``close``), and no thread: the event loop encodes what was
queued into a frame (:mod:`agent_bridge.journal.writer_child` describes it) and writes
it to the child's stdin (non-blocking; what does not fit waits for the pipe to drain),
and reads the child's reports with a reader callback.  The child is started lazily, when
the runtime starts the journal (after ``serve``'s first reply), so a bridge's start-up
to its first reply is unchanged.

The contract is the thread's: an operation is reported committed only once the child
committed it, and the journal releases nothing to a host before that.  Every frame is
kept until the child reports it committed.  When the child dies (killed, crashed, or its
start failed), the journal is reported ``failing`` with the reason ``writer_exited``
(hosts get ``journal/status``; runs are held, new work refused, as for a full disk),
and a new child is started (at once the first time, then with the writer's backoff
while children keep dying without committing anything) and given every frame not
reported committed, in order.  Those may include frames its predecessor committed just
before it died: the new child is told how many operations that may be
(``replay``) and stores each session's events only past its last stored one, so
nothing is written twice and sequences stay gapless.  A report of damage or of a bug
halts the journal as the thread's does; the child is then killed and not restarted.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agent_bridge.journal.errors import Fault
from agent_bridge.journal.retention import Retention
from agent_bridge.journal.writer import (
    OP_EVENTS,
    RETRY_MAX,
    RETRY_MIN,
    EventBatch,
    WriterKind,
    WriterMode,
    choose_writer,
    usable_cpus,
)
from agent_bridge.journal.writer_frames import FAULTS, HEADER, REPORT
from agent_bridge.lazylog import lazy_logger

if TYPE_CHECKING:
    import asyncio

    from agent_bridge.processes.spawning import HelperProcess

# processes.spawning is imported when the first child starts: the journal is opened
# before ``serve``'s first reply, and the thread writer never needs it.

__all__ = ["ProcessWriter", "WriterKind", "WriterMode", "choose_writer", "usable_cpus"]

log = lazy_logger("agent_bridge.journal")

#: a child that dies this soon after it started, without committing, makes the next
#: start wait (the writer's backoff); one that lived longer is replaced at once
_SHORT_LIFE: Final = 1.0

Committed = Callable[[int, int, "Fault | None"], None]


_encoder = msgspec.msgpack.Encoder()


def encode_frame(ops: list[tuple[Any, ...]]) -> tuple[bytearray, int]:
    """Return the frame holding ``ops`` (header included) and the number of events in it."""
    items: list[Any] = []
    events = 0
    for op in ops:
        if op[0] == OP_EVENTS:
            batches: list[EventBatch] = op[1]
            items.append(
                (
                    OP_EVENTS,
                    [
                        (b.session_id, b.first, b.bodies, b.codes, b.changes, b.raws)
                        for b in batches
                    ],
                )
            )
            events += sum(len(b.bodies) for b in batches)
        else:
            items.append(op)
    frame = bytearray(HEADER.size)
    _encoder.encode_into(items, frame, HEADER.size)  # the envelopes copied once, here
    HEADER.pack_into(frame, 0, len(frame) - HEADER.size)
    return frame, events


class ProcessWriter:
    """The writer in a child process, driven from the event loop; see the module docstring."""

    kind: Final = "process"

    def __init__(
        self,
        path: str,
        sync: str,
        retention: Retention,
        committed: Committed,
    ) -> None:
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self._path = path
        self._sync = sync
        self._retention = retention
        self._committed = committed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: HelperProcess | None = None
        self._stdin = -1
        self._stdout = -1
        #: ``(operations through it, events through it, frame)`` not reported committed
        self._unacked: collections.deque[tuple[int, int, bytearray]] = collections.deque()
        self._sent_ops = 0
        self._sent_events = 0
        self._acked_ops = 0
        self._acked_events = 0
        #: operations committed before the current child started (its reports count on)
        self._base = 0
        self._pending = bytearray()  # frames waiting for the pipe to drain
        self._reports = b""
        self._started_at = 0.0
        self._delay = RETRY_MIN
        self._respawning = False
        self._stopping = False
        self._halted = False
        #: children started so far (the first one included)
        self.starts = 0

    # ------------------------------------------------------------------ control

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Take the event loop the writer works in and start the child (the runtime
        starts the journal after ``serve``'s first reply: a child started by the first
        operation would make the first ``session/create`` wait for it)."""
        self._loop = loop
        if self._proc is None and not self._halted:
            self._spawn()
        if self.queue:
            self.submitted()

    @property
    def pid(self) -> int | None:
        """The child's process id while one runs."""
        return None if self._proc is None else self._proc.pid

    def submitted(self) -> None:
        """Operations were appended to :attr:`queue`: send them to the child as one frame
        (starting the child first if there is none yet)."""
        if self._loop is None or self._halted or not self.queue:
            return
        if self._proc is None:
            if self._respawning:
                return  # sent by the next child
            self._spawn()
            if self._proc is None:
                return
        queue = self.queue
        ops = [queue.popleft() for _ in range(len(queue))]
        frame, events = encode_frame(ops)
        self._sent_ops += len(ops)
        self._sent_events += events
        self._unacked.append((self._sent_ops, self._sent_events, frame))
        self._send(frame)

    def stop(self) -> None:
        """End the child's input: it commits what it was sent and exits (see :meth:`join`)."""
        self._stopping = True
        self._unwatch()
        if self._stdin >= 0:
            os.close(self._stdin)
            self._stdin = -1

    def halt(self) -> None:
        """Kill the child and write nothing more (the file is damaged, or a bug)."""
        self._halted = True
        self._stopping = True
        self._unwatch()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the child to exit (at most ``timeout`` seconds, then kill it)."""
        from agent_bridge.processes.spawning import WaitTimeout

        proc = self._proc
        if proc is None:
            return
        try:
            proc.wait(timeout if timeout is not None else 60.0)
        except WaitTimeout:
            log.error("journal writer process did not exit; killing it")
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Close the pipes (after :meth:`join`)."""
        self._unwatch()
        for fd in (self._stdin, self._stdout):
            if fd >= 0:
                os.close(fd)
        self._stdin = self._stdout = -1
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    # ------------------------------------------------------------------ the child

    def _spawn(self) -> None:
        """Start a child and hand it every frame not reported committed; on failure,
        report ``writer_exited`` and try again later."""
        from agent_bridge.processes.spawning import SpawnError, popen_helper

        assert self._loop is not None
        replay = self._sent_ops - self._acked_ops
        policy = self._retention
        argv = [
            sys.executable,
            "-P",  # never import from the working directory (a workspace's struct.py)
            "-m",
            "agent_bridge.journal.writer_child",
            self._path,
            self._sync,
            "-" if policy.max_age_days is None else repr(policy.max_age_days),
            "-" if policy.max_bytes is None else str(policy.max_bytes),
            str(replay),
        ]
        try:
            proc = popen_helper(argv)
        except SpawnError as exc:
            log.error("journal writer process could not start (%s)", exc.reason)
            self._died()
            return
        assert proc.stdin is not None and proc.stdout is not None
        self._stdin = os.dup(proc.stdin.fileno())
        self._stdout = os.dup(proc.stdout.fileno())
        proc.stdin.close()
        proc.stdout.close()
        from agent_bridge.rpc.pipes import widen_pipe

        widen_pipe(self._stdin)  # a streaming session's frame fits: one write, one wake-up
        os.set_blocking(self._stdin, False)
        os.set_blocking(self._stdout, False)
        self._proc = proc
        self.starts += 1
        self._started_at = time.monotonic()
        self._base = self._acked_ops
        self._reports = b""
        self._pending.clear()
        self._loop.add_reader(self._stdout, self._on_reports)
        for _, _, frame in self._unacked:
            self._send(frame)

    def _send(self, frame: bytearray) -> None:
        if self._stdin < 0:
            return
        if self._pending:
            self._pending += frame
            return
        try:
            written = os.write(self._stdin, frame)
        except BlockingIOError:
            written = 0
        except OSError:
            return  # the child is gone: its end is seen on its stdout; the frame is kept
        if written < len(frame):
            self._pending += memoryview(frame)[written:]
            assert self._loop is not None
            self._loop.add_writer(self._stdin, self._drain)

    def _drain(self) -> None:
        try:
            written = os.write(self._stdin, self._pending)
        except BlockingIOError:
            return
        except OSError:
            written = len(self._pending)  # gone: see _send
        del self._pending[:written]
        if not self._pending and self._loop is not None:
            self._loop.remove_writer(self._stdin)

    def _unwatch(self) -> None:
        if self._loop is None:
            return
        if self._stdout >= 0:
            self._loop.remove_reader(self._stdout)
        if self._stdin >= 0:
            self._loop.remove_writer(self._stdin)

    def _on_reports(self) -> None:
        try:
            data = os.read(self._stdout, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._on_exit()
            return
        data = self._reports + data
        size = REPORT.size
        end = len(data) - len(data) % size
        self._reports = data[end:]
        for at in range(0, end, size):
            ops, _events, code = REPORT.unpack_from(data, at)
            fault: Fault | None = FAULTS[code] if code < len(FAULTS) else "internal"
            if fault is None:
                self._acked(self._base + ops)
            self._committed(self._acked_ops, self._acked_events, fault)
            if self._halted:
                return

    def _acked(self, through: int) -> None:
        """The child committed the operations through ``through``: forget their frames."""
        unacked = self._unacked
        while unacked and unacked[0][0] <= through:
            self._acked_ops, self._acked_events, _ = unacked.popleft()
        if through > self._base or not unacked:
            self._delay = RETRY_MIN  # this child works

    def _on_exit(self) -> None:
        """The child's stdout ended: it exited (or is about to)."""
        from agent_bridge.processes.spawning import WaitTimeout

        proc = self._proc
        self._unwatch()
        for fd in (self._stdin, self._stdout):
            if fd >= 0:
                os.close(fd)
        self._stdin = self._stdout = -1
        self._proc = None
        status: Any = None
        if proc is not None:
            if proc.poll() is None:
                try:
                    status = proc.wait(0.5)
                except WaitTimeout:
                    proc.kill()
                    status = proc.wait()
            else:
                status = proc.returncode
        if self._stopping:
            return
        log.error("journal writer process exited (status %s); starting another", status)
        self._died()

    def _died(self) -> None:
        """Report the writer gone and start another (now, or after the backoff)."""
        self._committed(self._acked_ops, self._acked_events, "writer_exited")
        if self._halted or self._loop is None:
            return
        lived = time.monotonic() - self._started_at
        delay = 0.0 if self.starts and lived > _SHORT_LIFE else self._delay
        self._delay = min(self._delay * 2, RETRY_MAX)
        self._respawning = True
        self._loop.call_later(delay, self._respawn)

    def _respawn(self) -> None:
        self._respawning = False
        if self._halted or self._stopping:
            return
        self._spawn()
        if self._proc is not None and self.queue:
            self.submitted()
