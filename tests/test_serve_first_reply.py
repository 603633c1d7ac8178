"""``agent-bridge serve`` answers a lone ``initialize`` before loading the rest
(:mod:`agent_bridge.frontends.first_reply`): real children on real pipes.

The same request is also sent together with a ``bridge/ping`` in one write, which the
first-reply path never answers (more than one message), so the connection does: the two
replies must be the same bytes, for accepted and refused ``initialize`` alike, in each
framing.  No timing is asserted.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

from agent_bridge.rpc.framing import encode_frame

_PING = {"jsonrpc": "2.0", "id": 2, "method": "bridge/ping", "params": {"data": "d"}}


def _init(version: int = 1, **capabilities: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "init-1",
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "clientInfo": {"name": "first-reply"},
            "capabilities": capabilities,
        },
    }


_EARLY = b"initialize answered before the rest of the bridge was loaded"


def _spawn(state: Path, framing: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "serve",
            "--state-dir",
            str(state),
            "--framing",
            framing,
            "--log-level",
            "debug",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _read_frame(out: IO[bytes], wire: str) -> bytes:
    """Return the next frame's bytes exactly as written (headers included)."""
    if wire == "newline":
        return out.readline()
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = out.read(1)
        assert byte, f"EOF in a header: {head!r}"
        head += byte
    length = int(head.split(b":", 1)[1].split(b"\r\n", 1)[0])
    return head + out.read(length)


def _first_reply(
    state: Path, framing: str, wire: str, init: bytes, ping: bytes, together: bool
) -> tuple[bytes, bytes, bool]:
    """Write ``init`` (with ``ping`` in the same write if ``together``, else after the
    first reply); return the first reply frame, the ping's reply frame and whether the
    bridge logged that it answered before loading the rest."""
    proc = _spawn(state, framing)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(init + ping if together else init)
        proc.stdin.flush()
        first = _read_frame(proc.stdout, wire)
        if not together:
            proc.stdin.write(ping)
            proc.stdin.flush()
        pong = _read_frame(proc.stdout, wire)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
        log = proc.stderr.read()
        proc.stderr.close()
    return first, pong, _EARLY in log


@pytest.mark.parametrize(
    ("framing", "wire"),
    [
        ("content-length", "content-length"),
        ("newline", "newline"),
        ("auto", "content-length"),
        ("auto", "newline"),
    ],
)
@pytest.mark.parametrize(
    "init",
    [_init(), _init(interactions={"approval": True}, experimental=["nope"]), _init(version=99)],
    ids=["plain", "capabilities", "unsupported-version"],
)
def test_a_lone_initialize_gets_the_reply_the_connection_gives(
    tmp_path: Path, framing: str, wire: str, init: dict[str, Any]
) -> None:
    frame = encode_frame(wire, json.dumps(init).encode())  # type: ignore[arg-type]
    ping = encode_frame(wire, json.dumps(_PING).encode())  # type: ignore[arg-type]
    alone, ping_after_alone, early = _first_reply(tmp_path / "a", framing, wire, frame, ping, False)
    together, ping_after_together, late_early = _first_reply(
        tmp_path / "b", framing, wire, frame, ping, True
    )
    assert alone == together
    assert not late_early  # two messages in the first read: the connection answered
    body = json.loads(alone.split(b"\r\n\r\n", 1)[-1])
    assert body["id"] == "init-1"
    # only an initialize the front-end accepts is answered early
    assert early == (init["params"]["protocolVersion"] == 1)
    if init["params"]["protocolVersion"] == 1:
        assert body["result"]["capabilities"]["durableHistory"] is True
        # initialized: the ping is served, not refused as not_initialized
        assert ping_after_alone == ping_after_together
        assert json.loads(ping_after_alone.split(b"\r\n\r\n", 1)[-1])["result"] == {"data": "d"}
    else:
        assert body["error"]["data"]["code"] == "unsupported_protocol_version"


def test_sigterm_before_any_input_exits_zero(tmp_path: Path) -> None:
    proc = _spawn(tmp_path / "s", "auto")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        time.sleep(1.0)  # let it reach its first read (if it has not, it still exits 0)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == b""
    finally:
        proc.stdin.close()
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()


def test_sigterm_right_after_the_first_reply_exits_zero(tmp_path: Path) -> None:
    """The signal arrives while the rest of the bridge is loading."""
    proc = _spawn(tmp_path / "t", "newline")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(_init()).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == "init-1"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.stdin.close()
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()


@pytest.mark.parametrize("writes", [True, False], ids=["initialize-written", "nothing-written"])
def test_a_damaged_journal_stops_the_bridge_before_any_reply(tmp_path: Path, writes: bool) -> None:
    """A journal that cannot be opened stops the bridge with no reply, whether the host
    has written its initialize or nothing yet (stdin open)."""
    state = tmp_path / "d"
    state.mkdir()
    (state / "journal.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    proc = _spawn(state, "newline")
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        if writes:
            proc.stdin.write(json.dumps(_init()).encode() + b"\n")
            proc.stdin.flush()
        assert proc.wait(timeout=60) == 1
        assert proc.stdout.read() == b""
        assert b"journal" in proc.stderr.read()
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()


def test_what_serve_runs_before_its_first_reply_leaves_the_rest_unloaded(tmp_path: Path) -> None:
    """``serve`` opens its SQLite journal and loads the first-reply path before it answers
    ``initialize``; none of that imports the memory history, the process writer, paging,
    settling, forks, raw records, zlib, bisect or ``dataclasses`` (each needed later, if
    at all: ``issues show 34``)."""
    code = (
        "import sys\n"
        "from agent_bridge.commands import boot\n"
        f"history = boot.open_journal('t', {str(tmp_path / 'state')!r})\n"
        "assert history is not None\n"
        "import agent_bridge.frontends.first_reply\n"
        "late = ('agent_bridge.journal.memory', 'agent_bridge.journal.writer_process', "
        "'agent_bridge.journal.writer_frames', 'agent_bridge.journal.paging', "
        "'agent_bridge.journal.settle', 'agent_bridge.journal.forks', "
        "'agent_bridge.journal.raw', 'zlib', 'bisect', 'dataclasses', 'anyio', 'logging')\n"
        "loaded = [m for m in late if m in sys.modules]\n"
        "import anyio\n"
        "anyio.run(history.aclose)\n"
        "assert not loaded, loaded\n"
        "from agent_bridge.journal import MemoryHistory, page_range, settle\n"
        "assert callable(page_range) and callable(settle)\n"
        "assert MemoryHistory(1024).durable is False\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
