"""Interactions and runs (bad-input cases 40-45, plus fail-closed and answer validation),
end to end through ``agent-bridge serve`` with the scripted provider."""

from __future__ import annotations

from typing import Any

import anyio
from bridge_client import BridgeProcess, script_session
from conftest import running_bridge

ALLOW = {"kind": "approval", "decision": "allow", "mode": "once"}
DENY = {"kind": "approval", "decision": "deny"}

APPROVAL_THEN_BRANCH = [
    {
        "type": "approval",
        "title": "touch x",
        "modes": ["once", "session"],
        "onAllow": [{"type": "text", "text": "allowed"}],
        "onDeny": [{"type": "text", "text": "denied"}],
    }
]


async def _start(bridge: BridgeProcess, steps: list[dict[str, Any]]) -> tuple[str, str]:
    created = await bridge.result("session/create", script_session(steps))
    sid = created["session"]["sessionId"]
    started = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "go"}})
    return sid, started["runId"]


async def _interaction_request(bridge: BridgeProcess) -> dict[str, Any]:
    return await bridge.wait_for(lambda m: m.get("method") == "interaction/request")


def _payloads(bridge: BridgeProcess) -> list[dict[str, Any]]:
    return [m["params"]["payload"] for m in bridge.received if m.get("method") == "event"]


async def test_approval_answered_through_the_server_request(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        await _start(bridge, APPROVAL_THEN_BRANCH)
        request = await _interaction_request(bridge)
        assert isinstance(request["id"], int)  # the ledger's integer ids (Vim 9 safe)
        # The host has seen the interaction.requested event before the request itself.
        kinds = [
            m["params"]["payload"]["type"] if m.get("method") == "event" else m.get("method")
            for m in bridge.received
        ]
        assert kinds.index("interaction.requested") < kinds.index("interaction/request")
        assert request["params"]["request"]["kind"] == "approval"
        await bridge.send({"jsonrpc": "2.0", "id": request["id"], "result": ALLOW})
        assert (await bridge.event("text.delta"))["payload"]["text"] == "allowed"
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        settled = [p for p in _payloads(bridge) if p["type"] == "interaction.settled"]
        assert settled == [
            {
                "type": "interaction.settled",
                "interactionId": request["params"]["interactionId"],
                "status": "responded",
                "answer": {"kind": "approval", "decision": "allow"},
            }
        ]


async def test_case_40_same_answer_twice_is_duplicate_different_is_already_settled() -> None:
    async with running_bridge() as bridge:
        await _start(bridge, APPROVAL_THEN_BRANCH)
        request = await _interaction_request(bridge)
        iid = request["params"]["interactionId"]
        first = await bridge.result("interaction/respond", {"interactionId": iid, "answer": DENY})
        assert first == {"interactionId": iid, "status": "applied"}
        # The bridge withdraws the server->client request it had sent.
        cancel = await bridge.wait_for(lambda m: m.get("method") == "$/cancelRequest")
        assert cancel["params"] == {"id": request["id"]}
        again = await bridge.result("interaction/respond", {"interactionId": iid, "answer": DENY})
        assert again == {"interactionId": iid, "status": "duplicate"}
        other = await bridge.call("interaction/respond", {"interactionId": iid, "answer": ALLOW})
        assert other["error"]["data"]["code"] == "interaction_already_settled"
        assert (await bridge.event("text.delta"))["payload"]["text"] == "denied"
        # A late reply to the withdrawn request changes nothing.
        await bridge.send({"jsonrpc": "2.0", "id": request["id"], "result": ALLOW})
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        settled = [p for p in _payloads(bridge) if p["type"] == "interaction.settled"]
        assert len(settled) == 1 and settled[0]["answer"]["decision"] == "deny"


async def test_case_41_answer_after_interrupt_is_rejected() -> None:
    async with running_bridge() as bridge:
        _, run_id = await _start(bridge, APPROVAL_THEN_BRANCH)
        request = await _interaction_request(bridge)
        iid = request["params"]["interactionId"]
        ack = await bridge.result("run/interrupt", {"runId": run_id})
        assert ack["state"] == "interrupting"
        late = await bridge.call("interaction/respond", {"interactionId": iid, "answer": ALLOW})
        assert late["error"]["data"]["code"] == "interaction_already_settled"
        assert (await bridge.terminal())["payload"]["type"] == "run.interrupted"
        kinds = [(p["type"], p.get("status")) for p in _payloads(bridge)]
        assert kinds.index(("interaction.settled", "cancelled")) < kinds.index(
            ("run.interrupted", None)
        )
        assert "text.delta" not in [k for k, _ in kinds]


async def test_case_42_interrupt_finished_run_and_two_interrupts_at_once() -> None:
    async with running_bridge() as bridge:
        created = await bridge.result(
            "session/create",
            {
                "provider": "scripted",
                "options": {
                    "script": {
                        "runs": [
                            {"steps": [{"type": "text", "text": "quick"}]},
                            {"steps": [{"type": "waitForInterrupt"}]},
                        ]
                    }
                },
            },
        )
        sid = created["session"]["sessionId"]
        done = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "1"}})
        await bridge.terminal()
        finished = await bridge.call("run/interrupt", {"runId": done["runId"]})
        assert finished["error"]["data"]["code"] == "run_not_active"
        waiting = await bridge.result("run/start", {"sessionId": sid, "input": {"text": "2"}})
        first = await bridge.send_request("run/interrupt", {"runId": waiting["runId"]})
        second = await bridge.send_request("run/interrupt", {"runId": waiting["runId"]})
        replies = [await bridge.response(first), await bridge.response(second)]
        assert all(r["result"]["state"] in ("interrupting", "interrupted") for r in replies)
        assert (await bridge.terminal())["payload"]["type"] == "run.interrupted"
        await bridge.result("bridge/ping", {})
        terminals = [p for p in _payloads(bridge) if p["type"] == "run.interrupted"]
        assert len(terminals) == 1


