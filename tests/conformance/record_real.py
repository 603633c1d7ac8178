"""Record one real-provider session per adapter as a scripted-provider script.

    .venv/bin/python tests/conformance/record_real.py            # claude and codex
    .venv/bin/python tests/conformance/record_real.py claude

Each drives the real, pinned CLI (scripts/install-provider-clis.sh) through a real
``agent-bridge serve`` against its loopback stand-in (tests/standins/): one run whose
tool call is approved.  ``agent-bridge record`` then turns the journaled session into
``tests/conformance/recorded/<adapter>_approval.json``, which
``tests/test_recorded_sessions.py`` replays through the scripted provider in CI (no CLI,
no network).  Re-record after a deliberate change of an adapter's mapping, and review
the diff.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from agent_bridge.testing import BridgeClient, answer_with  # noqa: E402

RECORDED = Path(__file__).resolve().parent / "recorded"


def _record(state_dir: str, session_id: str, out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "record",
            session_id,
            "--out",
            str(out),
            "--state-dir",
            state_dir,
        ],
        check=True,
    )


def record_claude(out: Path, cli: str) -> list[dict[str, Any]]:
    """Record a Claude Code session with one approved Bash call into ``out``; return
    the run's events as the host saw them."""
    from standins.anthropic_server import AnthropicStandIn, Text, ToolUse

    with tempfile.TemporaryDirectory(prefix="record-claude-") as tmp, AnthropicStandIn() as server:
        base = Path(tmp)
        for name in ("home", "config", "tmp", "work", "state"):
            (base / name).mkdir()
        env = {
            "AGENT_BRIDGE_CLAUDE_PATH": cli,
            "HOME": str(base / "home"),
            "CLAUDE_CONFIG_DIR": str(base / "config"),
            "TMPDIR": str(base / "tmp"),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        server.push(ToolUse("touch approved.txt"), Text("Done."))
        state = str(base / "state")
        with BridgeClient(state, env=env) as client:
            client.initialize()
            session = client.create_session(
                {"provider": "claude-code", "workspace": str(base / "work")}
            )
            events = client.run(session, "create the file", answer_with("allow"), timeout=60)
        _record(state, session, out)
        return events


def record_codex(out: Path, cli: str) -> list[dict[str, Any]]:
    """Record a Codex session with one approved command into ``out``."""
    from standins.responses_server import CODEX_OFFLINE_CONFIG, ResponsesStandIn

    with tempfile.TemporaryDirectory(prefix="record-codex-") as tmp, ResponsesStandIn() as server:
        base = Path(tmp)
        for name in ("home", "work", "tmp", "codex-home", "state"):
            (base / name).mkdir()
        (base / "codex-home" / "config.toml").write_text(CODEX_OFFLINE_CONFIG)
        env = {
            "AGENT_BRIDGE_CODEX_PATH": cli,
            "HOME": str(base / "home"),
            "TMPDIR": str(base / "tmp"),
            "STUB_API_KEY": "dummy-key",
        }
        options = {
            "codexHome": str(base / "codex-home"),
            "approvalPolicy": "untrusted",
            "sandbox": "workspace-write",
            "config": [f'model_providers.stub.base_url="{server.base_url}"'],
        }
        state = str(base / "state")
        with BridgeClient(state, env=env) as client:
            client.initialize()
            session = client.create_session(
                {"provider": "codex", "workspace": str(base / "work"), "options": options}
            )
            events = client.run(
                session, "TOOL:touch approved.txt", answer_with("allow"), timeout=60
            )
        _record(state, session, out)
        return events


def main(argv: list[str]) -> int:
    from provider_clis import require_cli

    which = argv or ["claude", "codex"]
    RECORDED.mkdir(exist_ok=True)
    if "claude" in which:
        record_claude(RECORDED / "claude_approval.json", require_cli("claude"))
    if "codex" in which:
        record_codex(RECORDED / "codex_approval.json", require_cli("codex"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
