"""Finding the real editors the editor-client tests drive, and failing loudly without them.

``scripts/install-editors.sh`` (called by ``scripts/test.sh``) installs Neovim into
``.tools/editors/bin`` and Emacs, Vim and tmux from Debian.  In CI (``CI=true``, or
``AGENT_BRIDGE_REQUIRE_EDITORS=1``) a missing editor is a test failure; elsewhere the
tests that need it are skipped with a reason that says how to install it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EDITORS_BIN = ROOT / ".tools" / "editors" / "bin"

__all__ = ["EDITORS_BIN", "ROOT", "bridge_command", "require_editor", "run_editor"]


def require_editor(name: str) -> str:
    """Return the path of editor ``name`` (``nvim``, ``emacs``, ``vim``, ``tmux``): the one
    in ``.tools/editors/bin`` first, then PATH.  Skips loudly, or fails in CI."""
    local = EDITORS_BIN / name
    found = str(local) if os.access(local, os.X_OK) else shutil.which(name)
    if found is not None:
        return found
    reason = f"{name} is not installed (run: bash scripts/install-editors.sh)"
    if os.environ.get("CI") == "true" or os.environ.get("AGENT_BRIDGE_REQUIRE_EDITORS") == "1":
        pytest.fail(reason)
    pytest.skip("LOUD SKIP: " + reason)


def bridge_command() -> list[str]:
    """The argv an editor spawns the real bridge with (this checkout's venv)."""
    exe = ROOT / ".venv" / "bin" / "agent-bridge"
    if not exe.exists():  # pragma: no cover - setup.sh creates it
        raise AssertionError("run scripts/setup.sh --dev first")
    return [str(exe)]


def run_editor(argv: list[str], *, env: dict[str, str], timeout: float) -> str:
    """Run an editor to completion in its own process group; return its combined output;
    raise AssertionError (with that output) when it exits non-zero or outlives
    ``timeout`` (then its whole group, the bridge it spawned included, is killed)."""
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raw, _ = proc.communicate()
        out = raw.decode(errors="replace")
        raise AssertionError(f"{argv[0]} did not finish in {timeout} s:\n{out}") from None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind
    out = raw.decode(errors="replace")
    if proc.returncode != 0:
        raise AssertionError(f"{argv[0]} exited {proc.returncode}:\n{out}")
    return out
