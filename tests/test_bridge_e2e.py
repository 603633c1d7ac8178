"""End to end: ``agent-bridge serve`` as a real child over real pipes, in both framings.

Each test drives the scripted provider through the public protocol only.
"""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path
from typing import Any

import anyio
from bridge_client import ROOT, BridgeProcess, script_session
from conftest import running_bridge


async def test_lifecycle_and_streamed_run(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        providers = await bridge.result("providers/list", {"probe": False})
        scripted = next(p for p in providers["providers"] if p["id"] == "scripted")
        assert scripted["maturity"] == "verified"
        assert scripted["capabilities"]["run"]["interrupt"] == "cooperative"
        created = await bridge.result(
            "session/create",
            script_session([{"type": "text", "text": "héllo 世界 🌍!", "chunks": 4}]),
        )
        session_id = created["session"]["sessionId"]
        assert session_id.startswith("ses_")
        started = await bridge.result(
            "run/start", {"sessionId": session_id, "input": {"text": "hi"}}
        )
        assert started["runId"].startswith("run_")
        terminal = await bridge.terminal()
        assert terminal["payload"] == {"type": "run.completed", "stopReason": "end_turn"}
        events = [m["params"] for m in bridge.received if m.get("method") == "event"]
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
        text = "".join(e["payload"]["text"] for e in events if e["payload"]["type"] == "text.delta")
        assert text == "héllo 世界 🌍!"
        assert all(
            e["eventId"].startswith("evt_") and e["runId"] == started["runId"] for e in events
        )
        assert len({e["eventId"] for e in events}) == len(events)
        await bridge.result("shutdown")
        await bridge.notify("exit")
        assert await bridge.wait_exit() == 0


async def test_events_read_pages_forward_and_backward(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        created = await bridge.result(
            "session/create", script_session([{"type": "stream", "count": 25, "text": "x"}])
        )
        sid = created["session"]["sessionId"]
        await bridge.result("run/start", {"sessionId": sid, "input": {"text": "go"}})
        await bridge.terminal()
        live = [m["params"] for m in bridge.received if m.get("method") == "event"]
        forward: list[dict[str, object]] = []
        after = 0
        while True:
            page = await bridge.result(
                "events/read", {"sessionId": sid, "after": after, "limit": 7}
            )
            forward += page["events"]
            if not page["hasMore"]:
                break
            after = page["events"][-1]["sequence"]
        assert forward == live
        backward: list[dict[str, object]] = []
        before = None
        while True:
            params: dict[str, object] = {"sessionId": sid, "limit": 6}
            if before is not None:
                params["before"] = before
            else:
                params["before"] = page["lastSequence"] + 1
            page = await bridge.result("events/read", params)
            backward = page["events"] + backward
            if not page["hasMore"]:
                break
            before = page["events"][0]["sequence"]
        assert backward == live


async def test_run_active_and_command_id_idempotency(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        created = await bridge.result(
            "session/create", script_session([{"type": "waitForInterrupt"}])
        )
        sid = created["session"]["sessionId"]
        params = {"sessionId": sid, "input": {"text": "one"}, "commandId": "cmd-1"}
        first = await bridge.result("run/start", params)
        again = await bridge.result("run/start", params)
        assert again == {**first, "duplicate": True}
        conflict = await bridge.call("run/start", {**params, "input": {"text": "other"}})
        assert conflict["error"]["data"]["code"] == "command_conflict"
        busy = await bridge.call("run/start", {"sessionId": sid, "input": {"text": "two"}})
        assert busy["error"]["data"] == {
            "code": "run_active",
            "message": "the session already has an active run",
            "retryable": True,
        }
        await bridge.result("run/interrupt", {"runId": first["runId"]})
        assert (await bridge.terminal())["payload"]["type"] == "run.interrupted"


async def test_failed_run_is_classified(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        created = await bridge.result(
            "session/create", script_session([{"type": "fail", "code": "provider_rate_limited"}])
        )
        await bridge.result(
            "run/start", {"sessionId": created["session"]["sessionId"], "input": {"text": "x"}}
        )
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"] == {
            "code": "provider_rate_limited",
            "message": "the provider is rate limited",
            "retryable": True,
        }


async def test_a_run_forced_to_end_fails_its_open_tool_calls_first() -> None:
    """A provider that ignores its interrupt (the scripted provider told to) with a tool
    call open: past the interrupt grace the runtime ends the run itself (``forced``), and
    the call the host saw start is reported ``failed`` (its parent kept) before the
    terminal event; a call that ended is not reported again."""
    started = {"type": "tool.activity", "toolCallId": "call_open", "name": "Bash"}
    steps: list[dict[str, Any]] = [
        {"type": "emit", "payloads": [{**started, "status": "started"}]},
        {
            "type": "emit",
            "payloads": [
                {**started, "toolCallId": "call_sub", "status": "started"},
                {
                    **started,
                    "toolCallId": "call_in",
                    "status": "started",
                    "parentToolCallId": "call_sub",
                },
            ],
        },
        {
            "type": "emit",
            "payloads": [{**started, "toolCallId": "call_sub", "status": "completed"}],
        },
        {"type": "waitForInterrupt", "ignoreInterrupt": True},
    ]
    async with running_bridge("newline", "--interrupt-grace", "0.3") as bridge:
        created = await bridge.result("session/create", script_session(steps))
        sid = created["session"]["sessionId"]
        run = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "x"}})
        await bridge.wait_for(
            lambda m: (
                m.get("method") == "event" and m["params"]["payload"].get("status") == "completed"
            )
        )
        await bridge.result("run/interrupt", {"runId": run["runId"]})
        terminal = await bridge.terminal(timeout=15)
        assert terminal["payload"] == {"type": "run.interrupted", "reason": "user", "forced": True}
        tools = [
            (p["toolCallId"], p["status"], p.get("parentToolCallId"))
            for m in bridge.received
            if m.get("method") == "event"
            and (p := m["params"]["payload"])["type"] == "tool.activity"
        ]
        assert tools == [
            ("call_open", "started", None),
            ("call_sub", "started", None),
            ("call_in", "started", "call_sub"),
            ("call_sub", "completed", None),
            ("call_open", "failed", None),
            ("call_in", "failed", "call_sub"),
        ]


