"""The journal's writer process: the child side (``python -m agent_bridge.journal.writer_child``).

Why this module exists: with ``--journal-writer process`` the group commit of
:mod:`agent_bridge.journal.writer` runs in a process of its own, so that its SQLite and
zlib work (and its share of the interpreter lock) is off the bridge's interpreter.  This
module is that process's whole program; the bridge's side is
:mod:`agent_bridge.journal.writer_process`, the frame format both speak
:mod:`agent_bridge.journal.writer_frames`.

The bridge writes *frames* on the child's stdin: a 4-byte little-endian length, then a
MessagePack array of the writer's operations (``OP_`` tuples as lists; an ``OP_EVENTS``
operation's batches as ``[session_id, first, bodies, codes, changes, raws]``, the bodies
being the envelopes exactly as hosts receive them, never re-encoded).  The child appends
each frame's operations to a :class:`~agent_bridge.journal.writer.Writer`'s queue in one
step, so a commit holds whole frames, and the writer thread commits them as it would in
the bridge.  Every report of the writer (``notify``) goes back on stdout as one
:data:`REPORT` record: operations committed since this child started, events, and the
fault code (:data:`FAULTS`; 0 for a commit).  A child started with nothing to replay
reports ``(0, 0, none)`` once its connection is open (it is ready).

Arguments: the journal file, the ``--journal-sync`` mode, the retention caps (``-`` for
none) and ``replay``, the number of leading operations that a predecessor may have
committed already (see :class:`~agent_bridge.journal.writer.Writer`).  End of stdin: the
writer commits what it was given and the child exits 0.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from typing import Any

from agent_bridge.journal.errors import Fault
from agent_bridge.journal.writer_frames import FAULTS, HEADER, REPORT

__all__ = ["main"]


def _read_exactly(stream: Any, size: int) -> bytes | None:
    """``size`` bytes from ``stream``, or ``None`` at its end (a partial frame included:
    the bridge died writing it, and what it never finished was never acknowledged)."""
    data = stream.read(size)
    if data is None or len(data) < size:
        return None
    return bytes(data)


def _operations(frame: bytes) -> list[tuple[Any, ...]]:
    """The writer's operations in ``frame`` (its batches rebuilt as :class:`EventBatch`)."""
    import msgspec

    from agent_bridge.journal.writer import OP_EVENTS, EventBatch

    ops: list[tuple[Any, ...]] = []
    for item in msgspec.msgpack.decode(frame):
        if item[0] == OP_EVENTS:
            batches = []
            for session_id, first, bodies, codes, changes, raws in item[1]:
                batch = EventBatch(session_id, first)
                batch.bodies = bodies
                batch.codes = bytearray(codes)
                batch.changes = [(seq, raw_id) for seq, raw_id in changes]
                batch.raws = [(raw_id, record) for raw_id, record in raws]
                batches.append(batch)
            ops.append((OP_EVENTS, batches))
        else:
            ops.append(tuple(item))
    return ops


def main(argv: list[str]) -> int:
    """Run the writer on the frames of stdin until its end; return the exit status."""
    path, sync, max_age, max_bytes, replay = argv
    from agent_bridge.journal.retention import Retention
    from agent_bridge.journal.schema import configure, connect
    from agent_bridge.journal.writer import Writer
    from agent_bridge.lazylog import lazy_logger

    log = lazy_logger("agent_bridge.journal")
    out = sys.stdout.fileno()

    def notify(ops: int, events: int, fault: Fault | None) -> None:
        os.write(out, REPORT.pack(ops, events, FAULTS.index(fault)))  # < PIPE_BUF: atomic

    from agent_bridge.journal.errors import JournalError

    try:
        conn = connect(path, busy_timeout=30.0)
        configure(conn, "full" if sync == "full" else "normal")
    except (JournalError, sqlite3.Error) as exc:
        # one line, no traceback: the bridge reports writer_exited and starts another
        log.error("cannot open the journal (%s)", str(exc).splitlines()[0])
        return 2
    retention = Retention(
        max_age_days=None if max_age == "-" else float(max_age),
        max_bytes=None if max_bytes == "-" else int(max_bytes),
    )
    writer = Writer(conn, notify, retention, os.path.dirname(path), replay=int(replay))
    writer.start()
    if not int(replay):
        notify(0, 0, None)
    stdin = sys.stdin.buffer
    while True:
        head = _read_exactly(stdin, HEADER.size)
        if head is None:
            break
        frame = _read_exactly(stdin, HEADER.unpack(head)[0])
        if frame is None:
            break
        try:
            ops = _operations(frame)
        except Exception:  # a bug on either side: the writer never guesses
            log.error("journal writer process: a frame it cannot read", exc_info=True)
            notify(0, 0, "internal")
            return 1
        writer.queue.extend(ops)  # one step: a commit takes whole frames
        writer.submitted()
    writer.stop()
    writer.join()
    writer.close()
    return 0


if __name__ == "__main__":
    import logging

    logging.basicConfig(
        level=logging.WARNING, format="agent-bridge journal writer process: %(message)s"
    )
    sys.exit(main(sys.argv[1:]))
