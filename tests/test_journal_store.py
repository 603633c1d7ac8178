"""The journal under the runtime, in-process: concurrent sessions, paging over real blocks,
crash recovery of a dead owner, retention, and a journal that fails while in use."""

from __future__ import annotations

import itertools
import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.errors import BridgeError
from agent_bridge.journal.journal import Journal
from agent_bridge.journal.paging import page_range
from agent_bridge.journal.reader import Reader
from agent_bridge.journal.retention import Retention, apply_retention
from agent_bridge.journal.rows import insert_events
from agent_bridge.journal.schema import connect, open_journal_db
from agent_bridge.journal.writer import Writer
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Interaction, Released, Runtime
from agent_bridge.wire.events import SessionResumed
from agent_bridge.wire.methods import EventsReadParams, RunInput, RunStartParams


class Host:
    """Records what the runtime sends; answers nothing."""

    congested = False

    def __init__(self) -> None:
        self.events: list[bytes] = []

    def publish(self, events: Released) -> bool:
        self.events += events.bodies
        return False

    async def drained(self) -> None:
        return None

    def can_answer(self, kind: str) -> bool:
        return False

    async def ask(self, interaction: Interaction) -> None:
        return None

    def of(self, session_id: str) -> list[dict[str, Any]]:
        decoded = [msgspec.json.decode(e) for e in self.events]
        return [e for e in decoded if e["sessionId"] == session_id]


@asynccontextmanager
async def journaled(state: Path, **kw: Any) -> AsyncIterator[tuple[Runtime, Host]]:
    host = Host()
    registry = ProviderRegistry([ScriptedProvider()], load_entry_points=False)
    async with Runtime(registry, history=Journal.open(str(state), **kw)) as runtime:
        yield runtime, host


