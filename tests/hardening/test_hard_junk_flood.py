"""A flood of junk on stdin never makes the bridge deaf to signals (issue 30, item 6).

``serve < /dev/zero`` used to spin a core and ignore SIGINT and SIGTERM (only SIGKILL
ended it): stdin was always readable, so the reader never waited, and the event loop
never ran the signal handlers' task.  The rule: every read yields to the event loop, so
input that never stops costs CPU per byte (``bench/soak.py``'s junk-flood phase measures
it) and nothing else.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from acp_agent_support import BRIDGE


@pytest.mark.parametrize("command", ["serve", "acp"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_endless_junk_stdin_still_stops_at_a_signal(
    tmp_path: Path, command: str, sig: signal.Signals
) -> None:
    args = [BRIDGE, command, "--state-dir", str(tmp_path / "state")]
    if command == "acp":
        args += ["--provider", "scripted"]
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.Popen(args, stdin=zero, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while _read_bytes(proc.pid) < 16 << 20:  # well into the flood, the runtime serving
            assert proc.poll() is None, "the bridge exited on junk"
            assert time.monotonic() < deadline, "the bridge does not read its stdin"
            time.sleep(0.2)
        proc.send_signal(sig)
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        stderr = proc.stderr.read()
        proc.stderr.close()
    assert code in (0, 130, -sig, 128 + sig), (code, stderr[-2000:])
    assert b"Traceback" not in stderr


def _read_bytes(pid: int) -> int:
    """How many bytes process ``pid`` has read so far."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/PID/io")


@pytest.mark.parametrize("command", ["serve", "acp"])
def test_newline_garbage_gets_one_parse_error_a_read_not_one_a_line(
    tmp_path: Path, command: str
) -> None:
    """Issue 30, item 6, looked for again: 64 MiB of newline-framed garbage drew one
    ``-32700`` reply per line (98 MB of output).  Now a read's unparseable lines get one
    reply: the output stays small, a well-formed request after the flood is answered,
    and a line typed on its own (its own read) is still answered."""
    import json
    import threading

    args = [BRIDGE, command, "--state-dir", str(tmp_path / "state")]
    if command == "acp":
        args += ["--provider", "scripted"]
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    stdout = proc.stdout

    def drain() -> None:
        for data in iter(lambda: stdout.read(1 << 16), b""):
            out.extend(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        line = b'{"jsonrpc":"2.0","id":1,"method":' + b"x" * 40 + b"\n"  # 74 bytes, not JSON
        chunk = line * ((1 << 20) // len(line))
        for _ in range(16):  # 16 MiB: 226,000 lines
            proc.stdin.write(chunk)
        proc.stdin.flush()
        time.sleep(0.5)
        proc.stdin.write(b"not json, typed\n")  # a read of its own: answered
        proc.stdin.flush()
        time.sleep(0.5)
        ping = {"jsonrpc": "2.0", "id": "after", "method": "initialize", "params": {}}
        if command == "acp":
            ping["params"] = {"protocolVersion": 1}
        else:
            ping["params"] = {"protocolVersion": 1, "clientInfo": {"name": "t"}}
        proc.stdin.write(json.dumps(ping).encode() + b"\n")
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(10)
        stdout.close()
        stderr = proc.stderr.read()
        proc.stderr.close()
    replies = [json.loads(r) for r in bytes(out).splitlines() if r.strip()]
    parse_errors = [r for r in replies if r.get("error", {}).get("code") == -32700]
    assert len(out) < 1 << 20, f"{len(out)} bytes of replies for 16 MiB of garbage"
    assert 2 <= len(parse_errors) <= 16 * 8 + 1  # at most one a read (64 KiB reads or more)
    assert all(r["id"] is None and r["error"]["data"]["reason"] for r in parse_errors)
    assert any(r.get("id") == "after" for r in replies), replies[-3:]
    assert b"Traceback" not in stderr
