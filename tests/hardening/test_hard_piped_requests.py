"""A harness that pipes a file of requests into ``serve`` and closes its stdin (an outside
check, session 12).

At the host's EOF the connection cancelled every request still in flight, so
``printf '<initialize>\\n<session/create>\\n<session/list>\\n' | agent-bridge serve`` printed
the ``initialize`` reply and nothing else: each later request was read, started and
dropped unanswered.  Now the requests in flight at EOF get ``EOF_GRACE`` seconds to answer
(then the sessions close as before), so every request piped in gets exactly one reply.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_bridge.rpc.framing import FramingKind, encode_frame, make_framer


def _frame(message: dict[str, object], framing: FramingKind) -> bytes:
    return encode_frame(framing, json.dumps(message).encode())


def _replies(out: bytes, framing: FramingKind) -> list[dict[str, object]]:
    """The messages in ``out``, read by the bridge's own framer."""
    framer = make_framer(framing)
    frames = [*framer.feed(out), *framer.eof()]
    assert all(isinstance(f, bytes) for f in frames), frames
    return [json.loads(f) for f in frames if isinstance(f, bytes)]


@pytest.mark.parametrize(
    ("command", "framing"),
    [("serve", "newline"), ("serve", "content-length"), ("connect", "newline")],
)
def test_every_request_piped_in_before_eof_is_answered_once(
    tmp_path: Path, command: str, framing: FramingKind
) -> None:
    """Through ``serve`` and through ``connect`` (its daemon's host connection sees the
    EOF the same way)."""
    requests: list[dict[str, object]] = [
        {
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientInfo": {"name": "pipe"}, "capabilities": {}},
        },
        {"method": "initialized", "params": {}},
        {"id": 2, "method": "session/create", "params": {"provider": "scripted"}},
        {"id": 3, "method": "session/create", "params": {"provider": "scripted", "title": "b"}},
        {"id": 4, "method": "session/list", "params": {}},
        {"id": 5, "method": "providers/list", "params": {}},
        {"id": 6, "method": "bridge/ping", "params": {}},
        {"id": 7, "method": "no/such/method", "params": {}},
        {"id": 8, "method": "events/read", "params": {"sessionId": "ses_unknown"}},
    ]
    piped = b"".join(_frame({"jsonrpc": "2.0", **r}, framing) for r in requests)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path)}
    bridge = [sys.executable, "-m", "agent_bridge"]
    args = ["--framing", framing] if command == "serve" else ["--state-dir", str(tmp_path / "s")]
    started = time.monotonic()
    try:
        done = subprocess.run(
            [*bridge, command, *args],
            input=piped,
            capture_output=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
    finally:
        if command == "connect":
            stop = [*bridge, "daemon", "--state-dir", str(tmp_path / "s"), "--stop"]
            subprocess.run(stop, capture_output=True, timeout=60, env=env)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    replies = [m for m in _replies(done.stdout, framing) if "id" in m]
    assert sorted(int(str(m["id"])) for m in replies) == [1, 2, 3, 4, 5, 6, 7, 8], replies
    by_id = {m["id"]: m for m in replies}
    assert "result" in by_id[2] and "result" in by_id[3]
    assert "error" in by_id[7] and "error" in by_id[8]
    assert b"Traceback" not in done.stderr
    assert took < 30, took  # nothing waited for the grace: every request had answered


def test_connect_moves_a_large_daemon_log_aside_before_starting_a_daemon(tmp_path: Path) -> None:
    """The log of the daemons ``connect`` starts grew without a bound (each daemon
    appended to it); one over ``LOG_KEEP_BYTES`` is moved to ``<log>.1`` when the next
    daemon starts, so at most about twice that is kept."""
    from agent_bridge.daemon.paths import daemon_paths
    from agent_bridge.daemon.relay import LOG_KEEP_BYTES

    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path)}
    state = str(tmp_path / "s")
    paths = daemon_paths(state, env)
    Path(paths.directory).mkdir(parents=True, mode=0o700, exist_ok=True)
    old = b"an old daemon's line\n" * (LOG_KEEP_BYTES // 21 + 1)
    Path(paths.log).write_bytes(old)
    bridge = [sys.executable, "-m", "agent_bridge"]
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientInfo": {"name": "pipe"}, "capabilities": {}},
    }
    try:
        done = subprocess.run(
            [*bridge, "connect", "--state-dir", state],
            input=_frame(hello, "newline"),
            capture_output=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
    finally:
        stop = [*bridge, "daemon", "--state-dir", state, "--stop"]
        subprocess.run(stop, capture_output=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(paths.log + ".1").read_bytes() == old
    assert Path(paths.log).stat().st_size < LOG_KEEP_BYTES // 8
