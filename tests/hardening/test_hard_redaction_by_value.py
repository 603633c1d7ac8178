"""Issue 30, item 8: credentials are redacted by value, and never stored in the journal.

A credential whose value does not look like a key (``ANTHROPIC_AUTH_TOKEN=tok-...``, which
the Claude adapter passes to the CLI) appeared in clear in ``--log-file`` and on the
bridge's stderr when the CLI printed it: redaction knew only shapes (``sk-...``,
``api_key=...``). And session options were stored in the journal verbatim, an ``env``
option's values included. Rule: every credential the bridge passes to a child (an
adapter's pass-through list, ``passEnv``, an ``env`` option) is remembered when the
child's environment is built (``agent_bridge.processes.build_child_env``) and redacted by
its value from every log record and every redacted text from then on; the journal keeps
no credential value (``agent_bridge.options.storable_options``).

Real bridges (``serve``) over real pipes, each provider a real child process printing
the bare value on its stderr and crashing: the fake Claude CLI (``ANTHROPIC_AUTH_TOKEN``
from the bridge's environment), the fake Codex app-server (``passEnv``) and the ACP
stand-in behind the generic ``acp`` provider (an ``env`` option).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hardening.fakecli import FakeCLI
from hardening.hosts import RecordingBridge, recording_bridge

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc"),
    pytest.mark.timeout(120),
]

ROOT = Path(__file__).resolve().parents[2]
FAKE_ACP = ROOT / "tests" / "standins" / "fake_acp.py"

#: no key shape anywhere: not sk-, not a JWT, not after "token=" in what the child prints
VALUE = "tok-plainVALUE-30-8-a1b2c3d4"
PRINTED = f"upstream said: the credential {VALUE} was refused\n"

#: an ACP agent that prints its credential on stderr, then is the ACP stand-in
ACP_WRAPPER = """
import os, runpy, sys
sys.stderr.write("agent starting with " + os.environ.get("MY_CRED", "(none)") + "\\n")
sys.stderr.flush()
with open(sys.argv[1], "a") as fh:
    fh.write(os.environ.get("MY_CRED", "(none)") + "\\n")
sys.argv = [sys.argv[2], *sys.argv[3:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _assert_nowhere(bridge: RecordingBridge, log_file: Path) -> None:
    log = log_file.read_text()
    assert VALUE not in log, "the value reached --log-file"
    assert VALUE.encode() not in bytes(bridge.stderr), "the value reached the bridge's stderr"
    assert VALUE.encode() not in bridge.all_bytes(), "the value reached the host"
    assert "[REDACTED]" in log, (
        f"the child's stderr was never logged: the test proves nothing\n{log}"
    )


async def _crash_run(bridge: RecordingBridge, params: dict[str, Any], text: str = "go") -> None:
    created = await bridge.call("session/create", params, timeout=30)
    if "error" in created:
        return  # a crash at start-up: logged all the same
    sid = created["result"]["session"]["sessionId"]
    await bridge.result("run/start", {"sessionId": sid, "input": {"text": text}})
    terminal = await bridge.terminal(timeout=30)
    assert terminal["payload"]["type"] == "run.failed", terminal


async def test_case_8_claude_pass_through_credential_is_redacted_by_value(tmp_path: Path) -> None:
    script = {"turns": [[{"text": "partial"}, {"crash": {"exit_code": 3, "stderr": PRINTED}}]]}
    fake = FakeCLI(tmp_path, "claude", script)
    log_file = tmp_path / "bridge.log"
    env = fake.env(ANTHROPIC_AUTH_TOKEN=VALUE)
    args = ("--log-file", str(log_file), "--log-level", "DEBUG")
    async with recording_bridge("newline", *args, env=env) as bridge:
        await _crash_run(bridge, fake.create_params())
    _assert_nowhere(bridge, log_file)


async def test_case_8_codex_pass_env_credential_is_redacted_by_value(tmp_path: Path) -> None:
    script = {
        "replies": [[{"text": "partial"}, {"sleep": 5}]],
        "faults": {"crash": {"after": "item/agentMessage/delta", "code": 101, "stderr": PRINTED}},
    }
    fake = FakeCLI(tmp_path, "codex", script)
    log_file = tmp_path / "bridge.log"
    env = fake.env(MY_UPSTREAM=VALUE)
    args = ("--log-file", str(log_file), "--log-level", "DEBUG")
    async with recording_bridge("newline", *args, env=env) as bridge:
        await _crash_run(bridge, fake.create_params(passEnv=["MY_UPSTREAM"]))
    _assert_nowhere(bridge, log_file)


def _acp_params(tmp_path: Path, **options: Any) -> dict[str, Any]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (tmp_path / "agent-state").mkdir(exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"state_dir": str(tmp_path / "agent-state")}))
    command = [
        sys.executable,
        "-c",
        ACP_WRAPPER,
        str(tmp_path / "seen.txt"),
        str(FAKE_ACP),
        "--script",
        str(script),
    ]
    return {"provider": "acp", "workspace": str(work), "options": {"command": command, **options}}


