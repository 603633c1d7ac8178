"""Provider sessions bound to bridge sessions (``provider/sessions/continue``): one bridge
session per provider session, in memory and in the journal, also when two journals (two
bridge processes) on one state directory bind at once, and a binding goes with its
session."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.errors import BridgeError
from agent_bridge.journal import History, MemoryHistory
from agent_bridge.journal.journal import Journal
from agent_bridge.journal.schema import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    open_journal_db,
)
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime
from agent_bridge.runtime.native import native_session_id
from agent_bridge.wire.methods import EventsReadParams


def new_history(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> History:
    if kind == "memory":
        return MemoryHistory()
    if kind == "postgresql":
        from agent_bridge.journal.postgres import open_pg_journal

        return open_pg_journal(request.getfixturevalue("pg_url"), lease=3600, node="n")
    return Journal.open(str(tmp_path))


@asynccontextmanager
async def history_of(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[History]:
    history = new_history(kind, tmp_path, request)
    await history.start(lambda: None)
    try:
        yield history
    finally:
        await history.aclose()


@pytest.mark.parametrize("kind", ["memory", "journal", "postgresql"])
async def test_the_first_binding_wins_and_stays(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with history_of(kind, tmp_path, request) as history:
        p, q = f"p-{uuid.uuid4()}", f"q-{uuid.uuid4()}"  # a database may outlive a test
        assert await history.native_bindings(p, ["a", "b"]) == {}
        assert await history.bind_native(p, "a", "ses_1") == "ses_1"
        assert await history.bind_native(p, "a", "ses_2") == "ses_1"
        assert await history.bind_native(q, "a", "ses_3") == "ses_3"  # per provider
        assert await history.native_bindings(p, ["a", "b"]) == {"a": "ses_1"}
        await history.unbind_native(p, "a", "ses_2")  # not its session: kept
        assert await history.native_bindings(p, ["a"]) == {"a": "ses_1"}
        await history.unbind_native(p, "a", "ses_1")
        assert await history.native_bindings(p, ["a"]) == {}
        assert await history.bind_native(p, "a", "ses_4") == "ses_4"
        many = [f"r{i}" for i in range(1200)]  # more than one query's worth
        for ref in many[::100]:
            await history.bind_native(p, ref, "s" + ref)
        assert await history.native_bindings(p, many) == {r: "s" + r for r in many[::100]}


async def test_two_journals_binding_at_once_agree(tmp_path: Path) -> None:
    first = Journal.open(str(tmp_path))
    second = Journal.open(str(tmp_path))
    await first.start(lambda: None)
    await second.start(lambda: None)
    try:
        results: dict[str, str] = {}

        async def bind(journal: Journal, session_id: str) -> None:
            results[session_id] = await journal.bind_native("p", "ref", session_id)

        async with anyio.create_task_group() as tg:
            tg.start_soon(bind, first, "ses_a")
            tg.start_soon(bind, second, "ses_b")
        assert len(set(results.values())) == 1
        assert set(results.values()) <= {"ses_a", "ses_b"}
    finally:
        await first.aclose()
        await second.aclose()


@pytest.mark.parametrize("kind", ["memory", "journal", "postgresql"])
async def test_a_binding_goes_with_its_session(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    history = new_history(kind, tmp_path, request)
    async with Runtime(ProviderRegistry([ScriptedProvider()]), history=history) as runtime:
        info = await runtime.create_session("scripted")
        other = await runtime.create_session("scripted")
        await history.bind_native("p", "ref", info.session_id)
        await history.bind_native("p", "kept", other.session_id)
        assert await runtime.bound_sessions("p", ["ref"]) == {"ref": info.session_id}
        await runtime.close_session(info.session_id)
        await runtime.delete_session(info.session_id)
        assert await runtime.bound_sessions("p", ["ref", "kept"]) == {"kept": other.session_id}


def test_a_version_4_journal_gains_the_bindings_table(tmp_path: Path) -> None:
    """A journal a version-4 bridge wrote (its schema made by migrations 1..4, not a
    later file with tables dropped: later versions add more than the bindings) is
    brought to the current version, bindings table included."""
    path = tmp_path / "j.sqlite3"
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    for step in range(1, 5):
        for statement in MIGRATIONS[step]:
            conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 4")
    conn.close()
    conn = open_journal_db(str(path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.execute("INSERT INTO native_bindings VALUES ('p', 'r', 's')")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO native_bindings VALUES ('p', 'r', 't')")
    conn.close()


REF = (
    '[{"type":"run.started","input":"remember the word pelican"},'
    '{"type":"text.delta","text":"Noted: pelican."},{"type":"something.new"}]'
)


@pytest.mark.parametrize("kind", ["memory", "journal"])
async def test_continuing_binds_once_and_imports_with_provenance(kind: str, tmp_path: Path) -> None:
    history: History = MemoryHistory() if kind == "memory" else Journal.open(str(tmp_path))
    async with Runtime(ProviderRegistry([ScriptedProvider()]), history=history) as runtime:
        results = []

        async def go() -> None:
            results.append(await runtime.continue_native("scripted", REF))

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(go)
        assert sorted(r.bound for r in results) == ["created"] + ["existing"] * 4
        assert len({r.session.session_id for r in results}) == 1
        (created,) = [r for r in results if r.bound == "created"]
        assert created.imported == 3
        session_id = created.session.session_id
        page = await runtime.read_events(EventsReadParams(session_id, after=0, view="raw"))
        read = msgspec.json.decode(page)
        payloads = [e["payload"] for e in read["events"]]
        assert payloads[:3] == [
            {"type": "run.started", "input": "remember the word pelican"},
            {"type": "text.delta", "text": "Noted: pelican."},
            {
                "type": "diagnostic",
                "level": "info",
                "code": "unknown_record",
                "message": "a record of a type the adapter does not know",
            },
        ]
        assert payloads[3] == {
            "type": "session.imported",
            "provider": "scripted",
            "sessionRef": REF,
            "records": 3,
            "fromSequence": 1,
            "toSequence": 3,
            "nextCursor": "r3",
        }
        assert [r["record"] for r in read["raw"]] == msgspec.json.decode(REF)
        assert await runtime.bound_sessions("scripted", [REF]) == {REF: session_id}
        # closed, it is reopened by the next continue: still the one session
        await runtime.close_session(session_id)
        again = await runtime.continue_native("scripted", REF)
        assert (again.bound, again.session.session_id) == ("existing", session_id)
        assert again.session.state == "active"
        # deleted, the binding goes with it and the next continue binds anew (a new
        # session under the same derived id, its history imported again from the start)
        assert session_id == native_session_id("scripted", REF)
        await runtime.close_session(session_id)
        await runtime.delete_session(session_id)
        fresh = await runtime.continue_native("scripted", REF)
        assert (fresh.bound, fresh.imported) == ("created", 3)
        assert fresh.session.session_id == session_id
        assert fresh.session.last_sequence == 4


async def test_a_reference_the_provider_did_not_make_binds_nothing() -> None:
    history = MemoryHistory()
    async with Runtime(ProviderRegistry([ScriptedProvider()]), history=history) as runtime:
        with pytest.raises(BridgeError) as caught:
            await runtime.continue_native("scripted", "not json")
        assert caught.value.error_code == "invalid_params"
        assert await runtime.bound_sessions("scripted", ["not json"]) == {}
        assert runtime.sessions == {}


def test_exec_continues_a_provider_session_by_its_reference(tmp_path: Path) -> None:
    """``agent-bridge exec --session <reference>``: a reference the journal does not know
    as a bridge session is the provider's own; it is bound once (the second exec goes on
    in the same bridge session) and only the run's events are printed."""
    import json
    import os
    import subprocess
    import sys

    script = {
        "runs": [
            {"steps": [{"type": "text", "text": "first"}]},
            {"steps": [{"type": "text", "text": "second run of the conversation"}]},
            {"steps": [{"type": "text", "text": "third run of the conversation"}]},
        ]
    }

    def exec_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_bridge", "exec", "--state-dir", str(tmp_path), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )

    ref = '[{"type":"run.started","input":"earlier"}]'
    args = ("--provider", "scripted", "--option", f"script={json.dumps(script)}")
    first = exec_cli(*args, "--session", ref, "now")
    assert first.returncode == 0, first.stderr
    events = [json.loads(line) for line in first.stdout.splitlines()]
    assert [e["payload"]["type"] for e in events] == ["run.started", "text.delta", "run.completed"]
    assert events[1]["payload"]["text"] == "second run of the conversation"
    assert events[0]["sequence"] == 3  # after the imported event and session.imported
    session_line = next(x for x in first.stderr.splitlines() if "session ses_" in x)
    second = exec_cli(
        "--option",
        f"script={json.dumps(script)}",
        "--provider",
        "scripted",
        "--session",
        ref,
        "again",
    )
    assert second.returncode == 0, second.stderr
    assert session_line in second.stderr.splitlines()
    texts = [json.loads(line)["payload"].get("text") for line in second.stdout.splitlines()]
    assert "third run of the conversation" in texts
    bad = exec_cli("--provider", "scripted", "--session", "not a reference", "x")
    assert bad.returncode == 2, bad.stderr


