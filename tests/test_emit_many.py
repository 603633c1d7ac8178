"""``RunContext.emit_many``: several payloads in one call, each still its own event.

In-process, through the runtime (with history in memory and with the journal): order and
gapless sequences across batches and single emits, one clock read per batch, a bad payload
inside a batch replaced in place by a ``provider_contract`` diagnostic, nothing emitted
after the run ended, one raw record shared by a batch, and, with the journal, no event of
a batch given to the host before the commit that holds it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stub_providers import BodyProvider

from agent_bridge.ids import Clock, IdFactory
from agent_bridge.journal.journal import Journal
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Interaction, Released, Runtime
from agent_bridge.spi import (
    RunContext,
)
from agent_bridge.wire.events import ProviderPayload, TextDelta, ThinkingDelta, ToolActivity
from agent_bridge.wire.methods import EventsReadParams, RunInput, RunStartParams

#: what a test's run does with its context; returns the run's outcome
Script = Callable[[RunContext], Any]


class Host:
    """Records what the runtime sends; ``on_publish`` sees each envelope as it arrives."""

    congested = False

    def __init__(self, on_publish: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self._on_publish = on_publish

    def publish(self, events: Released) -> bool:
        for envelope in events.bodies:
            event = msgspec.json.decode(envelope)
            if self._on_publish is not None:
                self._on_publish(event)
            self.events.append(event)
        return False

    async def drained(self) -> None:
        return None

    def can_answer(self, kind: str) -> bool:
        return False

    async def ask(self, interaction: Interaction) -> None:
        return None


def deltas(start: int, count: int) -> list[ProviderPayload]:
    return [TextDelta(text=f"d{i}") for i in range(start, start + count)]


async def run_once(
    script: Script,
    *,
    host: Host | None = None,
    history: Any = None,
    clock: Clock | None = None,
) -> tuple[Runtime, list[dict[str, Any]], BodyProvider]:
    """Run ``script`` as one run of a new session; return the runtime (closed), what the
    host received, and the provider."""
    host = host or Host()
    provider = BodyProvider(script, "batch", "Batch")
    registry = ProviderRegistry([provider], load_entry_points=False)
    async with Runtime(registry, ids=IdFactory("t"), clock=clock, history=history) as runtime:
        info = await runtime.create_session("batch", subscriber=host)
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("go")))
        await runtime.runs[started.run_id].done.wait()
        await runtime.flush()
    return runtime, host.events, provider


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["payload"]["text"] for e in events if e["payload"]["type"] == "text.delta"]


async def test_batches_and_single_emits_keep_order_and_gapless_sequences() -> None:
    async def script(ctx: RunContext) -> None:
        await ctx.emit_many(deltas(0, 3))
        await ctx.emit(TextDelta(text="d3"))
        ctx.emit_nowait_many(deltas(4, 100))
        await ctx.emit_many([])  # nothing: no event, no sequence
        await ctx.emit_many(deltas(104, 1))
        ctx.emit_nowait(TextDelta(text="d105"))

    _, events, _ = await run_once(script)
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert texts(events) == [f"d{i}" for i in range(106)]
    assert len({e["eventId"] for e in events}) == len(events)
    assert events[1]["eventId"] == "evt_t000001_2"
    run_id = events[0]["runId"]
    assert all(e["runId"] == run_id for e in events[:-1])  # session.closed has none
    kinds = [e["payload"]["type"] for e in events]
    assert kinds == ["run.started"] + ["text.delta"] * 106 + ["run.completed", "session.closed"]


async def test_without_the_journal_a_batch_comes_with_its_bytes_counted() -> None:
    """The stream counts a batch's bytes once, for the history in memory and for the
    subscribers (``Released.size``): the figure is the bodies' own."""
    released: list[Released] = []

    class Counting(Host):
        def publish(self, events: Released) -> bool:
            released.append(events)
            return super().publish(events)

    async def script(ctx: RunContext) -> None:
        await ctx.emit_many(deltas(0, 5))
        await ctx.emit_many([TextDelta(text="é" * 40), ThinkingDelta(text="x")])

    await run_once(script, host=Counting())
    counted = [r for r in released if r.size is not None]
    assert len(counted) == 2
    assert all(r.size == sum(map(len, r.bodies)) for r in counted)


