"""A replay ``after`` past the end of a session's history, from a real host over real
pipes (an outside check, session 11).

``session/attach {after}`` and ``session/resume {sessionId, after}`` take ``after`` as
the last sequence the host saw.  One past the session's last event (a stale cursor, one
of another session, a journal the host did not know was replaced) was accepted: the
reply said ``replayed: 0``, and every live event up to ``after`` was then withheld from
the host as already seen -- the session's next runs streamed to nobody, silently.  It is
``invalid_params`` naming ``after`` now, and the host's live events go on as before.
"""

from __future__ import annotations

from typing import Any

from hardening.hosts import RawHost


def _is_event_of(session_id: str) -> Any:
    return lambda m: m.get("method") == "event" and m["params"]["sessionId"] == session_id


async def _run_and_collect(host: RawHost, session_id: str) -> list[int]:
    """Start a run (the default echo) and return the sequences of the live events the
    host was sent for it, up to its terminal event."""
    seen: list[int] = []
    replies: list[Any] = []
    ended: list[Any] = []
    id = await host.request("run/start", {"sessionId": session_id, "input": {"text": "hi"}})

    def note(message: Any) -> None:
        if message.get("id") == id:
            replies.append(message)
        elif _is_event_of(session_id)(message):
            seen.append(message["params"]["sequence"])
            if message["params"]["payload"]["type"] == "run.completed":
                ended.append(message)

    await host.read_until(lambda _m: bool(replies and ended), on_message=note, timeout=10)
    assert "result" in replies[0], replies
    return seen


def _refused(reply: Any, last: int) -> None:
    error = reply["error"]
    assert error["code"] == -32000, reply
    assert error["data"]["code"] == "invalid_params"
    assert error["data"]["details"]["field"] == "after"
    assert f"1..{last}" in error["data"]["details"]["reason"]


async def test_attach_or_resume_after_past_the_end_is_refused_and_live_events_go_on() -> None:
    async with RawHost.spawn() as host:
        await host.initialize()
        created = await host.call("session/create", {"provider": "scripted"})
        session_id = created["result"]["session"]["sessionId"]
        assert await _run_and_collect(host, session_id) == [1, 2, 3]

        # An open session: refused, and the next run's events still reach the host.
        _refused(await host.call("session/attach", {"sessionId": session_id, "after": 1000}), 3)
        assert await _run_and_collect(host, session_id) == [4, 5, 6]

        # Its own last sequence is fine: nothing replayed, live events follow.
        attached = await host.call("session/attach", {"sessionId": session_id, "after": 6})
        assert attached["result"]["replayed"] == 0, attached
        assert await _run_and_collect(host, session_id) == [7, 8, 9]

        # A closed session, attached and resumed by id.
        closed = await host.call("session/close", {"sessionId": session_id})
        last = closed["result"]["session"]["lastSequence"]
        _refused(
            await host.call("session/attach", {"sessionId": session_id, "after": last + 1}), last
        )
        _refused(await host.call("session/resume", {"sessionId": session_id, "after": 10**6}), last)
        # The refused resume changed nothing: the session is still closed, and a resume
        # with a good cursor reopens it and streams its next run to the host.
        listed = await host.call("session/list", {})
        (info,) = [s for s in listed["result"]["sessions"] if s["sessionId"] == session_id]
        assert info["state"] == "closed", info
        resumed = await host.call("session/resume", {"sessionId": session_id, "after": last})
        assert resumed["result"]["session"]["state"] == "active", resumed
        assert await _run_and_collect(host, session_id) == [last + 2, last + 3, last + 4]
