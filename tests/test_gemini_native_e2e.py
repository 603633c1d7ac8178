"""End to end: a chat made by the real ``gemini -p`` alone (against the Gemini API
stand-in) is discovered and read through a real ``agent-bridge serve`` over pipes.

The CLI runs with a private HOME, GEMINI_CLI_HOME and TMPDIR; the bridge gets the same
GEMINI_CLI_HOME and finds the chat in the CLI's own files, read-only.  The pinned Gemini
CLI (0.61.0) cannot continue a chat in a new ACP process (``session/load`` fails there),
so its descriptor says ``continue: unsupported`` and continuing is refused: pinned here.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import anyio
import pytest
from bridge_client import read_native
from conftest import running_bridge
from provider_clis import require_cli
from standins.gemini_server import GeminiStandIn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SETTINGS = Path(__file__).parent / "data" / "acp" / "gemini-settings.json"


def private_env(tmp: Path, base_url: str) -> dict[str, str]:
    home = tmp / "home"
    for d in (home / ".gemini", tmp / "work", tmp / "tmp"):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SETTINGS, home / ".gemini" / "settings.json")
    return {
        "HOME": str(home),
        "TMPDIR": str(tmp / "tmp"),
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": "dummy",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_cli_chat_discovered_and_read_through_serve(tmp_path: Path) -> None:
    cli = require_cli("gemini")
    work = tmp_path / "work"
    with GeminiStandIn() as server:
        env = private_env(tmp_path, server.base_url)
        done = await anyio.run_process(
            [cli, "-p", "remember the word pelican"],
            cwd=work,
            env={"PATH": "/usr/bin:/bin:/usr/local/bin", **env},
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert not server.of_kind("other")
    files = list((tmp_path / "home" / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    assert len(files) == 1
    chat = files[0]
    before = digest(chat)
    lines = chat.read_bytes().splitlines()

    async with running_bridge("newline", env={**env, "AGENT_BRIDGE_GEMINI_PATH": cli}) as b:
        providers = (await b.result("providers/list", {}, timeout=60))["providers"]
        gemini = next(p for p in providers if p["id"] == "gemini")
        assert gemini["capabilities"]["nativeSessions"] == {
            "list": "supported",
            "read": "exact",
            "continue": "unsupported",
        }
        listed = await b.result(
            "provider/sessions/list", {"provider": "gemini", "workspace": str(work)}
        )
        (entry,) = listed["sessions"]
        assert entry["sessionRef"] == f"{chat.parent.parent.name}/{chat.stem}"
        assert entry["title"] == "remember the word pelican"
        assert entry["workspace"] == str(work)
        assert entry["sizeBytes"] == chat.stat().st_size
        other = await b.result(
            "provider/sessions/list", {"provider": "gemini", "workspace": str(tmp_path / "tmp")}
        )
        assert other["sessions"] == []

        records = await read_native(b, "gemini", entry["sessionRef"], 2)
        assert [r["raw"].encode() for r in records] == lines
        events = [e for r in records for e in r.get("events", ())]
        assert [e for e in events if e["type"] == "diagnostic"] == []
        assert {"type": "run.started", "input": "remember the word pelican"} in events
        assert {"type": "text.delta", "text": "Hi! I am the stand-in model."} in events

        refused = await b.call(
            "provider/sessions/continue", {"provider": "gemini", "sessionRef": entry["sessionRef"]}
        )
        assert refused["error"]["data"]["code"] == "unsupported"
        foreign = await b.call(
            "provider/sessions/read", {"provider": "gemini", "sessionRef": "../../etc/passwd"}
        )
        assert foreign["error"]["data"]["code"] == "invalid_params"
    assert digest(chat) == before  # read-only