async def read_all(runtime: Runtime, session_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        raw = await runtime.read_events(EventsReadParams(session_id, after=after, limit=1000))
        page = msgspec.json.decode(raw)
        out += page["events"]
        if not page["hasMore"]:
            return out
        after = out[-1]["sequence"]


def stream(count: int, text: str = "x") -> dict[str, Any]:
    return {"script": {"steps": [{"type": "stream", "count": count, "text": text}]}}


# --------------------------------------------------------------------- concurrency


async def test_many_sessions_streaming_at_once_stay_gapless_and_equal_to_the_stream(
    tmp_path: Path,
) -> None:
    async with journaled(tmp_path) as (runtime, host):
        sessions = [
            (
                await runtime.create_session(
                    "scripted", options=stream(1500, f"s{i}"), subscriber=host
                )
            ).session_id
            for i in range(24)
        ]

        async def go(session_id: str) -> None:
            started = await runtime.start_run(RunStartParams(session_id, RunInput("x")))
            await runtime.runs[started.run_id].done.wait()

        async with anyio.create_task_group() as tg:
            for session_id in sessions:
                tg.start_soon(go, session_id)
        await runtime.flush()
        for session_id in sessions:
            history = await read_all(runtime, session_id)
            assert [e["sequence"] for e in history] == list(range(1, 1503))
            assert history == host.of(session_id)


# --------------------------------------------------------------------- paging over blocks


@pytest.fixture(scope="module")
def stored_log() -> Iterator[tuple[Reader, list[bytes]]]:
    """One session of 3,000 events written in batches of irregular sizes (so blocks start
    and end everywhere, some cut by the count limit, some by the byte limit)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "journal.sqlite3")
        conn = open_journal_db(path)
        conn.execute(
            "INSERT INTO sessions (session_id, provider_id, provider_version, options, "
            "created_at, updated_at, state) VALUES ('ses_p', 'scripted', '1', '{}', 't', 't', "
            "'closed')"
        )
        bodies = [
            msgspec.json.encode(
                {"sequence": i, "payload": {"type": "text.delta", "text": "y" * (i % 97)}}
            )
            for i in range(1, 3001)
        ]
        bodies[1500] = msgspec.json.encode({"sequence": 1501, "big": os.urandom(200_000).hex()})
        sizes = [1, 2, 700, 3, 513, 64, 1, 999, 300, 417]
        start = 0
        for size in sizes:
            conn.execute("BEGIN")
            insert_events(conn, 1, start + 1, bytes([1] * size), bodies[start : start + size])
            conn.execute("COMMIT")
            start += size
        assert start == 3000
        reader = Reader(connect(path, busy_timeout=5))
        yield reader, bodies
        reader.close()
        conn.close()


@given(
    st.integers(min_value=0, max_value=3000),
    st.integers(min_value=1, max_value=3001),
    st.lists(st.integers(min_value=1, max_value=1000), min_size=1, max_size=6),
)
@settings(max_examples=60, deadline=None)
def test_reading_pages_of_stored_blocks_gives_back_the_log(
    stored_log: tuple[Reader, list[bytes]], after: int, before: int, limits: list[int]
) -> None:
    reader, bodies = stored_log
    last = len(bodies)
    sizes = itertools.cycle(limits)
    first_after, first_before = after, before
    forward: list[bytes] = []
    while True:
        lo, hi, more = page_range(last, after, None, next(sizes))
        forward += reader.events("ses_p", lo, hi)
        if not more:
            break
        after = hi
    assert forward == bodies[first_after:]
    backward: list[bytes] = []
    while True:
        lo, hi, more = page_range(last, None, before, next(sizes))
        backward = reader.events("ses_p", lo, hi) + backward
        if not more:
            break
        before = lo
    assert backward == bodies[: min(first_before - 1, last)]


# --------------------------------------------------------------------- recovery


async def test_a_dead_owners_sessions_are_closed_as_crashed_when_the_journal_opens(
    tmp_path: Path,
) -> None:
    async with journaled(tmp_path) as (runtime, _host):
        info = await runtime.create_session(
            "scripted",
            options={"script": {"steps": [{"type": "waitForInterrupt"}]}},
            subscriber=_host,
        )
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
        await runtime.flush()
        # a crash: this process's rows stay as they are, its lock file disappears
        conn = sqlite3.connect(tmp_path / "journal.sqlite3")
        snapshot = conn.execute("SELECT owner FROM sessions").fetchall()
        conn.close()
    conn = sqlite3.connect(tmp_path / "journal.sqlite3")
    conn.execute("UPDATE sessions SET owner = ?, state = 'active'", snapshot[0])
    conn.execute("UPDATE runs SET ended_seq = NULL, state = 'running'")
    last = conn.execute("SELECT max(last_seq) FROM event_blocks").fetchone()[0]
    conn.execute("DELETE FROM event_blocks WHERE first_seq > 1")  # keep only run.started
    conn.commit()
    conn.close()
    journal = Journal.open(str(tmp_path))
    try:
        assert journal.recovered == [info.session_id]
    finally:
        await journal.aclose()
    async with journaled(tmp_path) as (runtime, _host):
        history = await read_all(runtime, info.session_id)
        assert [e["payload"]["type"] for e in history] == [
            "run.started",
            "run.failed",
            "session.closed",
        ]
        assert history[1]["runId"] == started.run_id
        assert history[1]["payload"]["error"]["code"] == "bridge_crashed"
        assert last > 1


# --------------------------------------------------------------------- retention


def test_retention_deletes_only_closed_sessions(tmp_path: Path) -> None:
    conn = open_journal_db(str(tmp_path / "journal.sqlite3"))
    for name, state, updated, size in (
        ("a", "closed", "2020-01-01T00:00:00.000Z", 500),
        ("b", "closed", "2026-01-01T00:00:00.000Z", 500),
        ("c", "active", "2019-01-01T00:00:00.000Z", 5000),
    ):
        conn.execute(
            "INSERT INTO sessions (session_id, provider_id, provider_version, options, "
            "created_at, updated_at, state, bytes) VALUES (?, 'p', '1', '{}', ?, ?, ?, ?)",
            (name, updated, updated, state, size),
        )
    now = 1_767_225_600.0  # 2026-01-01
    assert apply_retention(conn, Retention(max_age_days=365), now=now) == ["a"]
    assert apply_retention(conn, Retention(max_bytes=4000), now=now) == ["b"]
    left = [row[0] for row in conn.execute("SELECT session_id FROM sessions")]
    assert left == ["c"]
    assert apply_retention(conn, Retention()) == []
    conn.close()


# --------------------------------------------------------------------- failure


async def test_a_journal_whose_commits_fail_holds_the_stream_refuses_work_and_resumes(
    tmp_path: Path,
) -> None:
    async with journaled(tmp_path) as (runtime, host):
        info = await runtime.create_session("scripted", options=stream(10), subscriber=host)
        journal = runtime.history
        assert isinstance(journal, Journal)
        writer = journal._writer
        assert isinstance(writer, Writer)
        real = writer._conn

        class Full:
            """The writer's connection on a full disk, until ``failing`` is cleared."""

            failing = True

            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def execute(self, sql: str, *args: Any) -> Any:
                if self.failing and sql.startswith("BEGIN"):
                    raise sqlite3.OperationalError("database or disk is full")
                return real.execute(sql, *args)

        full = Full()
        writer._conn = full  # type: ignore[assignment]
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.start_run, RunStartParams(info.session_id, RunInput("x")))
            with anyio.fail_after(10):
                while journal.health != "failing":
                    await anyio.sleep(0.01)
            assert journal.fault == "disk_full" and journal.durable
            await anyio.sleep(0.3)
            assert host.of(info.session_id) == []  # nothing unjournaled reaches the host
            with pytest.raises(BridgeError) as err:
                await runtime.create_session("scripted", options=stream(1))
            assert err.value.error_code == "journal_failing" and err.value.info.retryable
            full.failing = False
        run = next(iter(runtime.runs.values()))
        await run.done.wait()
        await runtime.flush()
        assert journal.health == "ok"
        kinds = [e["payload"]["type"] for e in host.of(info.session_id)]
        assert kinds == ["run.started"] + ["text.delta"] * 10 + ["run.completed"]
        raw = await runtime.read_events(EventsReadParams(info.session_id))
        page = msgspec.json.decode(bytes(raw))
        assert [e["sequence"] for e in page["events"]] == list(range(1, 13))


