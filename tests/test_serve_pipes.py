"""``agent-bridge serve`` widens the pipes its host gave it (Linux ``F_SETPIPE_SZ``): a
real child on real pipes, the sizes read from the host's ends after ``initialize``."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys

import pytest

from agent_bridge.rpc.pipes import PIPE_BYTES

_GET = getattr(fcntl, "F_GETPIPE_SZ", None)


def _limit() -> int:
    with open("/proc/sys/fs/pipe-max-size") as f:
        return int(f.read())


@pytest.mark.skipif(_GET is None, reason="F_GETPIPE_SZ is Linux only")
def test_serve_widens_stdin_and_stdout_pipes() -> None:
    assert _GET is not None
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "serve",
            "--state-dir",
            ":memory:",
            "--framing",
            "newline",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        before_in = fcntl.fcntl(proc.stdin.fileno(), _GET)
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientInfo": {"name": "pipes"}},
        }
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and "result" in reply
        # the bridge set both sizes before it answered (over the system's limit it
        # cannot, and leaves them as they were)
        want = PIPE_BYTES if _limit() >= PIPE_BYTES else before_in
        assert fcntl.fcntl(proc.stdin.fileno(), _GET) == want
        assert fcntl.fcntl(proc.stdout.fileno(), _GET) == want
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
