"""The real `codex app-server` (pinned, from scripts/install-provider-clis.sh) against
the Responses stand-in on loopback: the facts docs/providers/codex.md relies on.

Needs the CLI (tests/provider_clis.py finds it: AGENT_BRIDGE_CODEX_PATH, then
.tools/npm/node_modules/.bin/codex, then PATH); without it the test is skipped loudly,
and with AGENT_BRIDGE_REQUIRE_CLIS=1 (as in CI) it fails.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from provider_clis import require_cli
from standins.responses_server import (
    CODEX_OFFLINE_CONFIG as CONFIG,
)
from standins.responses_server import ResponsesStandIn, reply, text

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

Msg = dict[str, Any]


class AppServer:
    def __init__(self, base: Path, server: ResponsesStandIn, codex: str) -> None:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(base / "home"),
            "CODEX_HOME": str(base / "codex-home"),
            "TMPDIR": str(base / "tmp"),
            "STUB_API_KEY": "dummy",
            "NO_COLOR": "1",
        }
        argv = [
            codex,
            "app-server",
            "--strict-config",
            "-c",
            f'model_providers.stub.base_url="{server.base_url}"',
        ]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(base / "work"),
            start_new_session=True,
        )
        self.inbox: queue.Queue[Msg | None] = queue.Queue()
        self.seen: list[Msg] = []
        self.stderr: list[str] = []
        self.next_id = 1
        self.threads = [
            threading.Thread(target=self._out, daemon=True),
            threading.Thread(target=self._err, daemon=True),
        ]
        for t in self.threads:
            t.start()

    def _out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))
        self.inbox.put(None)

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def send(self, msg: Msg) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def wait(self, pred: Callable[[Msg], bool], timeout: float = 30) -> Msg:
        deadline = time.monotonic() + timeout
        while True:
            msg = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            if msg is None:
                raise EOFError("codex app-server closed stdout: " + "".join(self.stderr[-5:]))
            self.seen.append(msg)
            if pred(msg):
                return msg

    def request(self, method: str, params: Msg) -> Msg:
        req_id = self.next_id
        self.next_id += 1
        self.send({"id": req_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == req_id and "method" not in m)

    def turn(self, thread_id: str, prompt: str, decision: str = "accept") -> Msg:
        self.request(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": prompt}]}
        )
        while True:
            msg = self.wait(
                lambda m: (
                    m.get("method") in ("turn/completed", "item/commandExecution/requestApproval")
                )
            )
            if msg["method"] == "turn/completed":
                return msg
            self.send({"id": msg["id"], "result": {"decision": decision}})

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for t in self.threads:
                t.join(5)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, ResponsesStandIn, str]]:
    codex = require_cli("codex")
    for d in ("home", "work", "tmp", "codex-home"):
        (tmp_path / d).mkdir()
    (tmp_path / "codex-home" / "config.toml").write_text(CONFIG)
    with ResponsesStandIn() as server:
        yield tmp_path, server, codex
        assert server.errors == []


def test_real_codex_turns_approvals_interrupt_and_resume(
    setup: tuple[Path, ResponsesStandIn, str],
) -> None:
    base, server, codex = setup
    work = base / "work"
    app = AppServer(base, server, codex)
    init = app.request("initialize", {"clientInfo": {"name": "bridge_test", "version": "0"}})
    assert init["result"]["codexHome"] == str(base / "codex-home")
    assert "jsonrpc" not in init
    app.send({"method": "initialized"})
    account = app.request("account/read", {})["result"]
    assert account["account"] is None and account["requiresOpenaiAuth"] is False
    settings = {"cwd": str(work), "approvalPolicy": "untrusted", "sandbox": "workspace-write"}
    tid = app.request("thread/start", settings)["result"]["thread"]["id"]

    server.script(reply(text("Hello from the script", deltas=3)))
    done = app.turn(tid, "say hi")
    assert done["params"]["turn"]["status"] == "completed"
    deltas = [
        m["params"]["delta"] for m in app.seen if m.get("method") == "item/agentMessage/delta"
    ]
    assert "".join(deltas) == "Hello from the script"

    done = app.turn(tid, "TOOL:touch approved.txt", "accept")
    assert done["params"]["turn"]["status"] == "completed"
    assert (work / "approved.txt").exists()
    outputs = server.function_call_outputs()
    assert outputs and "Process exited with code 0" in outputs[-1]["output"]

    done = app.turn(tid, "TOOL:touch declined.txt", "decline")
    assert done["params"]["turn"]["status"] == "completed"
    assert not (work / "declined.txt").exists()
    assert "rejected by user" in server.function_call_outputs()[-1]["output"]

    r = app.request("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "SLOW"}]})
    turn_id = r["result"]["turn"]["id"]
    app.wait(lambda m: m.get("method") == "item/agentMessage/delta")
    assert app.request("turn/interrupt", {"threadId": tid, "turnId": turn_id})["result"] == {}
    done = app.wait(lambda m: m.get("method") == "turn/completed")
    assert done["params"]["turn"]["status"] == "interrupted"
    assert app.close() == 0
    deadline = time.monotonic() + 5
    while not server.response_requests()[-1].disconnected:
        assert time.monotonic() < deadline, "the interrupted stream was not dropped"
        time.sleep(0.05)

    app = AppServer(base, server, codex)
    app.request("initialize", {"clientInfo": {"name": "bridge_test", "version": "0"}})
    app.send({"method": "initialized"})
    resumed = app.request("thread/resume", {"threadId": tid, "excludeTurns": True, **settings})
    assert resumed["result"]["sandbox"]["type"] == "workspaceWrite"
    done = app.turn(tid, "after resume")
    assert done["params"]["turn"]["status"] == "completed"
    history = [
        "".join(c.get("text", "") for c in item.get("content", []))
        for item in server.response_bodies()[-1]["input"]
        if item.get("role") == "user"
    ]
    assert "say hi" in history and "SLOW" in history and history[-1] == "after resume"
    assert app.close() == 0
    assert {r.path for r in server.requests} == {"/v1/responses"}
