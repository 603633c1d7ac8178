"""A request over ``--max-message-bytes`` on ``serve`` (issue 30, item 13): answered under
the request's id whenever the frame names it, with the limit and the option that sets it;
the bridge goes on serving.  It used to be answered under id ``null`` only, so the host
waited on its own id until it timed out."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import BRIDGE


def _frame(framing: str, message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    if framing == "newline":
        return body + b"\n"
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _replies(framing: str, out: bytes) -> list[dict[str, Any]]:
    if framing == "newline":
        return [json.loads(line) for line in out.splitlines() if line.strip()]
    replies = []
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        length = int(head.split(b":")[1])
        replies.append(json.loads(rest[:length]))
        out = rest[length:]
    return replies


@pytest.mark.parametrize("framing", ["newline", "content-length"])
@pytest.mark.parametrize("request_id", [7, "req-7"])
def test_a_request_over_the_limit_is_answered_under_its_id(
    tmp_path: Path, framing: str, request_id: Any
) -> None:
    big = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "session/create",
        "params": {"provider": "scripted", "title": "t" * 4000},
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 1, "client": {"name": "t", "version": "1"}},
    }
    after = {"jsonrpc": "2.0", "id": 8, "method": "provider/list", "params": {}}
    done = subprocess.run(
        [
            BRIDGE,
            "serve",
            "--state-dir",
            str(tmp_path / "state"),
            "--framing",
            framing,
            "--max-message-bytes",
            "2048",
        ],
        input=_frame(framing, init) + _frame(framing, big) + _frame(framing, after),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = {json.dumps(r.get("id")): r for r in _replies(framing, done.stdout)}
    error = replies[json.dumps(request_id)]["error"]
    assert error["code"] == -32600
    assert "exceeds the limit of 2048 bytes" in error["message"]
    assert "--max-message-bytes" in error["message"]
    assert error["data"] == {"reason": "too_large", "limit": 2048, "option": "--max-message-bytes"}
    assert "null" not in replies  # not (also) answered under id null
    assert "8" in replies  # the next request is served
    assert b"Traceback" not in done.stderr