async def test_case_8_acp_env_option_credential_is_redacted_by_value(tmp_path: Path) -> None:
    log_file = tmp_path / "bridge.log"
    args = ("--log-file", str(log_file), "--log-level", "DEBUG")
    async with recording_bridge("newline", *args) as bridge:
        await _crash_run(bridge, _acp_params(tmp_path, env={"MY_CRED": VALUE}), "CRASH")
    assert (tmp_path / "seen.txt").read_text() == VALUE + "\n"  # the agent did get it
    _assert_nowhere(bridge, log_file)


def _journal_bytes(state: Path) -> bytes:
    return b"".join(p.read_bytes() for p in state.iterdir() if p.name.startswith("journal."))


async def test_case_8_the_journal_stores_no_env_option_value_and_resume_still_works(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    params = _acp_params(tmp_path, env={"MY_CRED": VALUE, "PLAIN": "x"})
    seen = tmp_path / "seen.txt"
    async with recording_bridge("newline", "--state-dir", str(state)) as bridge:
        sid = (await bridge.result("session/create", params, timeout=30))["session"]["sessionId"]
        await bridge.result("session/close", {"sessionId": sid}, timeout=30)
        # reopened in the same process: the withheld value comes back from memory
        await bridge.result("session/resume", {"sessionId": sid}, timeout=30)
        await bridge.result("session/close", {"sessionId": sid}, timeout=30)
    assert seen.read_text() == f"{VALUE}\n{VALUE}\n"
    assert VALUE.encode() not in _journal_bytes(state)
    with sqlite3.connect(state / "journal.sqlite3") as db:
        [(stored,)] = db.execute("SELECT options FROM sessions").fetchall()
    assert b"MY_CRED" in bytes(stored) and b"[withheld]" in bytes(stored)  # names are kept
    # a later bridge cannot know the value: it asks for the options, and takes them
    async with recording_bridge("newline", "--state-dir", str(state)) as bridge:
        reply = await bridge.call("session/resume", {"sessionId": sid}, timeout=30)
        assert reply["error"]["data"]["code"] == "invalid_option", reply
        assert reply["error"]["data"]["details"]["option"] == "env", reply
        again = {"sessionId": sid, "options": params["options"]}
        await bridge.result("session/resume", again, timeout=30)
        await bridge.result("session/close", {"sessionId": sid}, timeout=30)
    assert seen.read_text() == f"{VALUE}\n{VALUE}\n{VALUE}\n"
    assert VALUE.encode() not in _journal_bytes(state)


def test_case_8_exec_stderr_redacts_the_value(tmp_path: Path) -> None:
    """``exec`` logs through Python's last-resort handler (no logging configured): its
    stderr, where the crashed CLI's stderr tail is reported, holds no value either."""
    script = {"turns": [[{"text": "partial"}, {"crash": {"exit_code": 3, "stderr": PRINTED}}]]}
    fake = FakeCLI(tmp_path, "claude", script)
    env = {
        **os.environ,
        **fake.env(ANTHROPIC_AUTH_TOKEN=VALUE),
        "AGENT_BRIDGE_STATE_DIR": str(tmp_path / "state"),
    }
    argv = ["exec", "--provider", "claude-code", "--option", "startupTimeoutSeconds=10"]
    done = subprocess.run(
        [sys.executable, "-m", "agent_bridge", *argv, "--workspace", str(fake.workspace), "hi"],
        env=env,
        capture_output=True,
        timeout=90,
    )
    assert done.returncode == 4, done  # provider_crashed
    assert VALUE.encode() not in done.stderr + done.stdout
    assert b"[REDACTED]" in done.stderr, done.stderr  # the tail was reported, scrubbed
