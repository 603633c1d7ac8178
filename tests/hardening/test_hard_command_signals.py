"""Issue 30, items 5 and 11: commands stop promptly and quietly, with real signals.

* 5: `exec … | head`: once its stdout's reader went away, exec printed a traceback per
  journal commit, then slept forever and took two SIGTERMs to end. Rule: a stdout that
  cannot be written is not an error to report but the end of the reader's interest: the
  run is stopped without grace and exec exits 141 (128 + SIGPIPE), saying nothing
  (`frontends/exec_host.Output`, `Runtime.hurry`).
* 11: a Ctrl-C in the first quarter second of `demo` or `exec` printed a 50-line
  traceback (a `KeyboardInterrupt` in the middle of the imports); in `exec` the second
  Ctrl-C did not stop at once as documented (the session's close still gave the provider
  its whole interrupt grace; the third did). Rule: from its first line the command owns
  SIGINT (`cli._quiet_ctrl_c_while_starting`: exit 130, no traceback, until the command
  installs its own handling), and "stop now" means no grace (`Runtime.hurry`).

Real `agent-bridge` processes (the installed console script, as a user runs it), real
pipes, real signals sent to the process group as a terminal's Ctrl-C is. The window
before the interpreter runs the script's first line (its own start-up) is Python's: a
traceback from there names no file of the package and is not counted.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals"),
    pytest.mark.timeout(240),
]

BRIDGE = str(Path(sys.executable).with_name("agent-bridge"))
STREAM = json.dumps({"steps": [{"type": "stream", "count": 300000, "text": "token "}]})
STUCK = json.dumps(
    {
        "steps": [
            {"type": "text", "text": "hi"},
            {"type": "waitForInterrupt", "ignoreInterrupt": True},
        ]
    }
)
#: a frame of the package's own code in a traceback
OUR_FRAME = re.compile(rb'File "[^"]*/agent_bridge/[^"]*"')


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "AGENT_BRIDGE_STATE_DIR": str(tmp_path / "state")}


def _spawn(tmp_path: Path, *args: str, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [BRIDGE, *args],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        **kw,
    )


def test_case_5_exec_stops_quietly_and_promptly_when_its_stdout_closes(tmp_path: Path) -> None:
    proc = _spawn(tmp_path, "exec", "--provider", "scripted", "--option", f"script={STREAM}", "hi")
    assert proc.stdout is not None and proc.stderr is not None
    try:
        first = proc.stdout.readline()
        assert b'"run.started"' in first or b'"session.' in first or first, first
        proc.stdout.readline()
        proc.stdout.close()  # the reader goes away, as `| head -2` does
        started = time.monotonic()
        code = proc.wait(timeout=30)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = proc.stderr.read()
    proc.stderr.close()
    assert b"Traceback" not in err, err[-3000:]
    assert err.decode().splitlines() == [err.decode().splitlines()[0]], err  # the session line
    assert code == 141, (code, err)
    assert elapsed < 10, elapsed


def test_exec_whose_reader_goes_away_mid_stream_loses_nothing_from_the_journal(
    tmp_path: Path,
) -> None:
    """The reader reads part of a long run's stream, then goes away: exec exits 141
    (classified, quiet: no traceback, only its session line on stderr), and the journal
    holds every event the reader saw, exactly as printed, with no gap after it, the run
    ended (``run.interrupted``) and the session closed, as another bridge reads them."""
    from agent_bridge.testing import BridgeClient

    proc = _spawn(tmp_path, "exec", "--provider", "scripted", "--option", f"script={STREAM}", "hi")
    assert proc.stdout is not None and proc.stderr is not None
    try:
        seen = [json.loads(proc.stdout.readline()) for _ in range(200)]
        proc.stdout.close()  # mid-run: the stream has 300000 deltas
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert "Traceback" not in err and "Exception" not in err, err[-3000:]
    assert len(err.splitlines()) == 1 and err.startswith("agent-bridge exec: session "), err
    assert code == 141, (code, err)
    session = seen[0]["sessionId"]
    assert [e["payload"]["type"] for e in seen[:2]] == ["run.started", "text.delta"]

    with BridgeClient(str(tmp_path / "state")) as client:
        client.initialize()
        stored: list[dict[str, Any]] = []
        page: dict[str, Any] = {"hasMore": True}
        while page["hasMore"]:
            page = client.request(
                "events/read", {"sessionId": session, "after": len(stored), "limit": 1000}
            )
            assert page["exact"] is True
            stored.extend(page["events"])
        listed = client.request("session/list", {})["sessions"]
    assert stored[: len(seen)] == seen  # what the reader saw, as it saw it
    assert [e["sequence"] for e in stored] == list(range(1, len(stored) + 1))
    assert page["lastSequence"] == len(stored)
    types = [e["payload"]["type"] for e in stored]
    assert len(types) < 300000 + 2, "the run was stopped, not streamed to its end"
    ran = types.index("run.interrupted")
    assert types[:ran] == ["run.started", *["text.delta"] * (ran - 1)], types[ran - 3 : ran + 3]
    assert stored[ran]["payload"] == {"type": "run.interrupted", "reason": "stdout closed"}
    assert types[ran + 1 :] == ["session.closed"], types[ran:]
    assert [(s["sessionId"], s["state"]) for s in listed] == [(session, "closed")]


@pytest.mark.parametrize("argv", [["demo"], ["doctor", "--provider", "scripted"]], ids=str)
def test_case_5_printing_commands_stop_quietly_when_stdout_closes(
    tmp_path: Path, argv: list[str]
) -> None:
    """The same rule for every command that prints on stdout (``demo | head`` printed
    an exception-group traceback): a broken pipe ends the command, exit 141, quietly
    (``cli.main``)."""
    proc = _spawn(tmp_path, *argv)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the first line
    try:
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert b"Traceback" not in err and b"Exception ignored" not in err, err[-3000:]
    assert proc.returncode == 141, (proc.returncode, err)


@pytest.mark.parametrize("command", ["demo", "exec"])
def test_case_11_ctrl_c_while_starting_prints_no_traceback(tmp_path: Path, command: str) -> None:
    argv = ["demo"] if command == "demo" else ["exec", "--provider", "scripted", "hi"]
    seen = []
    for delay in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35):
        proc = _spawn(tmp_path, *argv)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
        try:
            _out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        seen.append((delay, proc.returncode))
        assert not OUR_FRAME.search(err), f"{command} at {delay}s:\n{err.decode()[-3000:]}"
        if proc.returncode not in (0, 130, -signal.SIGINT):
            # only the interpreter's own start-up may end otherwise (e.g. "Fatal Python
            # error: init_import_site"), before any of the package ran
            assert b"agent_bridge" not in err, (delay, proc.returncode, err)
    assert any(code == 130 for _, code in seen), seen  # some landed in our own code


def test_case_11_exec_second_ctrl_c_stops_at_once(tmp_path: Path) -> None:
    proc = _spawn(
        tmp_path,
        "exec",
        "--provider",
        "scripted",
        "--interrupt-grace",
        "30",
        "--option",
        f"script={STUCK}",
        "hi",
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline()  # the run streams: its interrupt is the run's
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        started = time.monotonic()
        _out, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, (proc.returncode, err)
    assert elapsed < 5, f"the second Ctrl-C took {elapsed:.1f}s (the provider's grace is 30 s)"
    assert b"Traceback" not in err, err


def test_case_11_a_ctrl_c_python_wrapped_while_making_a_class_is_still_quiet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C that lands while a class is being made (CI saw it in `exec`, as anyio
    imported its asyncio backend) reaches `cli.main` not as a `KeyboardInterrupt` but as
    the `RuntimeError` Python 3.11 raises from it ("Error calling __set_name__"): a
    traceback.  It is a Ctrl-C all the same: exit 130, nothing printed.  The class is
    made here with a descriptor whose `__set_name__` raises, as the signal did."""
    from agent_bridge import cli

    class Interrupting:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt

    def start(_argv: object) -> int:
        type("Made", (), {"field": Interrupting()})  # as a class statement makes it
        return 0

    monkeypatch.setattr(cli, "_main", start)
    assert cli.main(["exec", "--provider", "scripted", "hi"]) == 130
    out, err = capsys.readouterr()
    assert out == "" and err == ""

    def broken(_argv: object) -> int:
        raise RuntimeError("not a Ctrl-C")

    monkeypatch.setattr(cli, "_main", broken)
    with pytest.raises(RuntimeError):
        cli.main([])