async def test_case_43_interrupt_ignored_by_provider_is_bounded() -> None:
    async with running_bridge("content-length", "--interrupt-grace", "0.5") as bridge:
        created = await bridge.result(
            "session/create",
            {
                "provider": "scripted",
                "options": {
                    "script": {
                        "runs": [
                            {"steps": [{"type": "waitForInterrupt", "ignoreInterrupt": True}]},
                            {"steps": [{"type": "text", "text": "revived"}]},
                        ]
                    }
                },
            },
        )
        sid = created["session"]["sessionId"]
        run_id = (await bridge.result("run/start", {"sessionId": sid, "input": {"text": "1"}}))[
            "runId"
        ]
        started = anyio.current_time()
        await bridge.result("run/interrupt", {"runId": run_id})
        terminal = await bridge.terminal(timeout=5)
        assert terminal["payload"] == {"type": "run.interrupted", "reason": "user", "forced": True}
        assert anyio.current_time() - started < 4
        # The session survives: its provider session (stopped) is resumed for the next run.
        await bridge.result("run/start", {"sessionId": sid, "input": {"text": "again"}})
        assert (await bridge.event("text.delta"))["payload"]["text"] == "revived"
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"


async def test_case_44_payload_of_wrong_shape_or_with_cycle_is_a_diagnostic() -> None:
    async with running_bridge() as bridge:
        await _start(
            bridge,
            [{"type": "invalid"}, {"type": "cyclic"}, {"type": "text", "text": "still here"}],
        )
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"
        payloads = _payloads(bridge)
        contract = [p for p in payloads if p["type"] == "diagnostic"]
        assert [d["code"] for d in contract] == ["provider_contract", "provider_contract"]
        assert {"type": "text.delta", "text": "still here"} in payloads


async def test_case_44_provider_that_raises_fails_the_run_cleanly() -> None:
    async with running_bridge() as bridge:
        await _start(bridge, [{"type": "crash"}])
        terminal = await bridge.terminal()
        assert terminal["payload"]["error"]["code"] == "provider_contract"
        assert (await bridge.result("bridge/ping", {"data": 1})) == {"data": 1}


async def test_case_45_success_with_pending_interaction_is_rejected() -> None:
    async with running_bridge() as bridge:
        await _start(bridge, [{"type": "completeWithPending"}])
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_contract"
        kinds = [p["type"] for p in _payloads(bridge)]
        assert "run.completed" not in kinds
        assert kinds.index("interaction.settled") < kinds.index("run.failed")


