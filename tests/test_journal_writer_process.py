"""The journal's writer process (``--journal-writer process``) when it fails, with real
processes: the child stopped and SIGKILLed mid-stream under a real bridge (held,
``journal/status`` ``failing`` ``writer_exited``, restarted, nothing a host saw lost or
written twice), a child that dies between a commit and its report (the next one is given
those frames again and writes nothing twice), an operation it cannot take (a bug: the
journal is ``broken`` and the child is not restarted), and the ``auto`` choice.

The rest of the journal's contract runs against the process writer in
``tests/test_journal_contract.py`` (``sqlite-process``), its full disk included."""

from __future__ import annotations

import collections
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess, Message, allow
from test_journal_e2e import read_all, terminal_of
from wire_validation import WireValidator

from agent_bridge.journal.journal import Journal
from agent_bridge.journal.writer import OP_EVENTS, OP_SESSION, EventBatch
from agent_bridge.journal.writer_frames import REPORT
from agent_bridge.journal.writer_process import (
    ProcessWriter,
    choose_writer,
    encode_frame,
    usable_cpus,
)

CONTRACT = WireValidator()


def writer_children(pid: int) -> list[int]:
    """The pids of ``pid``'s journal writer processes."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            children = [int(c) for c in f.read().split()]
        for child in children:
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if b"agent_bridge.journal.writer_child" in cmdline:
                found.append(child)
    return found


async def one_writer_child(pid: int) -> int:
    with anyio.fail_after(30):
        while len(children := writer_children(pid)) != 1:
            await anyio.sleep(0.02)
    return children[0]


def events_of(bridge: BridgeProcess, session: str) -> list[Message]:
    return [
        m["params"]
        for m in bridge.received
        if m.get("method") == "event" and m["params"]["sessionId"] == session
    ]


def statuses(bridge: BridgeProcess) -> list[dict[str, Any]]:
    return [m["params"] for m in bridge.received if m.get("method") == "journal/status"]


def gated_stream(streams: int, count: int) -> list[dict[str, Any]]:
    """``streams`` streams of ``count`` deltas, each followed by an approval that the
    next one waits on (the last one's allow ends the run with one more delta)."""
    steps: list[dict[str, Any]] = [{"type": "text", "text": "done"}]
    for _ in range(streams):
        approval = {"type": "approval", "title": "go on?", "onAllow": steps}
        steps = [{"type": "stream", "count": count, "text": "z" * 30}, approval]
    return steps


async def test_the_writer_child_stopped_then_killed_mid_stream_holds_restarts_loses_nothing(
    tmp_path: Path,
) -> None:
    """A real bridge with ``--journal-writer process`` streams 150,000 events, in three
    streams each followed by an approval.  Its writer child is stopped (SIGSTOP) in the
    first stream: nothing more reaches the host.  It is then SIGKILLed (mid-commit: it
    was stopped with commits in flight): the host gets ``journal/status`` ``failing``
    ``writer_exited`` then ``ok``, a new child commits what was held, and the stream goes
    on; two more SIGKILLs while the later streams flow change nothing either.  Each of
    those lands on a child that has committed (the journal is ``ok`` again), and the
    approval after its stream gives the next child more to commit, so each SIGKILL is
    exactly one ``failing``, ``ok`` pair, however slowly this host reads.  The host saw
    every event once, in gapless order, and a later bridge reads exactly those back."""
    state = tmp_path / "state"
    streams, count = 3, 50_000
    script = {"runs": [{"steps": gated_stream(streams, count)}]}
    args = ("--journal-writer", "process")
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess(
            "newline", args=args, env={"AGENT_BRIDGE_STATE_DIR": str(state)}, validate=False
        )
        await bridge.start(tg)
        try:
            await bridge.initialize()
            assert bridge.proc is not None
            first = await one_writer_child(bridge.proc.pid)
            created = await bridge.result(
                "session/create", {"provider": "scripted", "options": {"script": script}}
            )
            session = created["session"]["sessionId"]
            started = await bridge.result(
                "run/start", {"sessionId": session, "input": {"text": "go"}}
            )
            with anyio.fail_after(30):
                while len(events_of(bridge, session)) < 2_000:
                    await anyio.sleep(0.01)
            os.kill(first, signal.SIGSTOP)
            # what was committed before the stop arrives (the host reads slower than the
            # bridge writes): then the stream stops, where it would flow on unheld
            # (quiet for a whole second, then two more: a loaded test process may read
            # what was committed before the stop in bursts, half a second apart)
            seen = -1
            with anyio.fail_after(60):
                while seen != len(events_of(bridge, session)):
                    seen = len(events_of(bridge, session))
                    await anyio.sleep(1.0)
            await anyio.sleep(2.0)
            assert len(events_of(bridge, session)) == seen, "an event passed a stopped writer"
            assert seen < count
            os.kill(first, signal.SIGKILL)
            ok = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status" and m["params"]["state"] == "ok",
                timeout=30,
            )
            CONTRACT.validate("JournalStatusNotification", ok)
            failing = statuses(bridge)[0]
            assert failing["state"] == "failing" and failing["reason"] == "writer_exited"
            killed = first
            for kill in range(1, streams + 1):
                # the approval after this stream: asked once the stream before it is
                # committed (by a child started after the last kill)
                asked = await bridge.wait_for(
                    lambda m: m.get("method") == "interaction/request", timeout=30
                )
                assert asked["params"]["request"]["kind"] == "approval"
                with anyio.fail_after(30):
                    while (child := await one_writer_child(bridge.proc.pid)) == killed:
                        await anyio.sleep(0.02)
                mark = len(events_of(bridge, session)) + 2_000
                reply = {"jsonrpc": "2.0", "id": asked["id"], "result": allow()(asked["params"])}
                await bridge.send(reply)
                if kill == streams:
                    break  # this allow gives the child after the last kill its commits
                # 2,000 events past the approval, through the child started after the last
                # kill, and the journal is ok again: this kill is one more failing, ok pair
                # (the next approval gives its successor something to commit)
                with anyio.fail_after(60):
                    while (
                        len(events_of(bridge, session)) < mark or len(statuses(bridge)) < 2 * kill
                    ):
                        await anyio.sleep(0.01)
                assert [s["state"] for s in statuses(bridge)] == ["failing", "ok"] * kill
                child = await one_writer_child(bridge.proc.pid)
                assert child != killed
                os.kill(child, signal.SIGKILL)
                killed = child
            end = await terminal_of(bridge, started["runId"], timeout=120)
            assert end["payload"]["type"] == "run.completed"
            with anyio.fail_after(30):
                while len(statuses(bridge)) < 2 * streams:
                    await anyio.sleep(0.02)
            host_saw = events_of(bridge, session)
            assert [s["state"] for s in statuses(bridge)] == ["failing", "ok"] * streams
            assert {s.get("reason") for s in statuses(bridge) if s["state"] == "failing"} == {
                "writer_exited"
            }
            assert b"Traceback" not in bridge.stderr
        finally:
            with anyio.CancelScope(shield=True):
                await bridge.stop()
            tg.cancel_scope.cancel()
    assert [e["sequence"] for e in host_saw] == list(range(1, len(host_saw) + 1))
    assert collections.Counter(e["payload"]["type"] for e in host_saw) == {
        "run.started": 1,
        "text.delta": streams * count + 1,
        "interaction.requested": streams,
        "interaction.settled": streams,
        "run.completed": 1,
    }
    async with anyio.create_task_group() as tg:
        again = BridgeProcess("newline", env={"AGENT_BRIDGE_STATE_DIR": str(state)}, validate=False)
        await again.start(tg)
        try:
            await again.initialize()
            stored = await read_all(again, session)
        finally:
            with anyio.CancelScope(shield=True):
                await again.stop()
            tg.cancel_scope.cancel()
    assert stored[: len(host_saw)] == host_saw  # committed = seen, once each
    assert [e["payload"]["type"] for e in stored[len(host_saw) :]] == ["session.closed"]


