"""JSON the decoder cannot take, from a real host over real pipes (cases 12, 15 and 52).

A request can be JSON by the grammar and still be refused by the decoder: a string with
an unpaired surrogate escape (``"\\ud83d"``: what a JavaScript host's prompt becomes when
it is cut inside an emoji, and ``JSON.stringify`` writes it that way), bytes that are not
UTF-8 in a string of the envelope, or nesting deeper than the decoder's recursion limit.
The bridge answered each with ``-32700`` and id ``null`` -- once per read, so a second
such request in the same write got nothing at all -- and the host's request waited for
ever.  Now each is ``-32600`` under its own id; bytes that are not JSON stay ``-32700``
with id ``null``.
"""

from __future__ import annotations

from typing import Any

from hardening.hosts import RawHost

CUT_EMOJI = b'"fix the \\ud83d"'  # the high half of U+1F600, its low half cut off
NOT_UTF8 = b'"caf\xe9"'  # latin-1 bytes where UTF-8 was due
DEEP = b"[" * 5_000 + b"]" * 5_000


def _request(id: str, method: str, params: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":"%s","method":"%s","params":%s}' % (
        id.encode(),
        method.encode(),
        params,
    )


async def test_requests_the_decoder_refuses_are_answered_under_their_own_ids() -> None:
    async with RawHost.spawn() as host:
        await host.initialize()
        created = await host.call("session/create", {"provider": "scripted"})
        session_id = created["result"]["session"]["sessionId"].encode()
        bad = {
            "surrogate": _request(
                "surrogate",
                "run/start",
                b'{"sessionId":"%s","input":{"text":%s}}' % (session_id, CUT_EMOJI),
            ),
            # (in params such bytes were already -32602 under the id; in the envelope not)
            "not-utf8": b'{"jsonrpc":"2.0","id":"not-utf8","method":%s}' % NOT_UTF8,
            "deep": _request("deep", "bridge/ping", b'{"data":%s}' % DEEP),
        }
        # All in one write (one read for the bridge), then a request that is fine.
        await host.send_raw(b"\n".join(bad.values()) + b"\n")
        replies: dict[str, Any] = {}

        def note(message: Any) -> None:
            if isinstance(message, dict) and message.get("id") in (*bad, None):
                replies[str(message.get("id"))] = message

        await host.read_until(lambda _m: set(bad) <= set(replies), on_message=note)
        assert "None" not in replies, replies  # no anonymous -32700 in their place
        for id in bad:
            error = replies[id]["error"]
            assert error["code"] == -32600, replies[id]
            assert error["data"] == {"reason": "invalid_request"}
            assert "Traceback" not in error["message"] and "0x" not in error["message"]
        assert "not Unicode" in replies["surrogate"]["error"]["message"]
        assert "not Unicode" in replies["not-utf8"]["error"]["message"]
        assert "nested too deep" in replies["deep"]["error"]["message"]

        # Nothing was started: the session has no run and takes one now.
        page = await host.call("events/read", {"sessionId": session_id.decode()})
        assert page["result"]["events"] == [], page
        run = await host.call(
            "run/start", {"sessionId": session_id.decode(), "input": {"text": "fix the 😀"}}
        )
        assert "result" in run, run

        # Bytes that are not JSON are still a parse error with id null.
        await host.send_raw(b'{"jsonrpc":"2.0","id":"cut","method":"bridge/ping"\n')
        parse = await host.read_until(lambda m: isinstance(m, dict) and m.get("id") is None)
        assert parse["error"]["code"] == -32700, parse
        pong = await host.call("bridge/ping", {"data": "still here"})
        assert pong["result"] == {"data": "still here"}
