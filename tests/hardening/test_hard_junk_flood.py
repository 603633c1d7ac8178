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
