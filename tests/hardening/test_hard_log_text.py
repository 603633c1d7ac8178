"""Text a host sent, in ``serve``'s log (the ``acp`` side is
``test_hard_acp_faults.py::test_a_client_s_text_cannot_forge_or_flood_a_log_line``):
a host's name and version, and the name of a notification it sent that nobody handles,
are logged escaped and cut short, so they cannot forge a record or flood the log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from acp_agent_support import BRIDGE

FORGED = "2026-12-02 00:00:00,000 ERROR agent_bridge: FORGED"


def test_a_host_s_text_cannot_forge_or_flood_serve_s_log(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": 1,
                "clientInfo": {"name": "host\n" + FORGED, "version": "\x1b[2J" + "v" * 100_000},
            },
        },
        {"jsonrpc": "2.0", "method": "host/x\r\n" + FORGED + "y" * 100_000, "params": {}},
    ]
    argv = [BRIDGE, "serve", "--state-dir", ":memory:", "--framing", "newline"]
    done = subprocess.run(
        [*argv, "--log-file", str(log), "--log-level", "info"],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in messages),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [r.get("id") for r in replies if "result" in r] == [1]
    text = log.read_text()
    assert "\x1b" not in text
    lines = text.splitlines()
    forged = [line for line in lines if "FORGED" in line]
    assert len(forged) == 2, forged
    assert "initialized by" in forged[0], forged
    assert "ignored unknown notification" in forged[1], forged
    assert max(len(line) for line in lines) < 1000
