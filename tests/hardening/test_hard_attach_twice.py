"""Session 12, outside check of the daemon: one host attaching twice at once.

Requests of one connection are handled concurrently, so a host whose views both ask
to follow a session (or whose reconnect logic and a view race) can have two
`session/attach` for one session in flight.  Before the fix the second replay began
while the first was still running, on the same subscription: the first one's end let
live events through between the second's pages, and a subscription that had fallen
behind got two catch-ups.  From then on every event reached the host twice and out of
order (577,004 events for 300,002).  Rule: one sender of history per subscriber at a
time (`Subscription.turn`, taken by an attach's replay and by a catch-up).

A real daemon, real hosts on its socket.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from transports import daemon_socket, start_daemon, stop_daemon

COUNT = 100_000


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    runtime_dir = tempfile.mkdtemp(prefix="ab12a-", dir="/tmp")
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_BRIDGE_")}
        yield {**base, "XDG_RUNTIME_DIR": runtime_dir}
    finally:
        shutil.rmtree(runtime_dir, ignore_errors=True)


class _Host:
    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.sock.settimeout(60)
        self.reader = self.sock.makefile("rb")

    def send(self, *messages: dict[str, Any]) -> None:  # one write
        self.sock.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    def next(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line, "the daemon closed the connection"
        return json.loads(line)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def _request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def test_two_attaches_at_once_then_every_event_once_and_in_order(
    tmp_path: Path, env: dict[str, str]
) -> None:
    state = str(tmp_path / "state")
    daemon = start_daemon(env, state)
    hosts: list[_Host] = []
    try:
        path = daemon_socket(env, state)
        init = {"protocolVersion": 1, "clientInfo": {"name": "t"}}
        driver, watcher = _Host(path), _Host(path)
        hosts += [driver, watcher]
        for host in hosts:
            host.send(_request(1, "initialize", init))
            assert "result" in host.next()
        script = {"steps": [{"type": "stream", "count": COUNT, "text": "x"}]}
        driver.send(
            _request(2, "session/create", {"provider": "scripted", "options": {"script": script}})
        )
        sid = driver.next()["result"]["session"]["sessionId"]
        driver.send(_request(3, "run/start", {"sessionId": sid, "input": {"text": "go"}}))
        driver.close()  # the run goes on; the watcher is the session's only host
        hosts.remove(driver)
        attach = {"sessionId": sid, "after": 0}
        watcher.send(_request(4, "session/attach", attach), _request(5, "session/attach", attach))
        sequences: list[int] = []
        replies: dict[int, int] = {}  # id -> how many events came before it
        last = COUNT + 2  # run.started, the deltas, run.completed
        while len(replies) < 2 or not sequences or sequences[-1] < last:
            message = watcher.next()
            if message.get("method") == "event":
                sequences.append(message["params"]["sequence"])
            elif "id" in message:
                assert "result" in message, message
                replies[message["id"]] = len(sequences)
        # each attach replays what it asked for; after both replies, the live stream:
        # every event once, in order, to the end (twice and out of order before)
        after_both = sequences[max(replies.values()) :]
        assert after_both == list(range(after_both[0], last + 1)), (
            len(after_both),
            len(set(after_both)),
        )
        # and nothing more comes
        watcher.sock.settimeout(1)
        with pytest.raises(TimeoutError):
            watcher.reader.readline()
    finally:
        for host in hosts:
            host.close()
        stop_daemon(env, state)
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait(10)
