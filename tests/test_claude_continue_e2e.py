"""End to end: a conversation carried from the terminal into the bridge and back.

The real ``claude -p`` (against the stand-in Messages API) makes a session alone; a real
``agent-bridge serve`` continues it (``provider/sessions/continue``): the earlier turns
are imported with provenance, the next run's model request carries them, continuing it
again gives the same bridge session; then ``claude -p --resume <id>`` in the terminal
continues the same conversation and its model request carries the bridge's turn.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess
from conftest import running_bridge
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, RecordedRequest, Text, last_user_text
from test_claude_native_e2e import private_env

pytestmark = pytest.mark.e2e


def transcript_texts(request: RecordedRequest) -> list[str]:
    """Every text of the user and assistant messages a model request carried."""
    out: list[str] = []
    for message in request.body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return out


def said(request: RecordedRequest, text: str) -> bool:
    return any(text in t for t in transcript_texts(request))


async def terminal_cli(cli: str, env: dict[str, str], cwd: Path, *args: str) -> None:
    done = await anyio.run_process(
        [cli, "-p", *args], cwd=cwd, env={"PATH": "/usr/bin:/bin", **env}, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


async def read_all(b: BridgeProcess, session_id: str) -> tuple[list[Any], list[Any]]:
    """Every event of the session and the raw records they came from."""
    events: list[Any] = []
    raws: list[Any] = []
    after = 0
    while True:
        page = await b.result(
            "events/read", {"sessionId": session_id, "after": after, "limit": 500, "view": "raw"}
        )
        events.extend(page["events"])
        raws.extend(page.get("raw", ()))
        if not page["hasMore"] or not page["events"]:
            return events, raws
        after = page["events"][-1]["sequence"]


async def test_terminal_to_bridge_and_back(tmp_path: Path) -> None:
    cli = require_cli("claude")
    work = tmp_path / "work"
    with AnthropicStandIn([Text("Noted: pelican.")]) as server:
        env = private_env(tmp_path, server.base_url)
        await terminal_cli(cli, env, work, "remember the word pelican")
        (session_file,) = (tmp_path / "config" / "projects").glob("*/*.jsonl")
        cli_session = session_file.stem
        lines_before = session_file.read_bytes().splitlines()

        server.push(Text("The word was pelican."))
        async with running_bridge("newline", env={**env, "AGENT_BRIDGE_CLAUDE_PATH": cli}) as b:
            (entry,) = (
                await b.result(
                    "provider/sessions/list", {"provider": "claude-code", "workspace": str(work)}
                )
            )["sessions"]
            assert "bridgeSessionId" not in entry
            ref = entry["sessionRef"]
            continued = await b.result(
                "provider/sessions/continue",
                {"provider": "claude-code", "sessionRef": ref},
                timeout=60,
            )
            assert continued["bound"] == "created"
            assert continued["imported"] == len(lines_before)
            session = continued["session"]
            session_id = session["sessionId"]
            assert session["workspace"] == str(work.resolve())
            assert session_file.read_bytes().splitlines() == lines_before  # read-only

            # the earlier turns, imported with provenance
            envelopes, raws = await read_all(b, session_id)
            marker = next(e for e in envelopes if e["payload"]["type"] == "session.imported")
            imported = [
                e
                for e in envelopes
                if marker["payload"]["fromSequence"]
                <= e["sequence"]
                <= marker["payload"]["toSequence"]
            ]
            assert marker["payload"]["provider"] == "claude-code"
            assert marker["payload"]["sessionRef"] == ref
            assert marker["payload"]["records"] == len(lines_before)
            assert marker["sequence"] == marker["payload"]["toSequence"] + 1
            kinds = [e["payload"] for e in imported]
            assert {"type": "run.started", "input": "remember the word pelican"} in kinds
            assert [e.get("messageId") for e in kinds if e.get("text") == "Noted: pelican."] != [
                None
            ]
            assert {"type": "text.delta", "text": "Noted: pelican."} in [
                {k: v for k, v in e.items() if k != "messageId"} for e in kinds
            ]
            assert all("runId" not in e for e in imported)  # not a live run of the bridge
            stored = {json.dumps(r["record"], sort_keys=True) for r in raws if "record" in r}
            assert all(
                marker["payload"]["fromSequence"] <= r["rawId"] <= marker["payload"]["toSequence"]
                for r in raws
            )
            for line in lines_before:
                record = json.loads(line)
                if record.get("type") in ("user", "assistant"):
                    assert json.dumps(record, sort_keys=True) in stored

            # the next run continues the same conversation
            run = await b.result(
                "run/start", {"sessionId": session_id, "input": {"text": "what was the word?"}}
            )
            terminal = await b.terminal(timeout=60)
            assert terminal["payload"]["type"] == "run.completed"
            assert terminal["runId"] == run["runId"]
            request = server.model_requests()[-1]
            assert last_user_text(request.body) == "what was the word?"
            assert said(request, "remember the word pelican")
            assert said(request, "Noted: pelican.")

            # continuing again (this host or another) binds nothing new
            again = await b.result(
                "provider/sessions/continue", {"provider": "claude-code", "sessionRef": ref}
            )
            assert again == {"session": again["session"], "bound": "existing"}
            assert again["session"]["sessionId"] == session_id
            (listed,) = (
                await b.result(
                    "provider/sessions/list", {"provider": "claude-code", "workspace": str(work)}
                )
            )["sessions"]
            assert listed["sessionRef"] == ref
            assert listed["bridgeSessionId"] == session_id

        # back in the terminal: the CLI continues the same session and sees the bridge's turn
        server.push(Text("Still pelican."))
        await terminal_cli(cli, env, work, "--resume", cli_session, "and now?")
        request = server.model_requests()[-1]
        assert last_user_text(request.body) == "and now?"
        for text in (
            "remember the word pelican",
            "Noted: pelican.",
            "what was the word?",
            "The word was pelican.",
        ):
            assert said(request, text), text
        assert list((tmp_path / "config" / "projects").glob("*/*.jsonl")) == [session_file]


async def test_two_hosts_continue_at_once_get_one_session(tmp_path: Path) -> None:
    """Two requests for the same provider session in flight together: one binds, the
    other gets the same bridge session (``existing``)."""
    cli = require_cli("claude")
    work = tmp_path / "work"
    with AnthropicStandIn([Text("Hi.")]) as server:
        env = private_env(tmp_path, server.base_url)
        await terminal_cli(cli, env, work, "hello")
        async with running_bridge("newline", env={**env, "AGENT_BRIDGE_CLAUDE_PATH": cli}) as b:
            (entry,) = (await b.result("provider/sessions/list", {"provider": "claude-code"}))[
                "sessions"
            ]
            params = {"provider": "claude-code", "sessionRef": entry["sessionRef"]}
            first = await b.send_request("provider/sessions/continue", params)
            second = await b.send_request("provider/sessions/continue", params)
            replies = [
                (await b.response(first, timeout=60))["result"],
                (await b.response(second, timeout=60))["result"],
            ]
            assert sorted(r["bound"] for r in replies) == ["created", "existing"]
            assert replies[0]["session"]["sessionId"] == replies[1]["session"]["sessionId"]
            sessions = (await b.result("session/list", {}))["sessions"]
            assert len(sessions) == 1


async def test_continue_refusals(tmp_path: Path) -> None:
    """What cannot be continued says why, typed: another workspace than the session's,
    a reference the provider did not make, a missing session, a provider that cannot."""
    cli = require_cli("claude")
    work = tmp_path / "work"
    with AnthropicStandIn([Text("Hi.")]) as server:
        env = private_env(tmp_path, server.base_url)
        await terminal_cli(cli, env, work, "hello")
        async with running_bridge("newline", env={**env, "AGENT_BRIDGE_CLAUDE_PATH": cli}) as b:
            (entry,) = (await b.result("provider/sessions/list", {"provider": "claude-code"}))[
                "sessions"
            ]
            ref = entry["sessionRef"]
            cases = [
                (
                    {"sessionRef": ref, "workspace": str(tmp_path / "home")},
                    "invalid_params",
                ),
                ({"sessionRef": "../../etc/passwd"}, "invalid_params"),
                (
                    {"sessionRef": ref.split("/")[0] + "/00000000-0000-0000-0000-000000000000"},
                    "session_not_found",
                ),
            ]
            for extra, code in cases:
                reply = await b.call(
                    "provider/sessions/continue", {"provider": "claude-code", **extra}
                )
                assert reply["error"]["data"]["code"] == code, extra
            reply = await b.call(
                "provider/sessions/continue", {"provider": "acp", "sessionRef": "x"}
            )
            assert reply["error"]["data"]["code"] == "unsupported"  # no agent to ask
            assert (await b.result("session/list", {}))["sessions"] == []


async def test_exec_continues_a_terminal_session(tmp_path: Path) -> None:
    """``agent-bridge exec --session <sessionRef>`` continues a session made by the CLI
    alone: the model request carries the terminal's turn."""
    import json
    import sys

    cli = require_cli("claude")
    work = tmp_path / "work"
    with AnthropicStandIn([Text("Noted: pelican."), Text("It was pelican.")]) as server:
        env = private_env(tmp_path, server.base_url)
        await terminal_cli(cli, env, work, "remember the word pelican")
        (session_file,) = (tmp_path / "config" / "projects").glob("*/*.jsonl")
        ref = f"{session_file.parent.name}/{session_file.stem}"
        done = await anyio.run_process(
            [
                sys.executable,
                "-m",
                "agent_bridge",
                "exec",
                "--state-dir",
                str(tmp_path / "state"),
                f"--session={ref}",  # a Claude Code reference starts with "-"
                "what was the word?",
            ],
            env={**os.environ, **env, "AGENT_BRIDGE_CLAUDE_PATH": cli},
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        events = [json.loads(line) for line in done.stdout.decode().splitlines()]
        assert events[-1]["payload"]["type"] == "run.completed"
        assert (
            "".join(
                e["payload"].get("text", "") for e in events if e["payload"]["type"] == "text.delta"
            )
            == "It was pelican."
        )
        request = server.model_requests()[-1]
        assert last_user_text(request.body) == "what was the word?"
        assert said(request, "remember the word pelican")
        assert said(request, "Noted: pelican.")


async def test_a_session_the_bridge_made_is_bound_to_it(tmp_path: Path) -> None:
    """A Claude Code session created through the bridge is listed with its
    ``bridgeSessionId`` once the CLI has named its session, and continuing it gives that
    bridge session, not a second one driving the same conversation."""
    cli = require_cli("claude")
    work = tmp_path / "work"
    with AnthropicStandIn([Text("Hello.")]) as server:
        env = private_env(tmp_path, server.base_url)
        async with running_bridge("newline", env={**env, "AGENT_BRIDGE_CLAUDE_PATH": cli}) as b:
            created = await b.result(
                "session/create", {"provider": "claude-code", "workspace": str(work)}, timeout=60
            )
            session_id = created["session"]["sessionId"]
            await b.result("run/start", {"sessionId": session_id, "input": {"text": "hi"}})
            assert (await b.terminal(timeout=60))["payload"]["type"] == "run.completed"
            listed: list[Any] = []
            with anyio.fail_after(10):
                while not listed or "bridgeSessionId" not in listed[0]:
                    await anyio.sleep(0.1)
                    listed = (
                        await b.result(
                            "provider/sessions/list",
                            {"provider": "claude-code", "workspace": str(work)},
                        )
                    )["sessions"]
            (entry,) = listed
            assert entry["bridgeSessionId"] == session_id
            again = await b.result(
                "provider/sessions/continue",
                {"provider": "claude-code", "sessionRef": entry["sessionRef"]},
            )
            assert again["bound"] == "existing"
            assert again["session"]["sessionId"] == session_id
            assert len((await b.result("session/list", {}))["sessions"]) == 1
