"""``agent-bridge acp`` against hostile or hasty clients, over real pipes (issue 30, items
3 and 13): a ``session/cancel`` written in the same write as its ``session/prompt``, a
request over ``--max-message-bytes``, a parse error and an unknown method (each error
carries ``data``, as docs/acp-agent.md says); a switch to a provider that cannot open
the session (it leaves the session as it was); a client's text in the log (escaped,
cut); a ``session/prompt`` cancelled by ``$/cancel_request`` (its run stopped).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from acp_agent_support import BRIDGE

STREAM = {"runs": [{"steps": [{"type": "stream", "count": 100_000, "text": "tok "}]}] * 3}


class RawAcp:
    """``agent-bridge acp`` as a child over pipes; writes bytes as given (one ``write``
    per call), reads newline-delimited messages."""

    def __init__(self, tmp: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        script = tmp / "script.json"
        script.write_text(json.dumps(STREAM))
        self.proc = subprocess.Popen(
            [
                BRIDGE,
                "acp",
                "--provider",
                "scripted",
                "--state-dir",
                str(tmp / "state"),
                "--option",
                f"script={script}",
                *extra,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self._buf = b""
        self.received: list[dict[str, Any]] = []

    def write(self, *messages: dict[str, Any] | bytes) -> None:
        data = b"".join(
            m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n" for m in messages
        )
        assert self.proc.stdin is not None
        os.write(self.proc.stdin.fileno(), data)  # one write: the bridge reads them together

    def until(self, predicate: Any, timeout: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                message: dict[str, Any] = json.loads(line)
                self.received.append(message)
                if predicate(message):
                    return message
            left = deadline - time.monotonic()
            assert left > 0, f"timed out; last received: {self.received[-3:]}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                assert chunk, "the bridge closed its stdout"
                self._buf += chunk

    def reply(self, request_id: Any, timeout: float = 60) -> dict[str, Any]:
        return self.until(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def start(self, tmp: Path) -> str:
        self.write(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}},
            }
        )
        assert "result" in self.reply(1)
        self.write(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(tmp), "mcpServers": []},
            }
        )
        return str(self.reply(2)["result"]["sessionId"])

    def close(self) -> bytes:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stderr is not None and self.proc.stdout is not None
        self.proc.stdout.close()
        try:
            return self.proc.stderr.read()
        finally:
            self.proc.stderr.close()


def _prompt(request_id: int, session: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]},
    }


def _cancel(session: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}


def _chunks(acp: RawAcp) -> int:
    return sum(
        1
        for m in acp.received
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def test_a_cancel_in_the_same_write_as_its_prompt_cancels_the_turn(tmp_path: Path) -> None:
    """Rule: a cancel is never lost because the turn it cancels had not started yet.
    The prompt streams 100,000 chunks; cancelled at once, it ends ``cancelled`` long
    before, and the next prompt in the same write as its cancel ends ``cancelled`` too."""
    acp = RawAcp(tmp_path)
    try:
        session = acp.start(tmp_path)
        for request_id in (3, 4):
            acp.write(_prompt(request_id, session), _cancel(session))
            reply = acp.reply(request_id)
            assert reply.get("result") == {"stopReason": "cancelled"}, reply
        assert _chunks(acp) < 100_000
    finally:
        stderr = acp.close()
    assert acp.proc.returncode == 0, stderr
    assert b"Traceback" not in stderr


def test_a_request_over_the_limit_is_answered_under_its_id_naming_the_option(
    tmp_path: Path,
) -> None:
    """Rule: an error answers the request it is about whenever the frame names it, and
    says how to avoid it (issue 30, item 13)."""
    acp = RawAcp(tmp_path, "--max-message-bytes", "2048")
    try:
        session = acp.start(tmp_path)
        big = _prompt(9, session)
        big["params"]["prompt"][0]["text"] = "x" * 5000
        acp.write(big)
        reply = acp.reply(9, timeout=30)
        error = reply["error"]
        assert error["code"] == -32600
        assert "--max-message-bytes" in error["message"]
        assert error["data"] == {
            "reason": "too_large",
            "limit": 2048,
            "option": "--max-message-bytes",
        }
        acp.write(_prompt(10, session), _cancel(session))  # still serving
        assert acp.reply(10)["result"] == {"stopReason": "cancelled"}
    finally:
        stderr = acp.close()
    assert b"Traceback" not in stderr


def test_parse_errors_and_unknown_methods_carry_data(tmp_path: Path) -> None:
    """docs/acp-agent.md: every error has ``data``."""
    acp = RawAcp(tmp_path)
    try:
        acp.start(tmp_path)
        acp.write(b"{not json\n")
        parse = acp.until(lambda m: "error" in m and m.get("id") is None)
        assert parse["error"]["code"] == -32700
        assert parse["error"]["data"] == {"reason": "parse_error"}
        acp.write({"jsonrpc": "2.0", "id": 11, "method": "no/such", "params": {}})
        unknown = acp.reply(11)["error"]
        assert unknown["code"] == -32601
        assert unknown["data"] == {"reason": "method_not_found"}
        acp.write({"jsonrpc": "2.0", "id": 12, "method": 5})
        invalid = acp.reply(12)["error"]
        assert invalid["code"] == -32600 and "data" in invalid
    finally:
        stderr = acp.close()
    assert b"Traceback" not in stderr


def test_a_refused_provider_switch_leaves_the_session_usable(tmp_path: Path) -> None:
    """Rule: a request that fails changes nothing the client holds.  Switching the
    ``provider`` config option to an agent that cannot start (not installed; one that
    exits at once) is refused with its classified error, and the session is still there
    on its own provider: listed, prompted (it was deleted before, so the prompt was
    ``-32002`` and the session gone from the list)."""
    config = tmp_path / "config.toml"
    config.write_text(
        '[acp.agents.missing]\ncommand = ["/nonexistent/agent"]\n'
        '[acp.agents.crashing]\ncommand = ["/bin/sh", "-c", "exit 3"]\n'
    )
    acp = RawAcp(tmp_path, env={"AGENT_BRIDGE_CONFIG": str(config)})
    try:
        session = acp.start(tmp_path)
        for request_id, provider in ((3, "missing"), (4, "crashing")):
            acp.write(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "session/set_config_option",
                    "params": {"sessionId": session, "configId": "provider", "value": provider},
                }
            )
            error = acp.reply(request_id)["error"]
            assert error["data"]["code"] == "provider_unavailable", error
        acp.write({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}})
        listed = acp.reply(5)["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [session]
        acp.write(_prompt(6, session), _cancel(session))
        assert acp.reply(6).get("result") == {"stopReason": "cancelled"}
    finally:
        stderr = acp.close()
    assert acp.proc.returncode == 0, stderr
    assert b"Traceback" not in stderr


FORGED = "2026-12-02 00:00:00,000 ERROR agent_bridge: FORGED"


def test_a_client_s_text_cannot_forge_or_flood_a_log_line(tmp_path: Path) -> None:
    """Rule: text a peer sent reaches a log line escaped and bounded.  A client name
    holding a newline and a whole forged record, a 100,000-character version, and an
    unknown notification whose name holds CR LF, an escape sequence and 100,000 more
    characters: each stays inside its own record (escaped), cut short; no escape byte
    reaches the log file (before: the forged record stood on its own line, and each
    record was as long as the client made it)."""
    log = tmp_path / "acp.log"
    acp = RawAcp(tmp_path, "--log-file", str(log), "--log-level", "info")
    try:
        acp.write(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": 1,
                    "clientInfo": {"name": "zed\n" + FORGED, "version": "v" * 100_000},
                },
            }
        )
        assert "result" in acp.reply(1)
        acp.write({"jsonrpc": "2.0", "method": "zed/x\r\n" + FORGED + "\x1b[2J" + "y" * 100_000})
        acp.write({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}})
        assert "result" in acp.reply(2)
    finally:
        stderr = acp.close()
    assert acp.proc.returncode == 0, stderr
    text = log.read_text()
    assert "\x1b" not in text
    lines = text.splitlines()
    forged = [line for line in lines if "FORGED" in line]
    assert len(forged) == 2, forged
    assert "initialized by ACP client" in forged[0], forged
    assert "ignored unknown notification" in forged[1], forged
    assert max(len(line) for line in lines) < 1000


def test_a_prompt_cancelled_by_cancel_request_stops_its_run(tmp_path: Path) -> None:
    """ACP's ``$/cancel_request {requestId}`` (stable since 2026-06; the TypeScript SDK
    sends it when a request's signal aborts) for a ``session/prompt`` in progress: the
    prompt is answered ``-32800`` once its run has stopped, long before its 100,000
    chunks, and the next prompt of the session runs (before: the notification was
    ignored and the turn streamed to its end; ``$/cancelRequest``, which the connection
    took instead, answered ``-32800`` but left the run going, so every later prompt was
    ``run_active``)."""
    acp = RawAcp(tmp_path)
    try:
        session = acp.start(tmp_path)
        acp.write(_prompt(3, session))
        acp.until(lambda m: m.get("method") == "session/update" and _chunks(acp) > 0)
        acp.write({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 3}})
        error = acp.reply(3)["error"]
        assert error["code"] == -32800, error
        assert _chunks(acp) < 100_000
        acp.write(_prompt(4, session), _cancel(session))
        assert acp.reply(4).get("result") == {"stopReason": "cancelled"}
    finally:
        stderr = acp.close()
    assert acp.proc.returncode == 0, stderr
    assert b"Traceback" not in stderr


def _rss_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) // 1024


def test_requests_for_unknown_sessions_leave_nothing_behind(tmp_path: Path) -> None:
    """Rule: what is kept by session id is bounded by the sessions there are, not by
    the ids a client sends.  1,000 prompts and 1,000 loads of unknown 100,000-character
    ids (each ``-32002``; ten pairs in flight at a time, so what is measured is what
    stays, not what passes): the bridge's memory grows by far less than the 200 MB of
    ids (before: every id was kept, as "prompted" and with an update mapper, +205 MiB)."""
    acp = RawAcp(tmp_path)
    try:
        acp.start(tmp_path)
        acp.write({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}})
        acp.reply(3)
        before = _rss_mib(acp.proc.pid)
        for n in range(1000):
            acp.write(
                {
                    "jsonrpc": "2.0",
                    "id": 10 + 2 * n,
                    "method": "session/prompt",
                    "params": {
                        "sessionId": f"{n:06d}" + "p" * 100_000,
                        "prompt": [{"type": "text", "text": "x"}],
                    },
                },
                {
                    "jsonrpc": "2.0",
                    "id": 11 + 2 * n,
                    "method": "session/load",
                    "params": {"sessionId": f"{n:06d}" + "l" * 100_000, "cwd": str(tmp_path)},
                },
            )
            if n % 10 == 9:  # a few in flight at a time: what stays, not what passes
                assert acp.reply(11 + 2 * n)["error"]["code"] == -32002
                acp.received.clear()
        grown = _rss_mib(acp.proc.pid) - before
        assert grown < 60, f"{grown} MiB kept for unknown sessions"
    finally:
        stderr = acp.close()
    assert acp.proc.returncode == 0, stderr


def test_a_refused_prompt_titles_nothing(tmp_path: Path) -> None:
    """Rule: a request that fails changes nothing the client holds.  The first prompt of
    a session, refused by the run's checks (an image that is not base64; a link out of
    the workspace: ``-32602``, no turn), sends no ``session_info_update`` and leaves the
    session untitled in ``session/list`` (before: titled after the refused prompt's
    text); the next prompt, accepted, titles it."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("x")
    acp = RawAcp(tmp_path)
    try:
        session = acp.start(tmp_path)
        refused = [
            {"type": "image", "mimeType": "image/png", "data": "not base64!"},
            {"type": "resource_link", "name": "o", "uri": outside.as_uri()},
        ]
        for request_id, block in enumerate(refused, start=3):
            prompt = _prompt(request_id, session)
            prompt["params"]["prompt"] = [{"type": "text", "text": "refused title"}, block]
            acp.write(prompt)
            assert acp.reply(request_id)["error"]["code"] == -32602
        acp.write({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}})
        assert "title" not in acp.reply(5)["result"]["sessions"][0]
        acp.write(_prompt(6, session), _cancel(session))
        assert acp.reply(6).get("result") == {"stopReason": "cancelled"}
    finally:
        stderr = acp.close()
        outside.unlink()
    titles = [
        m["params"]["update"]["title"]
        for m in acp.received
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "session_info_update"
    ]
    assert titles == ["go"]
    assert acp.proc.returncode == 0, stderr
