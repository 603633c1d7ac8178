"""Issue 30, item 12: a command's bad arguments get one line, never a traceback.

`daemon --log-file /nonexistent/x.log` printed a traceback (fixed when the commands moved
into `bridge/commands/` with one boot: `boot.start_logging`), and `daemon --idle-timeout
-5` was accepted (a bare ``type=float``). Rule: every value an option takes is checked
by a named check of `agent_bridge.commands.options` (a range, a finite number), so a bad
one is a usage error (exit 2, one line naming the option).

Real `agent-bridge` processes; the static test walks every subcommand's parser.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest


def _bridge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_bridge", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_case_12_daemon_log_file_in_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    done = _bridge(
        "daemon",
        "--state-dir",
        str(tmp_path / "s"),
        "--log-file",
        "/nonexistent/x.log",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "--log-file" in done.stderr, done.stderr


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "soon"])
def test_case_12_daemon_refuses_a_bad_idle_timeout(tmp_path: Path, value: str) -> None:
    done = _bridge(
        "daemon", "--state-dir", str(tmp_path / "s"), f"--idle-timeout={value}", cwd=tmp_path
    )
    assert done.returncode == 2, done  # a usage error; no daemon was started
    assert "--idle-timeout" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "s").exists()


def test_case_12_every_numeric_option_of_every_command_is_checked() -> None:
    from agent_bridge.cli import _parser

    unchecked = []
    top = _parser()
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for option in sub._actions:
                    if option.type in (float, int):
                        unchecked.append(f"{name} {'/'.join(option.option_strings)}")
    assert unchecked == [], f"a bare float/int takes any value (-5, nan, inf): {unchecked}"
