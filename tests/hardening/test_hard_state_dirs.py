"""Issue 30, item 7: state and runtime directories are private, whatever the umask.

`daemon` and `connect` created a new state directory 0755 (0777 under umask 0), the
journal's marker file was 0666 under umask 0, so was `serve --log-file`, and an existing
state directory that another user owned or could write was used as it was (that user
could then replace the journal). Rule (`agent_bridge.private_files`): every directory the
bridge creates is 0700 and every file 0600, whatever the umask; a state or runtime
directory that another user owns or can write is refused with one line saying why.

Real processes: `connect` (which starts the daemon), `serve` and `daemon`, run with
umask 0 (`subprocess`'s ``umask=0``), then every path they made is stat'ed. The other
user is `nobody` (a `chown`; the tests run as root, and are skipped otherwise).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from transports import stop_daemon

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientInfo": {"name": "t"}},
}


def _env(tmp_path: Path, runtime_dir: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_BRIDGE_", "XDG_"))}
    env["HOME"] = str(tmp_path / "home")
    if runtime_dir is not None:
        env["XDG_RUNTIME_DIR"] = runtime_dir
    return env


def _bridge(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent_bridge", *args]


def _run(
    argv: list[str], env: dict[str, str], stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, input=stdin, env=env, capture_output=True, timeout=60, umask=0)


def _modes(top: Path) -> Iterator[tuple[str, int, bool]]:
    """Every path under ``top`` (included): (path, permission bits, is a directory)."""
    yield str(top), stat.S_IMODE(top.lstat().st_mode), True
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            info = os.lstat(os.path.join(dirpath, name))
            if stat.S_ISSOCK(info.st_mode):
                continue  # the socket: 0600, checked by test_daemon.py
            yield (
                os.path.join(dirpath, name),
                stat.S_IMODE(info.st_mode),
                stat.S_ISDIR(info.st_mode),
            )


def _assert_private(top: Path) -> None:
    wrong = {p: f"{m:04o}" for p, m, d in _modes(top) if m != (0o700 if d else 0o600)}
    assert wrong == {}, wrong


@pytest.fixture
def short_path() -> Iterator[Path]:
    """A short directory (a Unix socket's path is at most 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="ab7-", dir="/tmp") as path:
        yield Path(path)


def test_case_7_connect_and_daemon_create_private_dirs_and_files_under_umask_0(
    short_path: Path,
) -> None:
    env = _env(short_path)  # no XDG_RUNTIME_DIR: the socket directory is <state>/run
    top = short_path / "new"
    state = top / "p" / "state"
    try:
        out = _run(
            _bridge("connect", "--state-dir", str(state)), env, json.dumps(INIT).encode() + b"\n"
        )
        assert out.returncode == 0, out.stderr
        assert b'"result"' in out.stdout
        assert (state / "journal.sqlite3").exists() and (state / "run").is_dir()
        assert any(p.name.endswith(".log") for p in (state / "run").iterdir())
        _assert_private(top)
    finally:
        stop_daemon(env, str(state))


def test_case_7_serve_journal_marker_and_log_file_are_private_under_umask_0(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    top = tmp_path / "new"
    state = top / "state"
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "bridge.log"
    out = _run(
        _bridge("serve", "--state-dir", str(state), "--log-file", str(log)),
        env,
        json.dumps(INIT).encode() + b"\n",
    )
    assert out.returncode == 0, out.stderr
    assert (state / "journal.created").exists()
    _assert_private(top)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def _refusals(tmp_path: Path, state: Path, env: dict[str, str]) -> dict[str, bytes]:
    """What serve, daemon and connect print on stderr for ``state`` (each must fail)."""
    said = {}
    for name, argv in {
        "serve": _bridge("serve", "--state-dir", str(state)),
        "daemon": _bridge("daemon", "--state-dir", str(state), "--idle-timeout", "0"),
        "connect": _bridge("connect", "--state-dir", str(state)),
    }.items():
        out = _run(argv, env, json.dumps(INIT).encode() + b"\n")
        assert out.returncode != 0, (name, out)
        assert b"Traceback" not in out.stderr, out.stderr
        assert b'"result"' not in out.stdout, (name, out.stdout)
        said[name] = out.stderr
    return said


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown to nobody")


@needs_root
def test_case_7_a_state_dir_another_user_owns_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path)
    state = tmp_path / "theirs"
    state.mkdir(mode=0o755)
    os.chown(state, 65534, 65534)
    for name, err in _refusals(tmp_path, state, env).items():
        assert err.count(b"\n") == 1 and b"another user" in err and str(state).encode() in err, (
            name,
            err,
        )
    assert list(state.iterdir()) == []  # nothing written into it


def test_case_7_a_state_dir_others_can_write_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path)
    state = tmp_path / "open"
    state.mkdir()
    state.chmod(0o777)
    for name, err in _refusals(tmp_path, state, env).items():
        assert err.count(b"\n") == 1 and b"written by other users" in err, (name, err)
    assert list(state.iterdir()) == []


@needs_root
def test_case_7_a_runtime_dir_another_user_owns_or_can_write_is_refused(
    tmp_path: Path, short_path: Path
) -> None:
    runtime = short_path / "xdg"
    runtime.mkdir(mode=0o700)
    theirs = runtime / "agent-bridge"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    env = _env(tmp_path, str(runtime))
    state = tmp_path / "state"
    for argv in (
        _bridge("connect", "--state-dir", str(state)),
        _bridge("daemon", "--state-dir", str(state)),
    ):
        out = _run(argv, env)
        assert out.returncode == 1 and b"another user" in out.stderr, out
        assert b"Traceback" not in out.stderr
    os.chown(theirs, 0, 0)
    theirs.chmod(0o777)
    out = _run(_bridge("connect", "--state-dir", str(state)), env)
    assert out.returncode == 1 and b"written by other users" in out.stderr, out
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o777  # refused, not silently changed
