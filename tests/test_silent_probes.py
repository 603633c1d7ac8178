"""Probes and session spawns are silent: no connection but loopback (issue 11, item 8).

The outer test re-runs this module's ``inner_*`` checks in a network namespace that has
only loopback, with a DNS logger answering on 127.0.0.1:53 (``tests/netns_dns.py``), and
fails on any lookup at all.  Inside, the real CLIs run with empty homes (an empty
``CODEX_HOME`` is what made Codex sync plugins from github.com; ``claude auth status``
looked up the model API host): ``providers/list`` with ``probe``, and one session of each
CLI against its loopback stand-in, configured without any of the tests' own quieting
variables, so what keeps them silent is the adapters' launch code.

Needs root (``unshare``), ``ip`` and the real CLIs; skipped loudly otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import running_bridge
from loopback_netns import INSIDE, run_inside, skip_unless_outer
from provider_clis import find_cli, require_cli
from standins.anthropic_server import AnthropicStandIn, Text
from standins.responses_server import ResponsesStandIn, reply, text

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

HERE = Path(__file__).resolve().parent

#: The stand-in Codex config, without the tests' own ``[features]``/``[analytics]``
#: quieting: only the adapter's launch code may keep the session silent.
CODEX_CONFIG = """\
model = "stub-model"
model_provider = "stub"