async def test_session_close_interrupts_active_run_then_closes(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        created = await bridge.result(
            "session/create", script_session([{"type": "waitForInterrupt"}])
        )
        sid = created["session"]["sessionId"]
        await bridge.result("run/start", {"sessionId": sid, "input": {"text": "x"}})
        closed = await bridge.result("session/close", {"sessionId": sid})
        assert closed["session"]["state"] == "closed"
        kinds = [
            m["params"]["payload"]["type"] for m in bridge.received if m.get("method") == "event"
        ]
        assert kinds[-2:] == ["run.interrupted", "session.closed"]
        after = await bridge.call("run/start", {"sessionId": sid, "input": {"text": "y"}})
        assert after["error"]["data"]["code"] == "session_closed"


async def test_resume_in_a_new_bridge_process(framing: str) -> None:
    async with running_bridge(framing) as first:
        created = await first.result(
            "session/create",
            {
                "provider": "scripted",
                "options": {
                    "script": {
                        "runs": [
                            {"steps": [{"type": "echo"}]},
                            {"steps": [{"type": "text", "text": "second run"}]},
                        ]
                    }
                },
            },
        )
        sid = created["session"]["sessionId"]
        await first.result("run/start", {"sessionId": sid, "input": {"text": "remember me"}})
        await first.terminal()
        record = (await first.result("session/export", {"sessionId": sid}))["record"]
        assert record["providerId"] == "scripted"
    async with running_bridge(framing) as second:
        resumed = await second.result("session/resume", {"record": record})
        new_sid = resumed["session"]["sessionId"]
        await second.result("run/start", {"sessionId": new_sid, "input": {"text": "again"}})
        text = await second.event("text.delta")
        assert text["payload"]["text"] == "second run"  # the script continued at run 2


async def test_requests_before_initialize_are_refused(framing: str) -> None:
    async with running_bridge(framing, initialize=False) as bridge:
        reply = await bridge.call("session/list", {})
        assert reply["error"]["code"] == -32002
        assert reply["error"]["data"]["code"] == "not_initialized"
        bad = await bridge.call(
            "initialize", {"protocolVersion": 99, "clientInfo": {"name": "x"}}, check=False
        )
        assert bad["error"]["data"]["code"] == "unsupported_protocol_version"
        assert bad["error"]["data"]["details"] == {"supported": [1]}
        await bridge.initialize()
        twice = await bridge.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "x"}})
        assert twice["error"]["data"]["code"] == "already_initialized"


async def test_unknown_capabilities_are_accepted_and_ignored() -> None:
    async with running_bridge(initialize=False) as bridge:
        result = await bridge.result(
            "initialize",
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "future-host", "version": "9"},
                "capabilities": {
                    "telepathy": True,
                    "interactions": {"approval": True, "hologram": 1},
                },
            },
        )
        assert result["protocolVersion"] == 1