class LateRef(ScriptedProvider):
    """The scripted provider, but its sessions name their provider session only once
    ``named`` is set, as a Codex session names its thread's rollout file only once Codex
    has written it (after the thread started)."""

    def __init__(self, ref: str = "r1") -> None:
        super().__init__()
        self.id = "late"
        self.ref = ref
        self.named = False

    def describe(self) -> Any:
        return msgspec.structs.replace(super().describe(), id="late")

    async def create_session(self, ctx: Any) -> Any:
        session = await super().create_session(ctx)
        session.export_recovery_record = lambda: {"ref": self.ref if self.named else None}  # type: ignore[method-assign]
        return session

    def native_ref(self, opaque: Any) -> str | None:
        ref = opaque.get("ref") if isinstance(opaque, dict) else None
        return ref if isinstance(ref, str) else None


async def test_a_provider_session_named_late_is_bound_when_listed(tmp_path: Path) -> None:
    """An open session whose record did not name its provider session when last saved
    (the provider wrote it meanwhile): listing asks it again, so the provider session is
    shown as that bridge session, never offered as a second, unbound one."""
    provider = LateRef()
    history = Journal.open(str(tmp_path))
    async with Runtime(ProviderRegistry([provider]), history=history) as runtime:
        info = await runtime.create_session("late")
        assert await runtime.bound_sessions("late", ["r1"]) == {}
        provider.named = True  # e.g. Codex wrote the thread's rollout during the turn
        assert await runtime.bound_sessions("late", ["r1"]) == {"r1": info.session_id}
    second = Journal.open(str(tmp_path))
    async with Runtime(ProviderRegistry([LateRef()]), history=second) as runtime:
        assert await runtime.bound_sessions("late", ["r1"]) == {"r1": info.session_id}


