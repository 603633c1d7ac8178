"""The command line: one-line validation errors, ``serve --stdio``, and ``doctor``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [sys.executable, "-m", "agent_bridge", *args],
        input="",
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("serve", "--log-file", "/nonexistent/x.log"), "--log-file: no such directory"),
        (("serve", "--max-message-bytes", "0"), "must be at least 1024"),
        (("serve", "--max-inflight", "-1"), "must be at least 1"),
        (("serve", "--interrupt-grace", "-2"), "between 0 and 3600"),
        (("serve", "--retain-days", "x"), "not a number"),
        (("serve", "--bogus"), "agent-bridge serve: unrecognized arguments: --bogus"),
        # a subcommand's option before the subcommand: where it goes, not "invalid choice"
        (
            ("--provider", "scripted", "exec", "hi"),
            "agent-bridge: --provider: options go after the subcommand",
        ),
        (("--stdio",), "agent-bridge: --stdio: options go after the subcommand"),
    ],
)
def test_bad_options_get_one_line(args: tuple[str, ...], says: str) -> None:
    done = cli(*args)
    assert done.returncode == 2
    assert says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_log_level_any_case_and_stdio_accepted() -> None:
    done = cli("serve", "--stdio", "--log-level", "debug", "--state-dir", ":memory:")
    assert done.returncode == 0, done.stderr
    assert "DEBUG" in done.stderr


def test_help_has_units_defaults_and_examples() -> None:
    for sub in ("serve", "acp", "demo", "schema", "doctor", "exec", "record"):
        text = cli(sub, "--help").stdout
        assert "example: agent-bridge " + sub in text
    serve = cli("serve", "--help").stdout
    assert "BYTES" in serve and "default: 16777216" in serve and "SECONDS" in serve


def test_doctor_json_is_read_only(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = cli(
        "doctor", "--json", "--state-dir", str(state), env={"AGENT_BRIDGE_CLAUDE_PATH": "/nope"}
    )
    report = json.loads(done.stdout)
    ids = [p["id"] for p in report["providers"]]
    assert ids[:1] == ["scripted"] and "claude-code" in ids and "codex" in ids
    assert report["journal"]["status"] == "absent"
    assert not state.exists()  # never created
    # No real provider on this PATH: nothing usable.
    assert done.returncode == 1
    scripted = cli("doctor", "--provider", "scripted", "--state-dir", str(state))
    assert scripted.returncode == 0 and "scripted" in scripted.stdout
    assert "+ available" not in scripted.stdout  # plain when piped
    assert cli("doctor", "--provider", "nope").returncode == 2


def test_doctor_reports_a_journal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    cli("serve", "--state-dir", str(state))  # EOF at once: creates the journal
    report = json.loads(cli("doctor", "--json", "--state-dir", str(state)).stdout)
    assert report["journal"]["status"] == "ok" and report["journal"]["bytes"] > 0


@pytest.mark.parametrize("fifo", ["journal.sqlite3", "journal.sqlite3-wal"])
def test_doctor_reports_a_journal_that_is_not_a_file(tmp_path: Path, fifo: str) -> None:
    """A named pipe as the journal or its write-ahead log: serve refuses to start on it,
    and doctor says so in the same words (it said "ok", or "absent" for the journal, and
    it must not hang on the pipe)."""
    state = tmp_path / "state"
    cli("serve", "--state-dir", str(state))  # EOF at once: creates the journal
    target = state / fifo
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    report = json.loads(cli("doctor", "--json", "--state-dir", str(state)).stdout)
    assert report["journal"]["status"] == "unreadable"
    assert "a named pipe, not a file" in report["journal"]["reason"]
    assert str(target) in report["journal"]["reason"]
    refused = cli("serve", "--state-dir", str(state))
    assert refused.returncode == 1 and "a named pipe, not a file" in refused.stderr