async def test_one_clock_read_per_batch() -> None:
    """The events of one call share ``occurredAt``; the next call reads the clock again,
    so times never go back and the order is the sequence."""
    seconds = iter(range(1_700_000_000, 1_800_000_000))
    clock = Clock(wall=lambda: float(next(seconds)))

    async def script(ctx: RunContext) -> None:
        await ctx.emit_many(deltas(0, 5))
        await ctx.emit_many(deltas(5, 5))
        await ctx.emit(TextDelta(text="d10"))

    _, events, _ = await run_once(script, clock=clock)
    stamps = {e["payload"].get("text"): e["occurredAt"] for e in events}
    first = {stamps[f"d{i}"] for i in range(5)}
    second = {stamps[f"d{i}"] for i in range(5, 10)}
    assert len(first) == 1 and len(second) == 1
    assert first.pop() < second.pop() < stamps["d10"]
    times = [e["occurredAt"] for e in events]
    assert times == sorted(times)


async def test_a_bad_payload_inside_a_batch_becomes_a_diagnostic_in_its_place(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    tool_input: dict[str, Any] = {"path": "a.txt"}

    async def script(ctx: RunContext) -> None:
        await ctx.emit_many(
            [
                TextDelta(text="a"),
                TextDelta(text=12345),  # type: ignore[arg-type]
                ToolActivity("t1", "Write", "started", input=tool_input),
                ToolActivity("t2", "cycle", "started", input=cycle),
                ThinkingDelta(text="b"),
            ]
        )
        tool_input["path"] = "/etc/passwd"  # a later change must not rewrite history

    with caplog.at_level(logging.WARNING, logger="agent_bridge.runtime"):
        _, events, _ = await run_once(script)
    payloads = [e["payload"] for e in events[1:-2]]
    assert [p["type"] for p in payloads] == [
        "text.delta",
        "diagnostic",
        "tool.activity",
        "diagnostic",
        "thinking.delta",
        "tool.activity",  # t1 never ended: the runtime fails it as the run ends
    ]
    assert (payloads[-1]["toolCallId"], payloads[-1]["status"]) == ("t1", "failed")
    assert payloads[1]["code"] == payloads[3]["code"] == "provider_contract"
    assert payloads[2]["input"] == {"path": "a.txt"}
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert caplog.text.count("provider contract violation") == 2


async def test_a_batch_after_the_run_ended_is_dropped_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def script(ctx: RunContext) -> None:
        await ctx.emit_many(deltas(0, 2))

    runtime, events, provider = await run_once(script)
    ctx = provider.contexts[0]
    with caplog.at_level(logging.WARNING, logger="agent_bridge.runtime"):
        ctx.emit_nowait_many(deltas(2, 10))
        await ctx.emit_many(deltas(12, 10))
        ctx.emit_nowait(TextDelta(text="late"))
    assert texts(events) == ["d0", "d1"]
    assert caplog.text.count("provider emitted after the run ended") == 1
    assert runtime.history.appended == len(events)  # nothing more was recorded


async def test_a_batch_shares_one_raw_record(tmp_path: Path) -> None:
    record = b'{"native": "several deltas in one record"}'

    async def script(ctx: RunContext) -> None:
        await ctx.emit_many(deltas(0, 3), raw=record)
        await ctx.emit(TextDelta(text="d3"), raw=record)  # the same object: the same record
        await ctx.emit_many(deltas(4, 2), raw=b"other")

    host = Host()
    provider = BodyProvider(script, "batch", "Batch")
    registry = ProviderRegistry([provider], load_entry_points=False)
    async with Runtime(registry, history=Journal.open(str(tmp_path))) as runtime:
        info = await runtime.create_session("batch", subscriber=host)
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("go")))
        await runtime.runs[started.run_id].done.wait()
        await runtime.flush()
        page = msgspec.json.decode(
            await runtime.read_events(EventsReadParams(info.session_id, view="raw"))
        )
    assert page["raw"] == [
        {"rawId": 2, "spans": [[2, 5]], "record": {"native": "several deltas in one record"}},
        {"rawId": 6, "spans": [[6, 7]], "text": "other"},
    ]


