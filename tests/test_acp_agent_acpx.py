"""``agent-bridge acp`` driven by ``acpx`` (a headless ACP client CLI, pinned in
scripts/install-acp-clients.sh, on its own Node >= 22.13), one acpx command at a time as
a user would type them:

``sessions new``; ``--approve-all prompt`` (streams, the permission allowed);
``--deny-all prompt`` (denied); a ``prompt`` cancelled mid-turn by ``acpx cancel``; then,
once acpx's queue owner has stopped the bridge, ``sessions list`` (the agent's
``session/list``) and ``set provider`` (``session/set_config_option``) and a prompt on a
new bridge process, which acpx reattaches with ``session/resume``.  Every bridge process
runs behind the tap, one log each, and every message is validated against ACP's
schema.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_agent_support import (
    ACP_CLIENTS,
    ALLOWED,
    DENIED,
    FIRST_TEXT,
    WORKING,
    agent_argv,
    check_schema,
    node_for_acpx,
    require,
    write_script,
)

pytestmark = pytest.mark.timeout(180)


class Acpx:
    def __init__(self, base: Path, script: Path | None = None) -> None:
        self.node = str(node_for_acpx())
        self.cli = str(require(ACP_CLIENTS / "npm/node_modules/acpx/dist/cli.js", "acpx"))
        self.base = base
        self.home = base / "home"
        self.work = base / "work"
        self.logs = base / "logs"
        self.state = base / "state"
        for d in (self.home, self.work, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        if script is None:
            script = write_script(base, cancel_while="wait")
        argv = agent_argv(self.logs / "acp-PID.log", self.state, script)
        line = " ".join(shlex.quote(a) for a in argv).replace("acp-PID.log", 'acp-"$$".log')
        self.agent = base / "agent.sh"
        self.agent.write_text("#!/bin/sh\nexec " + line + "\n")
        self.agent.chmod(0o755)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TMPDIR": str(base),
        }

    @property
    def socket_dir(self) -> Path:
        """Where acpx puts its queue sockets: a fixed directory under /tmp named by a hash
        of HOME (for short socket paths), outside TMPDIR, so the test removes it."""
        return Path("/tmp") / f"acpx-{hashlib.sha256(str(self.home).encode()).hexdigest()[:10]}"

    def argv(self, *args: str) -> list[str]:
        return [self.node, self.cli, "--agent", str(self.agent), "--ttl", "1", *args]

    def run(self, *args: str, ok: int = 0, to_owner: bool = False) -> str:
        """One acpx command's stdout; asserts it exited with ``ok``.

        acpx's queue owner stops ``--ttl`` seconds after its last command, and a command
        that reaches it while it is stopping fails with acpx's ``QUEUE_OWNER_CLOSED``
        (on a loaded machine the next command often arrives just then).  So each command
        waits until the last one's owner and bridge have gone, and starts its own; only
        ``to_owner`` (``cancel``) goes to the owner that is running a turn.
        """
        if not to_owner:
            self.wait_bridges_gone()
        done = subprocess.run(
            self.argv(*args),
            cwd=self.work,
            env=self.env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == ok, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout.decode()

    def bridges(self) -> list[int]:
        """The pids of the bridge processes of this test (observed, never signalled)."""
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"agent-bridge" in cmdline and str(self.state).encode() in cmdline:
                out.append(int(entry.name))
        return out

    def wait_bridges_gone(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.bridges():
            assert time.monotonic() < deadline, "the bridge did not stop after acpx's TTL"
            time.sleep(0.2)

    def logged(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        for log in sorted(self.logs.glob("acp-*.log")):
            records += [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        return records


def messages(output: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages acpx printed with ``--format json``."""
    out = []
    for line in output.splitlines():
        if line.startswith("{"):
            value = json.loads(line)
            if value.get("jsonrpc") == "2.0":
                out.append(value)
    return out


