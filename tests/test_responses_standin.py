"""The Responses API stand-in (tests/standins/responses_server.py) that the real
`codex` CLI talks to in end-to-end tests: what it streams, what it records."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from standins.responses_server import ResponsesStandIn, reply, text, tool_call

ROOT = Path(__file__).resolve().parent.parent


def user_body(prompt: str, extra_input: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "model": "stub-model",
        "stream": True,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            },
            *(extra_input or []),
        ],
    }


def post(port: int, body: Any, path: str = "/v1/responses") -> tuple[int, list[dict[str, Any]]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(
        "POST",
        path,
        body=json.dumps(body),
        headers={"Content-Type": "application/json", "Authorization": "Bearer dummy"},
    )
    resp = conn.getresponse()
    raw = resp.read().decode()
    conn.close()
    if not resp.getheader("Content-Type", "").startswith("text/event-stream"):
        return resp.status, [json.loads(raw)] if raw else []
    events = []
    for block in raw.split("\n\n"):
        lines = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"
        )
        if "data" in lines:
            data = json.loads(lines["data"])
            assert data["type"] == lines["event"]
            events.append(data)
    return resp.status, events


def test_text_reply_streams_like_the_responses_api() -> None:
    with ResponsesStandIn() as server:
        server.script(
            reply(
                text("Hello there friend", deltas=2), usage={"input_tokens": 5, "output_tokens": 3}
            )
        )
        status, events = post(server.port, user_body("hi"))
        assert status == 200
        kinds = [e["type"] for e in events]
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert kinds.count("response.output_text.delta") == 2
        assert kinds.index("response.output_item.added") < kinds.index("response.output_item.done")
        deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        assert deltas == "Hello there friend"
        done = events[-1]["response"]
        assert done["usage"]["input_tokens"] == 5 and done["usage"]["total_tokens"] == 8
        assert done["output"][0]["content"][0]["text"] == "Hello there friend"
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        (rec,) = server.requests
        assert rec.headers["authorization"] == "<redacted>"
        assert rec.body["input"][0]["content"][0]["text"] == "hi"
        assert rec.reply_index == 0 and server.pending() == 0
        assert server.errors == []


def test_tool_call_and_its_follow_up_are_recorded() -> None:
    with ResponsesStandIn() as server:
        server.push(tool_call("touch approved.txt", call_id="call_1"), text("Done."))
        _, events = post(server.port, user_body("go"))
        (item,) = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        assert item["type"] == "function_call" and item["name"] == "exec_command"
        assert json.loads(item["arguments"]) == {"cmd": "touch approved.txt"}
        output = {"type": "function_call_output", "call_id": "call_1", "output": "exit 0"}
        post(server.port, user_body("go", [item, output]))
        assert server.function_call_outputs() == [output]
        assert len(server.response_bodies()) == 2


def test_prompt_rules_when_the_script_is_empty() -> None:
    with ResponsesStandIn() as server:
        _, events = post(server.port, user_body("TOOL:ls -l"))
        (item,) = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        assert json.loads(item["arguments"]) == {"cmd": "ls -l"}
        follow = [item, {"type": "function_call_output", "call_id": item["call_id"], "output": "x"}]
        _, events = post(server.port, user_body("TOOL:ls -l", follow))
        assert (
            events[-1]["response"]["output"][0]["content"][0]["text"]
            == "Tool finished. Output was: x"
        )
        status, body = post(server.port, user_body("FAIL:nope"))
        assert status == 400 and body[0]["error"]["message"] == "nope"
        _, events = post(server.port, user_body("hello"))
        assert (
            events[-1]["response"]["output"][0]["content"][0]["text"]
            == "Hi! I am the stand-in model."
        )


def test_errors_and_failed_streams() -> None:
    with ResponsesStandIn(fallback=None) as server:
        server.script(reply(status=500, error="boom"), reply(text("partial"), error="exploded"))
        status, body = post(server.port, user_body("x"))
        assert status == 500 and body[0]["error"]["message"] == "boom"
        _, events = post(server.port, user_body("x"))
        assert events[-1]["type"] == "response.failed"
        assert events[-1]["response"]["error"]["message"] == "exploded"
        status, _ = post(server.port, user_body("x"))  # script exhausted, no fallback
        assert status == 500


def test_a_client_hanging_up_mid_stream_is_noticed() -> None:
    with ResponsesStandIn() as server:
        server.script(reply(text(chunks=["a", "b", "c", "d"], delay=5.0)))
        sock = socket.create_connection(("127.0.0.1", server.port))
        body = json.dumps(user_body("x")).encode()
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        assert b"output_text.delta" in _read_until(sock, b"output_text.delta")
        t0 = time.monotonic()
        sock.close()
        deadline = time.monotonic() + 3
        while not server.requests[0].disconnected:
            assert time.monotonic() < deadline, "disconnect not noticed"
            time.sleep(0.02)
        assert time.monotonic() - t0 < 1.0  # well before the 5 s delay ran out
        assert server.errors == []


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    sock.settimeout(5)
    while marker not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_other_endpoints_and_control() -> None:
    with ResponsesStandIn() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request("GET", "/v1/models")
        models = json.loads(conn.getresponse().read())
        assert models["data"][0]["id"] == "stub-model"
        conn.request("GET", "/v1/nothing")
        resp = conn.getresponse()
        assert resp.status == 404
        resp.read()
        conn.request("POST", "/_standin/script", body=json.dumps([reply(text("scripted"))]))
        assert json.loads(conn.getresponse().read()) == {"pending": 1}
        conn.close()
        _, events = post(server.port, user_body("hi"))
        assert events[-1]["response"]["output"][0]["content"][0]["text"] == "scripted"
        assert [r.path for r in server.requests] == ["/v1/models", "/v1/nothing", "/v1/responses"]
        server.wait_for_requests(1)
        with pytest.raises(TimeoutError):
            server.wait_for_requests(2, timeout=0.1)


def test_runs_as_its_own_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [reply(text("from a file"))]}))
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "standins" / "responses_server.py"),
            "--script",
            str(script),
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT=")
        port = int(line.strip().split("=", 1)[1])
        _, events = post(port, user_body("hi"))
        assert events[-1]["response"]["output"][0]["content"][0]["text"] == "from a file"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/_standin/requests")
        recorded = json.loads(conn.getresponse().read())
        conn.close()
        assert [r["path"] for r in recorded] == ["/v1/responses"]
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
        if proc.stdout is not None:
            proc.stdout.close()
    assert json.loads(log.read_text().splitlines()[0])["path"] == "/v1/responses"
