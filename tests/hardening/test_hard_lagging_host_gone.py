"""Session 12, outside check of the daemon: a host that fell behind, then went away.

A host that stops reading while another keeps up falls behind alone and is caught up
from the journal (`runtime/reading.catch_up`), which waits while the host's connection
is congested.  When that host disconnected while behind, its connection closed with
output still pending: it stayed "congested" for good and its `drained()` returned at
once, so the catch-up looped without ever yielding.  The daemon spun a core, answered no
other host and ignored SIGTERM (`daemon --stop` gave up after 30 s).  Rule: a closed
outbox is never congested (`rpc/outbox.Outbox.congested`).

A real daemon, real hosts on its socket.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from transports import daemon_socket, start_daemon, stop_daemon

COUNT = 100_000  # about 20 MB of events: far past a connection's 4 MiB high water


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    runtime_dir = tempfile.mkdtemp(prefix="ab12g-", dir="/tmp")
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_BRIDGE_")}
        yield {**base, "XDG_RUNTIME_DIR": runtime_dir}
    finally:
        shutil.rmtree(runtime_dir, ignore_errors=True)


def _request(rid: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


def _reply(reader: Any, rid: int) -> dict[str, Any]:
    while True:
        line = reader.readline()
        assert line, "the daemon closed the connection"
        message = json.loads(line)
        if message.get("id") == rid and "method" not in message:
            return message  # type: ignore[no-any-return]


def test_a_host_gone_while_behind_leaves_the_daemon_serving_and_stoppable(
    tmp_path: Path, env: dict[str, str]
) -> None:
    state = str(tmp_path / "state")
    daemon = start_daemon(env, state)
    sockets: list[socket.socket] = []
    readers: list[Any] = []
    try:
        path = daemon_socket(env, state)
        init = {"protocolVersion": 1, "clientInfo": {"name": "t"}}
        for _ in range(2):
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(path)
            sock.settimeout(30)
            sockets.append(sock)
            readers.append(sock.makefile("rb"))
            sock.sendall(_request(1, "initialize", init))
            assert "result" in _reply(readers[-1], 1)
        (slow, fast), (slow_reader, fast_reader) = sockets, readers
        script = {"steps": [{"type": "stream", "count": COUNT, "text": "x"}]}
        slow.sendall(
            _request(2, "session/create", {"provider": "scripted", "options": {"script": script}})
        )
        sid = _reply(slow_reader, 2)["result"]["session"]["sessionId"]
        fast.sendall(_request(2, "session/attach", {"sessionId": sid, "after": 0}))
        assert "result" in _reply(fast_reader, 2)
        slow.sendall(_request(3, "run/start", {"sessionId": sid, "input": {"text": "go"}}))
        # the slow host reads nothing more; the fast one reads the whole run
        while True:
            message = json.loads(fast_reader.readline())
            if message.get("method") == "event" and message["params"]["sequence"] == COUNT + 2:
                break
        slow_reader.close()
        slow.close()  # gone while far behind
        time.sleep(1)
        started = time.monotonic()
        fast.sendall(_request(3, "bridge/ping", {}))
        assert _reply(fast_reader, 3) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        assert time.monotonic() - started < 5  # never answered before
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(15) == 0  # it spun, deaf to SIGTERM, before
    finally:
        for item in (*readers, *sockets):
            item.close()
        stop_daemon(env, state)
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait(10)