@pytest.mark.parametrize("how", ["closed", "shutdown"])
async def test_a_binding_learned_at_close_survives_the_shutdown(how: str, tmp_path: Path) -> None:
    """The record names the provider session first when the session closes (closed by a
    host, or by the bridge's shutdown) and the bridge exits right after: the binding is in
    the journal all the same."""
    provider = LateRef()
    history = Journal.open(str(tmp_path))
    async with Runtime(ProviderRegistry([provider]), history=history) as runtime:
        info = await runtime.create_session("late")
        provider.named = True
        if how == "closed":
            await runtime.close_session(info.session_id)
    second = Journal.open(str(tmp_path))
    async with Runtime(ProviderRegistry([LateRef()]), history=second) as runtime:
        assert await runtime.bound_sessions("late", ["r1"]) == {"r1": info.session_id}


def numbered(count: int) -> str:
    """An inline scripted reference of ``count`` records, ``text.delta`` ``0`` .. ``count - 1``."""
    return json.dumps([{"type": "text.delta", "text": str(i)} for i in range(count)])


async def imported_texts(runtime: Runtime, session_id: str) -> tuple[list[str], dict[str, Any]]:
    """The texts the session's imported events carry, and its ``session.imported``."""
    texts: list[str] = []
    after = 0
    while True:
        page = msgspec.json.decode(
            await runtime.read_events(EventsReadParams(session_id, after=after, limit=1000))
        )
        for event in page["events"]:
            payload = event["payload"]
            if payload["type"] == "session.imported":
                return texts, payload
            texts.append(payload["text"])
            after = event["sequence"]
        assert page["events"], "no session.imported"


async def test_the_import_is_bounded_to_the_newest_records(tmp_path: Path) -> None:
    """``importLimit``: the newest records at most, the cut between pages of the walk back
    and marked in ``session.imported`` (``truncated`` and the cursor reading the older
    records); below the limit everything is imported, unmarked; the default bound holds
    a long history to 10,000 records; a limit below 1 is refused."""
    provider = ScriptedProvider()
    async with Runtime(ProviderRegistry([provider]), history=MemoryHistory()) as runtime:
        ref = numbered(25)
        result = await runtime.continue_native("scripted", ref, import_limit=7)
        assert result.imported == 7
        texts, marker = await imported_texts(runtime, result.session.session_id)
        assert texts == [str(i) for i in range(18, 25)]
        assert marker["truncated"] is True and marker["records"] == 7
        older = await provider.read_native_session(ref, marker["previousCursor"], 7, "start")
        assert [r.raw for r in older.records] == [
            json.dumps({"type": "text.delta", "text": str(i)}) for i in range(11, 18)
        ]
        whole = numbered(24)
        result = await runtime.continue_native("scripted", whole, import_limit=24)
        texts, marker = await imported_texts(runtime, result.session.session_id)
        assert texts == [str(i) for i in range(24)]
        assert "truncated" not in marker and "previousCursor" not in marker
        long = numbered(10_001)
        result = await runtime.continue_native("scripted", long)
        assert result.imported == 10_000
        texts, marker = await imported_texts(runtime, result.session.session_id)
        assert texts[0] == "1" and texts[-1] == "10000" and marker["truncated"] is True
        with pytest.raises(BridgeError) as caught:
            await runtime.continue_native("scripted", numbered(3), import_limit=0)
        assert caught.value.error_code == "invalid_params"