async def test_each_event_of_a_batch_is_journaled_with_its_own_payload_type(
    tmp_path: Path,
) -> None:
    """A batch of one kind of delta and one that mixes kinds: the type code stored for
    each event (``event_blocks.types``) is its own payload's."""
    from agent_bridge.journal.blocks import TYPE_NAMES

    async def script(ctx: RunContext) -> None:
        await ctx.emit_many([ThinkingDelta(text=f"t{i}") for i in range(3)])
        await ctx.emit_many([TextDelta(text="a"), ThinkingDelta(text="b"), TextDelta(text="c")])
        await ctx.emit_many(deltas(0, 2))

    _, events, _ = await run_once(script, history=Journal.open(str(tmp_path)))
    with sqlite3.connect(tmp_path / "journal.sqlite3") as conn:
        stored = b"".join(
            row[0] for row in conn.execute("SELECT types FROM event_blocks ORDER BY first_seq")
        )
    assert [TYPE_NAMES[code] for code in stored] == [e["payload"]["type"] for e in events]
    assert [e["payload"]["type"] for e in events[1:9]] == [
        *["thinking.delta"] * 3,
        "text.delta",
        "thinking.delta",
        "text.delta",
        *["text.delta"] * 2,
    ]


@pytest.mark.parametrize("batch", [1, 7, 64, 500])
async def test_with_the_journal_no_event_of_a_batch_reaches_the_host_before_its_commit(
    tmp_path: Path, batch: int
) -> None:
    """Each envelope the host receives is already in the journal file, read through a
    connection of its own at that moment."""
    total = 2000
    database = tmp_path / "journal.sqlite3"
    checks: list[tuple[int, int]] = []
    reader: list[sqlite3.Connection] = []

    def on_publish(event: dict[str, Any]) -> None:
        if not reader:
            reader.append(sqlite3.connect(database))
        row = reader[0].execute("SELECT max(last_seq) FROM event_blocks").fetchone()
        checks.append((event["sequence"], row[0] or 0))

    async def script(ctx: RunContext) -> None:
        done = 0
        while done < total:
            await ctx.emit_many(deltas(done, batch))
            done += batch
            if done % 256 < batch:
                await anyio.lowlevel.checkpoint()

    _, events, _ = await run_once(
        script, host=Host(on_publish), history=Journal.open(str(tmp_path))
    )
    for conn in reader:
        conn.close()
    assert texts(events) == [f"d{i}" for i in range(total + (-total) % batch)]
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert checks and all(sequence <= stored for sequence, stored in checks)


def test_a_batch_template_stamps_the_same_bytes_as_the_single_one() -> None:
    from agent_bridge.envelope import EnvelopeFormat

    fmt = EnvelopeFormat("ses_t000001")
    at = b"2026-01-01T00:00:00.000Z"
    for run_id in (b"run_t000002", b"run_100%_odd"):
        batch = fmt.run_batch(run_id, at)
        for sequence in (1, 255, 4096):
            assert batch % (sequence, sequence, b'{"type":"usage"}') == fmt.run % (
                sequence,
                run_id,
                sequence,
                at,
                b'{"type":"usage"}',
            )


@given(
    st.one_of(
        st.lists(st.floats(min_value=0, max_value=4e9, allow_nan=False), min_size=1, max_size=50),
        # close times: many in one millisecond, crossing milliseconds and seconds
        st.tuples(
            st.floats(min_value=1.6e9, max_value=1.9e9), st.floats(min_value=1e-5, max_value=2e-3)
        ).map(lambda p: [p[0] + k * p[1] for k in range(60)]),
    )
)
@settings(max_examples=300, deadline=None)
def test_the_clock_stamps_each_time_with_its_millisecond_and_never_goes_back(
    times: list[float],
) -> None:
    """The cached stamp (one ``strftime`` a second, a float bounds check per call) is the
    plain computation's for every time, and non-decreasing times give non-decreasing
    stamps."""
    import time as _time

    times.sort()
    feed = iter(times)
    clock = Clock(wall=lambda: next(feed))
    stamps = [clock.now_iso_bytes() if i % 2 else clock.now_iso().encode() for i in times]
    for i, (t, stamp) in enumerate(zip(times, stamps, strict=True)):
        ms = int(t * 1000)
        plain = _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(ms // 1000))
        expected = f"{plain}.{ms % 1000:03d}Z".encode()
        if stamp != expected:
            # only a time within a rounding error of the cached millisecond's end keeps it
            assert i > 0 and stamp == stamps[i - 1]
            assert int(times[i - 1] * 1000) + 1 == ms and t < (ms / 1000) + 1e-9
    assert stamps == sorted(stamps)
