"""``--state-dir :memory:`` history is bounded: a ring per session under one budget (issue 17).

Before: it kept every event (546 MB after 1.1M events).
"""

from __future__ import annotations

import random
import subprocess
import sys
from unittest import mock

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_bridge.journal import memory, open_history
from agent_bridge.journal.base import SessionRecord
from agent_bridge.journal.memory import _OVERHEAD, MemoryHistory, _Stored


def _record(session_id: str) -> SessionRecord:
    fields = set(SessionRecord.__struct_fields__)
    values: dict[str, object] = {
        "session_id": session_id,
        "provider_id": "scripted",
        "state": "active",
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "provider_version": None,
        "workspace": None,
        "title": None,
    }
    return SessionRecord(**{k: v for k, v in values.items() if k in fields})  # type: ignore[arg-type]


def test_memory_history_keeps_the_newest_events_within_its_budget() -> None:
    budget = 64 * 1024
    history = MemoryHistory(max_bytes=budget)
    history.add_session(_record("quiet"))
    history.add_session(_record("busy"))
    for seq in range(1, 11):
        history.append("quiet", seq, 1, b'{"q":%d}' % seq, 0)
    body = b"x" * 500
    for seq in range(1, 10_001):
        history.add_raw("busy", seq, b"r" * 100) if seq % 100 == 1 else None
        history.append("busy", seq, 1, body + b"%d" % seq, seq - (seq - 1) % 100)
        assert history.size <= budget + len(body) + 200
    assert history.size <= budget

    async def read() -> tuple[list[bytes], list[bytes], list[bytes], object]:
        quiet = await history.read_events("quiet", 1, 10)
        newest = await history.read_events("busy", 9_991, 10_000)
        oldest = await history.read_events("busy", 1, 10)
        record = await history.load_session("busy")
        return quiet, newest, oldest, record

    quiet, newest, oldest, record = anyio.run(read)
    assert len(quiet) == 10  # a quiet session keeps its history
    assert newest == [body + b"%d" % s for s in range(9_991, 10_001)]
    assert oldest == []  # dropped: the runtime answers history_unavailable
    assert record.last_sequence == 10_000  # type: ignore[attr-defined]
    assert len(history._sessions["busy"].raw) <= 2  # raw records follow their events out


def test_open_history_memory_takes_the_budget_and_serve_help_states_it() -> None:
    history = open_history(":memory:", memory_bytes=1234)
    assert isinstance(history, MemoryHistory) and history.max_bytes == 1234
    text = subprocess.run(
        [sys.executable, "-m", "agent_bridge", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--memory-history-mb" in text and "ring" in text


def _keep(bodies: list[bytes], singles: list[int], rng: random.Random, span: int) -> _Stored:
    """Keep ``bodies`` in a history in memory (with no budget to speak of) the way the
    runtime appends them: batches of sizes drawn from ``rng``, and those at the
    positions ``singles`` one at a time; return the session's store."""
    history = MemoryHistory(max_bytes=1 << 40)
    history.add_session(_record("s"))
    at = 0
    with mock.patch.object(memory, "_SPAN", span):
        while at < len(bodies):
            if at in singles:
                history.append("s", at + 1, 1, bodies[at], 0)
                at += 1
                continue
            stop = min(len(bodies), at + rng.choice([1, 2, 7, 255, 256, 257, 600]))
            history.append_many("s", at + 1, b"\x01" * (stop - at), bodies[at:stop], 0)
            at = stop
    return history._sessions["s"]


@given(
    st.lists(st.integers(min_value=0, max_value=3000), min_size=1, max_size=300),
    st.integers(min_value=0, max_value=400_000),
    st.integers(min_value=0, max_value=300),
    st.sampled_from([None, -1, 0, 1]),
    st.lists(st.integers(min_value=0, max_value=300), max_size=6),
    st.randoms(use_true_random=False),
    st.sampled_from([1, 3, 16, 256]),
)
@settings(max_examples=300, deadline=None)
def test_eviction_drops_exactly_the_oldest_events_that_free_what_is_needed(
    sizes: list[int],
    need: int,
    upto: int,
    off: int | None,
    singles: list[int],
    rng: random.Random,
    span: int,
) -> None:
    """The oldest envelopes are dropped one by one (in effect) until ``need`` bytes are
    freed, never the newest: the same count as the plain loop over every envelope.
    ``need`` is arbitrary, or (``off``) just around what the oldest ``upto`` cost.  The
    envelopes are kept the way the runtime appends them (batches of any size, and the
    envelopes at ``singles`` one at a time), so eviction's stretches fall anywhere and
    may be followed by envelopes not counted yet; after it the stretches still account
    for exactly what they cover, and a second eviction is exact too.  ``span``: the
    most envelopes a stretch counts (small ones make many)."""
    if off is not None:
        need = max(0, sum(sizes[:upto]) + len(sizes[:upto]) * _OVERHEAD + off)
    stored = _keep([b"x" * size for size in sizes], singles, rng, span)
    assert stored.size == sum(sizes) + len(sizes) * _OVERHEAD

    def expected(sizes: list[int], need: int) -> tuple[int, int]:
        count = freed = 0
        while freed < need and count < len(sizes) - 1:
            freed += sizes[count] + _OVERHEAD
            count += 1
        return count, freed

    expected_count, expected_freed = expected(sizes, need)
    assert stored.evict(need) == expected_freed
    assert len(stored.bodies) == len(sizes) - expected_count
    assert stored.first == 1 + expected_count
    left = sizes[expected_count:]
    spans = stored.spans or []
    counted = left[: stored.spanned]
    assert sum(spans[0::2]) == stored.spanned <= len(left) and all(spans[0::2])
    assert sum(spans[1::2]) == sum(counted) + len(counted) * _OVERHEAD
    again = need // 3
    count, freed = expected(left, again)
    assert stored.evict(again) == freed
    assert len(stored.bodies) == len(left) - count
