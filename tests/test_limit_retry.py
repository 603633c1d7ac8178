"""The session policy ``retryOnLimit``: a run that hits a rate limit or quota waits for
the limit's reset and runs the same input again, once, saying so in its events; without
the policy, with a reset further away than it waits, or on a second limit, the run ends
``run.failed``; an interrupt while it waits ends it at once.  The real bridge over real
pipes with the scripted provider (whose script fails the first run with a limit);
tests/test_limit_retry_e2e.py does it with the real Claude Code CLI."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from bridge_client import drive, start
from conftest import running_bridge

Msg = dict[str, Any]


def _script(after: str, then: list[Msg] | None = None) -> Msg:
    limit = {
        "type": "fail",
        "code": "provider_rate_limited",
        "details": {"cause": "rate_limited", "retryAfterSeconds": after},
    }
    return {"runs": [{"steps": [limit]}, {"steps": then or [{"type": "text", "text": "again"}]}]}


async def _session(bridge: Any, script: Msg, policy: Msg | None) -> str:
    params: Msg = {"provider": "scripted", "options": {"script": script}}
    if policy is not None:
        params["retryOnLimit"] = policy
    created = await bridge.result("session/create", params)
    return str(created["session"]["sessionId"])


async def test_the_policy_waits_for_the_reset_and_runs_again_once() -> None:
    async with running_bridge("newline") as bridge:
        session = await _session(bridge, _script("1"), {"maxWaitSeconds": 5})
        began = time.monotonic()
        events = await drive(bridge, await start(bridge, session, "hi"), timeout=20)
        waited = time.monotonic() - began
    kinds = [e["type"] for e in events]
    assert kinds == [
        "run.started",
        "diagnostic",
        "diagnostic",
        "text.delta",
        "run.completed",
    ], events
    assert [e["code"] for e in events if e["type"] == "diagnostic"] == [
        "limit_retry_waiting",
        "limit_retry_started",
    ]
    assert "1 s" in events[1]["message"]
    assert waited >= 1.0  # it waited for the reset


async def test_without_the_policy_or_beyond_its_wait_the_run_fails() -> None:
    async with running_bridge("newline") as bridge:
        plain = await _session(bridge, _script("1"), None)
        events = await drive(bridge, await start(bridge, plain, "hi"))
        assert [e["type"] for e in events] == ["run.started", "run.failed"]
        far = await _session(bridge, _script("600"), {"maxWaitSeconds": 5})
        events = await drive(bridge, await start(bridge, far, "hi"))
        assert [e["type"] for e in events] == ["run.started", "run.failed"]
        assert events[-1]["error"]["details"]["retryAfterSeconds"] == "600"
        # A second limit after the one retry: failed, not retried again.
        again = _script("0", [{"type": "fail", "code": "provider_rate_limited"}])
        twice = await _session(bridge, again, {"maxWaitSeconds": 5})
        events = await drive(bridge, await start(bridge, twice, "hi"))
        assert [e["type"] for e in events][-1] == "run.failed"
        assert [e.get("code") for e in events if e["type"] == "diagnostic"] == [
            "limit_retry_waiting",
            "limit_retry_started",
        ]


async def test_an_interrupt_while_it_waits_ends_the_run() -> None:
    async with running_bridge("newline") as bridge:
        session = await _session(bridge, _script("30"), {"maxWaitSeconds": 60})
        run = await start(bridge, session, "hi")

        async def on_event(payload: Msg) -> None:
            if payload.get("code") == "limit_retry_waiting":
                reply = await bridge.call("run/interrupt", {"runId": run})
                assert reply["result"]["state"] == "interrupting"

        began = time.monotonic()
        events = await drive(bridge, run, on_event=on_event, timeout=20)
        assert events[-1]["type"] == "run.interrupted"
        assert time.monotonic() - began < 10  # not the 30 s wait
        # The session is still usable.
        events = await drive(bridge, await start(bridge, session, "next"), timeout=10)
        assert events[-1]["type"] == "run.completed"


async def test_the_policy_and_chosen_settings_survive_a_bridge_restart(tmp_path: Path) -> None:
    """The policy and what ``session/configure`` chose are the session's, not the bridge
    process's: a second bridge on the same state directory reopens the session
    (``session/resume {sessionId}``) with its model and mode switched again, and retries
    its run after a near limit."""
    state = ("--state-dir", str(tmp_path / "state"))
    script = _script("1")
    script["settings"] = {
        "model": {"available": [{"id": "small"}, {"id": "large"}], "current": "small"},
        "mode": {"available": [{"id": "ask"}, {"id": "plan"}], "current": "ask"},
    }
    async with running_bridge("newline", *state) as bridge:
        session = await _session(bridge, script, {"maxWaitSeconds": 5})
        await bridge.result("session/configure", {"sessionId": session, "model": "large"})
        await bridge.result("session/configure", {"sessionId": session, "mode": "plan"})
    async with running_bridge("newline", *state) as bridge:
        await bridge.result("session/resume", {"sessionId": session})
        settings = await bridge.result("session/settings", {"sessionId": session})
        assert settings["model"]["current"] == "large"
        assert settings["mode"]["current"] == "plan"
        events = await drive(bridge, await start(bridge, session, "hi"), timeout=20)
    assert [e["type"] for e in events][-1] == "run.completed", events
    assert [e["code"] for e in events if e["type"] == "diagnostic"] == [
        "limit_retry_waiting",
        "limit_retry_started",
    ]


async def test_a_chosen_model_no_longer_offered_does_not_fail_the_reopen(
    tmp_path: Path,
) -> None:
    """A model chosen earlier that the provider does not offer when the session is
    reopened: the reopen succeeds with the provider's own model, a ``diagnostic``
    ``settings_not_restored`` (a session event) says so, and the rest of the policy
    (here the chosen mode) still applies."""
    state = tmp_path / "state"
    script = _script("1")
    script["settings"] = {
        "model": {"available": [{"id": "small"}, {"id": "large"}], "current": "small"},
        "mode": {"available": [{"id": "ask"}, {"id": "plan"}], "current": "ask"},
    }
    async with running_bridge("newline", "--state-dir", str(state)) as bridge:
        session = await _session(bridge, script, None)
        await bridge.result("session/configure", {"sessionId": session, "mode": "plan"})
    # as if the provider had since dropped a model the session had chosen
    conn = sqlite3.connect(state / "journal.sqlite3")
    with conn:
        conn.execute(
            "UPDATE sessions SET policy = ? WHERE session_id = ?",
            (b'{"model":"retired","mode":"plan"}', session),
        )
    conn.close()
    async with running_bridge("newline", "--state-dir", str(state)) as bridge:
        await bridge.result("session/resume", {"sessionId": session})
        settings = await bridge.result("session/settings", {"sessionId": session})
        assert settings["model"]["current"] == "small"
        assert settings["mode"]["current"] == "plan"
        page = await bridge.result("events/read", {"sessionId": session})
    diagnostics = [e["payload"] for e in page["events"] if e["payload"]["type"] == "diagnostic"]
    assert [d["code"] for d in diagnostics] == ["settings_not_restored"]
    assert "model" in diagnostics[0]["message"]
    assert "retired" not in diagnostics[0]["message"]  # a code, not the value
