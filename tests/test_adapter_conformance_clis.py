"""The adapter conformance kit (:mod:`agent_bridge.testing.conformance`) on the built-in
adapters that drive real CLIs: ``claude-code``, ``codex`` and ``gemini`` (the ACP
adapter), each the real, pinned CLI (scripts/install-provider-clis.sh) against its
loopback stand-in model server (tests/standins/), with a private HOME and TMPDIR.

The provider runs in this process, on the real runtime (the kit's bench); the CLI is its
real child.  What the stand-ins cannot make a real CLI do is declared per item, with the
reason, and reported as such.  Without a CLI these tests are skipped loudly; in CI a
missing CLI fails them (tests/provider_clis.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, rules_responder
from standins.gemini_server import GeminiStandIn
from standins.responses_server import CODEX_OFFLINE_CONFIG, ResponsesStandIn

from agent_bridge.adapters.acp.provider import gemini_provider
from agent_bridge.adapters.claude.provider import ClaudeCodeProvider
from agent_bridge.adapters.codex.provider import CodexProvider
from agent_bridge.testing.conformance import AdapterUnderTest, ProviderConformance, RunSpec

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parent.parent
GEMINI_SETTINGS = ROOT / "tests" / "data" / "acp" / "gemini-settings.json"

#: What every stand-in answers a plain prompt with.
HELLO = "I am the stand-in model"
TEXT = RunSpec("say hi", expect_text=HELLO)
APPROVAL = RunSpec("TOOL:touch approved.txt")
#: A slow stream: words half a second apart, for seconds.
LONG = RunSpec("SLOW")
LATE = (
    "the CLI asks for a permission only while its turn runs; after an interrupt it drops "
    "the turn, so a request can arrive late only in a race (one already on the pipe as the "
    "interrupt is sent), which the stand-in model cannot bring about on demand"
)


def _private(monkeypatch: pytest.MonkeyPatch, base: Path) -> Path:
    """A private HOME, TMPDIR and workspace for the CLI (it inherits this process's
    environment through the adapter's allowlist); return the workspace."""
    for name in ("home", "tmp", "work"):
        (base / name).mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(base / "home"))
    monkeypatch.setenv("TMPDIR", str(base / "tmp"))
    return base / "work"


class TestClaudeCodeConformance(ProviderConformance):
    """The claude-code adapter driving the real ``claude`` CLI (stream-json, resident)."""

    @pytest.fixture
    def adapter(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[AdapterUnderTest]:
        cli = require_cli("claude")
        with AnthropicStandIn(responder=rules_responder()) as server:
            work = _private(monkeypatch, tmp_path)
            (tmp_path / "config").mkdir()
            monkeypatch.setenv("AGENT_BRIDGE_CLAUDE_PATH", cli)
            monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
            monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
            monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
            yield AdapterUnderTest(
                provider=ClaudeCodeProvider(),
                workspace=str(work),
                text_run=TEXT,
                approval_run=APPROVAL,
                long_run=LONG,
                not_exercised={"late_interaction": LATE},
            )


class TestCodexConformance(ProviderConformance):
    """The codex adapter driving the real ``codex app-server``."""

    @pytest.fixture
    def adapter(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[AdapterUnderTest]:
        cli = require_cli("codex")
        with ResponsesStandIn() as server:
            work = _private(monkeypatch, tmp_path)
            codex_home = tmp_path / "codex-home"
            codex_home.mkdir()
            (codex_home / "config.toml").write_text(CODEX_OFFLINE_CONFIG)
            monkeypatch.setenv("AGENT_BRIDGE_CODEX_PATH", cli)
            monkeypatch.setenv("STUB_API_KEY", "dummy-key")
            yield AdapterUnderTest(
                provider=CodexProvider(),
                workspace=str(work),
                session_options={
                    "codexHome": str(codex_home),
                    "approvalPolicy": "untrusted",
                    "sandbox": "workspace-write",
                    "config": [f'model_providers.stub.base_url="{server.base_url}"'],
                },
                text_run=TEXT,
                approval_run=APPROVAL,
                long_run=LONG,
                not_exercised={"late_interaction": LATE},
            )


class TestGeminiAcpConformance(ProviderConformance):
    """The ACP adapter (the built-in ``gemini`` provider) driving the real ``gemini --acp``."""

    @pytest.fixture
    def adapter(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[AdapterUnderTest]:
        cli = require_cli("gemini")
        with GeminiStandIn() as server:
            work = _private(monkeypatch, tmp_path)
            home = tmp_path / "home"
            (home / ".gemini").mkdir(parents=True)
            shutil.copy(GEMINI_SETTINGS, home / ".gemini" / "settings.json")
            monkeypatch.setenv("AGENT_BRIDGE_GEMINI_PATH", cli)
            monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
            monkeypatch.setenv("GEMINI_API_KEY", "dummy")
            monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
            monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
            yield AdapterUnderTest(
                provider=gemini_provider(),
                workspace=str(work),
                text_run=TEXT,
                approval_run=APPROVAL,
                long_run=LONG,
                not_exercised={"late_interaction": LATE},
            )
