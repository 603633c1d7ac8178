"""``agent-bridge exec`` and ``record`` against the scripted provider, and the pytest
plugin used by a test project of its own (a temporary folder, pytest in a subprocess)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.testing import (
    BridgeClient,
    Cassette,
    Script,
    assert_event_types,
    normalized,
    replay_cassette,
)

ROOT = Path(__file__).resolve().parent.parent

APPROVAL = (
    Script()
    .text("hi")
    .approval(
        "touch x", on_allow=Script().text("allowed"), on_deny=Script().fail("provider_rate_limited")
    )
)


def exec_cli(
    state: str, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_bridge", "exec", "--state-dir", state, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_exec_prints_only_events_and_exits_0(agent_bridge_state_dir: str) -> None:
    done = exec_cli(agent_bridge_state_dir, "--provider", "scripted", "-", stdin="hello\n")
    assert done.returncode == 0, done.stderr
    events = events_of(done.stdout)
    assert_event_types(events, ["run.started", "text.delta", "run.completed"])
    assert events[1]["payload"]["text"] == "You said: hello"
    assert "session ses_" in done.stderr


@pytest.mark.parametrize(
    ("policy", "code", "last"), [("once", 0, "run.completed"), ("deny", 5, "run.failed")]
)
def test_exec_answers_approvals_by_policy(
    agent_bridge_state_dir: str, policy: str, code: int, last: str
) -> None:
    done = exec_cli(
        agent_bridge_state_dir,
        "--provider",
        "scripted",
        "--option",
        f"script={json.dumps(APPROVAL.build())}",
        "--approve",
        policy,
        "go",
    )
    assert done.returncode == code, done.stderr
    events = events_of(done.stdout)
    settled = next(e for e in events if e["payload"]["type"] == "interaction.settled")
    decision = "allow" if policy == "once" else "deny"
    assert settled["payload"]["answer"] == {"kind": "approval", "decision": decision}
    assert events[-1]["payload"]["type"] == last


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--option", 'script={"steps":[{"type":"fail","code":"provider_crashed"}]}'], 4),
        (["--option", 'script={"steps":[{"type":"fail","code":"provider_failed"}]}'], 1),
        (["--option", "nope=1"], 2),
        (["--option", "script=/does/not/exist.json"], 2),
        (["--session", "ses_missing"], 6),
    ],
)
def test_exec_exit_codes(agent_bridge_state_dir: str, args: list[str], code: int) -> None:
    done = exec_cli(agent_bridge_state_dir, "--provider", "scripted", *args, "go")
    assert done.returncode == code, done.stderr


def test_exec_text_format(agent_bridge_state_dir: str) -> None:
    done = exec_cli(
        agent_bridge_state_dir,
        "--provider",
        "scripted",
        "--format",
        "text",
        "--approve",
        "once",
        "--option",
        f"script={json.dumps(APPROVAL.build())}",
        "go",
    )
    assert done.returncode == 0
    assert done.stdout.startswith("hi\n· approval: touch x\n")
    assert "allowed" in done.stdout and "· completed (end_turn)" in done.stdout


def test_exec_text_arrives_whole_in_order_and_in_few_writes_while_the_run_goes_on() -> None:
    """``--format text`` writes a released batch of events with one write and flushes once
    the loop has run what was ready: 5,000 deltas arrive whole and in order, before the
    run ends (the child waits for an interrupt after them), in a few write system calls
    (one a delta, 4,800 and more, before batching), read from the child's own counter."""
    text = "".join(f"<{i}>" for i in range(5000))
    script = Script().text(text, chunks=5000).wait_for_interrupt().build()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "exec",
            "--state-dir",
            ":memory:",  # no journal: the child's writes are its stdout's (and stderr's)
            "--format",
            "text",
            "--provider",
            "scripted",
            "--option",
            f"script={json.dumps(script)}",
            "go",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        got = b""
        deadline = time.monotonic() + 30
        while not got.endswith(b"<4999>"):
            assert time.monotonic() < deadline, got[-200:]
            ready, _, _ = select.select([proc.stdout], [], [], 1)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 1 << 20)
                assert chunk, "stdout ended before the run did"
                got += chunk
        counters = dict(
            line.split(": ") for line in Path(f"/proc/{proc.pid}/io").read_text().splitlines()
        )
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert (got + out).decode() == text + "\n· interrupted (user)\n"
    assert int(counters["syscw"]) < 1000, counters


def test_exec_sigint_interrupts_the_run_cleanly(agent_bridge_state_dir: str) -> None:
    script = Script().text("waiting").wait_for_interrupt().build()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "exec",
            "--state-dir",
            agent_bridge_state_dir,
            "--provider",
            "scripted",
            "--option",
            f"script={json.dumps(script)}",
            "go",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline(), proc.stdout.readline()]  # run.started, text.delta
    assert json.loads(lines[1])["payload"]["text"] == "waiting"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    last = json.loads(out.splitlines()[-1])
    assert last["payload"] == {"type": "run.interrupted", "reason": "user"}


