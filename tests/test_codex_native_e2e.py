"""End to end: a thread made by the real ``codex exec`` alone (against the Responses
stand-in) is discovered and read through a real ``agent-bridge serve`` over pipes.

The CLI runs with a private HOME, CODEX_HOME and TMPDIR; the bridge gets the same
CODEX_HOME and finds the thread in the CLI's own rollout files, read-only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import read_native
from conftest import running_bridge
from provider_clis import require_cli
from standins.responses_server import CODEX_OFFLINE_CONFIG, ResponsesStandIn, reply, text

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def private_env(tmp: Path) -> dict[str, str]:
    for name in ("home", "codex-home", "tmp", "work"):
        (tmp / name).mkdir(exist_ok=True)
    (tmp / "codex-home" / "config.toml").write_text(CODEX_OFFLINE_CONFIG)
    return {
        "HOME": str(tmp / "home"),
        "CODEX_HOME": str(tmp / "codex-home"),
        "TMPDIR": str(tmp / "tmp"),
        "STUB_API_KEY": "dummy-key",
    }


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_cli_thread_discovered_and_read_through_serve(tmp_path: Path) -> None:
    cli = require_cli("codex")
    env = private_env(tmp_path)
    work = tmp_path / "work"
    with ResponsesStandIn() as server:
        server.script(reply(text("Hello from the terminal.")))
        done = await anyio.run_process(
            [
                cli,
                "exec",
                "--skip-git-repo-check",
                "-c",
                f'model_providers.stub.base_url="{server.base_url}"',
                "remember the word pelican",
            ],
            cwd=work,
            env={"PATH": "/usr/bin:/bin", **env},
            stdin=None,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert server.errors == []
    files = list((tmp_path / "codex-home" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    assert len(files) == 1
    rollout = files[0]
    before = digest(rollout)
    lines = rollout.read_bytes().splitlines()

    async with running_bridge("newline", env={**env, "AGENT_BRIDGE_CODEX_PATH": cli}) as b:
        providers = (await b.result("providers/list", {}))["providers"]
        codex = next(p for p in providers if p["id"] == "codex")
        assert codex["capabilities"]["nativeSessions"] == {
            "list": "supported",
            "read": "exact",
            "continue": "supported",
        }
        listed = await b.result(
            "provider/sessions/list", {"provider": "codex", "workspace": str(work)}
        )
        (entry,) = listed["sessions"]
        relative = rollout.relative_to(tmp_path / "codex-home" / "sessions")
        assert entry["sessionRef"] == str(relative.with_suffix(""))
        assert entry["title"] == "remember the word pelican"
        assert entry["workspace"] == str(work)
        assert entry["sizeBytes"] == rollout.stat().st_size
        assert "nextCursor" not in listed
        other = await b.result(
            "provider/sessions/list", {"provider": "codex", "workspace": str(tmp_path / "home")}
        )
        assert other["sessions"] == []

        records = await read_native(b, "codex", entry["sessionRef"], 3)
        assert [r["raw"].encode() for r in records] == lines
        events = [e for r in records for e in r.get("events", ())]
        assert [e for e in events if e["type"] == "diagnostic"] == []
        assert {"type": "run.started", "input": "remember the word pelican"} in events
        assert [
            e.get("messageId") for e in events if e.get("text") == "Hello from the terminal."
        ] != [None]
        assert {"type": "text.delta", "text": "Hello from the terminal."} in [
            {k: v for k, v in e.items() if k != "messageId"} for e in events
        ]

        newest = await b.result(
            "provider/sessions/read",
            {"provider": "codex", "sessionRef": entry["sessionRef"], "from": "end", "limit": 1},
        )
        assert [r["raw"].encode() for r in newest["records"]] == lines[-1:]

        missing_ref = entry["sessionRef"][:-36] + "00000000-0000-0000-0000-000000000000"
        missing = await b.call(
            "provider/sessions/read", {"provider": "codex", "sessionRef": missing_ref}
        )
        assert missing["error"]["data"]["code"] == "session_not_found"
        foreign = await b.call(
            "provider/sessions/read", {"provider": "codex", "sessionRef": "../../etc/passwd"}
        )
        assert foreign["error"]["data"]["code"] == "invalid_params"
    assert digest(rollout) == before  # read-only


def _said(body: dict[str, Any], text: str) -> bool:
    """Whether the Responses request ``body`` carries ``text`` in a message of its input."""
    return text in json.dumps(body.get("input") or [])


async def test_cli_thread_continued_through_serve_then_in_the_cli(tmp_path: Path) -> None:
    """codex exec makes a thread; the bridge continues it (earlier turns imported, the
    stand-in's next request carries them); then ``codex exec resume`` in the terminal
    continues the same thread and its request carries the bridge's turn."""
    cli = require_cli("codex")
    env = private_env(tmp_path)
    work = tmp_path / "work"
    with ResponsesStandIn() as server:
        override = f'model_providers.stub.base_url="{server.base_url}"'
        server.script(reply(text("Noted: pelican.")))
        done = await anyio.run_process(
            [cli, "exec", "--skip-git-repo-check", "-c", override, "remember the word pelican"],
            cwd=work,
            env={"PATH": "/usr/bin:/bin", **env},
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        (rollout,) = (tmp_path / "codex-home" / "sessions").glob("*/*/*/rollout-*.jsonl")
        ref = str(rollout.relative_to(tmp_path / "codex-home" / "sessions").with_suffix(""))
        lines_before = rollout.read_bytes().splitlines()

        bridge_env = {**env, "AGENT_BRIDGE_CODEX_PATH": cli}
        async with running_bridge("newline", env=bridge_env) as b:
            params = {"provider": "codex", "sessionRef": ref, "options": {"config": [override]}}
            continued = await b.result("provider/sessions/continue", params, timeout=60)
            assert continued["bound"] == "created"
            assert continued["imported"] == len(lines_before)
            session_id = continued["session"]["sessionId"]
            again = await b.result("provider/sessions/continue", params, timeout=60)
            assert again["bound"] == "existing"
            assert again["session"]["sessionId"] == session_id

            server.script(reply(text("The word was pelican.")))
            run = await b.result(
                "run/start", {"sessionId": session_id, "input": {"text": "what was the word?"}}
            )
            terminal = await b.terminal(timeout=60)
            assert terminal["payload"]["type"] == "run.completed"
            assert terminal["runId"] == run["runId"]
            body = server.response_bodies()[-1]
            assert _said(body, "remember the word pelican")  # the terminal's turn
            assert _said(body, "Noted: pelican.")
            assert _said(body, "what was the word?")
            await b.result("session/close", {"sessionId": session_id}, timeout=30)

        # back in the terminal: the same thread, and the model sees the bridge's turn
        server.script(reply(text("Still pelican.")))
        thread = ref[-36:]
        done = await anyio.run_process(
            [cli, "exec", "--skip-git-repo-check", "-c", override, "resume", thread, "again?"],
            cwd=work,
            env={"PATH": "/usr/bin:/bin", **env},
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        body = server.response_bodies()[-1]
        assert _said(body, "what was the word?") and _said(body, "The word was pelican.")
        assert _said(body, "remember the word pelican")
        assert server.errors == []
    assert list((tmp_path / "codex-home" / "sessions").glob("*/*/*/rollout-*.jsonl")) == [rollout]


async def test_thread_the_bridge_created_is_bound_to_its_rollout(tmp_path: Path) -> None:
    """A Codex session the bridge creates is listed with its bridgeSessionId, and
    continuing its rollout gives that session, never a second one."""
    cli = require_cli("codex")
    env = private_env(tmp_path)
    work = tmp_path / "work"
    with ResponsesStandIn() as server:
        override = f'model_providers.stub.base_url="{server.base_url}"'
        server.script(reply(text("Hello from the bridge.")))
        async with running_bridge("newline", env={**env, "AGENT_BRIDGE_CODEX_PATH": cli}) as b:
            created = await b.result(
                "session/create",
                {"provider": "codex", "workspace": str(work), "options": {"config": [override]}},
                timeout=60,
            )
            session_id = created["session"]["sessionId"]
            await b.result(
                "run/start", {"sessionId": session_id, "input": {"text": "hello from the editor"}}
            )
            terminal = await b.terminal(timeout=60)
            assert terminal["payload"]["type"] == "run.completed"
            await b.result("session/close", {"sessionId": session_id}, timeout=30)
            (entry,) = (
                await b.result(
                    "provider/sessions/list", {"provider": "codex", "workspace": str(work)}
                )
            )["sessions"]
            assert entry["title"] == "hello from the editor"
            assert entry["bridgeSessionId"] == session_id
            again = await b.result(
                "provider/sessions/continue",
                {"provider": "codex", "sessionRef": entry["sessionRef"]},
                timeout=60,
            )
            assert again["bound"] == "existing"
            assert again["session"]["sessionId"] == session_id
