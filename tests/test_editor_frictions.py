"""The frictions real editor clients hit, removed on the bridge's side (issue 15):

* the bridge's own request ids start at 2**31 and stay integers below 2**32, so a host
  counter never meets them, not even on the low 32 bits Vim 9.0 compares (Vim 9.0's LSP
  channel routes a request whose id equals one of its pending ids to that request's
  callback) — checked over real pipes and with a real headless Vim;
* ``[]`` is accepted as empty params where every member is optional (Neovim encodes an
  empty Lua table as ``[]``), and still refused with -32602 where one is required;
* the first ``providers/list`` imports the provider modules off the loop: a ping sent
  while a provider module's import is held is answered before the list.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import anyio
from bridge_client import ROOT, script_session
from conftest import running_bridge
from editor_tools import require_editor, run_editor

FIRST_ID = 2**31

_APPROVAL = {
    "type": "approval",
    "title": "Run `make`",
    "toolName": "Bash",
    "command": "make",
    "modes": ["once", "session"],
}


async def test_bridge_request_ids_start_far_above_host_counters(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        steps = [
            {**_APPROVAL, "onAllow": [{"type": "text", "text": "one"}]},
            {**_APPROVAL, "onAllow": [{"type": "text", "text": "two"}]},
        ]
        sid = (await bridge.result("session/create", script_session(steps)))["session"]["sessionId"]
        await bridge.result("run/start", {"sessionId": sid, "input": {"text": "go"}})
        ids = []
        for _ in range(2):
            request = await bridge.wait_for(lambda m: m.get("method") == "interaction/request")
            bridge.received.remove(request)
            ids.append(request["id"])
            await bridge.send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": {"kind": "approval", "decision": "allow", "mode": "once"},
                }
            )
        assert ids == [FIRST_ID, FIRST_ID + 1]
        assert all(type(i) is int for i in ids)
        assert all(2**31 <= i < 2**32 for i in ids)  # no 32-bit view meets a host's ids
        terminal = await bridge.terminal()
        assert terminal["payload"]["type"] == "run.completed"


async def test_empty_array_params_are_empty_params_where_all_are_optional(framing: str) -> None:
    async with running_bridge(framing) as bridge:
        listed = await bridge.call("session/list", [], check=False)
        assert listed["result"] == {"sessions": []}
        ping = await bridge.call("bridge/ping", [], check=False)
        assert ping["result"] == {}
        providers = await bridge.call("providers/list", [], check=False)
        assert any(p["id"] == "scripted" for p in providers["result"]["providers"])
        # An array with members, or for a method with required params, is still -32602.
        for method, params in (("session/create", []), ("session/list", [1])):
            error = (await bridge.call(method, params, check=False))["error"]
            assert error["code"] == -32602, (method, error)
            assert "Expected `object`, got `array`" in error["message"]
            assert error["data"] == {"path": "params"}


async def test_first_providers_list_does_not_block_the_loop(tmp_path: Path) -> None:
    # A third-party provider (an entry point) whose module import is held until the test
    # releases it: while it is held, the bridge must still answer a ping.
    site = tmp_path / "site"
    site.mkdir()
    started, release = tmp_path / "import-started", tmp_path / "import-release"
    (site / "held_provider.py").write_text(
        textwrap.dedent(
            f"""
            import pathlib, time
            pathlib.Path({str(started)!r}).touch()
            _deadline = time.monotonic() + 60
            while not pathlib.Path({str(release)!r}).exists() and time.monotonic() < _deadline:
                time.sleep(0.01)

            def factory():
                return None
            """
        )
    )
    dist = site / "held_provider-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: held-provider\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[agent_bridge.providers]\nheld = held_provider:factory\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    async with running_bridge("newline", env=env) as bridge:
        list_id = await bridge.send_request("providers/list", {"probe": False})
        with anyio.fail_after(20):
            while not started.exists():  # the import is under way (and held)
                await anyio.sleep(0.01)
        ping = await bridge.call("bridge/ping", {"data": {"n": 1}}, timeout=20)
        assert ping["result"] == {"data": {"n": 1}}
        assert not any(m.get("id") == list_id for m in bridge.received)  # still importing
        release.touch()
        listed = await bridge.response(list_id, timeout=20)
        assert any(p["id"] == "scripted" for p in listed["result"]["providers"])


def test_vim9_lsp_channel_answers_approvals(tmp_path: Path) -> None:
    vim = require_editor("vim")
    out = tmp_path / "outcome.json"
    env = {
        **os.environ,
        "AB_CMD": json.dumps(
            [sys.executable, "-m", "agent_bridge", "serve", "--state-dir", ":memory:"]
        ),
        "AB_OUT": str(out),
        "HOME": str(tmp_path),
    }
    script = ROOT / "tests" / "data" / "editors" / "vim_approval.vim"
    log = run_editor(
        [vim, "-Nu", "NONE", "-i", "NONE", "-es", "-S", str(script)], env=env, timeout=60
    )
    outcome = json.loads(out.read_text())
    assert outcome["ok"], (outcome, log)
    assert outcome["errors"] == []
    assert outcome["requestIds"] == [FIRST_ID, FIRST_ID + 1]
    assert outcome["text"] == "first allowed. second allowed."
    assert outcome["terminal"] == "run.completed"
    assert "result" in outcome["runStartReply"]


def test_vim9_approval_is_not_taken_for_the_reply_to_a_pending_vim_request(
    tmp_path: Path,
) -> None:
    # Vim's own request id 1 (a session/close waiting out the interrupt grace) is pending
    # when another session's run asks two approvals. With the bridge's ids starting at 1
    # Vim handed the first to the close's callback and it was never answered; with them
    # starting at 2**40 the second (2**40 + 1: 1 on Vim's 32 bits) went the same way.
    vim = require_editor("vim")
    out = tmp_path / "outcome.json"
    argv = [sys.executable, "-m", "agent_bridge", "serve", "--state-dir", ":memory:"]
    env = {
        **os.environ,
        "AB_CMD": json.dumps([*argv, "--interrupt-grace", "4"]),
        "AB_OUT": str(out),
        "HOME": str(tmp_path),
    }
    script = ROOT / "tests" / "data" / "editors" / "vim_collision.vim"
    log = run_editor(
        [vim, "-Nu", "NONE", "-i", "NONE", "-es", "-S", str(script)], env=env, timeout=60
    )
    outcome = json.loads(out.read_text())
    assert outcome["errors"] == [], (outcome, log)
    assert outcome["closeId"] == 1
    assert outcome["requestIds"] == [FIRST_ID, FIRST_ID + 1]
    assert outcome["textB"] == "allowed twice"
    assert outcome["terminalB"] == "run.completed"
    assert outcome["closeCallback"]["result"]["session"]["state"] == "closed"
    assert outcome["ok"] == 1