async def test_host_without_approval_capability_gets_approvals_denied_visibly() -> None:
    async with running_bridge(approval=False, question=False) as bridge:
        await _start(bridge, APPROVAL_THEN_BRANCH)
        assert (await bridge.event("text.delta"))["payload"]["text"] == "denied"
        await bridge.terminal()
        payloads = _payloads(bridge)
        assert {
            "type": "diagnostic",
            "level": "warning",
            "code": "approval_auto_denied",
            "message": "the host cannot answer approvals, so the request was denied",
        } in payloads
        settled = next(p for p in payloads if p["type"] == "interaction.settled")
        assert settled["auto"] is True and settled["answer"]["decision"] == "deny"
        assert not any(m.get("method") == "interaction/request" for m in bridge.received)


async def test_question_choice_free_text_and_invalid_answers() -> None:
    steps: list[dict[str, Any]] = [
        {
            "type": "question",
            "prompt": "Which colour?",
            "choices": [{"id": "r", "label": "Red"}, {"id": "g", "label": "Green"}],
            "branches": {"g": [{"type": "text", "text": "green it is"}]},
        },
        {"type": "question", "prompt": "Name?"},
    ]
    async with running_bridge() as bridge:
        await _start(bridge, steps)
        first = await _interaction_request(bridge)
        iid = first["params"]["interactionId"]
        wrong_kind = await bridge.call(
            "interaction/respond", {"interactionId": iid, "answer": ALLOW}
        )
        assert wrong_kind["error"]["data"]["code"] == "invalid_answer"
        unknown = await bridge.call(
            "interaction/respond",
            {"interactionId": iid, "answer": {"kind": "question", "choice": "blue"}},
        )
        assert unknown["error"]["data"]["code"] == "invalid_answer"
        await bridge.send(
            {"jsonrpc": "2.0", "id": first["id"], "result": {"kind": "question", "choice": "g"}}
        )
        assert (await bridge.event("text.delta"))["payload"]["text"] == "green it is"
        second = await _interaction_request(bridge)
        await bridge.send(
            {"jsonrpc": "2.0", "id": second["id"], "result": {"kind": "question", "text": "Ada"}}
        )
        assert (await bridge.event("text.delta"))["payload"]["text"] == "Answer: Ada"
        assert (await bridge.terminal())["payload"]["type"] == "run.completed"


async def test_question_set_answer_must_cover_exactly_the_asked_keys() -> None:
    steps = [
        {
            "type": "questionSet",
            "items": [
                {
                    "key": "lang",
                    "prompt": "Language?",
                    "choices": [{"id": "py", "label": "Python"}],
                },
                {"key": "name", "prompt": "Project name?"},
            ],
        }
    ]
    async with running_bridge() as bridge:
        await _start(bridge, steps)
        request = await _interaction_request(bridge)
        iid = request["params"]["interactionId"]
        for answers in (
            {"lang": "py"},
            {"lang": "py", "name": "x", "extra": "y"},
            {"lang": "go", "name": "x"},
        ):
            bad = await bridge.call(
                "interaction/respond",
                {"interactionId": iid, "answer": {"kind": "questionSet", "answers": answers}},
            )
            assert bad["error"]["data"]["code"] == "invalid_answer", answers
        ok = await bridge.result(
            "interaction/respond",
            {
                "interactionId": iid,
                "answer": {"kind": "questionSet", "answers": {"lang": "py", "name": "demo"}},
            },
        )
        assert ok["status"] == "applied"
        assert (await bridge.event("text.delta"))["payload"][
            "text"
        ] == "Answers: lang=py, name=demo"


async def test_host_error_reply_to_interaction_request_cancels_it() -> None:
    async with running_bridge() as bridge:
        await _start(bridge, APPROVAL_THEN_BRANCH)
        request = await _interaction_request(bridge)
        await bridge.send(
            {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}}
        )
        settled = await bridge.event("interaction.settled")
        assert settled["payload"]["status"] == "cancelled"
        assert (await bridge.event("text.delta"))["payload"]["text"] == "denied"


async def test_unknown_interaction_and_run_ids() -> None:
    async with running_bridge() as bridge:
        reply = await bridge.call(
            "interaction/respond", {"interactionId": "int_nope", "answer": DENY}
        )
        assert reply["error"]["data"]["code"] == "interaction_not_found"
        reply = await bridge.call("run/interrupt", {"runId": "run_nope"})
        assert reply["error"]["data"]["code"] == "run_not_found"
        reply = await bridge.call("events/read", {"sessionId": "ses_nope"})
        assert reply["error"]["data"]["code"] == "session_not_found"
