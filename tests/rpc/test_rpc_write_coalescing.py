"""The connection's writer coalesces output while it streams, and only then.

After a large write (output is streaming) the writer lets the producers run one more turn
of the event loop before it writes again, so the next write carries more; a quiet
connection writes at once.  Checked with a sender that records each write: the bytes and
their order are those queued, streaming takes fewer writes than the producer took turns,
and a lone notification goes out in the writer's first turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

from agent_bridge.rpc.connection import Connection

HEAD = b'{"jsonrpc":"2.0","method":"event","params":'
TAIL = b"}"


class _Recorder:
    """A send stream that keeps every write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    async def send(self, item: bytes) -> None:
        self.writes.append(bytes(item))


class _Silent:
    """A receive stream on which nothing ever arrives."""

    def __init__(self) -> None:
        self._never = anyio.Event()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await self._never.wait()
        raise anyio.EndOfStream


@asynccontextmanager
async def _running() -> AsyncIterator[tuple[Connection, _Recorder]]:
    recorder = _Recorder()
    conn = Connection(_Silent(), recorder, framing="newline", name="coalescing")
    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.run)
        await anyio.lowlevel.checkpoint()
        try:
            yield conn, recorder
        finally:
            conn.close()
            tg.cancel_scope.cancel()


async def _turns(n: int) -> None:
    for _ in range(n):
        await anyio.lowlevel.checkpoint()


def _expected(bodies: list[bytes]) -> bytes:
    return b"".join(HEAD + body + TAIL + b"\n" for body in bodies)


async def test_streaming_output_is_written_in_fewer_larger_writes_in_order() -> None:
    turns = 24
    per_turn = 300  # ~100 KB a turn: every write is a streaming one
    sent: list[bytes] = []
    async with _running() as (conn, recorder):
        for turn in range(turns):
            bodies = [
                b'{"n":%d,"text":"%s"}' % (turn * per_turn + i, b"x" * 300) for i in range(per_turn)
            ]
            sent += bodies
            conn.notify_encoded(bodies, HEAD, TAIL)
            await anyio.lowlevel.checkpoint()
        await _turns(4)
        writes = list(recorder.writes)
    assert b"".join(writes) == _expected(sent)
    # one write per producer turn without coalescing; about one per two with it
    assert len(writes) <= turns * 2 // 3, [len(w) for w in writes]
    assert max(len(w) for w in writes) > len(_expected(sent[:per_turn])) * 3 // 2


async def test_a_lone_notification_is_written_in_the_writers_first_turn() -> None:
    async with _running() as (conn, recorder):
        conn.notify_encoded([b'{"n":1}'], HEAD, TAIL)
        await _turns(1)
        assert recorder.writes == [_expected([b'{"n":1}'])]


async def test_after_a_stream_ends_a_small_write_waits_at_most_one_more_turn() -> None:
    async with _running() as (conn, recorder):
        big = [b'{"text":"%s"}' % (b"y" * 1000)] * 100  # one streaming-sized write
        conn.notify_encoded(big, HEAD, TAIL)
        await _turns(1)
        assert len(recorder.writes) == 1
        await _turns(3)  # the stream has ended: the loop is quiet
        conn.notify_encoded([b'{"n":2}'], HEAD, TAIL)
        await _turns(2)
        assert recorder.writes[-1] == _expected([b'{"n":2}'])
        assert b"".join(recorder.writes) == _expected([*big, b'{"n":2}'])


async def test_a_counted_size_is_taken_as_the_bodies_bytes() -> None:
    """``notify_encoded``'s ``size`` (the bodies' bytes, counted by the caller) stands
    for counting them: the same bytes wait, the same congestion is reported, the same
    output is written."""
    bodies = [b'{"n":%d,"text":"%s"}' % (i, b"z" * 500) for i in range(20_000)]  # ~10 MB
    pending: list[tuple[int, bool]] = []
    outputs: list[bytes] = []
    for size in (None, sum(map(len, bodies))):
        async with _running() as (conn, recorder):
            congested = conn.notify_encoded(bodies, HEAD, TAIL, size)
            pending.append((conn.outbox.pending, congested))
            await _turns(6)
            outputs.append(b"".join(recorder.writes))
    assert pending[0] == pending[1] and pending[0][1] is True
    assert outputs[0] == outputs[1] == _expected(bodies)