def turn(output: str) -> tuple[str, str | None]:
    """The agent text and the stop reason of one ``prompt``'s output."""
    msgs = messages(output)
    text = "".join(
        m["params"]["update"]["content"]["text"]
        for m in msgs
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    stops = [m["result"]["stopReason"] for m in msgs if "stopReason" in (m.get("result") or {})]
    return text, stops[-1] if stops else None


@pytest.fixture
def acpx(tmp_path: Path) -> Iterator[Acpx]:
    client = Acpx(tmp_path)
    try:
        yield client
    finally:
        shutil.rmtree(client.socket_dir, ignore_errors=True)


def test_acpx_drives_the_scenario(acpx: Acpx) -> None:
    created = json.loads(acpx.run("--format", "json", "sessions", "new").splitlines()[-1])
    sid = created["acpxSessionId"]
    assert sid.startswith("ses_")

    text, stop = turn(acpx.run("--format", "json", "--approve-all", "prompt", "Greet"))
    assert stop == "end_turn" and text.startswith(FIRST_TEXT) and text.endswith(ALLOWED)
    # acpx exits 5 (its PERMISSION_DENIED) when every permission of its prompt was denied
    text, stop = turn(acpx.run("--format", "json", "--deny-all", "prompt", "Again", ok=5))
    assert stop == "end_turn" and text == DENIED

    # cancel mid-turn from a second acpx command
    acpx.wait_bridges_gone()
    prompt = subprocess.Popen(
        acpx.argv("--format", "json", "prompt", "Stop"),
        cwd=acpx.work,
        env=acpx.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while WORKING not in json.dumps(acpx.logged()):
        assert time.monotonic() < deadline, "the third turn never started"
        time.sleep(0.1)
    acpx.run("cancel", to_owner=True)
    out, err = prompt.communicate(timeout=60)
    assert prompt.returncode == 0, err[-2000:]
    assert turn(out.decode())[1] == "cancelled"

    # the bridge stops with acpx's queue owner; each next command starts a new one
    listed = json.loads(acpx.run("--format", "json", "sessions", "list").splitlines()[-1])
    assert listed["source"] == "agent"
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    config = json.loads(
        acpx.run("--format", "json", "set", "provider", "scripted").splitlines()[-1]
    )
    assert config["action"] == "config_set"
    assert config["configOptions"][0]["currentValue"] == "scripted"
    text, stop = turn(acpx.run("--format", "json", "prompt", "after restart"))
    assert stop == "end_turn" and text == "Echo: after restart"
    acpx.run("sessions", "close")
    acpx.wait_bridges_gone()
    assert acpx.socket_dir.is_dir()  # where the fixture looks is where acpx wrote

    records = acpx.logged()
    methods = [r["msg"].get("method") for r in records if r["dir"] == "->"]
    for method in ("session/new", "session/cancel", "session/list", "session/resume"):
        assert method in methods, (method, methods)
    assert "session/set_config_option" in methods
    for log in sorted(acpx.logs.glob("acp-*.log")):
        check_schema(log)


#: a real 1x1 PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def test_acpx_sends_an_image_a_resource_link_and_an_embedded_resource(tmp_path: Path) -> None:
    """acpx's structured prompt (a JSON array of ACP content blocks, from a file) reaches
    the scripted provider through ``agent-bridge acp`` whole: the ``received`` step answers
    with what arrived (the image by size and SHA-256, the link as a file in the
    workspace, the resource's text); every message validates against ACP's schema."""
    import base64

    script = tmp_path / "received.json"
    script.write_text(json.dumps({"steps": [{"type": "received"}]}))
    client = Acpx(tmp_path, script)
    try:
        (client.work / "main.py").write_text("print()\n")
        blocks = [
            {"type": "text", "text": "What is wrong?"},
            {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG).decode()},
            {"type": "resource_link", "name": "main.py", "uri": (client.work / "main.py").as_uri()},
            {
                "type": "resource",
                "resource": {"uri": "untitled:1", "text": "x = 1", "mimeType": "text/x-python"},
            },
        ]
        prompt_file = tmp_path / "prompt.json"
        prompt_file.write_text(json.dumps(blocks))
        client.run("--format", "json", "sessions", "new")
        text, stop = turn(client.run("--format", "json", "prompt", "-f", str(prompt_file)))
        assert stop == "end_turn"
        real = os.path.realpath(client.work)
        assert json.loads(text) == [
            {"type": "text", "text": "What is wrong?"},
            {
                "type": "image",
                "mimeType": "image/png",
                "size": len(PNG),
                "sha256": hashlib.sha256(PNG).hexdigest(),
            },
            {"type": "file", "path": f"{real}/main.py"},
            {"type": "resource", "text": "x = 1", "uri": "untitled:1", "mimeType": "text/x-python"},
        ]
        client.run("sessions", "close")
        client.wait_bridges_gone()
        prompts = [
            r["msg"]
            for r in client.logged()
            if r["dir"] == "->" and r["msg"].get("method") == "session/prompt"
        ]
        assert [b["type"] for b in prompts[0]["params"]["prompt"]] == [
            "text",
            "image",
            "resource_link",
            "resource",
        ]
        for log in sorted(client.logs.glob("acp-*.log")):
            check_schema(log)
    finally:
        shutil.rmtree(client.socket_dir, ignore_errors=True)
