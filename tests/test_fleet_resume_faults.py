"""A run continued at a takeover (``recovery.resumeTurn``, ``docs/fleet.md``, "Pending
interactions at a takeover") attacked from outside, on real members of a real PostgreSQL
journal (``test_fleet``): answers racing from two members with different answers, the
``run/start`` retried with its ``commandId`` through another member, and the heir
SIGKILLed in turn while the continued run waits.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from bridge_client import BridgeProcess, Message, script_session
from test_fleet import events_until, fleet, nodes_of

pytestmark = pytest.mark.timeout(300)

STEPS: list[dict[str, Any]] = [
    {"type": "text", "text": "before"},
    {
        "type": "approval",
        "title": "deploy",
        "onAllow": [{"type": "text", "text": "allowed"}],
        "onDeny": [{"type": "text", "text": "denied"}],
    },
]


def _is_request(m: Message) -> bool:
    return m.get("method") == "interaction/request"


async def _kill(bridge: BridgeProcess) -> None:
    assert bridge.proc is not None
    bridge.proc.send_signal(signal.SIGKILL)
    await bridge.proc.wait()


async def test_two_members_answer_differently_at_once_after_the_takeover(
    pg_url: str, tmp_path: Path
) -> None:
    leases = {"alpha": 2.0, "beta": 1.0, "gamma": 30.0}  # beta takes over
    async with fleet(tmp_path, pg_url, leases=leases) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        session = (await alpha.result("session/create", script_session(STEPS)))["session"][
            "sessionId"
        ]
        for bridge in (beta, gamma):
            await bridge.result("session/attach", {"sessionId": session})
        run = await alpha.result(
            "run/start", {"sessionId": session, "input": {"text": "x"}, "commandId": "c1"}
        )
        offer = await beta.wait_for(_is_request, 30)
        interaction = offer["params"]["interactionId"]
        await _kill(alpha)
        for bridge in (beta, gamma):
            await events_until(bridge, session, "session.resumed", timeout=30)
        assert nodes_of(await gamma.result("session/list", {}))[session] == "beta"
        # the host retries its run/start through another member: the same run
        again = await gamma.call(
            "run/start", {"sessionId": session, "input": {"text": "x"}, "commandId": "c1"}
        )
        assert again.get("result", {}).get("runId") == run["runId"], again
        assert again["result"].get("duplicate") is True, again
        # two hosts on two members answer at once, differently
        allow = {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}}
        deny = {"interactionId": interaction, "answer": {"kind": "approval", "decision": "deny"}}
        on_beta = await beta.send_request("interaction/respond", allow)
        on_gamma = await gamma.send_request("interaction/respond", deny)
        replies = {
            "beta": await beta.response(on_beta, 60),
            "gamma": await gamma.response(on_gamma, 60),
        }
        ok = {name for name, r in replies.items() if "result" in r}
        assert len(ok) == 1, replies
        (loser,) = set(replies) - ok
        assert replies[loser]["error"]["data"]["code"] == "interaction_already_settled", replies
        end = await events_until(gamma, session, "run.completed", timeout=30)
        stored = (await gamma.result("events/read", {"sessionId": session, "limit": 100}))["events"]
        assert [e["sequence"] for e in stored] == list(range(1, len(stored) + 1))
        settled = [e for e in stored if e["payload"]["type"] == "interaction.settled"]
        assert len(settled) == 1, settled
        decision = settled[0]["payload"]["answer"]["decision"]
        assert decision == ("allow" if ok == {"beta"} else "deny")
        texts = [e["payload"]["text"] for e in stored if e["payload"]["type"] == "text.delta"]
        assert texts == ["before", "allowed" if decision == "allow" else "denied"]
        assert end[-1]["runId"] == run["runId"]
        starts = [e for e in stored if e["payload"]["type"] == "run.started"]
        assert len(starts) == 1


async def test_the_heir_sigkilled_while_the_continued_run_waits_is_taken_over_again(
    pg_url: str, tmp_path: Path
) -> None:
    leases = {"alpha": 2.0, "beta": 1.0, "gamma": 30.0}  # beta, then gamma
    async with fleet(tmp_path, pg_url, leases=leases) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        session = (await alpha.result("session/create", script_session(STEPS)))["session"][
            "sessionId"
        ]
        await gamma.result("session/attach", {"sessionId": session})
        run = await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        first = await gamma.wait_for(_is_request, 30)
        interaction = first["params"]["interactionId"]
        await _kill(alpha)
        await events_until(gamma, session, "session.resumed", timeout=30)
        second = await gamma.wait_for(_is_request, 30)
        assert second["params"]["interactionId"] == interaction
        assert nodes_of(await gamma.result("session/list", {}))[session] == "beta"
        await _kill(beta)  # the heir, while the run it continued waits
        await events_until(gamma, session, "session.resumed", timeout=30)
        third = await gamma.wait_for(_is_request, 30)
        assert third["params"]["interactionId"] == interaction
        assert third["params"]["runId"] == run["runId"]
        assert nodes_of(await gamma.result("session/list", {}))[session] == "gamma"
        await gamma.send(
            {
                "jsonrpc": "2.0",
                "id": third["id"],
                "result": {"kind": "approval", "decision": "allow"},
            }
        )
        await events_until(gamma, session, "run.completed", timeout=30)
        stored = (await gamma.result("events/read", {"sessionId": session, "limit": 100}))["events"]
        assert [e["sequence"] for e in stored] == list(range(1, len(stored) + 1))
        kinds = [e["payload"]["type"] for e in stored]
        assert kinds == [
            "run.started",
            "text.delta",
            "interaction.requested",
            "session.closed",
            "session.resumed",
            "session.closed",
            "session.resumed",
            "interaction.settled",
            "text.delta",
            "run.completed",
        ], kinds
        texts = [e["payload"]["text"] for e in stored if e["payload"]["type"] == "text.delta"]
        assert texts == ["before", "allowed"]
        asks = [m for m in gamma.received if _is_request(m)]
        assert asks == [first, second, third]
        with anyio.fail_after(5):
            assert (await gamma.call("bridge/ping", {}))["result"] == {}


async def test_a_close_sent_through_another_member_during_the_takeover_sticks(
    pg_url: str, tmp_path: Path
) -> None:
    leases = {"alpha": 2.0, "beta": 1.0, "gamma": 30.0}  # beta takes over
    async with fleet(tmp_path, pg_url, leases=leases) as members:
        alpha, beta, gamma = members["alpha"], members["beta"], members["gamma"]
        session = (await alpha.result("session/create", script_session(STEPS)))["session"][
            "sessionId"
        ]
        await gamma.result("session/attach", {"sessionId": session})
        await alpha.result("run/start", {"sessionId": session, "input": {"text": "x"}})
        await gamma.wait_for(_is_request, 30)
        await _kill(alpha)
        codes: list[str] = []
        with anyio.fail_after(60):
            while True:
                reply = await gamma.call("session/close", {"sessionId": session}, timeout=30)
                if "result" in reply:
                    break
                assert reply["error"]["data"]["retryable"] is True, reply
                codes.append(reply["error"]["data"]["code"])
                await anyio.sleep(0.1)
        assert reply["result"]["session"]["state"] == "closed", reply
        assert set(codes) <= {"session_in_use"}, codes
        await anyio.sleep(3)  # a takeover still under way must not reopen it
        listed = await beta.result("session/list", {})
        mine = [s for s in listed["sessions"] if s["sessionId"] == session]
        assert mine[0]["state"] == "closed", mine
        stored = (await gamma.result("events/read", {"sessionId": session, "limit": 100}))["events"]
        assert [e["sequence"] for e in stored] == list(range(1, len(stored) + 1))
        assert stored[-1]["payload"]["type"] == "session.closed", stored[-1]
        kinds = [e["payload"]["type"] for e in stored]
        assert kinds.count("interaction.settled") == 1, kinds
        ends = [k for k in kinds if k in ("run.completed", "run.failed", "run.interrupted")]
        assert len(ends) == 1, kinds
