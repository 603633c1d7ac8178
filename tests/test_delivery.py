"""Release after commit (:mod:`agent_bridge.runtime.delivery`) with real event streams
over a stand-in for the history's two counters: whatever the interleaving of sessions and
however commits cut it, each stream releases exactly its committed envelopes, in order,
once each, and never one that is not committed."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from agent_bridge.ids import Clock
from agent_bridge.journal import MemoryHistory
from agent_bridge.runtime.delivery import Delivery
from agent_bridge.runtime.stream import EventStream
from agent_bridge.wire.events import EventPayload, TextDelta


class _Counts:
    def __init__(self) -> None:
        self.appended = 0
        self.committed = 0


class _Probe(EventStream):
    """An event stream that records what it releases (and holds, as a durable one)."""

    __slots__ = ("released",)

    def __init__(self, name: str, delivery: Delivery) -> None:
        super().__init__(name, MemoryHistory(), delivery, Clock())
        self.released: list[tuple[int, bytes]] = []

    def release(
        self,
        first: int,
        bodies: Sequence[bytes],
        payloads: Sequence[EventPayload],
        run_ids: Sequence[str | None],
        size: int | None = None,
    ) -> bool:
        # what each envelope encodes travels with it, in step
        assert [p.text for p in payloads] == [b.decode() for b in bodies]  # type: ignore[union-attr]
        assert list(run_ids) == [self.session_id] * len(bodies)
        self.released.extend(enumerate(bodies, first))
        return False


@pytest.mark.parametrize("batched", [False, True], ids=["hold", "hold_many"])
@pytest.mark.parametrize("seed", range(20))
def test_interleaved_streams_release_exactly_what_is_committed(seed: int, batched: bool) -> None:
    rng = random.Random(seed)
    counts = _Counts()
    delivery = Delivery(counts, high_water=10**9)
    streams = [_Probe(f"ses_{i}", delivery) for i in range(rng.randint(1, 4))]
    owner: list[tuple[Any, int]] = []  # history index - 1 -> (stream, sequence)
    for _ in range(rng.randint(1, 400)):
        if rng.random() < 0.8:
            stream = rng.choice(streams) if rng.random() < 0.5 else streams[0]
            count = rng.randint(1, 30)
            if batched and rng.random() < 0.5:  # one hold_many, as EventStream.publish_many
                bodies = []
                for _ in range(count):
                    stream.last_sequence += 1
                    counts.appended += 1
                    owner.append((stream, stream.last_sequence))
                    bodies.append(b"%s:%d" % (stream.session_id.encode(), stream.last_sequence))
                payloads: list[EventPayload] = [TextDelta(b.decode()) for b in bodies]
                stream._held.hold_many(bodies, payloads, stream.session_id)
                continue
            for _ in range(count):
                stream.last_sequence += 1
                counts.appended += 1
                owner.append((stream, stream.last_sequence))
                body = b"%s:%d" % (stream.session_id.encode(), stream.last_sequence)
                stream._held.hold(body, TextDelta(body.decode()), stream.session_id)
        else:
            counts.committed = rng.randint(counts.committed, counts.appended)
            delivery.release()
        committed = {(s, q) for s, q in owner[: counts.committed]}
        for stream in streams:
            got = [seq for seq, _ in stream.released]
            assert got == sorted(q for s, q in committed if s is stream)
            assert all(body.endswith(b":%d" % seq) for seq, body in stream.released)
            done = max(got, default=0)
            # committed_sequence: the newest committed sequence, before any held one
            assert stream.committed_sequence() == done
    counts.committed = counts.appended
    delivery.release()
    for stream in streams:
        assert [seq for seq, _ in stream.released] == list(range(1, stream.last_sequence + 1))
        assert stream._held.bodies is None
