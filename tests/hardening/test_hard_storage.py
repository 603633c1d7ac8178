"""Storage faults against real bridge processes: a full disk, damaged journals, racing
first opens (issue 11, items 1, 3 and 6).

The disk-full cases put the state directory on a real small filesystem (a tmpfs mounted
for the test: this needs root, as in CI; elsewhere they skip loudly, and in CI,
``CI=true``, a filesystem that cannot be mounted is a failure) and fill it: before a run,
in the middle of one, and for longer than ``--journal-fault-limit``.
The damaged-journal cases damage real files written by a real bridge.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NoReturn

import anyio
import pytest
from bridge_client import ROOT, BridgeProcess, Message
from test_journal_e2e import bridge_on, create, read_all, run, serve, terminal_of
from wire_validation import WireValidator

STREAM = {"type": "stream", "count": 20_000, "text": "x" * 40}
#: run 1 echoes (history before the disk fills), run 2 streams until the disk is full
TWO_RUNS = {"script": {"runs": [{"steps": [{"type": "echo"}]}, {"steps": [STREAM]}]}}


def missing(reason: str) -> NoReturn:
    """A capability the test needs is missing: a failure in CI (``CI=true``), else a loud
    skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " [CI=true: a failure, not a skip]")
    pytest.skip("SKIPPED LOUDLY: " + reason + " [set CI=true to make this a failure]")


