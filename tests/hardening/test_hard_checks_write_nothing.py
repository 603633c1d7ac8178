"""Issue 30, item 12: a check writes nothing, and says what it found.

`agent-bridge doctor` (and every `providers/list` with `probe`) ran `claude auth status`
and a short-lived `codex app-server` with the user's own home: on a fresh home the check
created `~/.claude.json`, `~/.claude/backups/` and a `~/.codex` full of databases. Rule
(`agent_bridge.adapters.kit.probe.throwaway_home`): a probe runs in a throwaway home
holding copies of the files the CLI reads for the check, so it reports the user's state
and writes nothing of theirs. And `doctor` exited 0 with every real provider installed but
logged out; the README says it exits non-zero while no real provider is usable.

Real CLIs (`.tools`, installed by scripts/install-provider-clis.sh), a real `doctor`
process, a fresh `HOME`; no network is needed (nothing here logs in).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from provider_clis import require_cli

pytestmark = pytest.mark.timeout(180)


def _doctor(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``doctor`` with only the real ``claude`` and ``codex`` on PATH (the other agents
    in .tools would answer ``unknown``, which doctor does not hold against them)."""
    bin_dir = home.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("claude", "codex"):
        link = bin_dir / name
        if not link.exists():
            link.symlink_to(os.path.realpath(require_cli(name)))
    path = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-m", "agent_bridge", "doctor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )


def _tree(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes() if p.is_file() else b"" for p in home.rglob("*")
    }


def _by_id(out: str) -> dict[str, Any]:
    return {p["id"]: p for p in json.loads(out)["providers"]}


def test_case_12_doctor_writes_nothing_under_a_fresh_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = _doctor(home, "--json")
    providers = _by_id(done.stdout)
    assert providers["claude-code"]["status"] == "available", providers["claude-code"]
    assert providers["codex"]["status"] == "available", providers["codex"]
    assert providers["claude-code"]["authentication"] == "unauthenticated"
    assert providers["codex"]["authentication"] == "unauthenticated"
    assert _tree(home) == {}, "the check wrote under the user's home"
    # the README: doctor "exits non-zero while no real provider is usable"
    assert done.returncode == 1, (done.returncode, done.stderr)


def test_case_12_the_probes_report_the_users_login_from_copies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "auth.json").write_text('{"OPENAI_API_KEY": "sk-test-not-a-real-key-0001"}')
    (home / ".claude.json").write_text('{"primaryApiKey": "sk-ant-api03-not-a-real-key-0002"}')
    before = _tree(home)
    done = _doctor(home, "--json")
    providers = _by_id(done.stdout)
    assert providers["codex"]["authentication"] == "authenticated"  # read from the copy
    assert done.returncode == 0, done.stderr
    # `claude auth status` reports a stored key as a claude.ai login
    assert providers["claude-code"]["authentication"] in ("authenticated", "unknown")
    assert providers["claude-code"]["authentication"] != "unauthenticated"
    assert _tree(home) == before, "the check changed the user's home"
