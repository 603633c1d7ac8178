"""Page sizes, page bounds and a limit wait a host can get wrong, from a real host over
real pipes (an outside check, session 12).

These were accepted and quietly reinterpreted: a ``limit`` of 0 or below returned a page
of one; ``events/read`` with both ``after`` and ``before`` used ``before`` alone; a
negative ``after`` read from the start; a ``retryOnLimit.maxWaitSeconds`` below zero or
of years was kept as the session's policy.  Each is ``invalid_params`` naming the field
now, and the values at the bounds still work.
"""

from __future__ import annotations

from typing import Any

from hardening.hosts import RawHost


def _refused(reply: dict[str, Any], field: str) -> None:
    """A value the schema bounds is -32602 with its path; a combination the schema cannot
    say is the bridge's ``invalid_params`` naming the field."""
    assert "error" in reply, reply
    error = reply["error"]
    if error["code"] == -32602:
        assert error["data"]["path"].endswith("." + field), reply
    else:
        assert (error["code"], error["data"]["code"]) == (-32000, "invalid_params"), reply
        assert error["data"]["details"]["field"] == field, reply


async def test_page_sizes_and_bounds_out_of_range_are_refused_and_the_edges_still_read() -> None:
    async with RawHost.spawn() as host:
        await host.initialize()
        sid = (await host.call("session/create", {"provider": "scripted"}))["result"]["session"][
            "sessionId"
        ]
        id = await host.request("run/start", {"sessionId": sid, "input": {"text": "hi"}})
        done: list[Any] = []

        def note(m: Any) -> None:
            if m.get("id") == id or (
                m.get("method") == "event" and m["params"]["payload"]["type"] == "run.completed"
            ):
                done.append(m)

        await host.read_until(lambda _m: len(done) == 2, on_message=note, timeout=10)

        for limit in (0, -1, -1000):
            _refused(await host.call("session/list", {"limit": limit}), "limit")
            _refused(await host.call("events/read", {"sessionId": sid, "limit": limit}), "limit")
            _refused(
                await host.call("provider/sessions/list", {"provider": "scripted", "limit": limit}),
                "limit",
            )
        _refused(await host.call("events/read", {"sessionId": sid, "after": -1}), "after")
        _refused(await host.call("events/read", {"sessionId": sid, "before": 0}), "before")
        _refused(
            await host.call("events/read", {"sessionId": sid, "after": 1, "before": 3}), "before"
        )

        # The edges still read: a page of one, from the start and from the end.
        one = (await host.call("events/read", {"sessionId": sid, "limit": 1}))["result"]
        assert [e["sequence"] for e in one["events"]] == [1] and one["hasMore"] is True
        last = one["lastSequence"]
        tail = (await host.call("events/read", {"sessionId": sid, "before": last + 1, "limit": 1}))[
            "result"
        ]
        assert [e["sequence"] for e in tail["events"]] == [last]
        assert (await host.call("events/read", {"sessionId": sid, "after": 0, "before": None}))[
            "result"
        ]["events"]
        listed = (await host.call("session/list", {"limit": 1}))["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [sid]


async def test_a_retry_wait_below_zero_or_past_a_week_is_refused_at_create() -> None:
    async with RawHost.spawn() as host:
        await host.initialize()
        for wait in (-1, 604_801, 10**15):
            reply = await host.call(
                "session/create",
                {"provider": "scripted", "retryOnLimit": {"maxWaitSeconds": wait}},
            )
            _refused(reply, "maxWaitSeconds")
        listed = (await host.call("session/list", {}))["result"]["sessions"]
        assert listed == [], "a refused create leaves no session behind"
        for wait in (0, 604_800):
            reply = await host.call(
                "session/create",
                {"provider": "scripted", "retryOnLimit": {"maxWaitSeconds": wait}},
            )
            assert "result" in reply, reply


async def test_a_workspace_filter_relative_or_with_a_nul_is_refused_by_every_listing() -> None:
    """A ``workspace`` filter with a NUL made the file-store providers' listings raise in
    ``realpath`` (``-32603``, a traceback in the log); a relative one matched nothing
    silently.  Each listing refuses both (``workspace_invalid``); one that does not exist
    still lists (nothing), matched as given."""
    async with RawHost.spawn() as host:
        await host.initialize()
        listings: list[tuple[str, dict[str, Any]]] = [("session/list", {})]
        for provider in ("claude-code", "codex", "gemini"):
            listings.append(("provider/sessions/list", {"provider": provider}))
        for method, params in listings:
            for bad in ("/tmp/a\x00b", "relative/dir", ""):
                reply = await host.call(method, {**params, "workspace": bad})
                assert "error" in reply, (method, bad, reply)
                data = reply["error"]["data"]
                assert data["code"] == "workspace_invalid", (method, bad, reply)
            gone = await host.call(method, {**params, "workspace": "/nonexistent/workspace"})
            assert gone["result"]["sessions"] == [], (method, gone)
