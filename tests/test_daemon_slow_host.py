"""Daemon: one attached host that stops reading falls behind alone (issue 30, item 4).

docs/daemon.md promises each host its own cursor and backpressure.  Before the fix, one
host that stopped reading stalled every host after some thousands of events (the
session's producer waited for the slowest host).  Now the slow host falls behind alone,
its memory bounded by its connection's high-water mark, and catches up from the journal
when it reads again: every event, gapless, in order.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_daemon import Host, sequences
from transports import daemon_socket, start_daemon, stop_daemon

COUNT = 100_000  # about 20 MB of events: far past every buffer between the bridge and a host


@pytest.fixture
def daemon_env(tmp_path: Path) -> Iterator[tuple[dict[str, str], str, str, int]]:
    import shutil
    import tempfile

    runtime = tempfile.mkdtemp(prefix="ab-", dir="/tmp")
    state = str(tmp_path / "state")
    env = {**os.environ, "XDG_RUNTIME_DIR": runtime}
    proc = start_daemon(env, state)
    try:
        yield env, state, daemon_socket(env, state), proc.pid
    finally:
        stop_daemon(env, state)
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        shutil.rmtree(runtime, ignore_errors=True)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _send(sock: socket.socket, message: dict[str, object]) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


def _slow_host(path: str, sid: str, after: int) -> socket.socket:
    """A host that initializes, attaches to ``sid`` after sequence ``after``, and then
    reads nothing at all (not even the replies)."""
    slow = socket.socket(socket.AF_UNIX)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    slow.connect(path)
    init = {"protocolVersion": 1, "clientInfo": {"name": "slow"}, "capabilities": {}}
    _send(slow, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    _send(slow, {"jsonrpc": "2.0", "method": "initialized"})
    attach = {"sessionId": sid, "after": after}
    _send(slow, {"jsonrpc": "2.0", "id": 2, "method": "session/attach", "params": attach})
    return slow


def _read_events(slow: socket.socket, sid: str, last: int) -> list[int]:
    """Read the slow host's connection until the event at sequence ``last``; return the
    sequences of ``sid``'s events it was sent."""
    slow.settimeout(60)
    reader = slow.makefile("rb")
    seen: list[int] = []
    while not seen or seen[-1] < last:
        line = reader.readline()
        assert line, "the daemon closed the slow host's connection"
        message = json.loads(line)
        if message.get("method") == "event" and message["params"]["sessionId"] == sid:
            seen.append(message["params"]["sequence"])
    reader.close()
    return seen


def test_a_host_that_stops_reading_falls_behind_alone_and_catches_up(
    daemon_env: tuple[dict[str, str], str, str, int],
) -> None:
    _env, _state, path, _launcher = daemon_env
    fast = Host.on_socket(path, validate=False)
    fast.initialize()
    script = {"script": {"steps": [{"type": "stream", "count": COUNT, "text": "s" * 40}]}}
    sid = fast.call("session/create", {"provider": "scripted", "options": script})["session"][
        "sessionId"
    ]
    slow = _slow_host(path, sid, after=0)  # attaches, then reads nothing at all
    second = Host.on_socket(path, validate=False)  # another fast host
    second.initialize()
    second.call("session/attach", {"sessionId": sid, "after": 0})
    time.sleep(0.5)  # the slow host's attach is in
    started = time.monotonic()
    fast.call("run/start", {"sessionId": sid, "input": {"text": "go"}})
    for host in (fast, second):
        host.event("run.completed", timeout=60)  # not stalled by the slow host
    elapsed = time.monotonic() - started
    expected = sequences(fast, sid)
    assert expected == list(range(1, len(expected) + 1)) and len(expected) >= COUNT
    assert sequences(second, sid) == expected

    # now the slow host reads: everything, from the journal, gapless, in order
    seen = _read_events(slow, sid, expected[-1])
    assert seen == expected, "the slow host missed or repeated events"
    slow.close()
    for host in (fast, second):
        host.close()
    print(f"fast hosts: {COUNT} events in {elapsed:.1f} s with a host not reading")


def test_a_host_attaching_live_only_after_a_run_falls_behind_alone(
    daemon_env: tuple[dict[str, str], str, str, int],
) -> None:
    """The soak's case: two fast hosts see a first run; then a host attaches live-only
    (``after`` = the newest sequence) and stops reading; the second run's fast hosts
    are not stalled by it, and it catches up gapless.  Before the fix the slow host,
    last in the subscription table, was judged only after the fast hosts: in a batch
    that congested all three, each fast host saw another still "keeping up" and fell
    behind itself, and the producer then waited for the slow host for good."""
    _env, _state, path, _launcher = daemon_env
    count = 30_000
    step = {"type": "stream", "count": count, "text": "s" * 40}
    script = {"script": {"runs": [{"steps": [step]}, {"steps": [step]}]}}
    fast = Host.on_socket(path, validate=False)
    fast.initialize()
    sid = fast.call("session/create", {"provider": "scripted", "options": script})["session"][
        "sessionId"
    ]
    second = Host.on_socket(path, validate=False)
    second.initialize()
    second.call("session/attach", {"sessionId": sid, "after": 0})
    fast.call("run/start", {"sessionId": sid, "input": {"text": "first"}})
    for host in (fast, second):
        host.event("run.completed", timeout=60)
    newest = sequences(fast, sid)[-1]
    slow = _slow_host(path, sid, after=newest)
    time.sleep(0.5)  # the slow host's attach is in
    fast.call("run/start", {"sessionId": sid, "input": {"text": "second"}})
    for host in (fast, second):
        host.event("run.completed", timeout=60)  # not stalled by the slow host
    expected = sequences(fast, sid)
    assert expected == list(range(1, len(expected) + 1)) and len(expected) >= 2 * count
    assert sequences(second, sid) == expected
    seen = _read_events(slow, sid, expected[-1])
    assert seen == expected[newest:], "the slow host missed or repeated events"
    slow.close()
    for host in (fast, second):
        host.close()