def test_exec_continues_a_session_and_record_replays_it(agent_bridge_state_dir: str) -> None:
    script = {"runs": [{"steps": [{"type": "text", "text": "one"}]}, APPROVAL.build()]}
    first = exec_cli(
        agent_bridge_state_dir,
        "--provider",
        "scripted",
        "--option",
        f"script={json.dumps(script)}",
        "first",
    )
    session = events_of(first.stdout)[0]["sessionId"]
    second = exec_cli(agent_bridge_state_dir, "--session", session, "--approve", "once", "go")
    assert second.returncode == 0, second.stderr
    assert events_of(second.stdout)[0]["payload"]["type"] == "session.resumed"
    out = Path(agent_bridge_state_dir).parent / "cassette.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "record",
            session,
            "--out",
            str(out),
            "--state-dir",
            agent_bridge_state_dir,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    cassette = Cassette(out)
    assert [r["input"] for r in cassette.runs] == ["first", "go"]
    with BridgeClient(agent_bridge_state_dir) as client:
        client.initialize()
        runs = replay_cassette(client, cassette)
    cassette.assert_matches(runs)
    assert normalized(runs[1])[-1] == {"type": "run.completed", "stopReason": "end_turn"}


def test_record_redacts_secret_shaped_text(agent_bridge_state_dir: str) -> None:
    secret = "sk-ant-abcdefghijklmnop1234"
    script = Script().text(f"the key is {secret}").build()
    first = exec_cli(
        agent_bridge_state_dir,
        "--provider",
        "scripted",
        "--option",
        f"script={json.dumps(script)}",
        "go",
    )
    session = events_of(first.stdout)[0]["sessionId"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "record",
            session,
            "--out",
            "-",
            "--state-dir",
            agent_bridge_state_dir,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and secret not in done.stdout
    assert "[REDACTED]" in done.stdout
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "record",
            "ses_missing",
            "--out",
            "-",
            "--state-dir",
            agent_bridge_state_dir,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 6


PROJECT_TEST = """
import pytest
from agent_bridge.testing import Script, assert_event_types, replay_cassette

def test_sync(agent_bridge):
    session = agent_bridge.create_session(Script().text("hi").approval().session())
    events = agent_bridge.run(session, "go")
    assert_event_types(events, ["run.started", "text.delta", "interaction.requested",
                                "interaction.settled", "run.completed"])

async def test_async(agent_bridge_async):
    import anyio
    async def main():
        async with agent_bridge_async() as client:
            session = await client.create_session(Script().echo().session())
            events = await client.run(session, "ping")
            assert events[1]["payload"]["text"] == "You said: ping"
    await main()

@pytest.mark.agent_bridge_cassette("cassette.json")
def test_cassette(agent_bridge, agent_bridge_cassette):
    agent_bridge_cassette.assert_matches(replay_cassette(agent_bridge, agent_bridge_cassette))
"""


def run_project(tmp: Path, ini: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp / "pytest.ini").write_text(ini)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
    )


def test_the_plugin_in_a_test_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_host.py").write_text(textwrap.dedent(PROJECT_TEST))
    (project / "cassette.json").write_text(
        (ROOT / "tests/conformance/recorded/claude_approval.json").read_text()
    )
    ini = (
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n"
    )
    # Installed but not asked for: nothing changes (neither the marker nor the fixtures
    # exist, so this project fails to collect under filterwarnings=error).
    off = run_project(project, ini)
    assert off.returncode != 0
    assert "Unknown pytest.mark.agent_bridge_cassette" in off.stdout, off.stdout
    # Asked for with -p, then with the ini setting.
    on = run_project(project, ini, "-p", "agent_bridge.testing")
    assert on.returncode == 0, on.stdout + on.stderr
    assert "3 passed" in on.stdout
    started = time.monotonic()
    by_ini = run_project(project, ini + "agent_bridge = true\n")
    assert by_ini.returncode == 0, by_ini.stdout + by_ini.stderr
    assert time.monotonic() - started < 120


def test_a_missing_cassette_says_where_it_looked_and_how_to_make_one(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_host.py").write_text(textwrap.dedent(PROJECT_TEST))  # no cassette.json
    done = run_project(project, "[pytest]\n", "-p", "agent_bridge.testing", "-k", "cassette")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"no cassette {project / 'cassette.json'}" in done.stdout, done.stdout
    assert "agent-bridge record SESSION_ID --out FILE" in done.stdout, done.stdout
    assert "FileNotFoundError" not in done.stdout, done.stdout


def test_the_node_host_example_of_the_docs_runs(tmp_path: Path) -> None:
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run(
        [
            node,
            str(ROOT / "docs/examples/node_host_test.mjs"),
            str(ROOT / "tests/conformance/recorded/codex_approval.json"),
            sys.executable,
            "-m",
            "agent_bridge",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "same events" in done.stdout
    # the example removes the state directory it made
    assert not list(tmp_path.glob("bridge-state-*")), list(tmp_path.iterdir())
