"""Messages that say why: the command line tells a newcomer what went wrong and what to do.

Each test drives the real command (a child process over pipes, or on a pseudo-terminal
where the behaviour is a terminal's) and checks the words a person reads:

* ``exec`` prints an error's details: ``provider_unavailable`` with what is missing and
  the next step; a bad option, a bad script step and a missing script file each with its
  own reason (all three are ``invalid_option``); ``workspace_invalid`` with its reason;
* ``exec --format text`` prints usage and diagnostics as words, and the bridge's log line
  of a failed run names its details as ``key=value``, not as a Python dict;
* ``acp -o script=missing.json`` fails at start, with one clear line on stderr;
* in a terminal, ``serve`` answers a typed line that is not JSON-RPC with a hint, and
  ``acp`` says what it waits for; ``daemon`` in the foreground says what it is doing;
  ``daemon --stop`` with no daemon says so;
* ``--help`` explains ``exec --format`` and ``record``'s session argument; ``record``
  without ``--out`` writes to stdout, and for a session its journal does not hold says
  which journal it read (creating none) and to pass the session's ``--state-dir``;
* ``exec`` names the known providers for an unknown one, and a bad ``scriptFile`` by
  that option;
* Claude Code at a dead endpoint: ``exec``'s "retrying" notices name the cause and the
  endpoint (the real CLI, pinned, on a closed loopback port).
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BRIDGE = [sys.executable, "-m", "agent_bridge"]


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A short XDG_RUNTIME_DIR (a socket path must fit in 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="ab-run-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(tmp_path: Path, run: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_BRIDGE_")}
    env["PATH"] = "/usr/bin:/bin"  # no provider CLI
    env["HOME"] = str(tmp_path / "home")
    env["XDG_RUNTIME_DIR"] = str(run or tmp_path / "run")
    env["AGENT_BRIDGE_STATE_DIR"] = str(tmp_path / "state")
    (run or tmp_path / "run").mkdir(mode=0o700, exist_ok=True)
    env.update(extra)
    return env


def _exec(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*BRIDGE, "exec", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=_env(tmp_path, None, **extra),
        stdin=subprocess.DEVNULL,
    )


# =====================================================================================
# exec: the error's details
# =====================================================================================
def test_exec_provider_unavailable_says_what_is_missing_and_the_next_step(
    tmp_path: Path,
) -> None:
    done = _exec(tmp_path, "--provider", "claude-code", "hello")
    assert done.returncode == 3
    err = done.stderr
    assert "provider_unavailable" in err
    assert "missing: claude executable" in err, err
    assert "next step: install Claude Code" in err, err
    assert "{" not in err  # no dict, no JSON


def test_exec_tells_a_bad_option_a_bad_step_and_a_missing_file_apart(tmp_path: Path) -> None:
    unknown = _exec(tmp_path, "--provider", "scripted", "--option", "nonsense=1", "hi")
    step = _exec(
        tmp_path,
        "--provider",
        "scripted",
        "--option",
        'script={"steps":[{"type":"bogus"}]}',
        "hi",
    )
    missing = _exec(tmp_path, "--provider", "scripted", "--option", "script=missing.json", "hi")
    for done in (unknown, step, missing):
        assert done.returncode == 2, done.stderr
        assert "invalid_option" in done.stderr
    assert "the provider has no session option 'nonsense'" in unknown.stderr, unknown.stderr
    assert "the script does not validate" in step.stderr and "bogus" in step.stderr
    assert "no script file 'missing.json'" in missing.stderr, missing.stderr
    assert len({unknown.stderr, step.stderr, missing.stderr}) == 3


def test_exec_names_the_known_providers_for_an_unknown_one(tmp_path: Path) -> None:
    done = _exec(tmp_path, "--provider", "claude", "hi")
    assert done.returncode == 2, done.stderr
    assert "provider_not_found" in done.stderr and "provider: claude" in done.stderr
    assert "known: scripted, claude-code, codex" in done.stderr, done.stderr


def test_a_bad_script_file_is_named_by_the_option_that_gave_it(tmp_path: Path) -> None:
    done = _exec(tmp_path, "--provider", "scripted", "--option", "scriptFile=gone.json", "hi")
    assert done.returncode == 2, done.stderr
    assert "option: scriptFile" in done.stderr, done.stderr
    assert "no script file 'gone.json'" in done.stderr, done.stderr


def test_exec_on_the_acp_provider_says_what_the_command_option_is(tmp_path: Path) -> None:
    bare = _exec(tmp_path, "--provider", "acp", "hi")
    assert bare.returncode == 2, bare.stderr
    assert "option: command" in bare.stderr
    assert "reason: the acp provider runs the agent the command option names" in bare.stderr
    gone = _exec(tmp_path, "--provider", "acp", "--option", 'command=["no-such-agent"]', "hi")
    assert gone.returncode == 3, gone.stderr
    assert "missing: no-such-agent" in gone.stderr
    assert "next step: install the agent, or give its path as the first item of the " in (
        gone.stderr
    ), gone.stderr


def test_exec_session_it_cannot_find_says_what_to_give(tmp_path: Path) -> None:
    gone = _exec(tmp_path, "--session", "ses_0123456789abcd", "hi")
    assert gone.returncode == 6, gone.stderr
    assert "session_not_found" in gone.stderr
    assert "next step: give the --state-dir that exec or serve used" in gone.stderr
    typo = _exec(tmp_path, "--provider", "scripted", "--session", "foo", "hi")
    assert typo.returncode == 2, typo.stderr
    assert "reason: 'foo' is no session of this journal, nor a session reference of scripted" in (
        typo.stderr
    ), typo.stderr
    assert "sessionRef from provider/sessions/list" in typo.stderr


def test_exec_workspace_invalid_says_why(tmp_path: Path) -> None:
    gone = _exec(tmp_path, "--provider", "scripted", "--workspace", str(tmp_path / "nope"), "x")
    afile = tmp_path / "a-file"
    afile.write_text("")
    not_dir = _exec(tmp_path, "--provider", "scripted", "--workspace", str(afile), "x")
    assert gone.returncode == 2 and not_dir.returncode == 2
    assert "workspace_invalid" in gone.stderr
    assert "reason: no such directory" in gone.stderr, gone.stderr
    assert "reason: not a directory" in not_dir.stderr, not_dir.stderr
    # a relative DIR is the shell's: taken from the current directory
    (tmp_path / "proj").mkdir()
    here = _exec(tmp_path, "--provider", "scripted", "--workspace", "proj", "x")
    assert here.returncode == 0, here.stderr


# =====================================================================================
# exec --format text
# =====================================================================================
SCRIPT = {
    "steps": [
        {"type": "text", "text": "hi"},
        {"type": "usage", "inputTokens": 10, "outputTokens": 5},
        {"type": "diagnostic", "level": "warning", "code": "x_y", "message": "something odd"},
        {"type": "fail", "code": "provider_failed"},
    ]
}


def test_exec_text_prints_usage_diagnostics_and_the_failure_readably(tmp_path: Path) -> None:
    done = _exec(
        tmp_path,
        "--provider",
        "scripted",
        "--format",
        "text",
        "--option",
        f"script={json.dumps(SCRIPT)}",
        "go",
    )
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "hi"
    assert not any(line.lstrip("· ").startswith("{") for line in lines), done.stdout
    assert "· usage: 10 input tokens, 5 output tokens" in lines, done.stdout
    assert "· warning x_y: something odd" in lines, done.stdout
    assert "· failed: provider_failed: the provider failed" in lines
    # the log line of the failure: key=value, never a Python dict
    assert "failed: provider_failed" in done.stderr
    assert "{}" not in done.stderr and "{'" not in done.stderr, done.stderr


def test_exec_text_reads_every_event_type_as_words() -> None:
    """Each payload of docs/protocol.md's examples (every event type; tests/
    test_protocol_doc.py sees to that) is a line of words in ``--format text``: none
    falls through to the JSON kept for a later version's events."""
    import io

    from conformance.replay import DOC_PATH, parse_doc_examples

    from agent_bridge.frontends.exec_host import Output

    payloads = {
        s.msg["params"]["payload"]["type"]: s.msg["params"]["payload"]
        for t in parse_doc_examples(DOC_PATH.read_text("utf-8"))
        for s in t.steps
        if s.dir == "recv" and isinstance(s.msg, dict) and s.msg.get("method") == "event"
    }
    assert {"session.resumed", "settings.updated", "commands.updated"} <= set(payloads)
    for kind, payload in payloads.items():
        out = io.BytesIO()
        Output(out, "text").texts([payload])
        text = out.getvalue().decode()
        assert text.strip() == "" or not text.lstrip("\n· ").startswith("{"), (kind, text)