# --------------------------------------------------------------------- replay


def _child(path: str, replay: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_bridge.journal.writer_child",
            path,
            "full",
            "-",
            "-",
            str(replay),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def _reports(proc: subprocess.Popen[bytes], until_ops: int) -> list[tuple[int, int, int]]:
    assert proc.stdout is not None
    out: list[tuple[int, int, int]] = []
    while not out or out[-1][0] < until_ops:
        data = proc.stdout.read(REPORT.size)
        assert len(data) == REPORT.size, "the writer child ended early"
        out.append(REPORT.unpack(data))
    return out


def _frames() -> list[bytearray]:
    session = (OP_SESSION, "ses_r", "scripted", "1", "/w", "t", b"{}", "2026", "2026", "tok")
    frames = [encode_frame([session])[0]]
    for k in range(3):
        batch = EventBatch("ses_r", 1 + 100 * k)
        batch.bodies = [b'{"sequence":%d}' % (1 + 100 * k + i) for i in range(100)]
        batch.codes = bytearray(b"\x01" * 100)
        batch.raws = [(1 + 100 * k, b'{"raw":%d}' % k)]
        batch.changes = [(1 + 100 * k, 1 + 100 * k)]
        frames.append(encode_frame([(OP_EVENTS, [batch])])[0])
    return frames


def test_frames_committed_by_a_child_that_died_before_reporting_are_written_once(
    tmp_path: Path,
) -> None:
    """A child commits three frames (a session and 200 events) and is SIGKILLed before
    the bridge read its reports; the next child is given those frames again (with
    ``replay``) and one more: it stores the session once, each event once (gapless
    1..300), each raw record once, and charges the session's bytes once."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    journal = Journal.open(str(state))  # creates the file and its schema
    path = journal.path
    frames = _frames()
    first = _child(path, 0)
    assert first.stdin is not None
    first.stdin.write(b"".join(frames[:3]))
    first.stdin.flush()
    assert _reports(first, 3)[-1][0] == 3  # committed, and the bridge never read it
    first.send_signal(signal.SIGKILL)
    first.wait()
    for stream in (first.stdin, first.stdout):
        if stream is not None:
            stream.close()
    second = _child(path, 3)
    assert second.stdin is not None and second.stdout is not None
    second.stdin.write(b"".join(frames))
    second.stdin.close()
    reports = _reports(second, 4)
    assert reports[-1][:2] == (4, 300) and all(code == 0 for _, _, code in reports)
    assert second.wait(30) == 0
    second.stdout.close()
    once = tmp_path / "once"
    once.mkdir(mode=0o700)
    reference = Journal.open(str(once))
    alone = _child(reference.path, 0)
    assert alone.stdin is not None and alone.stdout is not None
    alone.stdin.write(b"".join(frames))
    alone.stdin.close()
    assert alone.wait(30) == 0
    alone.stdout.close()
    for where in (path, reference.path):
        db = sqlite3.connect(where)
        try:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (1,)
            spans = db.execute("SELECT first_seq, last_seq FROM event_blocks ORDER BY 1").fetchall()
            # gapless 1..300, no sequence twice (how commits grouped them may differ)
            assert spans[0][0] == 1 and spans[-1][1] == 300
            assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(spans))
            raws = db.execute("SELECT raw_id FROM raw_records ORDER BY 1").fetchall()
            assert raws == [(1,), (101,), (201,)]
            # charged once: what its blocks and raw records take, nothing more
            stored = db.execute(
                "SELECT (SELECT sum(length(bodies)) FROM event_blocks)"
                " + (SELECT sum(length(record)) FROM raw_records)"
            ).fetchone()
            assert db.execute("SELECT bytes FROM sessions").fetchone() == stored
        finally:
            db.close()


# --------------------------------------------------------------------- a bug


async def test_an_operation_the_child_cannot_apply_breaks_the_journal_and_is_not_retried(
    tmp_path: Path,
) -> None:
    """An operation of a kind the writer does not know (a bug) makes the child report
    ``internal``: the journal is ``broken``, waits raise, the child is killed and not
    started again; what was committed before stays readable."""
    from agent_bridge.journal import JournalBroken, SessionRecord

    journal = Journal.open(str(tmp_path / "state"), writer="process")
    assert journal.writer_kind == "process"
    await journal.start(lambda: None)
    try:
        journal.add_session(SessionRecord("ses_b", "scripted", "1", "/w", "t", "2026", "2026"))
        journal.append("ses_b", 1, 1, b'{"sequence":1}', 0)
        await journal.committed_through(journal.mark())
        writer = journal._writer
        assert isinstance(writer, ProcessWriter) and writer.pid is not None
        child = writer.pid
        journal._submit((99, "ses_b"))  # no such operation
        with pytest.raises(JournalBroken), anyio.fail_after(30):
            await journal.committed_through(journal.mark())
        assert journal.health == "broken" and journal.fault == "internal"
        with anyio.fail_after(10):
            while os.path.exists(f"/proc/{child}") and _state(child) != "Z":
                await anyio.sleep(0.02)
        await anyio.sleep(0.3)
        assert writer.starts == 1  # not restarted
        assert await journal.read_events("ses_b", 1, 5) == [b'{"sequence":1}']
    finally:
        await journal.aclose()


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


# --------------------------------------------------------------------- the choice


def test_auto_is_the_thread_on_one_cpu_and_on_all_of_them() -> None:
    """``auto`` is the thread whatever CPUs this process may run on (measured on 1 and
    2, extrapolated beyond: docs/journal.md), checked by changing the affinity for real."""
    assert choose_writer("thread") == "thread" and choose_writer("process") == "process"
    mine = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, set(list(mine)[:1]))
        assert usable_cpus() == 1 and choose_writer("auto") == "thread"
        os.sched_setaffinity(0, mine)
        assert usable_cpus() == len(mine) and choose_writer("auto") == "thread"
    finally:
        os.sched_setaffinity(0, mine)


async def test_a_child_that_cannot_start_is_retried_with_backoff_until_one_can(
    tmp_path: Path,
) -> None:
    """Children that die at start (here: the journal's directory is not there for them)
    make the journal ``failing`` ``writer_exited`` and are started again with the
    writer's backoff; what was queued meanwhile waits, and is committed once a child
    starts; the child says why in one line, no traceback."""
    from agent_bridge.journal import SessionRecord

    journal = Journal.open(str(tmp_path / "state"), writer="process")
    writer = journal._writer
    assert isinstance(writer, ProcessWriter)
    real = writer._path
    writer._path = str(tmp_path / "gone" / "journal.sqlite3")
    err = tmp_path / "stderr"
    saved = os.dup(2)
    with open(err, "wb") as f:
        os.dup2(f.fileno(), 2)  # the children's stderr is the bridge's
    try:
        await journal.start(lambda: None)
        journal.add_session(SessionRecord("ses_s", "scripted", "1", "/w", "t", "2026", "2026"))
        journal.append("ses_s", 1, 1, b'{"sequence":1}', 0)
        ticket = journal.mark()
        with anyio.fail_after(30):
            while writer.starts < 3:
                await anyio.sleep(0.01)
        assert journal.health == "failing" and journal.fault == "writer_exited"
        assert journal.committed == 0
        writer._path = real
        with anyio.fail_after(30):
            await journal.committed_through(ticket)
        assert str(journal.health) == "ok" and journal.committed == 1  # (mypy narrowed it)
        assert await journal.read_events("ses_s", 1, 1) == [b'{"sequence":1}']
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        await journal.aclose()
    text = err.read_bytes()
    assert b"cannot open the journal" in text and b"Traceback" not in text


async def test_the_child_never_imports_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bridge runs in a user's workspace: a ``struct.py`` or ``sqlite3.py`` there is
    not what the writer process imports (``python -P``)."""
    from agent_bridge.journal import SessionRecord

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for name in ("struct.py", "sqlite3.py", "msgspec.py"):
        (workspace / name).write_text("raise SystemExit('imported from the workspace')\n")
    monkeypatch.chdir(workspace)
    journal = Journal.open(str(tmp_path / "state"), writer="process")
    await journal.start(lambda: None)
    try:
        journal.add_session(SessionRecord("ses_w", "scripted", "1", "/w", "t", "2026", "2026"))
        with anyio.fail_after(30):
            await journal.committed_through(journal.mark())
        assert journal.health == "ok"
        writer = journal._writer
        assert isinstance(writer, ProcessWriter) and writer.starts == 1
    finally:
        await journal.aclose()
