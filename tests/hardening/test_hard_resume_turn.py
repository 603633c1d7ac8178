"""A run continued after a crash (``recovery.resumeTurn``) attacked from outside: real
bridge processes on one SQLite journal, each SIGKILLed while its run waits on a question.

What a host may do the moment the session is reopened: answer at once (before the offer
arrives), answer twice with different answers, answer with a choice the question does not
offer, retry the ``run/start`` that started the run (same ``commandId``), close the session
while it is being reopened.  Each must settle the question at most once, answer every
request, and leave one gapless journal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from bridge_client import BridgeProcess, Message
from test_journal_e2e import assert_gapless, bridge_on, create, read_all, terminal_of

QUESTION: dict[str, Any] = {
    "type": "question",
    "prompt": "which?",
    "choices": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
    "branches": {
        "a": [{"type": "text", "text": "chose a"}],
        "b": [{"type": "text", "text": "chose b"}],
    },
}
STEPS: list[dict[str, Any]] = [{"type": "text", "text": "before"}, QUESTION]


async def _cut_off(state: Path, command_id: str | None = None) -> tuple[str, str, str]:
    """A bridge on ``state`` starts a run of :data:`STEPS` and is SIGKILLed once its host
    was asked the question; return the session, the run and the interaction ids."""
    import signal

    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess("newline", env={"AGENT_BRIDGE_STATE_DIR": str(state)})
        await bridge.start(tg)
        try:
            await bridge.initialize()
            session = await create(bridge, STEPS)
            params: dict[str, Any] = {"sessionId": session, "input": {"text": "x"}}
            if command_id is not None:
                params["commandId"] = command_id
            started = await bridge.result("run/start", params)
            asked = await bridge.wait_for(lambda m: m.get("method") == "interaction/request", 30)
            assert bridge.proc is not None
            bridge.proc.send_signal(signal.SIGKILL)
            await bridge.wait_exit()
        finally:
            await bridge.stop()
            tg.cancel_scope.cancel()
    return session, started["runId"], asked["params"]["interactionId"]


def _answer(choice: str) -> dict[str, Any]:
    return {"kind": "question", "choice": choice}


def _settled(events: list[Message]) -> list[Message]:
    return [e for e in events if e["payload"]["type"] == "interaction.settled"]


async def test_two_different_answers_sent_with_the_resume_settle_it_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    session, run_id, interaction = await _cut_off(state)
    async with bridge_on(state) as bridge:
        resume = await bridge.send_request("session/resume", {"sessionId": session})
        first = await bridge.send_request(
            "interaction/respond", {"interactionId": interaction, "answer": _answer("a")}
        )
        second = await bridge.send_request(
            "interaction/respond", {"interactionId": interaction, "answer": _answer("b")}
        )
        assert "result" in await bridge.response(resume, 30)
        replies = [await bridge.response(first, 30), await bridge.response(second, 30)]
        end = await terminal_of(bridge, run_id)
        assert end["payload"]["type"] == "run.completed", end
        stored = await read_all(bridge, session)
        assert_gapless(stored)
        settled = _settled(stored)
        assert len(settled) == 1, settled
        chosen = settled[0]["payload"]["answer"]["choice"]
        texts = [e["payload"]["text"] for e in stored if e["payload"]["type"] == "text.delta"]
        assert texts == ["before", f"chose {chosen}"]
        ok = [r for r in replies if "result" in r]
        refused = [r for r in replies if "error" in r]
        assert len(ok) == 1 and len(refused) == 1, replies
        assert refused[0]["error"]["data"]["code"] == "interaction_already_settled"
        winner = first if chosen == "a" else second
        assert ok[0]["id"] == winner


async def test_an_unknown_choice_after_the_resume_is_refused_and_the_question_waits(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    session, run_id, interaction = await _cut_off(state)
    async with bridge_on(state) as bridge:
        await bridge.result("session/resume", {"sessionId": session})
        bad = await bridge.call(
            "interaction/respond", {"interactionId": interaction, "answer": _answer("zzz")}
        )
        assert bad["error"]["data"]["code"] == "invalid_answer", bad
        wrong_kind = await bridge.call(
            "interaction/respond",
            {"interactionId": interaction, "answer": {"kind": "approval", "decision": "allow"}},
        )
        assert wrong_kind["error"]["data"]["code"] == "invalid_answer", wrong_kind
        assert (await bridge.call("bridge/ping", {}))["result"] == {}
        good = await bridge.call(
            "interaction/respond", {"interactionId": interaction, "answer": _answer("b")}
        )
        assert "result" in good, good
        end = await terminal_of(bridge, run_id)
        assert end["payload"]["type"] == "run.completed", end
        stored = await read_all(bridge, session)
        assert_gapless(stored)
        assert [s["payload"]["answer"]["choice"] for s in _settled(stored)] == ["b"]


async def test_run_start_retried_with_its_command_id_after_the_resume_is_the_same_run(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    session, run_id, interaction = await _cut_off(state, command_id="cmd-1")
    async with bridge_on(state) as bridge:
        await bridge.result("session/resume", {"sessionId": session})
        again = await bridge.call(
            "run/start", {"sessionId": session, "input": {"text": "x"}, "commandId": "cmd-1"}
        )
        assert again.get("result", {}).get("runId") == run_id, again
        assert again["result"].get("duplicate") is True, again
        other = await bridge.call(
            "run/start", {"sessionId": session, "input": {"text": "y"}, "commandId": "cmd-1"}
        )
        assert other["error"]["data"]["code"] == "command_conflict", other
        await bridge.result(
            "interaction/respond", {"interactionId": interaction, "answer": _answer("a")}
        )
        end = await terminal_of(bridge, run_id)
        assert end["payload"]["type"] == "run.completed", end
        stored = await read_all(bridge, session)
        assert_gapless(stored)
        assert [e["runId"] for e in stored if e["payload"]["type"] == "run.started"] == [run_id]


async def test_close_sent_with_the_resume_ends_the_run_and_settles_the_question(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    session, run_id, interaction = await _cut_off(state)
    async with bridge_on(state) as bridge:
        resume = await bridge.send_request("session/resume", {"sessionId": session})
        close = await bridge.send_request("session/close", {"sessionId": session})
        answer = await bridge.send_request(
            "interaction/respond", {"interactionId": interaction, "answer": _answer("a")}
        )
        replies = {
            "resume": await bridge.response(resume, 30),
            "close": await bridge.response(close, 30),
            "answer": await bridge.response(answer, 30),
        }
        assert "result" in replies["close"], replies
        assert (await bridge.call("bridge/ping", {}))["result"] == {}
        listed = await bridge.result("session/list", {})
        mine = [s for s in listed["sessions"] if s["sessionId"] == session]
        assert mine and mine[0]["state"] == "closed", listed
        stored = await read_all(bridge, session)
        assert_gapless(stored)
        runs = [e for e in stored if e.get("runId") == run_id]
        terminal = [
            e
            for e in runs
            if e["payload"]["type"] in ("run.completed", "run.failed", "run.interrupted")
        ]
        assert len(terminal) == 1, [e["payload"] for e in stored]
        assert len(_settled(stored)) == 1, [e["payload"] for e in stored]
        assert stored[-1]["payload"]["type"] == "session.closed", stored[-1]
    # and the next bridge on the journal opens it and finds nothing left open
    async with bridge_on(state) as bridge:
        again = await read_all(bridge, session)
        assert again == stored


async def test_delete_sent_with_the_resume_deletes_the_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    session, _run_id, _interaction = await _cut_off(state)
    async with bridge_on(state) as bridge:
        resume = await bridge.send_request("session/resume", {"sessionId": session})
        delete = await bridge.send_request("session/delete", {"sessionId": session})
        await bridge.response(resume, 30)
        deleted = await bridge.response(delete, 30)
        assert deleted.get("result", {}).get("deleted") is True, deleted
        listed = await bridge.result("session/list", {})
        assert session not in [s["sessionId"] for s in listed["sessions"]], listed
    async with bridge_on(state) as bridge:
        listed = await bridge.result("session/list", {})
        assert session not in [s["sessionId"] for s in listed["sessions"]], listed


async def test_run_start_sent_with_the_resume_runs_in_the_reopened_session(
    tmp_path: Path,
) -> None:
    """A host that sends ``run/start`` right behind ``session/resume`` (without waiting
    for its reply) gets the run, not ``session_closed``: the session is being reopened."""
    state = tmp_path / "state"
    async with bridge_on(state) as bridge:
        session = await create(bridge, [{"type": "echo"}])
        await bridge.result("session/close", {"sessionId": session})
    async with bridge_on(state) as bridge:
        resume = await bridge.send_request("session/resume", {"sessionId": session})
        start = await bridge.send_request(
            "run/start", {"sessionId": session, "input": {"text": "again"}}
        )
        assert "result" in await bridge.response(resume, 30)
        started = await bridge.response(start, 30)
        assert "result" in started, started
        end = await terminal_of(bridge, started["result"]["runId"])
        assert end["payload"]["type"] == "run.completed", end
        stored = await read_all(bridge, session)
        assert_gapless(stored)
