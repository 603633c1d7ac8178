"""Finding the real provider CLIs for end-to-end tests, and failing loudly without them.

``scripts/install-provider-clis.sh`` installs the pinned CLIs into ``.tools/npm``; CI runs
it and sets ``AGENT_BRIDGE_REQUIRE_CLIS=1``, which turns a missing CLI into a test
failure.  On a developer machine without them the end-to-end tests are skipped with a
reason that says how to install them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS_BIN = ROOT / ".tools" / "npm" / "node_modules" / ".bin"

_ENV_NAMES = {"claude": "AGENT_BRIDGE_CLAUDE_PATH", "codex": "AGENT_BRIDGE_CODEX_PATH"}


def find_cli(name: str) -> str | None:
    """Return the path of CLI ``name`` (env override, project tools folder, PATH)."""
    override = os.environ.get(_ENV_NAMES.get(name, ""), "")
    if override:
        return override if os.access(override, os.X_OK) else None
    candidate = TOOLS_BIN / name
    if candidate.exists() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which(name)


def require_cli(name: str) -> str:
    """Return the CLI's path; skip loudly, or fail when ``AGENT_BRIDGE_REQUIRE_CLIS=1``."""
    path = find_cli(name)
    if path is not None:
        return path
    reason = (
        f"the real `{name}` CLI is not installed: run scripts/install-provider-clis.sh "
        f"(or set {_ENV_NAMES.get(name, 'its path')}) to run the end-to-end tests"
    )
    if os.environ.get("AGENT_BRIDGE_REQUIRE_CLIS") == "1":
        pytest.fail(reason)
    pytest.skip("LOUD SKIP: " + reason)