[model_providers.stub]
name = "Stub (loopback stand-in)"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"
"""


def test_probes_and_sessions_make_no_lookup(tmp_path: Path) -> None:
    skip_unless_outer()
    require_cli("claude")
    require_cli("codex")
    env = dict(os.environ)
    env["AGENT_BRIDGE_CLAUDE_PATH"] = find_cli("claude") or ""
    env["AGENT_BRIDGE_CODEX_PATH"] = find_cli("codex") or ""
    for name in (
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
    ):
        env.pop(name, None)
    select = os.environ.get("AGENT_BRIDGE_NETNS_SELECT", "inner_ and not inner_gemini")
    run_inside(str(Path(__file__)), select, tmp_path / "dns.json", env, timeout=170)


def test_case_9_gemini_probe_honours_the_user_settings_and_makes_no_lookup(
    tmp_path: Path,
) -> None:
    """Issue 30, item 9: the Gemini probe ran the CLI in a throwaway home, so the user's
    settings were never read, and with usage statistics on (Gemini's default) every
    ``providers/list`` made it look up its statistics service (play.googleapis.com,
    twice, before this fix). Now the probe's home holds the user's settings with the
    quiet ones laid over them: silent with no settings file and with statistics turned
    on in the user's file, and nothing is written under the user's home."""
    skip_unless_outer()
    gemini = require_cli("gemini")
    env = {**os.environ, "AGENT_BRIDGE_GEMINI_PATH": gemini}
    for name in ("GEMINI_CLI_HOME", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        env.pop(name, None)
    log = tmp_path / "dns.json"
    run_inside(str(Path(__file__)), "inner_gemini", log, env, timeout=170, passed="2 passed")


def test_case_9_probe_home_keeps_the_user_settings_under_the_quiet_ones(tmp_path: Path) -> None:
    from agent_bridge.adapters.acp.launch import GEMINI, probe_home_files

    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    user = {
        "privacy": {"usageStatisticsEnabled": True},
        "general": {"vimMode": True},
        "telemetry": {"enabled": True, "target": "local"},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(user))
    [(path, content)] = probe_home_files(GEMINI, {"HOME": str(home)}).items()
    assert path == ".gemini/settings.json"
    assert json.loads(content) == {
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"vimMode": True},  # the user's own settings hold in the probe
        "telemetry": {"enabled": False, "target": "local"},
    }
    # GEMINI_CLI_HOME, when set, is where the user's settings are
    other = tmp_path / "cli-home"
    (other / ".gemini").mkdir(parents=True)
    (other / ".gemini" / "settings.json").write_text('{"ui": {"theme": "x"}}')
    env = {"HOME": str(home), "GEMINI_CLI_HOME": str(other)}
    assert json.loads(probe_home_files(GEMINI, env)[".gemini/settings.json"])["ui"] == {
        "theme": "x"
    }
    # no file, or one that is not a JSON object: the quiet settings alone
    (other / ".gemini" / "settings.json").write_text("[1, 2]")
    assert json.loads(probe_home_files(GEMINI, env)[".gemini/settings.json"]) == dict(
        GEMINI.hints.quiet_settings
    )


# --------------------------------------------------------------------- inside


inside_only = pytest.mark.skipif(not INSIDE, reason="runs inside the network namespace")


def _homes(tmp: Path) -> dict[str, str]:
    for name in ("home", "tmp", "work", "codex-home", "claude-config"):
        (tmp / name).mkdir(exist_ok=True)
    return {
        "HOME": str(tmp / "home"),
        "TMPDIR": str(tmp / "tmp"),
        "AGENT_BRIDGE_CLAUDE_PATH": os.environ.get("AGENT_BRIDGE_CLAUDE_PATH", ""),
        "AGENT_BRIDGE_CODEX_PATH": os.environ.get("AGENT_BRIDGE_CODEX_PATH", ""),
    }


@pytest.fixture
def homes(tmp_path: Path) -> Iterator[dict[str, str]]:
    yield _homes(tmp_path)


@inside_only
async def test_inner_probe(tmp_path: Path, homes: dict[str, str]) -> None:
    env = {
        **homes,
        "CODEX_HOME": str(tmp_path / "codex-home"),  # empty: the shape that synced plugins
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
    }
    async with running_bridge("newline", env=env) as bridge:
        listed = await bridge.result("providers/list", {"probe": True}, timeout=60)
    by_id: dict[str, Any] = {p["id"]: p["availability"] for p in listed["providers"]}
    assert by_id["claude-code"]["status"] == "available"
    assert by_id["codex"]["status"] == "available"


@inside_only
async def test_inner_claude_session(tmp_path: Path, homes: dict[str, str]) -> None:
    with AnthropicStandIn() as server:
        server.push(Text("hello"))
        env = {
            **homes,
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        async with running_bridge("newline", env=env) as bridge:
            session = await bridge.result(
                "session/create",
                {"provider": "claude-code", "workspace": str(tmp_path / "work")},
                timeout=60,
            )
            sid = session["session"]["sessionId"]
            run = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "hi"}})
            await _wait_terminal(bridge, run["runId"])
            await bridge.result("session/close", {"sessionId": sid}, timeout=30)


@inside_only
async def test_inner_codex_session(tmp_path: Path, homes: dict[str, str]) -> None:
    (tmp_path / "codex-home" / "config.toml").write_text(CODEX_CONFIG)
    with ResponsesStandIn() as server:
        server.script(reply(text("hello", deltas=1)))
        env = {**homes, "STUB_API_KEY": "dummy"}
        options = {
            "codexHome": str(tmp_path / "codex-home"),
            "config": [f'model_providers.stub.base_url="{server.base_url}"'],
        }
        async with running_bridge("newline", env=env) as bridge:
            session = await bridge.result(
                "session/create",
                {"provider": "codex", "workspace": str(tmp_path / "work"), "options": options},
                timeout=60,
            )
            sid = session["session"]["sessionId"]
            run = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "hi"}})
            await _wait_terminal(bridge, run["runId"])
            await bridge.result("session/close", {"sessionId": sid}, timeout=30)


async def _wait_terminal(bridge: Any, run_id: str) -> None:
    terminal = ("run.completed", "run.failed", "run.interrupted")
    message = await bridge.wait_for(
        lambda m: (
            m.get("method") == "event"
            and m["params"].get("runId") == run_id
            and m["params"]["payload"]["type"] in terminal
        ),
        timeout=60,
    )
    assert message["params"]["payload"]["type"] == "run.completed", message


async def _inner_gemini_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_settings: dict[str, Any] | None
) -> None:
    """The provider's own probe, in this process: the same code ``providers/list`` runs,
    with a longer ``initialize`` deadline than the product's 10 s (Gemini CLI takes 13 s
    to answer on this 2-core machine under the parallel suite's load; the default would
    make the probe end before the CLI got to its statistics, and prove nothing)."""
    from agent_bridge.adapters.acp import probe as acp_probe
    from agent_bridge.adapters.acp.provider import gemini_provider

    home = tmp_path / "home"
    home.mkdir()
    if user_settings is not None:
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(user_settings))
    before = sorted(str(p) for p in home.rglob("*"))
    settings = [p.read_bytes() for p in home.rglob("settings.json")]
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    defaults = acp_probe.probe_initialize.__kwdefaults__
    assert defaults is not None
    monkeypatch.setitem(defaults, "timeout", 60.0)
    availability = await gemini_provider().probe()
    assert availability.status == "available", availability
    assert sorted(str(p) for p in home.rglob("*")) == before  # nothing written there
    assert [p.read_bytes() for p in home.rglob("settings.json")] == settings


@inside_only
async def test_inner_gemini_probe_without_user_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _inner_gemini_probe(tmp_path, monkeypatch, None)


@inside_only
async def test_inner_gemini_probe_with_statistics_on_in_user_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _inner_gemini_probe(tmp_path, monkeypatch, {"privacy": {"usageStatisticsEnabled": True}})
