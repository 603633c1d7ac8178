"""Session 12, outside check of the daemon and `connect`: starting and stopping.

Found on the tree before the fixes (each test below failed there):

* something other than a socket at the socket's path (a directory: a traceback from
  `daemon`; a regular file: silently deleted);
* `connect` started a daemon that could not start (an unusable state directory, the
  above) and then waited its whole 10 s for a socket that would never come, before
  saying only "did not start listening (see <log>)";
* a daemon being stopped (SIGTERM, `daemon --stop`, idle exit) kept its socket open while
  it closed its sessions (up to the interrupt grace): a `connect` meanwhile was queued on
  it, never answered, and got EOF when it exited; its host's `initialize` was lost and
  the relay exited 0 as if all was well.

Rule: a daemon that is going away stops listening first (its socket removed), and a
`connect` that starts a daemon watches it: an error exit ends the wait at once with the
daemon's one-line reason; a daemon that found another holding the lock is started again
once that one is gone.  Real processes throughout: `daemon` and `connect` as children,
hosts over their pipes and the real socket.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from transports import daemon_socket, start_daemon, stop_daemon

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientInfo": {"name": "t"}},
}


def _bridge(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent_bridge", *args]


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    """An environment with a short private XDG_RUNTIME_DIR (a socket path is at most 107
    bytes)."""
    with tempfile.TemporaryDirectory(prefix="ab12-", dir="/tmp") as runtime_dir:
        os.chmod(runtime_dir, 0o700)
        base = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_BRIDGE_")}
        yield {**base, "XDG_RUNTIME_DIR": runtime_dir}


def _line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize("thing", ["directory", "file"])
def test_something_else_at_the_socket_path_is_one_line_and_left_alone(
    tmp_path: Path, env: dict[str, str], thing: str
) -> None:
    state = str(tmp_path / "state")
    path = Path(daemon_socket(env, state))
    path.parent.mkdir(mode=0o700)
    if thing == "directory":
        path.mkdir()
    else:
        path.write_text("mine\n")
    out = subprocess.run(
        _bridge("daemon", "--state-dir", state, "--idle-timeout", "0"),
        env=env,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 1, out
    assert b"Traceback" not in out.stderr
    assert out.stderr.count(b"\n") == 1 and b"not a socket" in out.stderr, out.stderr
    assert path.is_dir() if thing == "directory" else path.read_text() == "mine\n"
    # connect says the same at once, instead of waiting for a socket that cannot come
    started = time.monotonic()
    out = subprocess.run(
        _bridge("connect", "--state-dir", state),
        env=env,
        input=_line(INIT),
        capture_output=True,
        timeout=60,
    )
    took = time.monotonic() - started
    assert out.returncode == 1 and out.stdout == b"", out
    assert b"Traceback" not in out.stderr and out.stderr.count(b"\n") == 1, out.stderr
    assert b"exited with status 1 before listening" in out.stderr, out.stderr
    assert b"not a socket" in out.stderr, out.stderr
    assert took < 6, took  # 10 s and more before


def test_connect_to_a_daemon_that_cannot_start_says_why_at_once(
    tmp_path: Path, env: dict[str, str]
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "journal.sqlite3").mkdir()  # the daemon refuses to open this journal
    started = time.monotonic()
    out = subprocess.run(
        _bridge("connect", "--state-dir", str(state)),
        env=env,
        input=_line(INIT),
        capture_output=True,
        timeout=60,
    )
    took = time.monotonic() - started
    assert out.returncode == 1 and out.stdout == b"", out
    assert out.stderr.count(b"\n") == 1 and b"Traceback" not in out.stderr, out.stderr
    # the daemon's own reason, not "did not start listening"
    assert b"exited with status 1 before listening: " in out.stderr, out.stderr
    assert b"journal.sqlite3" in out.stderr, out.stderr
    assert took < 6, took


def test_connect_with_a_file_for_a_state_directory_says_so_at_once(
    tmp_path: Path, env: dict[str, str]
) -> None:
    state = tmp_path / "state"
    state.write_text("not a directory\n")
    out = subprocess.run(
        _bridge("connect", "--state-dir", str(state)),
        env=env,
        input=_line(INIT),
        capture_output=True,
        timeout=10,  # 10 s and more before
    )
    assert out.returncode == 1 and out.stdout == b"", out
    assert out.stderr == f"agent-bridge: {state} is not a directory\n".encode(), out.stderr


def _host(
    children: list[subprocess.Popen[bytes]],
    env: dict[str, str],
    *args: str,
    stderr: int | None = None,
) -> subprocess.Popen[bytes]:
    """A host: ``connect *args`` with pipes, kept in ``children`` (for :func:`_end_all`),
    its ``initialize`` written (not flushed)."""
    host = subprocess.Popen(
        _bridge("connect", *args),
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
    )
    children.append(host)
    assert host.stdin is not None
    host.stdin.write(_line(INIT))
    return host


def _end_all(
    children: list[subprocess.Popen[bytes]],
    daemon: subprocess.Popen[bytes],
    env: dict[str, str],
    state: str,
) -> None:
    """Kill and reap the test's hosts (closing their pipes), then stop the daemon of
    ``state`` and make sure the one the test started is gone."""
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        for pipe in (child.stdin, child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    stop_daemon(env, state)
    if daemon.poll() is None:
        daemon.kill()
        daemon.wait(10)


def test_a_connect_while_the_daemon_stops_is_served_by_the_next_one(
    tmp_path: Path, env: dict[str, str]
) -> None:
    state = str(tmp_path / "state")
    path = daemon_socket(env, state)
    # a run that ignores its interrupt: the daemon's stop takes its interrupt grace (5 s)
    daemon = start_daemon(env, state, ["--interrupt-grace", "5"])
    children: list[subprocess.Popen[bytes]] = []
    try:
        script = {"steps": [{"type": "waitForInterrupt", "ignoreInterrupt": True}]}
        first = _host(children, env, "--state-dir", state, "--no-start")
        assert first.stdin is not None and first.stdout is not None
        first.stdin.write(
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "session/create",
                    "params": {"provider": "scripted", "options": {"script": script}},
                }
            )
        )
        first.stdin.flush()
        replies = {}
        while 2 not in replies:
            reply = json.loads(first.stdout.readline())
            replies[reply.get("id")] = reply
        sid = replies[2]["result"]["session"]["sessionId"]
        first.stdin.write(
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "run/start",
                    "params": {"sessionId": sid, "input": {"text": "go"}},
                }
            )
        )
        first.stdin.flush()
        while replies.get(3) is None:
            reply = json.loads(first.stdout.readline())
            replies[reply.get("id")] = reply
        assert "result" in replies[3], replies[3]

        stopped = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        time.sleep(1)  # it is closing its session now, for up to 5 s
        assert daemon.poll() is None
        stopping = not os.path.exists(path)  # it stopped listening first
        second = _host(children, env, "--state-dir", state, stderr=subprocess.PIPE)
        assert second.stdin is not None and second.stdout is not None
        second.stdin.flush()
        answer = second.stdout.readline()  # before the fix: b"" (EOF), the request lost
        assert daemon.wait(30) == 0
        assert time.monotonic() - stopped >= 4  # it really was still stopping
        assert "result" in json.loads(answer), answer
        assert stopping
        second.stdin.close()
        assert second.wait(10) == 0
        assert second.stderr is not None and second.stderr.read() == b""
        first.stdin.close()
        assert first.wait(10) == 0
        # the next daemon serves from the socket's usual place
        assert os.path.exists(path)
    finally:
        _end_all(children, daemon, env, state)


def _read_until_eof(stream: IO[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream if line.strip()]


def test_hosts_attached_when_the_daemon_stops_see_their_sessions_close(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A stopped daemon closes every session as `serve` does at its host's EOF; the hosts
    still attached are told (`run.interrupted` and `session.closed`, reason `shutdown`)
    before they are disconnected.  Before the fix they were disconnected first: EOF, and
    their sessions' last events only in the journal."""
    state = str(tmp_path / "state")
    daemon = start_daemon(env, state)
    children: list[subprocess.Popen[bytes]] = []
    try:
        hosts = []
        for _ in range(2):
            host = _host(children, env, "--state-dir", state, "--no-start")
            assert host.stdin is not None and host.stdout is not None
            host.stdin.flush()
            assert "result" in json.loads(host.stdout.readline())
            hosts.append(host)
        driver, watcher = hosts
        assert driver.stdin is not None and driver.stdout is not None
        assert watcher.stdin is not None and watcher.stdout is not None
        script = {"steps": [{"type": "waitForInterrupt"}]}
        driver.stdin.write(
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "session/create",
                    "params": {"provider": "scripted", "options": {"script": script}},
                }
            )
        )
        driver.stdin.flush()
        sid = json.loads(driver.stdout.readline())["result"]["session"]["sessionId"]
        watcher.stdin.write(
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "session/attach",
                    "params": {"sessionId": sid, "after": 0},
                }
            )
        )
        watcher.stdin.flush()
        assert json.loads(watcher.stdout.readline())["id"] == 2
        driver.stdin.write(
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "run/start",
                    "params": {"sessionId": sid, "input": {"text": "go"}},
                }
            )
        )
        driver.stdin.flush()
        for host in hosts:  # both see the run start
            assert host.stdout is not None
            while True:
                message = json.loads(host.stdout.readline())
                event = message.get("params", {}).get("payload", {})
                if message.get("method") == "event" and event.get("type") == "run.started":
                    break
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(30) == 0
        for host in hosts:
            assert host.stdout is not None
            rest = _read_until_eof(host.stdout)  # the relay ends with the daemon
            kinds = [
                m["params"]["payload"]
                for m in rest
                if m.get("method") == "event" and m["params"]["sessionId"] == sid
            ]
            assert kinds[-2:] == [
                {"type": "run.interrupted", "reason": "shutdown"},
                {"type": "session.closed", "reason": "shutdown"},
            ], rest
            assert host.wait(10) == 0
    finally:
        _end_all(children, daemon, env, state)