@contextlib.contextmanager
def small_fs(size: str = "24m") -> Iterator[Path]:
    """A freshly mounted tmpfs of ``size``; skips (loudly) where mounting is not allowed."""
    where = Path(tempfile.mkdtemp(prefix="bridge-smallfs-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        where.rmdir()
        missing(
            "cannot mount a small tmpfs here (needs root, as in CI): "
            + done.stderr.decode(errors="replace").strip()
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        with contextlib.suppress(OSError):
            where.rmdir()


def fill(where: Path) -> Path:
    """Fill the filesystem at ``where`` to the last byte; return the filler file."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size) == size:
                    pass
    finally:
        os.close(fd)
    return filler


def journal_events(bridge: BridgeProcess, session: str) -> list[Message]:
    return [
        m["params"]
        for m in bridge.received
        if m.get("method") == "event" and m["params"]["sessionId"] == session
    ]


# --------------------------------------------------------------------- disk full


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_disk_full_holds_the_run_tells_the_host_refuses_new_work_and_resumes(
    writer: str,
) -> None:
    """Also with the journal's writer process (``--journal-writer process``): the same
    hold, report and resume, the fault met by the child."""
    with small_fs() as mnt:
        state = mnt / "state"
        async with bridge_on(state, "--journal-writer", writer) as bridge:
            session = await create(bridge, options=TWO_RUNS)
            await run(bridge, session, "warm up")  # the journal holds history already
            filler = fill(mnt)
            # answered only once run.started is durable: after space returns
            start_id = await bridge.send_request(
                "run/start", {"sessionId": session, "input": {"text": "fill it"}}
            )
            status = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status", timeout=30
            )
            assert status["params"]["state"] == "failing"
            assert status["params"]["reason"] == "disk_full"
            assert "sequence" not in status["params"]
            # new work is refused, retryably, with a typed error
            refused = await bridge.call("session/create", {"provider": "scripted"})
            assert refused["error"]["data"]["code"] == "journal_failing"
            assert refused["error"]["data"]["retryable"] is True
            # the provider is held back: no event arrives while the journal cannot commit
            seen = len(journal_events(bridge, session))
            await anyio.sleep(1.0)
            assert len(journal_events(bridge, session)) == seen
            filler.unlink()  # space returns
            ok = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status" and m["params"]["state"] == "ok",
                timeout=30,
            )
            assert ok["params"].get("reason") is None
            started = (await bridge.response(start_id, timeout=30))["result"]
            end = await terminal_of(bridge, started["runId"], timeout=60)
            assert end["payload"]["type"] == "run.completed"
            second = await create(bridge)  # accepted again, no restart
            host_saw = journal_events(bridge, session)
        assert [e["sequence"] for e in host_saw] == list(range(1, len(host_saw) + 1))
        async with bridge_on(state) as again:
            stored = await read_all(again, session)
            assert stored[: len(host_saw)] == host_saw  # every event seen is durable, the same
            listed = await again.result("session/list", {})
            assert second in {s["sessionId"] for s in listed["sessions"]}
        assert b"Traceback" not in bridge.stderr


@contextlib.asynccontextmanager
async def streaming_bridge(state: Path, *args: str) -> AsyncIterator[BridgeProcess]:
    """A bridge on ``state`` for runs of tens of thousands of events: the host does not
    check every message against the schema (the tests check the ones that matter with
    :data:`CONTRACT`)."""
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess(
            "newline", args=args, env={"AGENT_BRIDGE_STATE_DIR": str(state)}, validate=False
        )
        await bridge.start(tg)
        try:
            await bridge.initialize()
            yield bridge
        finally:
            with anyio.CancelScope(shield=True):
                await bridge.stop()
            tg.cancel_scope.cancel()


CONTRACT = WireValidator()


def fault_status(message: Message, reason: str) -> None:
    """``message`` is a valid ``journal/status`` saying the journal fails for ``reason``,
    out of band (no sequence)."""
    CONTRACT.validate("JournalStatusNotification", message)
    assert message["params"]["state"] == "failing", message
    assert message["params"]["reason"] == reason, message
    assert "sequence" not in message["params"]


def refused_retryably(reply: Message) -> None:
    """``reply`` is the typed, retryable ``journal_failing`` error."""
    CONTRACT.validate("JsonRpcErrorResponse", reply)
    assert reply["error"]["data"]["code"] == "journal_failing", reply
    assert reply["error"]["data"]["retryable"] is True


async def until_streaming(bridge: BridgeProcess, session: str, sequence: int) -> None:
    await bridge.wait_for(
        lambda m: (
            m.get("method") == "event"
            and m["params"]["sessionId"] == session
            and m["params"]["sequence"] >= sequence
        ),
        timeout=30,
    )


async def held(bridge: BridgeProcess, session: str, seconds: float = 1.0) -> int:
    """Assert no event of ``session`` reaches the host for ``seconds``; return how many
    it has seen."""
    seen = len(journal_events(bridge, session))
    await anyio.sleep(seconds)
    assert len(journal_events(bridge, session)) == seen, "an event passed a failing journal"
    return seen


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_disk_fills_mid_run_the_run_resumes_completes_and_a_restart_has_every_event(
    writer: str,
) -> None:
    """The disk fills while a run streams: the host is told, the stream is held, new
    work is refused retryably; space freed, the same run resumes and completes without a
    restart; the next bridge reads back every event the host saw, same sequence numbers.
    Events offered by the provider = committed = seen by the host.  With either journal
    writer (the thread, or its own process, ``--journal-writer process``), compressing
    its blocks with Zstandard when the disk fills."""
    count = 60_000
    script = {"runs": [{"steps": [{"type": "stream", "count": count, "text": "y" * 40}]}]}
    with small_fs() as mnt:
        state = mnt / "state"
        async with streaming_bridge(state, "--journal-writer", writer) as bridge:
            session = await create(bridge, options={"script": script})
            started = await bridge.result(
                "run/start", {"sessionId": session, "input": {"text": "go"}}
            )
            await until_streaming(bridge, session, 500)
            filler = fill(mnt)
            status = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status", timeout=60
            )
            fault_status(status, "disk_full")
            refused_retryably(await bridge.call("session/create", {"provider": "scripted"}))
            seen = await held(bridge, session)
            assert 500 <= seen < count, "the disk did not fill in the middle of the run"
            filler.unlink()
            ok = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status" and m["params"]["state"] == "ok",
                timeout=30,
            )
            CONTRACT.validate("JournalStatusNotification", ok)
            end = await terminal_of(bridge, started["runId"], timeout=90)
            assert end["payload"]["type"] == "run.completed"
            await create(bridge)  # new work is accepted again, no restart
            host_saw = journal_events(bridge, session)
        assert [e["sequence"] for e in host_saw] == list(range(1, len(host_saw) + 1))
        deltas = [e for e in host_saw if e["payload"]["type"] == "text.delta"]
        assert len(deltas) == count  # offered = seen
        async with streaming_bridge(state) as again:
            stored = await read_all(again, session)
        assert stored[: len(host_saw)] == host_saw  # committed = seen, same sequences
        assert [e["payload"]["type"] for e in stored[len(host_saw) :]] == ["session.closed"]
        assert b"Traceback" not in bridge.stderr


async def test_a_fault_past_the_limit_ends_the_run_retryably_once_that_can_be_recorded() -> None:
    """``--journal-fault-limit 1``: a run held by a full disk for longer ends with
    ``run.failed`` ``journal_failing`` (retryable) -- delivered only once space returns
    and it is committed, after every event the host saw; the provider stops, and the
    session takes the next run."""
    script = {
        "runs": [
            {"steps": [{"type": "stream", "count": 1_000_000, "text": "z" * 40}]},
            {"steps": [{"type": "echo"}]},
        ]
    }
    with small_fs() as mnt:
        state = mnt / "state"
        async with streaming_bridge(state, "--journal-fault-limit", "1") as bridge:
            session = await create(bridge, options={"script": script})
            started = await bridge.result(
                "run/start", {"sessionId": session, "input": {"text": "go"}}
            )
            await until_streaming(bridge, session, 500)
            filler = fill(mnt)
            status = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status", timeout=60
            )
            fault_status(status, "disk_full")
            # past the limit, the run's end cannot be recorded yet: nothing is delivered
            await held(bridge, session, 2.5)
            filler.unlink()
            end = await terminal_of(bridge, started["runId"], timeout=60)
            assert end["payload"] == {
                "type": "run.failed",
                "error": {
                    "code": "journal_failing",
                    "message": end["payload"]["error"]["message"],
                    "retryable": True,
                },
            }
            CONTRACT.validate("EventEnvelope", end)
            host_saw = journal_events(bridge, session)
            assert host_saw[-1] == end
            streamed = len(host_saw)
            await held(bridge, session, 0.5)  # the provider was stopped
            assert len(journal_events(bridge, session)) == streamed
            second = await run(bridge, session, "again")
            assert second["payload"]["type"] == "run.completed"
            host_saw = journal_events(bridge, session)
        assert [e["sequence"] for e in host_saw] == list(range(1, len(host_saw) + 1))
        async with streaming_bridge(state) as again:
            stored = await read_all(again, session)
        assert stored[: len(host_saw)] == host_saw
        stderr = bridge.stderr.decode(errors="replace")
        assert "Traceback" not in stderr
        assert stderr.count("provider emitted after the run ended") <= 1  # no log flood


async def test_attach_close_respond_and_delete_answer_while_the_disk_is_full() -> None:
    """While the journal fails, commands that cannot become durable answer at once:
    ``session/attach`` replays what is committed (and does not wait for the rest),
    ``interaction/respond``, ``session/close`` and ``session/delete`` answer the
    retryable ``journal_failing`` and change nothing; once space returns they work."""
    allow = {"kind": "approval", "decision": "allow"}
    big = {"steps": [{"type": "stream", "count": 1_000_000, "text": "q" * 40}]}
    with small_fs() as mnt:
        state = mnt / "state"
        async with streaming_bridge(state) as bridge:
            asking = await create(bridge, [{"type": "approval", "title": "go on?"}])
            started = await bridge.result(
                "run/start", {"sessionId": asking, "input": {"text": "x"}}
            )
            ask = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
            interaction = ask["params"]["interactionId"]
            streaming = await create(bridge, options={"script": big})
            await bridge.result("run/start", {"sessionId": streaming, "input": {"text": "go"}})
            await until_streaming(bridge, streaming, 500)
            filler = fill(mnt)
            status = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status", timeout=60
            )
            fault_status(status, "disk_full")
            seen = len(journal_events(bridge, asking))
            attached = await bridge.call("session/attach", {"sessionId": asking, "after": 0})
            assert attached["result"]["lastSequence"] == seen
            responded = await bridge.call(
                "interaction/respond", {"interactionId": interaction, "answer": allow}
            )
            refused_retryably(responded)
            refused_retryably(await bridge.call("session/close", {"sessionId": asking}))
            refused_retryably(await bridge.call("session/delete", {"sessionId": asking}))
            # all of that while the disk was still full
            assert not any(
                m.get("method") == "journal/status" and m["params"]["state"] == "ok"
                for m in bridge.received
            )
            filler.unlink()
            await bridge.wait_for(
                lambda m: m.get("method") == "journal/status" and m["params"]["state"] == "ok",
                timeout=30,
            )
            applied = await bridge.result(
                "interaction/respond", {"interactionId": interaction, "answer": allow}
            )
            assert applied["status"] == "applied"  # it was still pending
            end = await terminal_of(bridge, started["runId"])
            assert end["payload"]["type"] == "run.completed"
            closed = await bridge.result("session/close", {"sessionId": asking})
            assert closed["session"]["state"] == "closed"
        assert b"Traceback" not in bridge.stderr


@contextlib.contextmanager
def ext4_fs(size_mb: int = 48) -> Iterator[tuple[Path, Path, str]]:
    """A freshly made ext4 image mounted through a loop device with
    ``errors=remount-ro``; yield ``(mount point, image, device name)``.  Missing tools
    or capabilities: :func:`missing`."""
    for tool in ("mkfs.ext4", "findmnt"):
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed (e2fsprogs, util-linux)")
    where = Path(tempfile.mkdtemp(prefix="bridge-ext4-"))
    image = Path(tempfile.mkdtemp(prefix="bridge-ext4-img-")) / "fs.img"
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True, check=False)
    done = subprocess.run(
        ["mount", "-o", "loop,errors=remount-ro", str(image), str(where)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0 or done.returncode != 0:
        shutil.rmtree(image.parent, ignore_errors=True)
        where.rmdir()
        missing(
            "cannot make and loop-mount an ext4 image here (needs root and loop devices): "
            + (made.stderr + done.stderr).decode(errors="replace").strip()
        )
    try:
        source = subprocess.run(
            ["findmnt", "-no", "SOURCE", str(where)], capture_output=True, text=True, check=True
        ).stdout.strip()
        yield where, image, os.path.basename(source)
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            where.rmdir()
        shutil.rmtree(image.parent, ignore_errors=True)


def remount_read_only(device: str, where: Path) -> None:
    """Make ext4 remount the filesystem read-only under the bridge's open files, as it
    does on an error with ``errors=remount-ro`` (an administrator's ``mount -o
    remount,ro`` is refused while files are open for writing: ``mount point is busy``)."""
    trigger = Path("/sys/fs/ext4") / device / "trigger_fs_error"
    if not trigger.exists():
        missing(f"{trigger} does not exist (a kernel without ext4's error trigger)")
    trigger.write_text("agent-bridge test: remount read-only")
    with pytest.raises(OSError) as refused:  # read-only now, the bridge's files open
        os.close(os.open(where / "probe", os.O_WRONLY | os.O_CREAT, 0o600))
    assert refused.value.errno == errno.EROFS


async def test_a_read_only_remount_holds_the_run_tells_the_host_and_refuses_new_work() -> None:
    """The filesystem holding the journal goes read-only under a streaming run: the
    host is told (``read_only``), the stream is held (nothing more reaches the host), new
    work is refused retryably, and the run's end past the fault limit is not delivered
    (it cannot be recorded); the bridge then exits when its host goes away.

    What is on the disk afterwards is not checked: after ext4 remounted itself read-only
    on an error, an unmount, ``e2fsck`` and mount were seen to lose commits that had been
    fsynced and delivered (2 of about 14 runs under load; see docs/journal.md), which is
    the filesystem's doing, not something the bridge can prevent.  What the bridge
    promises about the disk is tested on a filesystem that keeps what it acknowledged
    (the disk-full tests above)."""
    script = {"runs": [{"steps": [{"type": "stream", "count": 1_000_000, "text": "r" * 40}]}]}
    with ext4_fs() as (mnt, _image, device):
        state = mnt / "state"
        args = ("--journal-fault-limit", "1", "--journal-sync", "full")
        async with streaming_bridge(state, *args) as bridge:
            session = await create(bridge, options={"script": script})
            started = await bridge.result(
                "run/start", {"sessionId": session, "input": {"text": "go"}}
            )
            await until_streaming(bridge, session, 500)
            remount_read_only(device, mnt)
            status = await bridge.wait_for(
                lambda m: m.get("method") == "journal/status", timeout=60
            )
            fault_status(status, "read_only")
            refused_retryably(await bridge.call("session/create", {"provider": "scripted"}))
            await held(bridge, session, 2.5)  # past the 1 s limit: the run's end is not sent
            host_saw = journal_events(bridge, session)
            assert all(e.get("runId") == started["runId"] for e in host_saw)
            assert host_saw[-1]["payload"]["type"] == "text.delta"
            assert [e["sequence"] for e in host_saw] == list(range(1, len(host_saw) + 1))
            await bridge.close_stdin()
            assert await bridge.wait_exit(30) == 0  # it exits though it cannot record that
        assert b"Traceback" not in bridge.stderr


# --------------------------------------------------------------------- damaged journals


async def _history(state: Path) -> str:
    async with bridge_on(state) as bridge:
        session = await create(bridge, [{"type": "stream", "count": 3000, "text": "abc"}])
        await run(bridge, session)
    return session


def _assert_one_line_refusal(done: subprocess.CompletedProcess[bytes], *words: str) -> str:
    assert done.returncode != 0
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("agent-bridge: ")
    for word in words:
        assert word in lines[0], lines[0]
    assert done.stdout == b""
    return lines[0]


async def test_damaged_flipped_bytes_in_a_page_refuse_start_untouched(tmp_path: Path) -> None:
    state = tmp_path / "state"
    await _history(state)
    path = state / "journal.sqlite3"
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for offset in range(page, page + 12):  # page 2's b-tree header
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    line = _assert_one_line_refusal(serve(state), "damaged", str(path))
    assert "recover" in line
    assert path.read_bytes() == bytes(data)


async def test_damaged_flipped_bytes_in_an_event_block_answer_history_corrupt(
    tmp_path: Path,
) -> None:
    import sqlite3

    state = tmp_path / "state"
    session = await _history(state)
    path = state / "journal.sqlite3"
    conn = sqlite3.connect(path)
    blobs = [
        bytes(row[0])
        for row in conn.execute("SELECT bodies FROM event_blocks WHERE codec != 0")
        if len(row[0]) >= 64
    ]
    conn.close()
    data = bytearray(path.read_bytes())
    # every copy the file holds (a stale one may sit in a free page): damage them all
    copies = []
    for blob in blobs:  # every compressed block: whichever the read meets is damaged
        at = data.find(blob[:64])
        while at > 0:
            copies.append(at)
            at = data.find(blob[:64], at + 1)
    assert copies
    for at in copies:
        for offset in range(at + 16, at + 48):
            data[offset] ^= 0x5A  # inside a compressed frame: its checksum no longer holds
    path.write_bytes(bytes(data))
    async with bridge_on(state) as bridge:
        reply = await bridge.call("events/read", {"sessionId": session, "after": 0, "limit": 1000})
        assert reply["error"]["data"]["code"] == "history_corrupt", reply
        status = await bridge.wait_for(lambda m: m.get("method") == "journal/status")
        assert status["params"]["state"] == "corrupt"
        refused = await bridge.call("session/create", {"provider": "scripted"})
        assert refused["error"]["data"]["code"] == "history_corrupt"
        listed = await bridge.call("session/list", {})
        assert "error" not in listed or listed["error"]["data"]["code"] == "history_corrupt"
        assert all(m.get("error", {}).get("code") != -32603 for m in bridge.received)
    assert b"Traceback" not in bridge.stderr
    assert b"DecodeError" not in bridge.stderr


async def test_damaged_truncated_journal_refuses_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    await _history(state)
    path = state / "journal.sqlite3"
    size = path.stat().st_size
    os.truncate(path, size // 2 + 100)
    kept = path.read_bytes()
    _assert_one_line_refusal(serve(state), "damaged", str(path))
    assert path.read_bytes() == kept


async def test_damaged_zero_byte_journal_where_history_existed_refuses_start(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    await _history(state)
    path = state / "journal.sqlite3"
    os.truncate(path, 0)
    _assert_one_line_refusal(serve(state), "empty", str(path))
    assert path.stat().st_size == 0


def test_zero_byte_journal_in_a_fresh_state_dir_is_a_new_journal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "journal.sqlite3").write_bytes(b"")
    done = serve(state)
    assert done.returncode == 0, done.stderr
    assert (state / "journal.created").exists()


async def test_damaged_missing_wal_after_a_crash_refuses_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess("newline", env={"AGENT_BRIDGE_STATE_DIR": str(state)})
        await bridge.start(tg)
        await bridge.initialize()
        await create(bridge)
        assert bridge.proc is not None
        bridge.proc.send_signal(signal.SIGKILL)
        await bridge.proc.wait()
        await bridge.stop()
        tg.cancel_scope.cancel()
    path = state / "journal.sqlite3"
    assert Path(str(path) + "-wal").exists()
    os.unlink(str(path) + "-wal")
    _assert_one_line_refusal(serve(state), "write-ahead log", str(path))


# --------------------------------------------------------------------- concurrent first open

_OPEN = (
    "import sys; from agent_bridge.journal.journal import Journal\n"
    "from agent_bridge.journal.errors import JournalError\n"
    "try:\n    j = Journal.open(sys.argv[1])\n"
    "except JournalError as e:\n    print(e); sys.exit(3)\n"
    "j._close_sync()\n"
)


def test_concurrent_first_opens_of_a_fresh_state_dir_never_refuse(tmp_path: Path) -> None:
    failures: list[Any] = []
    for attempt in range(25):
        state = tmp_path / f"s{attempt}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN, str(state)],
                cwd=ROOT,
                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for _ in range(3)
        ]
        for proc in procs:
            out, _ = proc.communicate(timeout=60)
            if proc.returncode != 0:
                failures.append((attempt, proc.returncode, out))
    assert not failures, failures


@pytest.mark.parametrize(
    ("name", "make", "what"),
    [
        ("journal.sqlite3", "fifo", "named pipe"),
        ("journal.sqlite3-wal", "fifo", "named pipe"),
        ("journal.sqlite3", "devnull", "device"),
        ("journal.sqlite3", "dir", "directory"),
    ],
)
def test_a_journal_that_is_not_a_file_refuses_start_at_once(
    tmp_path: Path, name: str, make: str, what: str
) -> None:
    """A named pipe in the journal's place (or its -wal's) hung ``serve`` at start for
    ever, silent (opening a pipe waits for a writer); a link to ``/dev/null`` was
    reported as an I/O error of the disk.  Each is refused at once, in one line naming
    the file and what it is (an outside check, session 11)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    path = state / name
    if make == "fifo":
        os.mkfifo(path)
    elif make == "devnull":
        path.symlink_to("/dev/null")
    else:
        path.mkdir()
    line = _assert_one_line_refusal(serve(state, timeout=15), str(path), what)
    assert "Traceback" not in line