async def test_invalid_params_name_the_field(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        reply = await bridge.call(
            "run/start", {"sessionId": 5, "input": {"text": "x"}}, check=False
        )
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["path"] == "params.sessionId"
        unknown = await bridge.call(
            "session/create", {"provider": "scripted", "optionz": {}}, check=False
        )
        assert unknown["error"]["code"] == -32602
        assert "optionz" in unknown["error"]["message"]
        option = await bridge.call(
            "session/create", {"provider": "scripted", "options": {"colour": "red"}}
        )
        assert option["error"]["data"]["code"] == "invalid_option"
        assert option["error"]["data"]["details"]["option"] == "colour"


async def test_workspace_must_be_an_existing_absolute_directory(tmp_path: object) -> None:
    async with running_bridge() as bridge:
        for workspace in ("relative/dir", "/nonexistent/x", "/tmp/a\u0000b"):
            reply = await bridge.call(
                "session/create", {"provider": "scripted", "workspace": workspace}
            )
            assert reply["error"]["data"]["code"] == "workspace_invalid", workspace
        ok = await bridge.result(
            "session/create", {"provider": "scripted", "workspace": str(tmp_path)}
        )
        assert ok["session"]["workspace"] == os.path.realpath(str(tmp_path))


async def test_host_eof_mid_run_exits_zero() -> None:
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess()
        await bridge.start(tg)
        await bridge.initialize()
        created = await bridge.result(
            "session/create", script_session([{"type": "waitForInterrupt"}])
        )
        await bridge.result(
            "run/start", {"sessionId": created["session"]["sessionId"], "input": {"text": "x"}}
        )
        await bridge.close_stdin()
        assert await bridge.wait_exit() == 0
        await bridge.stop()
        tg.cancel_scope.cancel()


async def test_stdout_carries_only_frames_even_when_stdout_is_printed_to(tmp_path: Path) -> None:
    """Case 11: the protocol owns the real stdout.  A provider (installed through the
    entry-point group) that prints to ``sys.stdout`` and writes to fd 1 directly must not
    corrupt a single frame: both land on stderr."""
    (tmp_path / "noisy_provider.py").write_text(
        textwrap.dedent(
            """
            import os, sys
            from agent_bridge.adapters.scripted import ScriptedProvider

            class NoisyProvider(ScriptedProvider):
                id = "noisy"

                async def create_session(self, ctx):
                    print("NOISE-FROM-PRINT")
                    sys.stdout.flush()
                    os.write(1, b"NOISE-FROM-FD-1\\n")
                    return await super().create_session(ctx)
            """
        )
    )
    dist = tmp_path / "noisy_provider-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: noisy-provider\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[agent_bridge.providers]\nnoisy = noisy_provider:NoisyProvider\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    async with running_bridge("content-length", "--log-level", "DEBUG", env=env) as bridge:
        created = await bridge.result("session/create", {"provider": "noisy"})
        await bridge.result(
            "run/start", {"sessionId": created["session"]["sessionId"], "input": {"text": "hi"}}
        )
        await bridge.terminal()
        # BridgeProcess parses every stdout byte as a Content-Length frame and fails the
        # test on anything else; reaching here means stdout held frames only.
    assert b"NOISE-FROM-PRINT" in bridge.stderr
    assert b"NOISE-FROM-FD-1" in bridge.stderr


async def test_sigterm_closes_sessions_and_exits_zero() -> None:
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess()
        await bridge.start(tg)
        await bridge.initialize()
        assert bridge.proc is not None
        bridge.proc.send_signal(signal.SIGTERM)
        code = await bridge.wait_exit()
        assert code == 0
        await bridge.stop()
        tg.cancel_scope.cancel()


async def test_run_steer_reaches_an_active_run(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        created = await bridge.result(
            "session/create", script_session([{"type": "waitForInterrupt"}])
        )
        sid = created["session"]["sessionId"]
        run = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "x"}})
        assert (
            await bridge.result(
                "run/steer", {"runId": run["runId"], "input": {"text": "also this"}}
            )
            == {}
        )
        steered = await bridge.event("text.delta")
        assert steered["payload"]["text"] == "[steer] also this"
        await bridge.result("run/interrupt", {"runId": run["runId"]})
        await bridge.terminal()
        finished = await bridge.call(
            "run/steer", {"runId": run["runId"], "input": {"text": "late"}}
        )
        assert finished["error"]["data"]["code"] == "run_not_active"


def test_demo_command_runs_a_whole_session() -> None:
    """The README's main job: `agent-bridge demo` drives a real child end to end."""
    import subprocess
    import sys

    from bridge_client import ROOT

    result = subprocess.run(
        [sys.executable, "-m", "agent_bridge", "demo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Demo succeeded." in result.stdout
    assert "interaction/request" in result.stdout and "run.interrupted" in result.stdout
    # the reply's text on a line of its own, not run on after the thinking
    lines = [line.split(" ", 2)[-1].strip() for line in result.stdout.splitlines()]
    assert "thinking: The user wants a greeting file; I will need to write it." in lines
    assert "assistant: I'll create hello.txt with a greeting." in lines, result.stdout


def test_demo_raw_prints_every_json_rpc_message_and_they_validate() -> None:
    """`demo --raw` shows the exchange as it crossed the pipes: one JSON-RPC message a
    line, `>` from the host and `<` from the bridge, each valid against schemas/."""
    import json
    import subprocess
    import sys

    from wire_validation import WireValidator

    for framing in ("content-length", "newline"):
        result = subprocess.run(
            [sys.executable, "-m", "agent_bridge", "demo", "--raw", "--framing", framing],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        lines = [line for line in result.stdout.splitlines() if line[:2] in ("> ", "< ")]
        validator = WireValidator()
        for line in lines:
            validator.check(line[0], json.loads(line[2:]))
        methods = [json.loads(line[2:]).get("method") for line in lines]
        assert methods[0] == "initialize" and methods[-1] == "exit"
        assert "interaction/request" in methods and "event" in methods
        assert "Content-Length" not in result.stdout and "→" not in result.stdout
        assert result.stdout.rstrip().endswith("Demo succeeded.")
