"""One contract, two journals: every test here runs against the SQLite journal (a state
directory), committed by its writer thread and by its writer process
(``--journal-writer process``, ``sqlite-process``: the state directory on a small tmpfs
mounted for the test, whose storage fault is the real full disk), and the PostgreSQL
journal (a database on a throwaway cluster, ``tests/pgcluster.py``).  Commit before any
host sees an event, gapless per-session
sequences, receipts, retention, raw provenance, images, crash recovery of a dead owner
(a real child process SIGKILLed), and fail closed on a storage fault: held, reported as
``failing``, resumed without a restart, nothing a host saw lost.  For PostgreSQL the
storage fault is the real one: the server is stopped mid-stream and started again."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.errors import BridgeError
from agent_bridge.journal import History, Retention, open_history
from agent_bridge.journal.blocks import TYPE_CODES
from agent_bridge.journal.journal import Journal
from agent_bridge.journal.writer import Writer
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Interaction, Released, Runtime
from agent_bridge.wire.events import TextDelta
from agent_bridge.wire.interactions import ApprovalAnswer
from agent_bridge.wire.methods import EventsReadParams, RetryOnLimit, RunInput, RunStartParams
from agent_bridge.wire.providers import ProviderDescriptor, RecoveryCapability
from agent_bridge.wire.settings import SessionConfigureParams

Opener = Callable[..., History]


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


class Backend:
    """Where one test's journal lives, and how to open it (again)."""

    def __init__(self, kind: str, location: str, cluster: Any = None) -> None:
        self.kind = kind
        self.location = location
        self.cluster = cluster

    def open(self, **kw: Any) -> History:
        if self.kind == "postgresql":
            return open_history(None, journal=self.location, **kw)
        if self.kind == "sqlite-process":
            return open_history(self.location, writer="process", **kw)
        return open_history(self.location, writer="thread", **kw)

    def cli_args(self) -> list[str]:
        if self.kind == "postgresql":
            return ["--journal", self.location]
        return ["--state-dir", self.location]


