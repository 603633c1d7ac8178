"""End to end: a session made by the real ``claude -p`` alone (against the stand-in
Messages API) is discovered and read through a real ``agent-bridge serve`` over pipes.

The CLI runs with a private HOME, CLAUDE_CONFIG_DIR and TMPDIR; the bridge gets the same
CLAUDE_CONFIG_DIR and finds the session in the CLI's own files, read-only.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import anyio
import pytest
from bridge_client import read_native
from conftest import running_bridge
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, Text

pytestmark = pytest.mark.e2e


def private_env(tmp: Path, base_url: str) -> dict[str, str]:
    for name in ("home", "config", "tmp", "work"):
        (tmp / name).mkdir(exist_ok=True)
    return {
        "HOME": str(tmp / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp / "config"),
        "TMPDIR": str(tmp / "tmp"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def terminal_session(cli: str, tmp: Path, env: dict[str, str]) -> None:
    """Run ``claude -p "remember the word pelican"`` in ``tmp/work`` as a user in a
    terminal would (``env`` from :func:`private_env`, a plain PATH): one session the CLI
    keeps in its own files, for a bridge to find."""
    made = subprocess.run(
        [cli, "-p", "remember the word pelican"],
        cwd=tmp / "work",
        env={**os.environ, **env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr[-2000:]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_cli_session_discovered_and_read_through_serve(tmp_path: Path) -> None:
    cli = require_cli("claude")
    with AnthropicStandIn([Text("Hello from the terminal.")]) as server:
        env = private_env(tmp_path, server.base_url)
        work = tmp_path / "work"
        done = await anyio.run_process(
            [cli, "-p", "remember the word pelican"],
            cwd=work,
            env={"PATH": "/usr/bin:/bin", **env},
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    files = list((tmp_path / "config" / "projects").glob("*/*.jsonl"))
    assert len(files) == 1
    session_file = files[0]
    before = digest(session_file)
    lines = session_file.read_bytes().splitlines()

    async with running_bridge("newline", env={**env, "AGENT_BRIDGE_CLAUDE_PATH": cli}) as b:
        listed = await b.result(
            "provider/sessions/list", {"provider": "claude-code", "workspace": str(work)}
        )
        (entry,) = listed["sessions"]
        assert entry["sessionRef"].endswith("/" + session_file.stem)
        assert entry["title"] == "remember the word pelican"
        assert entry["workspace"] == str(work)
        assert entry["sizeBytes"] == session_file.stat().st_size
        assert "nextCursor" not in listed
        other = await b.result(
            "provider/sessions/list",
            {"provider": "claude-code", "workspace": str(tmp_path / "home")},
        )
        assert other["sessions"] == []

        records = await read_native(b, "claude-code", entry["sessionRef"], 2)
        assert [r["raw"].encode() for r in records] == lines
        events = [e for r in records for e in r.get("events", ())]
        assert {"type": "run.started", "input": "remember the word pelican"} in events
        assert [
            e.get("messageId") for e in events if e.get("text") == "Hello from the terminal."
        ] != [None]
        assert {"type": "text.delta", "text": "Hello from the terminal."} in [
            {k: v for k, v in e.items() if k != "messageId"} for e in events
        ]

        newest = await b.result(
            "provider/sessions/read",
            {
                "provider": "claude-code",
                "sessionRef": entry["sessionRef"],
                "from": "end",
                "limit": 1,
            },
        )
        assert [r["raw"].encode() for r in newest["records"]] == lines[-1:]

        missing = await b.call(
            "provider/sessions/read",
            {
                "provider": "claude-code",
                "sessionRef": entry["sessionRef"].split("/")[0]
                + "/00000000-0000-0000-0000-000000000000",
            },
        )
        assert missing["error"]["data"]["code"] == "session_not_found"
        foreign = await b.call(
            "provider/sessions/read",
            {"provider": "claude-code", "sessionRef": "../../etc/passwd"},
        )
        assert foreign["error"]["data"]["code"] == "invalid_params"
    assert digest(session_file) == before  # read-only


async def test_descriptors_declare_native_sessions_and_others_refuse(tmp_path: Path) -> None:
    env = private_env(tmp_path, "http://127.0.0.1:9")
    async with running_bridge("newline", env=env) as b:
        providers = (await b.result("providers/list", {}))["providers"]
        declared = {p["id"]: p["capabilities"]["nativeSessions"] for p in providers}
        assert declared["claude-code"] == {
            "list": "supported",
            "read": "exact",
            "continue": "supported",
        }
        assert declared["scripted"] == {
            "list": "unsupported",
            "read": "exact",
            "continue": "supported",
        }
        # ACP agents list and continue through ACP's session/list until asked (read:
        # never); the generic acp provider has no agent to ask
        for provider_id in ("opencode", "qwen", "fast-agent", "mistral-vibe"):
            assert declared[provider_id] == {
                "list": "supported",
                "read": "unsupported",
                "continue": "supported",
            }, provider_id
        assert declared["acp"] == {
            "list": "unsupported",
            "read": "unsupported",
            "continue": "unsupported",
        }
        for method, params in (
            ("provider/sessions/list", {"provider": "scripted"}),
            ("provider/sessions/read", {"provider": "opencode", "sessionRef": "x"}),
            ("provider/sessions/list", {"provider": "acp"}),
            ("provider/sessions/continue", {"provider": "acp", "sessionRef": "x"}),
        ):
            reply = await b.call(method, params)
            assert reply["error"]["data"]["code"] == "unsupported"
        empty = await b.result("provider/sessions/list", {"provider": "claude-code"})
        assert empty == {"sessions": []}
