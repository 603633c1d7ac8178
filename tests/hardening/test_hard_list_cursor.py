"""A ``session/list`` cursor the bridge never gave, from a real host over real pipes (an
outside check, session 11).

The journal read a cursor that is not its decimal position as position 0 -- below every
session -- so ``"x"``, ``""`` or a cut ``nextCursor`` came back as an empty page without
``nextCursor``: the host took it for the end of the list and showed no sessions at all
(``provider/sessions/read`` already refuses a cursor it did not make).  It is
``invalid_params`` naming ``cursor`` now; the cursors the bridge gives page as before.
"""

from __future__ import annotations

from hardening.hosts import RawHost


async def test_a_cursor_the_bridge_never_gave_is_refused_and_real_ones_page_through() -> None:
    async with RawHost.spawn() as host:
        await host.initialize()
        created = []
        for _ in range(5):
            reply = await host.call("session/create", {"provider": "scripted"})
            created.append(reply["result"]["session"]["sessionId"])

        first = (await host.call("session/list", {"limit": 2}))["result"]
        cursor = first["nextCursor"]
        for bad in ["x", "", "-1", cursor + "zz", " " + cursor, "1e3", "٣"]:
            reply = await host.call("session/list", {"limit": 2, "cursor": bad})
            assert "error" in reply, (bad, reply)
            data = reply["error"]["data"]
            assert (reply["error"]["code"], data["code"]) == (-32000, "invalid_params"), reply
            assert data["details"]["field"] == "cursor"

        # The bridge's own cursors still page through every session, newest first.
        listed = [s["sessionId"] for s in first["sessions"]]
        while cursor is not None:
            page = (await host.call("session/list", {"limit": 2, "cursor": cursor}))["result"]
            listed += [s["sessionId"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
        assert listed == created[::-1]
