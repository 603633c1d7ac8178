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
#: The npm prefix the CLIs are installed in: ``.tools/npm`` (the pinned set), or the one
#: ``AGENT_BRIDGE_TOOLS_DIR`` names (``scripts/test-latest-clis.sh`` points it at
#: ``.tools/npm-latest``, the newest published versions).
TOOLS_DIR = Path(os.environ.get("AGENT_BRIDGE_TOOLS_DIR") or ROOT / ".tools" / "npm")
TOOLS_BIN = TOOLS_DIR / "node_modules" / ".bin"
#: Running against the newest published CLIs instead of the pinned ones.
LATEST = os.environ.get("AGENT_BRIDGE_LATEST_CLIS") == "1"


def pinned(version: str) -> str | None:
    """``version`` (the pinned one a test expects), or ``None`` against the latest CLIs,
    where any version is accepted."""
    return None if LATEST else version


_ENV_NAMES = {
    "claude": "AGENT_BRIDGE_CLAUDE_PATH",
    "codex": "AGENT_BRIDGE_CODEX_PATH",
    "gemini": "AGENT_BRIDGE_GEMINI_PATH",
    "claude-agent-acp": "AGENT_BRIDGE_ACP_CLAUDE_ACP_PATH",
    "codex-acp": "AGENT_BRIDGE_ACP_CODEX_ACP_PATH",
    "opencode": "AGENT_BRIDGE_OPENCODE_PATH",
    "qwen": "AGENT_BRIDGE_QWEN_PATH",
    "fast-agent": "AGENT_BRIDGE_FAST_AGENT_PATH",
    "vibe-acp": "AGENT_BRIDGE_MISTRAL_VIBE_PATH",
}
#: The Python agents' venvs (scripts/install-python-agents.sh): ``.tools/py/<name>``, or
#: ``.tools/py-latest`` with ``AGENT_BRIDGE_LATEST_CLIS=1``.
PY_TOOLS_DIR = ROOT / ".tools" / ("py-latest" if LATEST else "py")


def cli_env_name(name: str) -> str:
    """The variable that overrides CLI ``name``'s path (the provider's own)."""
    return _ENV_NAMES.get(name) or "AGENT_BRIDGE_" + name.upper().replace("-", "_") + "_PATH"


def find_cli(name: str) -> str | None:
    """Return the path of CLI ``name`` (env override, project tools folder, PATH)."""
    override = os.environ.get(_ENV_NAMES.get(name, ""), "")
    if override:
        return override if os.access(override, os.X_OK) else None
    for candidate in (TOOLS_BIN / name, *PY_TOOLS_DIR.glob(f"*/bin/{name}")):
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
    if os.environ.get("AGENT_BRIDGE_REQUIRE_CLIS") == "1" or os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip("LOUD SKIP: " + reason)