@pytest.fixture(params=["sqlite", "sqlite-process", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "postgresql":
        cluster = request.getfixturevalue("pg_cluster")
        yield Backend("postgresql", cluster.new_database(), cluster)
    elif request.param == "sqlite-process":
        from hardening.test_hard_storage import small_fs

        with small_fs("64m") as mnt:
            yield Backend("sqlite-process", str(mnt / "state"), mnt)
    else:
        yield Backend("sqlite", str(tmp_path / "state"))


@asynccontextmanager
async def journaled(backend: Backend, **kw: Any) -> AsyncIterator[tuple[Runtime, Host]]:
    host = Host()
    registry = ProviderRegistry([ScriptedProvider()], load_entry_points=False)
    async with Runtime(registry, history=backend.open(**kw)) as runtime:
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


async def run_to_end(runtime: Runtime, session_id: str) -> str:
    started = await runtime.start_run(RunStartParams(session_id, RunInput("x")))
    await runtime.runs[started.run_id].done.wait()
    return started.run_id


# --------------------------------------------------------------------- streaming


async def test_concurrent_sessions_are_gapless_and_equal_to_what_the_host_saw(
    backend: Backend,
) -> None:
    async with journaled(backend) as (runtime, host):
        sessions = [
            (
                await runtime.create_session(
                    "scripted", options=stream(700, f"s{i}"), subscriber=host
                )
            ).session_id
            for i in range(8)
        ]
        async with anyio.create_task_group() as tg:
            for session_id in sessions:
                tg.start_soon(run_to_end, runtime, session_id)
        await runtime.flush()
        seen = {}
        for session_id in sessions:
            history = await read_all(runtime, session_id)
            assert [e["sequence"] for e in history] == list(range(1, 703))
            assert history == host.of(session_id)
            seen[session_id] = history
    # and a later bridge reads the same history (and the session.closed of the first's exit)
    async with journaled(backend) as (runtime, _host):
        for session_id in sessions:
            again = await read_all(runtime, session_id)
            assert again[:702] == seen[session_id]
            assert [e["payload"]["type"] for e in again[702:]] == ["session.closed"]
        listed, cursor = await runtime.history.list_sessions(None, None, None, 5)
        assert len(listed) == 5 and cursor is not None
        rest, end = await runtime.history.list_sessions(None, None, cursor, 5)
        assert end is None
        assert {r.session_id for r in listed + rest} == set(sessions)
        assert all(r.last_sequence == 703 for r in listed + rest)
        # the filters, one statement written for both backends (journal/queries.py)
        scripted, _ = await runtime.history.list_sessions("scripted", None, None, 20)
        assert {r.session_id for r in scripted} == set(sessions)
        assert await runtime.history.list_sessions("codex", None, None, 20) == ([], None)
        assert await runtime.history.list_sessions(None, "/nowhere", None, 20) == ([], None)


async def test_an_event_reaches_the_host_only_once_committed(backend: Backend) -> None:
    async with journaled(backend) as (runtime, host):
        info = await runtime.create_session("scripted", options=stream(50), subscriber=host)
        history = runtime.history
        seen: list[tuple[int, int]] = []
        real = host.publish

        def publish(events: Released) -> bool:
            seen.append((len(host.events) + len(events.bodies), history.committed))
            return real(events)

        host.publish = publish  # type: ignore[method-assign]
        await run_to_end(runtime, info.session_id)
        await runtime.flush()
        assert seen and all(delivered <= committed for delivered, committed in seen)


async def test_events_that_would_leave_a_gap_are_never_stored_or_acknowledged(
    backend: Backend,
) -> None:
    """Gapless per-session sequences are a contract, so a batch that does not continue
    its session's stored sequence (here one skipping a sequence, handed to the journal
    as the stream hands its events) is a broken invariant, not a storage fault: its commit
    fails and is not retried, nothing of it is stored, waits answer ``internal`` (the
    journal is ``broken``), reads of what was committed go on, and the next bridge finds
    the history as it was, still gapless."""
    async with journaled(backend) as (runtime, host):
        info = await runtime.create_session("scripted", options=stream(3), subscriber=host)
        await run_to_end(runtime, info.session_id)
        await runtime.flush()
        before = await read_all(runtime, info.session_id)
        last = before[-1]["sequence"]
        history = runtime.history
        stray = {**before[-1], "sequence": last + 2, "eventId": "evt_gap"}
        history.append(
            info.session_id, last + 2, TYPE_CODES[TextDelta], msgspec.json.encode(stray), 0
        )
        with pytest.raises(BridgeError) as err:
            await runtime.durable()
        assert err.value.error_code == "internal" and not err.value.info.retryable
        assert history.health == "broken"
        assert await read_all(runtime, info.session_id) == before
    async with journaled(backend) as (runtime, _host):
        again = await read_all(runtime, info.session_id)
        assert again[: len(before)] == before
        assert [e["sequence"] for e in again] == list(range(1, len(again) + 1))
        assert all(e["eventId"] != "evt_gap" for e in again)


# --------------------------------------------------------------------- records


async def test_receipts_raw_records_and_images_round_trip(backend: Backend) -> None:
    history = backend.open()
    await history.start(lambda: None)
    try:
        from agent_bridge.journal import SessionRecord

        history.add_session(
            SessionRecord("ses_c", "scripted", "1", "/w", "t", "2026-01-01", "2026-01-01")
        )
        history.add_raw("ses_c", 1, b'{"line": 1}')
        history.append("ses_c", 1, 1, b'{"sequence":1}', 1)
        history.append("ses_c", 2, 1, b'{"sequence":2}', 1)
        history.add_raw("ses_c", 3, b"not json \xff")
        history.append_many("ses_c", 3, b"\x01\x01", [b'{"sequence":3}', b'{"sequence":4}'], 3)
        history.save_receipt("cmd1", "ses_c", b"p1", b"r1", "2026-01-01")
        history.save_receipt("cmd1", "ses_c", b"p2", b"r2", "2026-01-01")
        history.add_blob("ses_c", "ab" * 32, b"\x89PNG...")
        await history.committed_through(history.mark())
        assert history.committed == 4
        assert await history.find_receipt("cmd1") == (b"p1", b"r1")
        assert await history.find_receipt("cmd2") is None
        assert await history.read_events("ses_c", 2, 3) == [b'{"sequence":2}', b'{"sequence":3}']
        raws = await history.read_raw("ses_c", 1, 4)
        assert [(r.raw_id, r.spans) for r in raws] == [(1, ((1, 2),)), (3, ((3, 4),))]
        assert raws[1].text is not None and raws[1].text.startswith("not json")
        assert await history.read_blob("ab" * 32) == b"\x89PNG..."
        record = await history.load_session("ses_c")
        assert record is not None and record.last_sequence == 4 and record.workspace == "/w"
    finally:
        await history.aclose()


async def test_retention_deletes_old_closed_sessions_and_keeps_open_ones(backend: Backend) -> None:
    async with journaled(backend) as (runtime, host):
        old = (
            await runtime.create_session("scripted", options=stream(3), subscriber=host)
        ).session_id
        keep = (
            await runtime.create_session("scripted", options=stream(3), subscriber=host)
        ).session_id
        await run_to_end(runtime, old)
        await runtime.close_session(old)
        await runtime.flush()
        runtime.history.update_session(old, updated_at="2020-01-01T00:00:00.000Z")
        runtime.history.update_session(keep, updated_at="2020-01-01T00:00:00.000Z")
        await runtime.flush()
    async with journaled(backend, retention=Retention(max_age_days=30)) as (runtime, _host):
        assert await runtime.history.load_session(old) is None
        assert await runtime.history.read_events(old, 1, 100) == []
        kept = await runtime.history.load_session(keep)
        assert kept is not None  # it was not closed (its owner ended: closed, then kept)


# --------------------------------------------------------------------- recovery

_CHILD = textwrap.dedent(
    """
    import sys, anyio
    from agent_bridge.adapters.scripted import ScriptedProvider
    from agent_bridge.journal import open_history
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.runtime import Runtime
    from agent_bridge.wire.methods import RunInput, RunStartParams

    async def main():
        kind, where = sys.argv[1], sys.argv[2]
        history = (open_history(None, journal=where) if kind == "postgresql"
                   else open_history(where, writer="process") if kind == "sqlite-process"
                   else open_history(where))
        registry = ProviderRegistry([ScriptedProvider()], load_entry_points=False)
        async with Runtime(registry, history=history) as runtime:
            steps = [{"type": "stream", "count": 40, "text": "x"}, {"type": "waitForInterrupt"}]
            info = await runtime.create_session("scripted", options={"script": {"steps": steps}})
            await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
            await runtime.flush()
            print(info.session_id, flush=True)
            await anyio.sleep(3600)

    anyio.run(main)
    """
)


async def test_a_sigkilled_owners_session_is_closed_as_crashed_by_the_next_bridge(
    backend: Backend,
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, backend.kind, backend.location],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        with anyio.fail_after(60):
            line = await anyio.to_thread.run_sync(child.stdout.readline)
        session_id = line.strip()
        assert session_id.startswith("ses_")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    history = backend.open()
    try:
        assert isinstance(history, Journal)
        assert history.recovered == [session_id]
    finally:
        await history.aclose()
    async with journaled(backend) as (runtime, _host):
        events = await read_all(runtime, session_id)
        kinds = [e["payload"]["type"] for e in events]
        assert kinds == ["run.started"] + ["text.delta"] * 40 + ["run.failed", "session.closed"]
        assert events[-2]["payload"]["error"]["code"] == "bridge_crashed"
        assert [e["sequence"] for e in events] == list(range(1, 44))
        status, record = await runtime.history.claim(session_id)
        assert status == "claimed" and record is not None


class PlainScripted(ScriptedProvider):
    """The scripted provider without ``recovery.resumeTurn`` (as every CLI agent)."""

    id = "scripted-plain"

    def _build_descriptor(self) -> ProviderDescriptor:
        built = super()._build_descriptor()
        recovery = RecoveryCapability(resume=True)
        capabilities = msgspec.structs.replace(built.capabilities, recovery=recovery)
        return msgspec.structs.replace(built, capabilities=capabilities)


_ASKING_CHILD = textwrap.dedent(
    """
    import sys, anyio
    sys.path.insert(0, sys.argv[3])
    from test_journal_contract import PlainScripted
    from agent_bridge.adapters.scripted import ScriptedProvider
    from agent_bridge.journal import open_history
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.runtime import Runtime
    from agent_bridge.wire.methods import RunInput, RunStartParams

    STEPS = [
        {"type": "text", "text": "before"},
        {"type": "approval", "title": "go", "onAllow": [{"type": "text", "text": "after"}]},
    ]

    async def main():
        kind, where = sys.argv[1], sys.argv[2]
        history = (open_history(None, journal=where) if kind == "postgresql"
                   else open_history(where, writer="process") if kind == "sqlite-process"
                   else open_history(where))
        registry = ProviderRegistry([ScriptedProvider(), PlainScripted()], load_entry_points=False)
        async with Runtime(registry, history=history, hold_unanswerable=True) as runtime:
            ids = []
            for provider in ("scripted", "scripted-plain"):
                info = await runtime.create_session(provider, options={"script": {"steps": STEPS}})
                await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
                ids.append(info.session_id)
            while len(runtime.services.interactions) < 2:
                await anyio.sleep(0.01)
            await runtime.flush()
            print(*ids, flush=True)
            await anyio.sleep(3600)

    anyio.run(main)
    """
)


async def test_a_run_waiting_on_an_interaction_is_kept_open_only_for_a_provider_that_continues_it(
    backend: Backend,
) -> None:
    """Crash recovery on every backend: the run of a session whose provider has
    ``recovery.resumeTurn`` that waits on an interaction stays open (only
    ``session.closed`` is appended) and the bridge that reopens the session continues
    it under its id, the interaction answerable under its id; the same run of a provider
    without it is ended (interaction cancelled, run.failed bridge_crashed)."""
    here = str(Path(__file__).parent)
    child = subprocess.Popen(
        [sys.executable, "-c", _ASKING_CHILD, backend.kind, backend.location, here],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        with anyio.fail_after(60):
            line = await anyio.to_thread.run_sync(child.stdout.readline)
        turns, plain = line.split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    registry = ProviderRegistry([ScriptedProvider(), PlainScripted()], load_entry_points=False)
    async with Runtime(registry, history=backend.open()) as runtime:
        kinds = [e["payload"]["type"] for e in await read_all(runtime, plain)]
        assert kinds == [
            "run.started",
            "text.delta",
            "interaction.requested",
            "interaction.settled",
            "run.failed",
            "session.closed",
        ]
        cut = await read_all(runtime, turns)
        assert [e["payload"]["type"] for e in cut] == [
            "run.started",
            "text.delta",
            "interaction.requested",
            "session.closed",
        ]
        run_id = cut[0]["runId"]
        interaction = cut[2]["payload"]["interactionId"]
        assert await runtime.history.interaction_state(interaction) == ("pending", "closed")
        await runtime.reopen_session(turns)
        assert runtime.respond(interaction, ApprovalAnswer("allow")) == "applied"
        await runtime.runs[run_id].done.wait()
        await runtime.flush()
        events = await read_all(runtime, turns)
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
        assert [e["payload"]["type"] for e in events[len(cut) :]] == [
            "session.resumed",
            "interaction.settled",
            "text.delta",
            "run.completed",
        ]
        assert {e["runId"] for e in events[len(cut) + 1 :]} == {run_id}
        texts = [e["payload"]["text"] for e in events if e["payload"]["type"] == "text.delta"]
        assert texts == ["before", "after"]
        assert await runtime.history.open_turns(turns) == []


async def test_a_live_owners_session_is_in_use_for_another_bridge(backend: Backend) -> None:
    async with journaled(backend) as (runtime, host):
        info = await runtime.create_session("scripted", options=stream(2), subscriber=host)
        await runtime.flush()
        other = backend.open()
        try:
            assert await other.claim(info.session_id) == ("in_use", None)
            assert await other.delete(info.session_id) == "in_use"
            assert await other.claim("ses_missing") == ("not_found", None)
        finally:
            await other.aclose()


# --------------------------------------------------------------------- session policy


async def test_a_sessions_policy_survives_a_restart(backend: Backend) -> None:
    """``retryOnLimit`` and the model and mode ``session/configure`` chose are kept with
    the session: reopened in a later bridge, its provider is switched to them again and
    a run that hits a near limit is retried.  A policy never set stays unset."""
    limit = {
        "type": "fail",
        "code": "provider_rate_limited",
        "details": {"cause": "rate_limited", "retryAfterSeconds": "0"},
    }
    choice = {"available": [{"id": "small"}, {"id": "large"}], "current": "small"}
    modes = {"available": [{"id": "ask"}, {"id": "plan"}], "current": "ask"}
    script = {
        "settings": {"model": choice, "mode": modes},
        "runs": [{"steps": [limit]}, {"steps": [{"type": "text", "text": "again"}]}],
    }
    async with journaled(backend) as (runtime, host):
        info = await runtime.create_session(
            "scripted",
            options={"script": script},
            subscriber=host,
            retry_on_limit=RetryOnLimit(max_wait_seconds=5),
        )
        session_id = info.session_id
        plain = await runtime.create_session("scripted", options={"script": script})
        await runtime.configure_session(SessionConfigureParams(session_id, model="large"))
        await runtime.configure_session(SessionConfigureParams(session_id, mode="plan"))
    async with journaled(backend) as (runtime, host):
        await runtime.reopen_session(session_id, subscriber=host)
        settings = await runtime.session_settings(session_id)
        assert settings.model is not None and settings.model.current == "large"
        assert settings.mode is not None and settings.mode.current == "plan"
        run_id = await run_to_end(runtime, session_id)
        events = [e for e in await read_all(runtime, session_id) if e.get("runId") == run_id]
        assert [e["payload"]["type"] for e in events][-1] == "run.completed", events
        assert [e["payload"]["code"] for e in events if e["payload"]["type"] == "diagnostic"] == [
            "limit_retry_waiting",
            "limit_retry_started",
        ]
        # one never given a policy: the provider's own settings, and no retry
        await runtime.reopen_session(plain.session_id)
        settings = await runtime.session_settings(plain.session_id)
        assert settings.model is not None and settings.model.current == "small"
        run_id = await run_to_end(runtime, plain.session_id)
        events = await read_all(runtime, plain.session_id)
        assert [e["payload"]["type"] for e in events if e.get("runId") == run_id][-1] == (
            "run.failed"
        )
        stored = await runtime.history.load_session(session_id)
        assert stored is not None and stored.policy == {
            "retryOnLimit": {"maxWaitSeconds": 5},
            "model": "large",
            "mode": "plan",
            "resumesTurns": True,  # the scripted provider continues cut-off turns
        }


# --------------------------------------------------------------------- storage faults


class _FullDisk:
    """The SQLite writer's connection on a full disk until :meth:`heal`."""

    def __init__(self, journal: Journal) -> None:
        writer = journal._writer
        assert isinstance(writer, Writer)
        self.real = writer._conn
        self.failing = True
        writer._conn = self  # type: ignore[assignment]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def execute(self, sql: str, *args: Any) -> Any:
        if self.failing and sql.startswith("BEGIN"):
            raise sqlite3.OperationalError("database or disk is full")
        return self.real.execute(sql, *args)

    def heal(self) -> None:
        self.failing = False


async def test_a_storage_fault_mid_stream_holds_reports_and_resumes_losing_nothing(
    backend: Backend,
) -> None:
    async with journaled(backend) as (runtime, host):
        steps = [{"type": "stream", "count": 200, "text": "a"}, {"type": "waitForInterrupt"}]
        info = await runtime.create_session(
            "scripted", options={"script": {"steps": steps}}, subscriber=host
        )
        journal = runtime.history
        assert isinstance(journal, Journal)
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
        with anyio.fail_after(30):
            while len(host.of(info.session_id)) < 201:
                await anyio.sleep(0.01)
        # the storage goes away while the run is still going
        if backend.kind == "postgresql":
            await anyio.to_thread.run_sync(backend.cluster.stop, "fast")
            heal: Callable[[], None] = backend.cluster.start
        elif backend.kind == "sqlite-process":
            from hardening.test_hard_storage import fill

            heal = fill(backend.cluster).unlink  # the real disk fills under the child
        else:
            heal = _FullDisk(journal).heal
        try:
            runtime.interrupt_run(started.run_id)  # its end is recorded while failing
            with anyio.fail_after(30):
                while journal.health != "failing":
                    await anyio.sleep(0.01)
            assert journal.fault in ("io_error", "disk_full") and journal.durable
            await anyio.sleep(0.5)
            assert len(host.of(info.session_id)) == 201  # nothing unjournaled reaches the host
            with pytest.raises(BridgeError) as err:
                await runtime.create_session("scripted", options=stream(1))
            assert err.value.error_code == "journal_failing" and err.value.info.retryable
        finally:
            await anyio.to_thread.run_sync(heal)
        await runtime.runs[started.run_id].done.wait()
        await runtime.flush()
        assert str(journal.health) == "ok"  # (mypy narrowed it to "failing" above)
        delivered = host.of(info.session_id)
        kinds = [e["payload"]["type"] for e in delivered]
        assert kinds == ["run.started"] + ["text.delta"] * 200 + ["run.interrupted"]
        stored = await read_all(runtime, info.session_id)
        assert stored == delivered
        assert [e["sequence"] for e in stored] == list(range(1, 203))
