"""The journal end to end: real bridge processes on a shared state directory.

Crash (SIGKILL) in the middle of a streaming run and after, durable command receipts,
resume by session id in another process, attach with replay, paging during a live run,
two bridges on one journal, retention, deletion, raw provenance, and the refusals at
start-up (damaged, locked, newer journals) and the upgrade of an older one.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import ROOT, BridgeProcess, Message, script_session
from conftest import running_bridge
from plain_scripted import plain_scripted_env
from test_journal_units import make_v1_journal

from agent_bridge.adapters.scripted.session import HOLD_CONTINUED
from agent_bridge.journal.schema import APPLICATION_ID, SCHEMA_VERSION

TERMINAL = ("run.completed", "run.failed", "run.interrupted")


@asynccontextmanager
async def bridge_on(
    state: Path, *args: str, approval: bool = True, env: dict[str, str] | None = None
) -> AsyncIterator[BridgeProcess]:
    """A bridge whose journal is in ``state`` (``env``: more of its environment)."""
    async with running_bridge(
        "newline",
        *args,
        env={"AGENT_BRIDGE_STATE_DIR": str(state), **(env or {})},
        approval=approval,
    ) as bridge:
        yield bridge


async def create(
    bridge: BridgeProcess, steps: list[dict[str, Any]] | None = None, **extra: Any
) -> str:
    params = script_session(steps or [{"type": "echo"}])
    params.update(extra)
    result = await bridge.result("session/create", params)
    return str(result["session"]["sessionId"])


async def run(bridge: BridgeProcess, session: str, text: str = "go", **extra: Any) -> Message:
    """Start a run and return its terminal event."""
    started = await bridge.result(
        "run/start", {"sessionId": session, "input": {"text": text}, **extra}
    )
    return await terminal_of(bridge, started["runId"])


async def terminal_of(bridge: BridgeProcess, run_id: str, timeout: float = 30) -> Message:
    """The terminal event of ``run_id`` (other messages stay queued)."""
    message = await bridge.wait_for(
        lambda m: (
            m.get("method") == "event"
            and m["params"].get("runId") == run_id
            and m["params"]["payload"]["type"] in TERMINAL
        ),
        timeout,
    )
    params: Message = message["params"]
    return params


async def read_all(
    bridge: BridgeProcess, session: str, *, limit: int = 1000, **extra: Any
) -> list[Message]:
    """Every event of ``session`` through events/read, paging forward."""
    out: list[Message] = []
    after = 0
    while True:
        page = await bridge.result(
            "events/read", {"sessionId": session, "after": after, "limit": limit, **extra}
        )
        out += page["events"]
        if not page["hasMore"]:
            return out
        after = page["events"][-1]["sequence"]


def assert_gapless(events: list[Message]) -> None:
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    for e in events:
        assert e["eventId"] == f"evt_{e['sessionId'].split('_', 1)[1]}_{e['sequence']:x}"


def serve(state: Path, *args: str, timeout: float = 20) -> subprocess.CompletedProcess[bytes]:
    """Run ``serve`` on ``state`` with stdin closed at once (a bridge that starts exits 0)."""
    return subprocess.run(
        [sys.executable, "-m", "agent_bridge", "serve", "--state-dir", str(state), *args],
        input=b"",
        capture_output=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=timeout,
        check=False,
    )


# --------------------------------------------------------------------- crash


async def test_sigkill_mid_stream_loses_nothing_the_host_saw_and_the_session_resumes(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    script = {
        "runs": [
            {"steps": [{"type": "stream", "count": 5_000_000, "text": "token "}]},
            {"steps": [{"type": "echo", "prefix": "after the crash: "}]},
        ]
    }
    seen: list[Message] = []
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess(
            "newline", env={"AGENT_BRIDGE_STATE_DIR": str(state)}, validate=False
        )
        await bridge.start(tg)
        try:
            await bridge.initialize()
            created = await bridge.result(
                "session/create", {"provider": "scripted", "options": {"script": script}}
            )
            session = created["session"]["sessionId"]
            await bridge.result("run/start", {"sessionId": session, "input": {"text": "go"}})
            while len(seen) < 30_000:
                message = await bridge.next_message()
                if message.get("method") == "event":
                    seen.append(message["params"])
            assert bridge.proc is not None
            bridge.proc.send_signal(signal.SIGKILL)
            assert await bridge.wait_exit() == -signal.SIGKILL
            with anyio.move_on_after(5):
                while True:  # what was already in the pipe when it died
                    message = await bridge.next_message()
                    if message.get("method") == "event":
                        seen.append(message["params"])
        except anyio.EndOfStream:
            pass
        finally:
            await bridge.stop()
            tg.cancel_scope.cancel()
    assert [e["sequence"] for e in seen] == list(range(1, len(seen) + 1))

    async with bridge_on(state) as bridge:
        listed = (await bridge.result("session/list", {}))["sessions"]
        assert [(s["sessionId"], s["state"]) for s in listed] == [(session, "closed")]
        history = await read_all(bridge, session)
        assert_gapless(history)
        # Zero loss: every event the host received is in the journal, identical.
        assert history[: len(seen)] == seen
        # The crash is recorded after the last committed event: the run failed with
        # bridge_crashed (retryable) and the session was closed.
        *streamed, failed, closed = history
        assert {e["payload"]["type"] for e in streamed[1:]} == {"text.delta"}
        assert failed["payload"] == {
            "type": "run.failed",
            "error": {
                "code": "bridge_crashed",
                "message": "the bridge process ended while the run was active",
                "retryable": True,
            },
        }
        assert failed["runId"] == seen[0]["runId"]
        assert closed["payload"] == {"type": "session.closed", "reason": "bridge_crashed"}
        last = closed["sequence"]
        assert listed[0]["lastSequence"] == last

        resumed = await bridge.result("session/resume", {"sessionId": session})
        assert resumed["session"]["sessionId"] == session
        assert resumed["session"]["state"] == "active"
        assert (await bridge.event("session.resumed"))["sequence"] == last + 1
        terminal = await run(bridge, session, "hello")
        assert terminal["payload"]["type"] == "run.completed"
        after = (await bridge.result("events/read", {"sessionId": session, "after": last}))[
            "events"
        ]
        assert [e["sequence"] for e in after] == list(range(last + 1, last + 1 + len(after)))
        assert [e["payload"]["type"] for e in after] == [
            "session.resumed",
            "run.started",
            "text.delta",
            "run.completed",
        ]
        assert after[2]["payload"]["text"] == "after the crash: hello"


async def _killed_while_asking(
    state: Path, steps: list[dict[str, Any]], env: dict[str, str] | None = None, **extra: Any
) -> tuple[str, str, Message]:
    """A bridge on ``state`` creates a session of ``steps``, starts a run, and is
    SIGKILLed once its host was asked the run's interaction; return the session, the run
    and the ``interaction/request`` the host got."""
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess("newline", env={"AGENT_BRIDGE_STATE_DIR": str(state), **(env or {})})
        await bridge.start(tg)
        try:
            await bridge.initialize()
            session = await create(bridge, steps, **extra)
            started = await bridge.result(
                "run/start", {"sessionId": session, "input": {"text": "x"}}
            )
            asked = await bridge.wait_for(lambda m: m.get("method") == "interaction/request", 30)
            assert bridge.proc is not None
            bridge.proc.send_signal(signal.SIGKILL)
            await bridge.wait_exit()
        finally:
            await bridge.stop()
            tg.cancel_scope.cancel()
    return session, started["runId"], asked


async def test_a_run_cut_off_at_an_approval_is_continued_by_the_next_bridge(
    tmp_path: Path,
) -> None:
    """The scripted provider continues a run cut off while it waited (``resumeTurn``):
    the next bridge on the journal closes the session ``bridge_crashed`` and leaves the
    run and its approval open; resuming the session continues the run under its id, the
    approval is offered again once, under its original id, and answered; the steps
    before it do not run again (nothing twice in the journal, no gap)."""
    state = tmp_path / "state"
    steps: list[dict[str, Any]] = [
        {"type": "text", "text": "before"},
        {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "ok"}]},
        {"type": "text", "text": "after"},
    ]
    session, run_id, asked = await _killed_while_asking(state, steps)
    interaction = asked["params"]["interactionId"]
    async with bridge_on(state) as bridge:
        history = await read_all(bridge, session)
        assert_gapless(history)
        assert [e["payload"]["type"] for e in history] == [
            "run.started",
            "text.delta",
            "interaction.requested",
            "session.closed",
        ]
        assert history[-1]["payload"]["reason"] == "bridge_crashed"
        # an answer before the session is open again: it is closed, resume it first
        early = await bridge.call(
            "interaction/respond",
            {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}},
            check=False,
        )
        assert early["error"]["data"]["code"] == "session_closed"
        unknown = await bridge.call(
            "interaction/respond",
            {"interactionId": "int_nope", "answer": {"kind": "approval", "decision": "allow"}},
            check=False,
        )
        assert unknown["error"]["data"]["code"] == "interaction_not_found"
        await bridge.result("session/resume", {"sessionId": session, "after": len(history)})
        again = await bridge.wait_for(lambda m: m.get("method") == "interaction/request", 30)
        assert again["params"]["interactionId"] == interaction
        assert again["params"]["runId"] == run_id
        await bridge.send(
            {
                "jsonrpc": "2.0",
                "id": again["id"],
                "result": {"kind": "approval", "decision": "allow", "mode": "once"},
            }
        )
        end = await terminal_of(bridge, run_id)
        assert end["payload"]["type"] == "run.completed"
        asks = [m for m in bridge.received if m.get("method") == "interaction/request"]
        assert asks == [again]  # offered once
        stored = await read_all(bridge, session)
        assert_gapless(stored)
        assert stored[: len(history)] == history
        tail = stored[len(history) :]
        assert [e["payload"]["type"] for e in tail] == [
            "session.resumed",
            "interaction.settled",
            "text.delta",
            "text.delta",
            "run.completed",
        ]
        assert tail[1]["payload"]["interactionId"] == interaction
        assert tail[1]["payload"]["status"] == "responded"
        assert [e["payload"]["text"] for e in tail[2:4]] == ["ok", "after"]
        assert {e["runId"] for e in tail[1:]} == {run_id}
        texts = [e["payload"]["text"] for e in stored if e["payload"]["type"] == "text.delta"]
        assert texts == ["before", "ok", "after"]  # "before" did not run again


@pytest.mark.parametrize("held", [False, True], ids=["asked-again", "held"])
async def test_a_continued_run_cut_off_again_is_continued_again(tmp_path: Path, held: bool) -> None:
    """Two crashes in a row while the same approval waits: each next bridge continues the
    run under its id and offers the approval under its original id; answered at last,
    the run completes with nothing twice in the journal.

    ``held``: the second bridge's continued run does not ask again before it is killed
    (the scripted provider's test seam, ``HOLD_CONTINUED``), so the recovery record that
    bridge committed before answering ``session/resume`` is the last one: it must name
    the turn already.  Unheld, the run asks again at once and a later commit may save
    the record with the turn anyway (this case passed without that, mostly)."""
    state = tmp_path / "state"
    steps: list[dict[str, Any]] = [
        {"type": "text", "text": "before"},
        {"type": "approval", "title": "deploy", "onAllow": [{"type": "text", "text": "ok"}]},
    ]
    session, run_id, asked = await _killed_while_asking(state, steps)
    interaction = asked["params"]["interactionId"]
    env = {"AGENT_BRIDGE_STATE_DIR": str(state)}
    if held:
        env[HOLD_CONTINUED] = "1"
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess("newline", env=env)
        await bridge.start(tg)
        try:
            await bridge.initialize()
            await bridge.result("session/resume", {"sessionId": session})
            again = await bridge.wait_for(lambda m: m.get("method") == "interaction/request", 30)
            assert again["params"]["interactionId"] == interaction
            assert bridge.proc is not None
            bridge.proc.send_signal(signal.SIGKILL)
            await bridge.wait_exit()
        finally:
            await bridge.stop()
            tg.cancel_scope.cancel()
    async with bridge_on(state) as bridge:
        await bridge.result("session/resume", {"sessionId": session})

        def asked_or_ended(m: Message) -> bool:
            if m.get("method") == "interaction/request":
                return True
            params = m.get("params") or {}
            return m.get("method") == "event" and params.get("runId") == run_id

        # continued (asked again), not failed: the record the second bridge left names
        # the turn
        third = await bridge.wait_for(asked_or_ended, 30)
        assert third["method"] == "interaction/request", third["params"]["payload"]
        assert third["params"]["interactionId"] == interaction
        await bridge.send(
            {
                "jsonrpc": "2.0",
                "id": third["id"],
                "result": {"kind": "approval", "decision": "allow", "mode": "once"},
            }
        )
        assert (await terminal_of(bridge, run_id))["payload"]["type"] == "run.completed"
        stored = await read_all(bridge, session)
        assert_gapless(stored)
        assert [e["payload"]["type"] for e in stored] == [
            "run.started",
            "text.delta",
            "interaction.requested",
            "session.closed",
            "session.resumed",
            "session.closed",
            "session.resumed",
            "interaction.settled",
            "text.delta",
            "run.completed",
        ]
        texts = [e["payload"]["text"] for e in stored if e["payload"]["type"] == "text.delta"]
        assert texts == ["before", "ok"]


async def test_a_crash_with_a_pending_approval_settles_it_before_the_run_fails(
    tmp_path: Path,
) -> None:
    """A provider that cannot continue a cut-off run (no ``resumeTurn``, as every CLI
    agent): the next bridge settles the approval cancelled, fails the run
    ``bridge_crashed`` and closes the session; resuming it does not ask again."""
    state = tmp_path / "state"
    env = plain_scripted_env(tmp_path / "plain")
    steps: list[dict[str, Any]] = [{"type": "approval", "title": "deploy"}]
    session, _, asked = await _killed_while_asking(state, steps, env, provider="scripted-plain")
    async with bridge_on(state, env=env) as bridge:
        history = await read_all(bridge, session)
        assert_gapless(history)
        kinds = [e["payload"]["type"] for e in history]
        assert kinds == [
            "run.started",
            "interaction.requested",
            "interaction.settled",
            "run.failed",
            "session.closed",
        ]
        assert history[2]["payload"] == {
            "type": "interaction.settled",
            "interactionId": asked["params"]["interactionId"],
            "status": "cancelled",
            "auto": True,
        }
        await bridge.result("session/resume", {"sessionId": session})
        await bridge.event("session.resumed")
        assert not [m for m in bridge.received if m.get("method") == "interaction/request"]


# --------------------------------------------------------------------- commands


async def test_command_receipts_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    params = {"input": {"text": "once"}, "commandId": "cmd-42"}
    async with bridge_on(state) as bridge:
        session = await create(bridge)
        first = await bridge.result("run/start", {"sessionId": session, **params})
        assert "duplicate" not in first
        await terminal_of(bridge, first["runId"])
    async with bridge_on(state) as bridge:
        again = await bridge.result("run/start", {"sessionId": session, **params})
        assert again == {**first, "duplicate": True}
        conflict = await bridge.call(
            "run/start", {"sessionId": session, "input": {"text": "other"}, "commandId": "cmd-42"}
        )
        assert conflict["error"]["data"]["code"] == "command_conflict"
        # the session is closed here: a new command on it says so
        closed = await bridge.call(
            "run/start", {"sessionId": session, "input": {"text": "x"}, "commandId": "cmd-43"}
        )
        assert closed["error"]["data"]["code"] == "session_closed"


# --------------------------------------------------------------------- resume, attach


async def test_resume_by_id_keeps_the_id_and_continues_the_conversation(tmp_path: Path) -> None:
    state = tmp_path / "state"
    script = {
        "runs": [
            {"steps": [{"type": "text", "text": "first"}]},
            {"steps": [{"type": "echo", "prefix": "second: "}]},
        ]
    }
    async with bridge_on(state) as bridge:
        created = await bridge.result(
            "session/create",
            {"provider": "scripted", "options": {"script": script}, "title": "t1"},
        )
        session = created["session"]["sessionId"]
        await run(bridge, session)
        live = [m["params"] for m in bridge.received if m.get("method") == "event"]
    async with bridge_on(state) as bridge:
        history = await read_all(bridge, session)
        # live and historical identities agree
        assert history[: len(live)] == live
        assert history[-1]["payload"] == {"type": "session.closed", "reason": "shutdown"}
        exported = await bridge.result("session/export", {"sessionId": session})
        assert exported["record"]["opaque"]["runs"] == 1  # a count: the record stays small
        resumed = await bridge.result(
            "session/resume", {"sessionId": session, "title": "t2", "after": len(history) - 1}
        )
        assert resumed["session"]["title"] == "t2"
        replayed = await bridge.event("session.closed")  # the replay of what follows after
        assert replayed["sequence"] == len(history)
        terminal = await run(bridge, session, "again")
        assert terminal["sequence"] == len(history) + 4
        texts = [
            m["params"]["payload"]["text"]
            for m in bridge.received
            if m.get("method") == "event" and m["params"]["payload"]["type"] == "text.delta"
        ]
        assert texts == ["second: again"]
        # resuming it again here is a no-op that returns it
        same = await bridge.result("session/resume", {"sessionId": session})
        assert same["session"]["state"] == "active"
    async with bridge_on(state) as bridge:
        missing = await bridge.call("session/resume", {"sessionId": "ses_nope"})
        both = await bridge.call(
            "session/resume",
            {"sessionId": session, "record": exported["record"]},
            check=False,
        )
    assert missing["error"]["data"]["code"] == "session_not_found"
    assert both["error"]["data"]["code"] == "invalid_params"


async def test_attach_replays_then_follows_live_with_no_gap_and_reasks_pending(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    steps: list[dict[str, Any]] = [
        {"type": "stream", "count": 3000, "text": "a"},
        {"type": "approval", "title": "go on?", "onAllow": [{"type": "stream", "count": 3000}]},
    ]
    async with bridge_on(state) as bridge:
        session = await create(bridge, steps)
        started = await bridge.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        first_ask = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        interaction = first_ask["params"]["interactionId"]
        before = [m["params"] for m in bridge.received if m.get("method") == "event"]
        # the host lost its state: attach after sequence 1000
        bridge.received.clear()
        reply = await bridge.result("session/attach", {"sessionId": session, "after": 1000})
        assert reply["lastSequence"] == before[-1]["sequence"]
        assert reply["replayed"] == reply["lastSequence"] - 1000
        again = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        assert again["params"]["interactionId"] == interaction
        await bridge.send(
            {
                "jsonrpc": "2.0",
                "id": again["id"],
                "result": {"kind": "approval", "decision": "allow"},
            }
        )
        terminal = await terminal_of(bridge, started["runId"])
        assert terminal["payload"]["type"] == "run.completed"
        after_attach = [
            m["params"]
            for m in bridge.received
            if m.get("method") == "event" and m["params"]["sessionId"] == session
        ]
        # events after 1000: the replay, then live ones, with no gap and no duplicate
        sequences = [e["sequence"] for e in after_attach]
        start = sequences.index(1001)
        tail = after_attach[start:]
        assert [e["sequence"] for e in tail] == list(range(1001, 1001 + len(tail)))
        assert tail[-1] == terminal
        assert tail[: len(before) - 1000] == before[1000:]
        history = await read_all(bridge, session)
        assert history[1000:] == tail


async def test_attach_to_a_session_from_an_earlier_process_replays_its_history(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    async with bridge_on(state) as bridge:
        session = await create(bridge, [{"type": "text", "text": "abc", "chunks": 3}])
        await run(bridge, session)
        live = [m["params"] for m in bridge.received if m.get("method") == "event"]
    async with bridge_on(state) as bridge:
        reply = await bridge.result("session/attach", {"sessionId": session, "after": 2})
        assert reply["session"]["state"] == "closed"
        replayed = [m["params"] for m in bridge.received if m.get("method") == "event"]
        assert replayed == [*live[2:], replayed[-1]]
        assert replayed[-1]["payload"]["type"] == "session.closed"
        assert reply["replayed"] == len(replayed)


# --------------------------------------------------------------------- reading


async def test_pages_read_during_a_live_run_match_the_stream(tmp_path: Path) -> None:
    state = tmp_path / "state"
    steps: list[dict[str, Any]] = [
        {"type": "stream", "count": 3000, "text": "z"},
        {"type": "approval", "onAllow": [{"type": "stream", "count": 3000, "text": "w"}]},
    ]
    async with bridge_on(state) as bridge:
        session = await create(bridge, steps)
        started = await bridge.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        ask = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
        pages: list[Message] = []
        after = 0
        seen_last: list[int] = []

        async def read(limit: int) -> None:
            nonlocal after
            page = await bridge.result(
                "events/read", {"sessionId": session, "after": after, "limit": limit}
            )
            pages.extend(page["events"])
            seen_last.append(page["lastSequence"])
            if page["events"]:
                after = page["events"][-1]["sequence"]
                assert page["lastSequence"] >= after

        for limit in (7, 1000, 333):  # the run waits for its approval
            await read(limit)
        await bridge.send(
            {"jsonrpc": "2.0", "id": ask["id"], "result": {"kind": "approval", "decision": "allow"}}
        )
        for limit in (1, 999, 50, 1000):  # the run streams again
            await read(limit)
        terminal = await terminal_of(bridge, started["runId"])
        assert seen_last[0] < terminal["sequence"]
        while True:
            page = await bridge.result(
                "events/read", {"sessionId": session, "after": after, "limit": 1000}
            )
            pages += page["events"]
            if not page["hasMore"]:
                break
            after = page["events"][-1]["sequence"]
        live = [
            m["params"]
            for m in bridge.received
            if m.get("method") == "event" and m["params"]["sessionId"] == session
        ]
        assert pages == live
        assert pages[-1] == terminal
        # backward from the end gives the same log, in order
        backward: list[Message] = []
        before = terminal["sequence"] + 1
        while True:
            page = await bridge.result(
                "events/read", {"sessionId": session, "before": before, "limit": 777}
            )
            backward = page["events"] + backward
            if not page["hasMore"]:
                break
            before = page["events"][0]["sequence"]
        assert backward == live


async def test_settled_and_raw_views(tmp_path: Path) -> None:
    state = tmp_path / "state"
    steps: list[dict[str, Any]] = [
        {"type": "thinking", "text": "hmm"},
        {"type": "text", "text": "Hello, world", "chunks": 4},
        {"type": "tool", "name": "Bash", "id": "call_1", "output": "ok"},
        {"type": "text", "text": "Done.", "chunks": 2},
    ]
    async with bridge_on(state) as bridge:
        session = await create(bridge, steps)
        await run(bridge, session)
    async with bridge_on(state) as bridge:
        exact = await bridge.result("events/read", {"sessionId": session})
        settled = await bridge.result(
            "events/read", {"sessionId": session, "projection": "settled"}
        )
        assert exact["exact"] is True and settled["exact"] is False
        kinds = [
            (e["payload"]["type"], e["payload"].get("text"), e.get("foldedFrom"))
            for e in settled["events"]
        ]
        assert kinds == [
            ("run.started", None, None),
            ("thinking.delta", "hmm", None),
            ("text.delta", "Hello, world", 3),
            ("tool.activity", None, None),
            ("tool.activity", None, None),
            ("tool.activity", None, None),
            ("text.delta", "Done.", 10),
            ("run.completed", None, None),
            ("session.closed", None, None),
        ]
        by_seq = {e["sequence"]: e for e in exact["events"]}
        for event in settled["events"]:
            assert event["eventId"] == by_seq[event["sequence"]]["eventId"]
        raw = await bridge.result("events/read", {"sessionId": session, "view": "raw"})
        assert raw["events"] == exact["events"]
        records = {r["rawId"]: r for r in raw["raw"]}
        assert records[2] == {"rawId": 2, "spans": [[2, 2]], "record": steps[0]}
        assert records[3] == {"rawId": 3, "spans": [[3, 6]], "record": steps[1]}
        assert records[7]["spans"] == [[7, 9]] and records[7]["record"]["name"] == "Bash"
        assert records[10]["spans"] == [[10, 11]]
        # a page cuts spans to itself
        part = await bridge.result(
            "events/read", {"sessionId": session, "view": "raw", "after": 4, "limit": 4}
        )
        assert [(r["rawId"], r["spans"]) for r in part["raw"]] == [(3, [[5, 6]]), (7, [[7, 8]])]
        bad = await bridge.call(
            "events/read", {"sessionId": session, "view": "raw", "projection": "settled"}
        )
        assert bad["error"]["data"]["code"] == "invalid_params"


# --------------------------------------------------------------------- sessions


async def test_list_filters_pages_and_delete(tmp_path: Path) -> None:
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    async with bridge_on(state) as bridge:
        ids = [await create(bridge, title=f"s{i}") for i in range(3)]
        in_work = await create(bridge, workspace=str(work), title="w")
    async with bridge_on(state) as bridge:
        newer = await create(bridge, title="new")
        page1 = await bridge.result("session/list", {"limit": 2})
        assert [s["sessionId"] for s in page1["sessions"]] == [newer, in_work]
        assert page1["sessions"][0]["state"] == "active"
        assert page1["sessions"][1]["state"] == "closed"
        page2 = await bridge.result("session/list", {"limit": 2, "cursor": page1["nextCursor"]})
        page3 = await bridge.result("session/list", {"limit": 2, "cursor": page2["nextCursor"]})
        assert [s["sessionId"] for s in page2["sessions"] + page3["sessions"]] == ids[::-1]
        assert "nextCursor" not in page3
        only = await bridge.result("session/list", {"workspace": str(work)})
        assert [s["sessionId"] for s in only["sessions"]] == [in_work]
        none = await bridge.result("session/list", {"provider": "codex"})
        assert none["sessions"] == []

        deleted = await bridge.result("session/delete", {"sessionId": ids[0]})
        assert deleted == {"sessionId": ids[0], "deleted": True}
        live = await bridge.result("session/delete", {"sessionId": newer})  # closes it first
        assert live["deleted"] is True
        assert (await bridge.event("session.closed"))["sessionId"] == newer
        gone = await bridge.call("events/read", {"sessionId": ids[0]})
        assert gone["error"]["data"]["code"] == "session_not_found"
        again = await bridge.call("session/delete", {"sessionId": ids[0]})
        assert again["error"]["data"]["code"] == "session_not_found"
    async with bridge_on(state) as bridge:
        left = await bridge.result("session/list", {})
        assert [s["sessionId"] for s in left["sessions"]] == [in_work, ids[2], ids[1]]


# --------------------------------------------------------------------- two bridges


async def test_two_bridges_share_one_journal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    steps = [{"type": "stream", "count": 2000, "text": "q"}]
    async with bridge_on(state) as one, bridge_on(state) as two:
        sessions = {
            one: [await create(one, steps) for _ in range(3)],
            two: [await create(two, steps) for _ in range(3)],
        }
        runs = []
        for bridge, ids in sessions.items():
            for session in ids:
                started = await bridge.result(
                    "run/start", {"sessionId": session, "input": {"text": "x"}}
                )
                runs.append((bridge, started["runId"]))
        for bridge, run_id in runs:
            terminal = await terminal_of(bridge, run_id, timeout=60)
            assert terminal["payload"]["type"] == "run.completed"
        # each sees all six sessions; the other's are active elsewhere
        listed = (await one.result("session/list", {}))["sessions"]
        assert {s["sessionId"] for s in listed} == {s for ids in sessions.values() for s in ids}
        theirs = sessions[two][0]
        in_use = await one.call("session/resume", {"sessionId": theirs})
        assert in_use["error"]["data"]["code"] == "session_in_use"
        start_there = await one.call("run/start", {"sessionId": theirs, "input": {"text": "x"}})
        assert start_there["error"]["data"]["code"] == "session_in_use"
        for bridge, ids in sessions.items():
            for session in ids:
                history = await read_all(one, session)
                assert_gapless(history)
                assert len(history) == 2002
                live = [
                    m["params"]
                    for m in bridge.received
                    if m.get("method") == "event" and m["params"]["sessionId"] == session
                ]
                assert history == live
        await two.result("shutdown")
        await two.notify("exit")
        assert await two.wait_exit() == 0
        # closed by its bridge: now the other one may reopen it
        resumed = await one.result("session/resume", {"sessionId": theirs})
        assert resumed["session"]["lastSequence"] == 2004  # + session.closed, session.resumed


# --------------------------------------------------------------------- retention


def _bytes_by_session(state: Path) -> dict[str, int]:
    conn = sqlite3.connect(state / "journal.sqlite3")
    try:
        return dict(conn.execute("SELECT session_id, bytes FROM sessions").fetchall())
    finally:
        conn.close()


async def test_retention_by_size_and_age_at_start_up(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with bridge_on(state) as bridge:
        ids = []
        for i in range(3):
            session = await create(
                bridge, [{"type": "text", "text": f"{i} " * 3000, "chunks": 300}]
            )
            await run(bridge, session)
            await bridge.result("session/close", {"sessionId": session})
            ids.append(session)
    sizes = _bytes_by_session(state)
    assert all(size > 0 for size in sizes.values())
    cap = sizes[ids[2]] + sizes[ids[1]] // 2  # room for the newest only
    async with bridge_on(state, "--retain-mb", str(cap / 1024 / 1024)) as bridge:
        left = (await bridge.result("session/list", {}))["sessions"]
        assert [s["sessionId"] for s in left] == [ids[2]]
    conn = sqlite3.connect(state / "journal.sqlite3")
    conn.execute("UPDATE sessions SET updated_at = '2020-01-01T00:00:00.000Z'")
    conn.commit()
    conn.close()
    async with bridge_on(state, "--retain-days", "30") as bridge:
        assert (await bridge.result("session/list", {}))["sessions"] == []


async def test_retention_runs_while_writing_and_spares_open_sessions(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with bridge_on(state, "--retain-mb", "0.02") as bridge:
        old = await create(bridge)
        await run(bridge, old)
        await bridge.result("session/close", {"sessionId": old})
        busy = await create(
            bridge, [{"type": "text", "text": "varied %d " * 20000, "chunks": 4000}]
        )
        await run(bridge, busy)
        with anyio.fail_after(20):
            while True:
                listed = (await bridge.result("session/list", {}))["sessions"]
                if [s["sessionId"] for s in listed] == [busy]:
                    break
                await run(bridge, busy)
        history = await read_all(bridge, busy)
        assert_gapless(history)


# --------------------------------------------------------------------- start-up


@pytest.mark.parametrize(
    "content",
    [b"garbage " * 100, b"SQLite format 3\x00" + bytes(range(256)) * 40],
    ids=["not-sqlite", "damaged"],
)
def test_a_damaged_journal_stops_the_bridge_with_one_line(tmp_path: Path, content: bytes) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "journal.sqlite3").write_bytes(content)
    done = serve(state)
    assert done.returncode != 0
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("agent-bridge: ") and "journal" in lines[0]
    assert done.stdout == b""
    assert (state / "journal.sqlite3").read_bytes() == content


def test_a_newer_journal_is_refused_untouched(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    path = state / "journal.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions (x)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    done = serve(state)
    assert done.returncode != 0
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "newer agent-bridge" in lines[0], lines
    assert path.read_bytes() == before


async def test_a_journal_older_bridges_are_running_on_is_not_upgraded_under_them(
    tmp_path: Path,
) -> None:
    """Two bridges share one journal; one of an older version (schema 7, zlib blocks)
    is running when this version starts.  Upgrading the file to 8 under it would have
    it take the first Zstandard block it reads for damage and stop serving the whole
    journal (seen with a real 2934ae1 bridge on PostgreSQL, the same code path here):
    so this one refuses to start, with one line, and leaves the file at 7.  Once the
    older bridge has exited, it upgrades.  (The older bridge is a running bridge whose
    file is set back to 7: that version's code is not installed here.)"""
    state = tmp_path / "state"
    path = state / "journal.sqlite3"
    async with bridge_on(state) as older:
        session = await create(older)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 7")
        conn.commit()
        conn.close()
        done = serve(state)
        assert done.returncode != 0
        lines = done.stderr.decode().splitlines()
        assert len(lines) == 1 and "older agent-bridge" in lines[0], lines
        assert b"Traceback" not in done.stderr
        await run(older, session)  # the older one goes on
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
    conn.close()
    assert serve(state).returncode == 0
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_locked_journal_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert serve(state).returncode == 0  # creates it
    holder = sqlite3.connect(state / "journal.sqlite3", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done = serve(state)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert done.returncode != 0
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "locked" in lines[0], lines
    assert serve(state).returncode == 0


async def test_an_older_journal_is_upgraded_and_its_sessions_resume(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    make_v1_journal(state / "journal.sqlite3", sessions=2, events=5)
    async with bridge_on(state) as bridge:
        listed = (await bridge.result("session/list", {}))["sessions"]
        assert [(s["sessionId"], s["state"], s["lastSequence"]) for s in listed] == [
            ("ses_v1b", "closed", 5),
            ("ses_v1a", "closed", 5),
        ]
        old = await read_all(bridge, "ses_v1a")
        assert [e["payload"]["text"] for e in old] == [f"old {i}" for i in range(1, 6)]
        await bridge.result("session/resume", {"sessionId": "ses_v1a"})
        terminal = await run(bridge, "ses_v1a", "new")
        assert terminal["sequence"] == 9
        assert_gapless(await read_all(bridge, "ses_v1a"))
    conn = sqlite3.connect(state / "journal.sqlite3")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


async def test_memory_mode_keeps_todays_behaviour(tmp_path: Path) -> None:
    async with running_bridge("newline", "--state-dir", ":memory:") as bridge:
        session = await create(bridge, [{"type": "text", "text": "hi"}])
        await run(bridge, session)
        await bridge.result("session/close", {"sessionId": session})
        page = await bridge.result("events/read", {"sessionId": session, "view": "raw"})
        assert [e["payload"]["type"] for e in page["events"]] == [
            "run.started",
            "text.delta",
            "run.completed",
            "session.closed",
        ]
        assert page["raw"][0]["record"] == {"type": "text", "text": "hi", "chunks": 1}
        resumed = await bridge.result("session/resume", {"sessionId": session})
        assert resumed["session"]["lastSequence"] == 5
        assert "durableHistory" not in str(bridge.received[0])