# =====================================================================================
# acp: a bad script fails at start
# =====================================================================================
def test_acp_with_a_missing_script_fails_at_start(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*BRIDGE, "acp", "--provider", "scripted", "-o", "script=missing.json"],
        stdin=subprocess.PIPE,  # kept open: it must not wait for a client
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
    )
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("acp with a missing script file waited for a client instead of failing")
    assert proc.returncode == 2, err
    assert out == ""
    assert "no script file 'missing.json'" in err, err
    assert "Traceback" not in err


# =====================================================================================
# In a terminal
# =====================================================================================
class Terminal:
    """A command on a pseudo-terminal (stdin, stdout and stderr), read as a person would."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True
        )
        os.close(slave)
        self.seen = b""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait_for(self, needle: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while needle.encode() not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never saw {needle!r}; the terminal shows:\n{self.text}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    break
        return self.text

    @property
    def text(self) -> str:
        return self.seen.decode("utf-8", "replace").replace("\r\n", "\n")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.master)


def test_serve_in_a_terminal_answers_a_typed_line_with_a_hint(tmp_path: Path) -> None:
    term = Terminal([*BRIDGE, "serve"], _env(tmp_path), tmp_path)
    try:
        term.wait_for("waiting for JSON-RPC")
        term.type("hello\n")
        shown = term.wait_for("not JSON-RPC")
        assert "agent-bridge demo" in shown.split("not JSON-RPC", 1)[1], shown
    finally:
        term.close()


def test_acp_in_a_terminal_says_what_it_waits_for(tmp_path: Path) -> None:
    term = Terminal([*BRIDGE, "acp", "--provider", "scripted"], _env(tmp_path), tmp_path)
    try:
        shown = term.wait_for("waiting for an ACP client")
        assert "editors/acp" in shown or "editor" in shown, shown
    finally:
        term.close()


def test_daemon_in_the_foreground_says_what_it_is_doing(tmp_path: Path, run_dir: Path) -> None:
    env = _env(tmp_path, run_dir)
    proc = subprocess.Popen(
        [*BRIDGE, "daemon", "--idle-timeout", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        line = proc.stderr.readline() if ready else ""
        assert "agent-bridge daemon: listening on " in line, line
        assert str(run_dir) in line and f"pid {proc.pid}" in line, line
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    stopped = subprocess.run(
        [*BRIDGE, "daemon", "--stop"], capture_output=True, text=True, timeout=30, env=env
    )
    assert "no daemon is running" in stopped.stderr, stopped.stderr


def test_daemon_stop_with_no_daemon_says_so(tmp_path: Path, run_dir: Path) -> None:
    done = subprocess.run(
        [*BRIDGE, "daemon", "--stop"],
        capture_output=True,
        text=True,
        timeout=30,
        env=_env(tmp_path, run_dir),
    )
    assert done.returncode == 0
    assert "no daemon is running" in done.stderr, done.stderr


# =====================================================================================
# --help and record
# =====================================================================================
def _help(*command: str) -> str:
    done = subprocess.run([*BRIDGE, *command, "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    return " ".join(done.stdout.split())


def test_help_explains_exec_format_and_record_session() -> None:
    exe = _help("exec")
    after = exe.split("--format {ndjson,text}", 2)[-1]
    assert after.split("--", 1)[0].strip(), f"--format has no help: {exe}"
    assert "one JSON" in after.split("--", 1)[0], exe
    rec = _help("record")
    after = rec.split("positional arguments: SESSION_ID", 1)[1]
    assert after.split("options:", 1)[0].strip(), f"SESSION_ID has no help: {rec}"
    assert "(default: stdout)" in rec.split("--out FILE", 2)[-1], rec


def test_record_writes_to_stdout_without_out(tmp_path: Path) -> None:
    run = _exec(tmp_path, "--provider", "scripted", "hello")
    assert run.returncode == 0
    session = run.stderr.split("session ", 1)[1].split()[0]
    done = subprocess.run(
        [*BRIDGE, "record", session],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    cassette = json.loads(done.stdout)
    assert cassette["recorded"]["runs"][0]["input"] == "hello"


def test_record_of_a_session_it_cannot_find_says_where_it_looked(tmp_path: Path) -> None:
    """Made with one --state-dir, recorded with another (or a mistyped one): record says
    which journal it read and what to pass, and creates no journal where there was none."""
    run = _exec(tmp_path, "--provider", "scripted", "--state-dir", str(tmp_path / "mine"), "hi")
    assert run.returncode == 0, run.stderr
    assert _exec(tmp_path, "--provider", "scripted", "other").returncode == 0  # the default's
    session = run.stderr.split("session ", 1)[1].split()[0]

    def record(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*BRIDGE, "record", session, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(tmp_path),
        )

    default = record()  # the default journal (AGENT_BRIDGE_STATE_DIR): another one
    assert default.returncode == 6, default.stderr
    assert f"journal: {tmp_path / 'state' / 'journal.sqlite3'}" in default.stderr
    assert "next step: pass the --state-dir that exec or serve used" in default.stderr
    typo = record("--state-dir", str(tmp_path / "mnie"))
    assert typo.returncode == 6, typo.stderr
    assert f"journal: none in {tmp_path / 'mnie'}" in typo.stderr, typo.stderr
    assert not (tmp_path / "mnie").exists()
    found = record("--state-dir", str(tmp_path / "mine"))
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["recorded"]["runs"][0]["input"] == "hi"


# =====================================================================================
# Claude Code at a dead endpoint
# =====================================================================================
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_exec_names_the_cause_of_claude_code_retrying(tmp_path: Path) -> None:
    from provider_clis import require_cli

    claude = require_cli("claude")
    port = _closed_port()  # nothing listens: every connection is refused
    env = _env(
        tmp_path,
        ANTHROPIC_BASE_URL=f"http://user:secret@127.0.0.1:{port}/v1?key=x",
        ANTHROPIC_API_KEY="dummy",
        AGENT_BRIDGE_CLAUDE_PATH=claude,
        CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"),
    )
    proc = subprocess.Popen(
        [*BRIDGE, "exec", "--provider", "claude-code", "--format", "text", "hello"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    notices: list[str] = []
    deadline = time.monotonic() + 120
    while len(notices) < 2 and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            if "retrying" in line:
                notices.append(line.strip())
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert len(notices) == 2, (notices, out, err[-2000:])
    for i, notice in enumerate(notices, 1):
        assert notice.startswith("· warning provider_retry: the provider is retrying"), notice
        assert f"(attempt {i} of " in notice, notice
        assert f"no response from http://127.0.0.1:{port} " in notice, notice
        assert "secret" not in notice and "key=x" not in notice
    assert proc.returncode == 130, err[-2000:]


def test_retry_notices_name_the_status_or_no_response_and_the_endpoint_only() -> None:
    from agent_bridge.adapters.claude.mapping import endpoint_label, retry_diagnostic

    assert endpoint_label({}) == "the default model endpoint"
    assert (
        endpoint_label({"ANTHROPIC_BASE_URL": "https://u:p@gw.example:8443/v1?token=t"})
        == "https://gw.example:8443"
    )
    assert endpoint_label({"ANTHROPIC_BASE_URL": "http://[::1]:9"}) == "http://[::1]:9"
    assert "ANTHROPIC_BASE_URL" in endpoint_label({"ANTHROPIC_BASE_URL": "not a url"})
    dead = retry_diagnostic(
        {"attempt": 2, "max_retries": 10, "error_status": None, "error": "upstream prose"},
        "http://127.0.0.1:9",
    )
    assert dead.code == "provider_retry" and dead.level == "warning"
    assert dead.message == (
        "the provider is retrying a failed model request (attempt 2 of 10): no response "
        "from http://127.0.0.1:9 (unreachable, refused or timed out)"
    )
    busy = retry_diagnostic({"attempt": 1, "max_retries": 3, "error_status": 529}, "E")
    assert busy.message.endswith("(attempt 1 of 3): HTTP 529 from E (a server error or overload)")
    odd = retry_diagnostic({"attempt": "x", "error_status": "500"}, "E")
    assert "upstream" not in odd.message and "attempt" not in odd.message