def test_one_daemon_per_state_directory_whatever_the_runtime_dir(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The socket directory follows ``XDG_RUNTIME_DIR``, which a desktop session sets and
    cron or some SSH set-ups do not: before the fix each environment got a daemon of its
    own on the same journal (three were seen at once), whose hosts could not share a live
    session, and `daemon --status`/`--stop` from one environment did not see the other's.
    Now the daemon also locks the state directory, naming its socket there."""
    state = str(tmp_path / "state")
    first = start_daemon(env, state)
    other_dir = tempfile.mkdtemp(prefix="ab12b-", dir="/tmp")
    other = {**env, "XDG_RUNTIME_DIR": other_dir}
    bare = {k: v for k, v in env.items() if k != "XDG_RUNTIME_DIR"}
    try:
        mine = daemon_socket(env, state)
        # a second daemon from another environment: refused, naming the one that runs
        second = subprocess.run(
            _bridge("daemon", "--state-dir", state, "--idle-timeout", "0"),
            env=other,
            capture_output=True,
            timeout=20,  # before the fix it served for good
            stdin=subprocess.DEVNULL,
        )
        assert second.returncode == 0, second
        assert second.stderr == f"agent-bridge: a daemon already serves {mine}\n".encode()
        # connect from the other environments reaches the same daemon
        for where in (other, bare):
            out = subprocess.run(
                _bridge("connect", "--state-dir", state),
                env=where,
                input=_line(INIT),
                capture_output=True,
                timeout=60,
            )
            assert out.returncode == 0 and b'"result"' in out.stdout, out
            assert not os.path.exists(daemon_socket(where, state)), "a second daemon"
            status = subprocess.run(
                _bridge("daemon", "--status", "--state-dir", state),
                env=where,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert status.returncode == 0, status
            assert status.stdout == f"socket {mine}: pid {first.pid}\n", status.stdout
        # and --stop from there stops it
        stop = subprocess.run(
            _bridge("daemon", "--stop", "--state-dir", state),
            env=bare,
            capture_output=True,
            timeout=60,
        )
        assert stop.returncode == 0, stop
        assert first.wait(30) == 0
    finally:
        for where in (env, other, bare):  # (before the fix: a daemon in each)
            stop_daemon(where, state)
        shutil.rmtree(other_dir, ignore_errors=True)
        if first.poll() is None:
            first.kill()
            first.wait(10)


def test_the_daemon_works_in_the_home_directory_not_its_starters(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A session created without a ``workspace`` runs in the bridge's working directory
    (`os.getcwd()` in the adapters), and the daemon serves every host: before the fix it
    kept the directory of whichever `connect` (or operator) started it, so one editor's
    workspace-less session ran in another editor's project, and that directory stayed
    busy for the daemon's lifetime.  Now it works in the home directory, as a daemon
    started over SSH does."""
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project-of-the-first-host"
    project.mkdir()
    env = {**env, "HOME": str(home)}
    state = str(tmp_path / "state")
    try:
        out = subprocess.run(
            _bridge("connect", "--state-dir", state),
            env=env,
            cwd=project,
            input=_line(INIT),
            capture_output=True,
            timeout=60,
        )
        assert out.returncode == 0 and b'"result"' in out.stdout, out
        status = subprocess.run(
            _bridge("daemon", "--status", "--state-dir", state),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        pid = int(status.stdout.rsplit("pid", 1)[1])
        assert os.readlink(f"/proc/{pid}/cwd") == str(home)
    finally:
        stop_daemon(env, state)
    # the same for a daemon an operator starts in a project directory
    daemon = subprocess.Popen(
        _bridge("daemon", "--state-dir", state, "--idle-timeout", "0"),
        env=env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert daemon.stderr is not None
        assert b"listening on" in daemon.stderr.readline()
        assert os.readlink(f"/proc/{daemon.pid}/cwd") == str(home)
    finally:
        stop_daemon(env, state)
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait(10)
        assert daemon.stderr is not None
        daemon.stderr.close()