async def test_a_bug_in_the_commit_path_fails_closed_instead_of_retrying_forever(
    tmp_path: Path,
) -> None:
    """An operation the writer cannot apply because of a bug (here a value SQLite cannot
    bind: ``sqlite3.ProgrammingError``, raised by the real writer thread and the real
    SQLite) is not taken for a storage fault: no retry, the writer stops, nothing more is
    written by this process, the journal is ``broken`` and new work and waits answer the
    classified ``internal`` error; reads of what was committed go on, and the file is
    sound for the next process."""
    from agent_bridge.journal.errors import classify_commit
    from agent_bridge.journal.writer import OP_UPDATE

    assert classify_commit(sqlite3.OperationalError("database or disk is full")) == "disk_full"
    assert classify_commit(sqlite3.ProgrammingError("Error binding parameter 1")) == "internal"
    assert classify_commit(sqlite3.IntegrityError("UNIQUE constraint failed")) == "internal"
    assert classify_commit(TypeError("a bug")) == "internal"
    async with journaled(tmp_path) as (runtime, host):
        info = await runtime.create_session("scripted", options=stream(3), subscriber=host)
        journal = runtime.history
        assert isinstance(journal, Journal)
        before = await read_all(runtime, info.session_id)
        journal._submit((OP_UPDATE, info.session_id, {"title": object()}))  # the "bug"
        with pytest.raises(BridgeError) as err:
            await runtime.durable()
        assert err.value.error_code == "internal" and not err.value.info.retryable
        assert journal.health == "broken" and journal.fault == "internal"
        with anyio.fail_after(10):
            await anyio.to_thread.run_sync(journal._writer.join)  # stopped, not retrying
        assert runtime.journal_status().state == "broken"
        with pytest.raises(BridgeError) as err:
            await runtime.create_session("scripted", options=stream(1))
        assert err.value.error_code == "internal"
        with pytest.raises(BridgeError) as err:
            await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
        assert err.value.error_code == "internal"
        size = os.path.getsize(journal.path + "-wal")
        journal.update_session(info.session_id, title="never written")
        delivered = len(host.events)
        runtime.sessions[info.session_id].stream.publish(None, SessionResumed())
        await anyio.sleep(0.1)
        assert len(host.events) == delivered  # what cannot be recorded is never sent
        assert await read_all(runtime, info.session_id) == before  # reads go on
        assert os.path.getsize(journal.path + "-wal") == size
    async with journaled(tmp_path) as (runtime, host):
        record = await runtime.history.load_session(info.session_id)
        assert record is not None and record.title != "never written"
        assert runtime.history.health == "ok"


# --------------------------------------------------------------------- sealing


async def test_interleaved_sessions_are_handed_to_the_writer_as_one_operation(
    tmp_path: Path,
) -> None:
    """Delivery counts committed events across sessions in append order, so the batches
    sealed together must commit together: a writer that took session A's batch alone
    would make B's event (appended between A's two) look committed."""
    journal = Journal.open(str(tmp_path))
    try:
        queue = journal._queue  # the writer is not started: the queue keeps what is sealed
        before = len(queue)
        journal.append("sess-a", 1, 0, b"{}", 0)
        journal.append("sess-b", 1, 0, b"{}", 0)
        journal.append("sess-a", 2, 0, b"{}", 0)
        ticket_before = journal._ops
        journal.mark()
        sealed = list(queue)[before:]
        assert len(sealed) == 1, sealed
        batches = sealed[0][1]
        assert sorted((b.session_id, len(b.bodies)) for b in batches) == [
            ("sess-a", 2),
            ("sess-b", 1),
        ]
        assert journal._ops == ticket_before + 1
    finally:
        await journal.aclose()


# --------------------------------------------------------------------- closing


async def test_closing_the_journal_folds_the_write_ahead_log_into_the_file(
    tmp_path: Path,
) -> None:
    """Every connection the journal opened is closed by ``aclose``, so the last one folds
    the WAL into the journal file: a clean exit leaves one self-contained file (the
    writer's connection used to stay open until the interpreter collected it, and the WAL
    was left behind on about one exit in four)."""
    async with journaled(tmp_path) as (runtime, host):
        info = await runtime.create_session("scripted", options=stream(3000), subscriber=host)
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
        await runtime.runs[started.run_id].done.wait()
        await runtime.flush()
        last = (await read_all(runtime, info.session_id))[-1]["sequence"]
        assert (tmp_path / "journal.sqlite3-wal").exists()  # the commits went to the WAL
    assert not (tmp_path / "journal.sqlite3-wal").exists()
    assert not (tmp_path / "journal.sqlite3-shm").exists()
    conn = sqlite3.connect(tmp_path / "journal.sqlite3")
    try:
        (stored,) = conn.execute("SELECT max(last_seq) FROM event_blocks").fetchone()
    finally:
        conn.close()
    assert stored >= last  # (closing the runtime closes the session: one event more)
