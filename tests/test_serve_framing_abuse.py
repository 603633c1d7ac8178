"""Real framing abuse against a real ``agent-bridge serve`` process, and ``exit`` that
flushes (issue 11, cases 2 and 5).

Each test spawns ``python -m agent_bridge serve --state-dir :memory:``, writes everything
in one go over its real stdin, keeps stdin open, and reads stdout to EOF (the bridge exits
on ``exit``).  No timing is asserted; a guard only stops a hung child.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

from agent_bridge.rpc.framing import FramingKind, encode_frame

_INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientInfo": {"name": "abuse"}, "capabilities": {}},
}


def _msg(obj: dict[str, Any], framing: FramingKind) -> bytes:
    return encode_frame(framing, json.dumps(obj).encode())


def _ping(i: int, framing: FramingKind) -> bytes:
    return _msg(
        {"jsonrpc": "2.0", "id": i, "method": "bridge/ping", "params": {"data": "d"}}, framing
    )


def _end(framing: FramingKind) -> bytes:
    return _msg({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}, framing) + _msg(
        {"jsonrpc": "2.0", "method": "exit"}, framing
    )


def _drive(data: bytes, framing: FramingKind, *args: str) -> list[dict[str, Any]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_bridge",
            "serve",
            "--state-dir",
            ":memory:",
            "--framing",
            framing,
            *args,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    try:
        proc.stdin.write(data)
        proc.stdin.flush()  # stdin stays open: only ``exit`` ends the bridge
        reader.join(60)
        assert not reader.is_alive(), "the bridge did not exit after shutdown + exit"
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    raw = out[0]
    if framing == "newline":
        return [json.loads(line) for line in raw.splitlines() if line.strip()]
    replies = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        length = int(head.split(b":")[1])
        replies.append(json.loads(rest[:length]))
        raw = rest[length:]
    return replies


def test_shutdown_and_exit_written_together_still_get_the_shutdown_reply() -> None:
    replies = _drive(_msg(_INIT, "newline") + _ping(1, "newline") + _end("newline"), "newline")
    assert [r["id"] for r in replies] == ["init", 1, "bye"]
    assert replies[-1] == {"jsonrpc": "2.0", "id": "bye", "result": None}


def test_serve_content_length_resyncs_after_oversized_lying_and_junk_headers() -> None:
    f: FramingKind = "content-length"
    ping3 = json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "bridge/ping", "params": {"data": "d"}}
    )
    data = (
        _msg(_INIT, f)
        + b"Content-Length: 99999999999\r\n\r\n"  # over the limit, and no such body
        + _ping(1, f)
        + b"zzzz"  # junk glued to the next header
        + _ping(2, f)
        + b"Content-Length: %d\r\n\r\n%s" % (len(ping3) + 20, ping3.encode())  # lies by 20
        + _ping(4, f)
        + _ping(5, f)
        + _end(f)
    )
    replies = _drive(data, f, "--max-message-bytes", "65536")
    ids = [r["id"] for r in replies]
    assert [i for i in ids if isinstance(i, int)] == [1, 2, 3, 4, 5]
    assert ids[0] == "init" and ids[-1] == "bye"
    errors = {r["id"]: r["error"] for r in replies if "error" in r}
    assert errors[3]["data"] == {"reason": "length_mismatch"}  # answered with its own id
    reasons = sorted(r["error"]["data"]["reason"] for r in replies if r["id"] is None)
    assert reasons == ["missing_content_length", "too_large"]
    pongs = [r for r in replies if isinstance(r["id"], int) and "result" in r]
    assert [r["id"] for r in pongs] == [1, 2, 4, 5]


def test_serve_content_length_junk_lines_before_a_header_cost_only_the_junk() -> None:
    """A line without a colon written just before a frame (something printed into the
    host's stream: a wrapper's echo, a debug print) is one header block with that frame's
    header.  The block was refused whole and the search for the next header began after
    it, inside the frame's body: the request was lost, only a ``-32700`` with id null said
    anything.  Now the junk is reported and the frame after it is served (an outside
    check, session 11)."""
    f: FramingKind = "content-length"
    data = (
        _msg(_INIT, f)
        + b"starting agent-bridge\r\n"  # one junk line, then a frame
        + _ping(1, f)
        + b"two\r\nlines of junk\r\n"
        + _ping(2, f)
        + b"junk\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"  # still refused
        + _ping(3, f)
        + _end(f)
    )
    replies = _drive(data, f)
    assert [r["id"] for r in replies if r["id"] is not None] == ["init", 1, 2, 3, "bye"]
    assert all("result" in r for r in replies if r["id"] in (1, 2, 3))
    # one read: its framing errors are answered once (the first), the rest logged
    reasons = [r["error"]["data"]["reason"] for r in replies if r["id"] is None]
    assert reasons == ["bad_header"]


def test_serve_newline_resyncs_after_junk_and_an_overlong_line() -> None:
    f: FramingKind = "newline"
    data = (
        _msg(_INIT, f)
        + b"not json at all\n"
        + _ping(1, f)
        + b'{"x":"'
        + b"y" * 70000
        + b'"}\n'
        + _ping(2, f)
        + _end(f)
    )
    replies = _drive(data, f, "--max-message-bytes", "65536")
    assert [r["id"] for r in replies] == ["init", None, 1, None, 2, "bye"]
    assert replies[1]["error"]["code"] == -32700
    assert replies[3]["error"]["data"] == {
        "reason": "too_large",
        "limit": 65536,
        "option": "--max-message-bytes",
    }
