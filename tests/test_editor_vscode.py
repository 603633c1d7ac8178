"""The VS Code extension (editors/vscode) in a real VS Code extension host.

The build (``editors/vscode/build.sh``) type-checks the extension with ``tsc --strict``
against the published ``schemas/agent-bridge.d.ts``, runs its unit tests with the node test
runner (some against a real ``agent-bridge serve`` child) and packages the ``.vsix`` with
``@vscode/vsce``. The extension-host test installs that ``.vsix`` into ``code-server``
(VS Code's own server and extension host, installed by ``scripts/install-vscode-host.sh``),
opens the workbench in headless Chromium, and lets the extension's test mode run a
scripted session through its own commands against a real bridge: streamed text, an edit
opened in the diff view, an approval and a question answered at the quick-pick seam, a
turn cancelled, an unanswered approval that comes back on reattach, the session listed
and resumed after the bridge restarts, the selection, an unsaved buffer and a pasted image
sent as run input (the scripted provider's ``received`` step replies with what arrived).
Keys are pressed in the workbench as a user's keyboard would (Chromium's DevTools protocol,
``tests/data/editors/cdp_keys.js``, when the scenario asks through ``RESULT.keys``): the
extension's keybindings and the chat's Escape.
An image is pasted into the chat the same way (``tests/data/editors/cdp_paste.js``, when it
asks through ``RESULT.paste``). The result file it writes is asserted here.

Without the tools these tests are skipped loudly; in CI (``CI=true`` or
``AGENT_BRIDGE_REQUIRE_CLIS=1``) a missing tool is a failure.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXT_DIR = ROOT / "editors" / "vscode"
TOOLS = Path(os.environ.get("AGENT_BRIDGE_VSCODE_TOOLS", str(ROOT / ".tools" / "vscode-host")))
CODE_SERVER = TOOLS / "node_modules" / "code-server" / "out" / "node" / "entry.js"
BRIDGE = ROOT / ".venv" / "bin" / "agent-bridge"

# Headless Chromium that reaches nothing but the loopback workbench.
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--window-size=1400,900",
]

# What the scripted provider plays, turn by turn (docs/scripted.md).
EDIT = {
    "type": "edit",
    "path": "hello.py",
    "oldText": "print('hi')\n",
    "newText": "print('hello, world')\n",
}
SCRIPT: dict[str, Any] = {
    "runs": [
        {
            "steps": [
                {
                    "type": "thinking",
                    "text": "The build directory is stale; clean it, then fix the greeting.",
                },
                {"type": "text", "text": "Let me look at the build first. ", "chunks": 3},
                {
                    "type": "emit",
                    "payloads": [
                        {
                            "type": "tool.activity",
                            "toolCallId": "edit_1",
                            "name": "Edit",
                            "status": "started",
                            "kind": "edit",
                            "title": "Edit hello.py",
                            "locations": [{"path": "hello.py", "line": 1}],
                            "content": [EDIT],
                        },
                        {
                            "type": "tool.activity",
                            "toolCallId": "edit_1",
                            "name": "Edit",
                            "status": "completed",
                        },
                    ],
                },
                {
                    "type": "approval",
                    "title": "Run `rm -rf build`",
                    "toolName": "Bash",
                    "command": "rm -rf build",
                    "input": {"command": "rm -rf build"},
                    "modes": ["once", "session"],
                    "onAllow": [
                        {
                            "type": "tool",
                            "name": "Bash",
                            "id": "call_7",
                            "input": {"command": "rm -rf build"},
                            "output": "removed build/\n",
                            "exitCode": 0,
                        },
                        {"type": "text", "text": "Removed the build directory."},
                    ],
                    "onDeny": [{"type": "text", "text": "Understood, I left it alone."}],
                },
                {
                    "type": "question",
                    "prompt": "Which test runner?",
                    "choices": [
                        {"id": "pytest", "label": "pytest"},
                        {"id": "unittest", "label": "unittest"},
                    ],
                    "branches": {
                        "pytest": [{"type": "text", "text": "Using pytest."}],
                        "unittest": [{"type": "text", "text": "Using unittest."}],
                    },
                },
                {
                    "type": "usage",
                    "contextTokens": 1830,
                    "maxTokens": 200000,
                    "inputTokens": 1650,
                    "outputTokens": 180,
                },
            ]
        },
        {
            # Thinking that is still open (streaming) when the webview draws it; the turn
            # is then interrupted by the keybinding, and the thinking must fold.
            "steps": [
                {"type": "thinking", "text": "Which target is slow?"},
                {"type": "text", "text": "Working on it…"},
                {"type": "waitForInterrupt"},
            ]
        },
        {
            "steps": [
                {
                    "type": "approval",
                    "title": "Deploy to production",
                    "modes": ["once"],
                    "onAllow": [{"type": "text", "text": "Deployed."}],
                    "onDeny": [{"type": "text", "text": "Not deployed."}],
                }
            ]
        },
        {"steps": [{"type": "echo"}]},
        {"steps": [{"type": "text", "text": "Waiting for you…"}, {"type": "waitForInterrupt"}]},
    ]
}


# The image the scenario pastes into the chat (src/testMode.ts's PNG, a 1x1 PNG).
PNG = "".join(
    [
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ",
        "AAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    ]
)


# The Claude Code session the continue picker finds (tests/data/claude's session file).
NATIVE_SID = "28377def-ee38-4b08-ab48-cac0f67ecdff"


def _require(what: str, ok: bool) -> None:
    """Skip loudly, or fail in CI, when a tool is missing."""
    if ok:
        return
    msg = f"{what} is missing: run scripts/install-vscode-host.sh"
    if os.environ.get("CI") == "true" or os.environ.get("AGENT_BRIDGE_REQUIRE_CLIS") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    _require("chromium", path is not None)
    assert path is not None
    return path


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """Builds the extension once: returns the shipped .vsix path, the build's output and
    the .vsix with the test hooks (what the extension-host test installs)."""
    _require(
        "the VS Code build tools (tsc, vsce)", (TOOLS / "node_modules" / ".bin" / "vsce").exists()
    )
    out = tmp_path_factory.mktemp("vsix") / "agent-bridge-vscode.vsix"
    hooks = out.with_name("agent-bridge-vscode-hooks.vsix")
    # The unit tests' state directories (os.tmpdir()) go under pytest's own temporary
    # directory, which pytest cleans, not into /tmp.
    scratch = tmp_path_factory.mktemp("vsix-tmp")
    env = {**os.environ, "AGENT_BRIDGE_BIN": str(BRIDGE), "TMPDIR": str(scratch)}
    proc = subprocess.run(
        ["bash", str(EXT_DIR / "build.sh"), "--out", str(out), "--hooks-out", str(hooks)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the extension build failed:\n{log[-6000:]}"
    return out, log, hooks


@pytest.mark.timeout(300)
def test_vscode_build_typechecks_runs_unit_tests_and_packages(
    vsix: tuple[Path, str, Path],
) -> None:
    """tsc --strict passes, every node unit test passes, and the .vsix holds what the host
    loads and nothing else (no tests, no test scenario, no demo, no build scripts)."""
    path, log, _ = vsix
    assert "# fail 0" in log, log[-4000:]
    passed = int(log.split("# pass ")[1].split()[0])
    assert passed >= 20, log[-4000:]
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
    for name in (
        "extension/out/extension.js",
        "extension/out/client.js",
        "extension/media/chat.js",
        "extension/node_modules/vscode-jsonrpc/package.json",
        "extension/node_modules/vscode-jsonrpc/lib/node/main.js",
    ):
        assert name in names, name
    assert not any(n.startswith("extension/out/test/") for n in names), "unit tests are not shipped"
    for hook in ("extension/out/testMode.js", "extension/out/demoMode.js"):
        assert hook not in names, f"{hook} is test/demo code: not shipped"
    assert not any(n.startswith("extension/scripts/") for n in names), names
    assert manifest["main"] == "./out/extension.js"
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert {
        "agentBridge.newSession",
        "agentBridge.prompt",
        "agentBridge.cancel",
        "agentBridge.closeSession",
        "agentBridge.showTrafficLog",
        "agentBridge.reattach",
    } <= commands
    settings = manifest["contributes"]["configuration"]["properties"]
    assert {"agentBridge.bridgePath", "agentBridge.stateDir"} <= set(settings)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """Ends the process group `proc` leads (and only it): TERM, then KILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@pytest.fixture
def host(
    request: pytest.FixtureRequest, tmp_path: Path, vsix: tuple[Path, str, Path]
) -> Iterator[dict[str, Any]]:
    """code-server with the extension installed and settings for the scenario, and Chromium
    on its workbench, each in its own process group (ended afterwards); yields the
    result file's path and the state dir. Parametrized indirectly with
    ``{"scenario": "other-host"}``, the extension runs that scenario on ``agent-bridge
    connect`` (a daemon of its own runtime directory, stopped afterwards)."""
    scenario = getattr(request, "param", {}).get("scenario", "")
    _require("code-server", CODE_SERVER.exists())
    chromium = _chromium()
    ud, exts, ws, home = (tmp_path / n for n in ("ud", "exts", "ws", "home"))
    for d in (ud / "User", exts, ws, home):
        d.mkdir(parents=True)
    (ws / "hello.py").write_text("print('hi')\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    # A Claude Code session its CLI wrote in this workspace (a real session file), and the
    # stand-in CLI's own record of it, so `--resume` continues it.
    claude_config = tmp_path / "claude-config"
    project = claude_config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(ws))
    project.mkdir(parents=True)
    native = ROOT / "tests" / "data" / "claude" / "native_session_2.1.197.jsonl"
    (project / f"{NATIVE_SID}.jsonl").write_text(
        native.read_text().replace("/workspace/project", str(ws))
    )
    (project / f"{NATIVE_SID}.fake.json").write_text(
        json.dumps(
            {
                "session_id": NATIVE_SID,
                "history": [
                    {"role": "user", "text": "say hello"},
                    {"role": "assistant", "text": "(stand-in: no scripted reply left)"},
                ],
            }
        )
    )
    fake_claude = ROOT / "tests" / "standins" / "fake_claude.py"
    state = tmp_path / "state"
    # the daemon's socket: a short runtime directory (a socket path has ~107 bytes)
    runtime = tempfile.mkdtemp(prefix="ab-rt-")
    daemon = {"agentBridge.bridgeArgs": ["connect"]} if scenario == "other-host" else {}
    (ud / "User" / "settings.json").write_text(
        json.dumps(
            {
                **daemon,
                "agentBridge.bridgePath": str(BRIDGE),
                "agentBridge.stateDir": str(state),
                "agentBridge.sessionOptions": {
                    "scripted": {"scriptFile": str(script)},
                    "claude-code": {"executable": str(fake_claude)},
                },
                "workbench.startupEditor": "none",
                "security.workspace.trust.enabled": False,
                "telemetry.telemetryLevel": "off",
                "update.mode": "none",
                "extensions.autoCheckUpdates": False,
                "extensions.autoUpdate": False,
                "workbench.enableExperiments": False,
                "workbench.tips.enabled": False,
            }
        )
    )
    result = tmp_path / "result.json"
    env = {
        **os.environ,
        "HOME": str(home),
        # No provider CLI is found on this PATH: the unavailable-provider message is tested.
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "AGENT_BRIDGE_VSCODE_TEST_RESULT": str(result),
        "AGENT_BRIDGE_VSCODE_FAKE_CLAUDE": str(fake_claude),
        "CLAUDE_CONFIG_DIR": str(claude_config),
        # a subagent, a limit and a failure on it (shared with the Emacs test)
        "AGENT_BRIDGE_VSCODE_LIMITS_SCRIPT": str(
            ROOT / "tests" / "data" / "editors" / "limits_subagent_script.json"
        ),
        # local time two hours east of UTC: reset times are shown in local time
        "TZ": "Etc/GMT-2",
        "XDG_RUNTIME_DIR": runtime,
        "AGENT_BRIDGE_VSCODE_SCENARIO": scenario,
    }
    env.pop("XDG_CONFIG_HOME", None)
    node = shutil.which("node")
    assert node is not None
    install = subprocess.run(
        [
            node,
            str(CODE_SERVER),
            "--user-data-dir",
            str(ud),
            "--extensions-dir",
            str(exts),
            "--install-extension",
            str(vsix[2]),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert install.returncode == 0 and "successfully installed" in install.stdout, (
        install.stdout + install.stderr
    )
    port = _free_port()
    devtools = _free_port()
    cs_log = (tmp_path / "code-server.log").open("wb")
    code_server = subprocess.Popen(
        [
            node,
            str(CODE_SERVER),
            "--bind-addr",
            f"127.0.0.1:{port}",
            "--auth",
            "none",
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            "--disable-getting-started-override",
            "--user-data-dir",
            str(ud),
            "--extensions-dir",
            str(exts),
            str(ws),
        ],
        stdout=cs_log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    browser: subprocess.Popen[bytes] | None = None
    browser_tmp = tempfile.mkdtemp(prefix="ab-chromium-")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert code_server.poll() is None, (tmp_path / "code-server.log").read_text()
                assert time.monotonic() < deadline, "code-server did not listen"
                time.sleep(0.2)
        browser = subprocess.Popen(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={tmp_path / 'chromium'}",
                # The keys a user presses are sent through it (tests/data/editors/cdp_keys.js).
                f"--remote-debugging-port={devtools}",
                f"http://127.0.0.1:{port}/?folder={ws}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            # Chromium's singleton socket directory: short (a socket path has ~107
            # bytes), and removed below instead of left in /tmp
            env={**env, "TMPDIR": browser_tmp},
            start_new_session=True,
        )
        yield {
            "result": result,
            "state": state,
            "tmp": tmp_path,
            "code_server": code_server,
            "browser": browser,
            "devtools": devtools,
            "port": port,
            "env": env,
        }
    finally:
        if browser is not None:
            _end_group(browser)
        _end_group(code_server)
        cs_log.close()
        shutil.rmtree(browser_tmp, ignore_errors=True)
        if scenario == "other-host":
            subprocess.run(
                [str(BRIDGE), "daemon", "--stop", "--state-dir", str(state)],
                env=env,
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(runtime, ignore_errors=True)


def _press_keys(host: dict[str, Any], request: Path) -> None:
    """Presses the keys the scenario asks for (RESULT.keys, a JSON list like
    ``["ctrl+alt+a"]``) in the workbench through Chromium's DevTools protocol, then
    removes the request: the scenario waits for that, then for the keys' effect."""
    keys = json.loads(request.read_text())
    proc = subprocess.run(
        [
            *_node_ws(),
            str(ROOT / "tests" / "data" / "editors" / "cdp_keys.js"),
            str(host["devtools"]),
            f"127.0.0.1:{host['port']}",
            *keys,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, f"pressing {keys} failed: {proc.stderr}"
    request.unlink()


def _node_ws() -> list[str]:
    """node and the flags its WebSocket needs (Node 20 has it behind a flag)."""
    node = shutil.which("node")
    assert node is not None
    has_ws = subprocess.run(
        [node, "-e", "process.exit(typeof WebSocket === 'undefined' ? 1 : 0)"], timeout=30
    )
    return [node] if has_ws.returncode == 0 else [node, "--experimental-websocket"]


def _paste(host: dict[str, Any], request: Path) -> None:
    """Pastes the image the scenario asks for (RESULT.paste: ``{"title", "mimeType",
    "data"}``) into the chat webview whose header shows ``title``, through Chromium's
    DevTools protocol (``tests/data/editors/cdp_paste.js``), then writes how many chats
    took it to RESULT.pasted and removes the request."""
    req = json.loads(request.read_text())
    proc = subprocess.run(
        [
            *_node_ws(),
            str(ROOT / "tests" / "data" / "editors" / "cdp_paste.js"),
            str(host["devtools"]),
            f"127.0.0.1:{host['port']}",
            req["title"],
            req["mimeType"],
            req["data"],
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"pasting failed: {proc.stderr}"
    request.with_name(request.name.replace(".paste", ".pasted")).write_text(proc.stdout.strip())
    request.unlink()


def _configure_from_another_host(host: dict[str, Any], request: Path) -> None:
    """Another host (a second ``agent-bridge connect`` to the extension's daemon) attaches
    to the session the scenario names (RESULT.configure: ``{"sessionId"}``) and changes
    its model to ``large`` and its mode to ``auto`` (``session/configure``), then removes
    the request. Newline-delimited JSON-RPC, as ``connect`` relays it."""
    sid = json.loads(request.read_text())["sessionId"]
    proc = subprocess.Popen(
        [str(BRIDGE), "connect", "--state-dir", str(host["state"])],
        env=host["env"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: dict[int, Any] = {}
    try:
        for rid, (method, params) in enumerate(
            [
                (
                    "initialize",
                    {"protocolVersion": 1, "clientInfo": {"name": "other-host"}},
                ),
                ("session/attach", {"sessionId": sid}),
                ("session/configure", {"sessionId": sid, "model": "large", "mode": "auto"}),
            ],
            start=1,
        ):
            message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            while rid not in replies:
                line = proc.stdout.readline()
                assert line, f"the other host's bridge closed before answering {method}"
                reply = json.loads(line)
                if "id" in reply and "method" not in reply:
                    assert "result" in reply, (method, reply)
                    replies[reply["id"]] = reply["result"]
            if method == "initialize":
                proc.stdin.write(b'{"jsonrpc":"2.0","method":"initialized"}\n')
                proc.stdin.flush()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert replies[3]["model"]["current"] == "large", replies[3]
    request.unlink()


def _wait_result(host: dict[str, Any], timeout: float = 180) -> dict[str, Any]:
    result: Path = host["result"]
    keys = result.with_name(result.name + ".keys")
    paste = result.with_name(result.name + ".paste")
    configure = result.with_name(result.name + ".configure")
    deadline = time.monotonic() + timeout
    while not result.exists():
        if keys.exists():
            _press_keys(host, keys)
        if paste.exists():
            _paste(host, paste)
        if configure.exists():
            _configure_from_another_host(host, configure)
        assert host["code_server"].poll() is None, "code-server exited"
        assert time.monotonic() < deadline, (
            "the extension's test mode wrote no result: "
            + ((host["tmp"] / "code-server.log").read_text()[-3000:])
        )
        time.sleep(0.25)
    data: dict[str, Any] = json.loads(result.read_text())
    return data


def _texts(items: list[dict[str, Any]], kind: str) -> list[str]:
    return [str(i["text"]) for i in items if i["kind"] == kind]


@pytest.mark.timeout(300)
def test_vscode_extension_host_runs_a_whole_scripted_session(host: dict[str, Any]) -> None:
    """The extension, in code-server's extension host with the workbench in Chromium,
    drives the scripted session through its commands; what it saw is asserted."""
    r = _wait_result(host)
    assert "error" not in r, r.get("error")
    assert r["steps"][-1] == "done", r["steps"]
    sid = r["sessionId"]
    prompts = r["prompts"]

    # The provider picker came from providers/list; an input box took the first prompt.
    provider_pick = next(p for p in prompts if "choose a provider" in p["title"])
    assert "Scripted (built-in)" in provider_pick["offered"]
    assert provider_pick["answered"] == "Scripted (built-in)"
    assert any(p["kind"] == "input" and p["answered"] == "Clean the build" for p in prompts)

    # Turn 1: thinking, streamed text, the edit, the approval (its modes offered), the question.
    t1 = r["turn1"]
    items = t1["items"]
    assert _texts(items, "user") == ["Clean the build"]
    assert _texts(items, "thinking") == [
        "The build directory is stale; clean it, then fix the greeting."
    ]
    assistant = [i for i in items if i["kind"] == "assistant"]
    assert (
        assistant[0]["text"] == "Let me look at the build first. " and assistant[0]["deltas"] == 3
    )
    assert [a["text"] for a in assistant[1:]] == ["Removed the build directory.", "Using pytest."]
    tools = {i["toolCallId"]: i for i in items if i["kind"] == "tool"}
    assert tools["edit_1"]["edits"] == [EDIT] and tools["edit_1"]["status"] == "completed"
    assert tools["call_7"]["output"] == "removed build/\n" and tools["call_7"]["exitCode"] == 0
    approval = next(p for p in prompts if p["title"] == "Approval: Run `rm -rf build`")
    assert approval["offered"] == ["Allow once", "Allow for this session", "Deny"]
    assert approval["answered"] == "Allow for this session"
    question = next(p for p in prompts if p["title"] == "Question: Which test runner?")
    assert question["offered"] == ["pytest", "unittest"] and question["answered"] == "pytest"
    settled = {i["request"]["kind"]: i for i in items if i["kind"] == "interaction"}
    assert settled["approval"]["status"] == "responded"
    assert settled["approval"]["answer"] == {
        "kind": "approval",
        "decision": "allow",
        "mode": "session",
    }
    assert settled["question"]["answer"] == {"kind": "question", "choice": "pytest"}
    assert t1["gaps"] == [] and t1["transcript"].endswith("-- Turn completed (end_turn)")

    # The edit opened in VS Code's own diff view, both sides from the event.
    diff = r["diff"]
    assert diff["scheme"] == "agent-bridge-edit"
    assert diff["original"] == EDIT["oldText"] and diff["modified"] == EDIT["newText"]
    assert diff["title"] == "hello.py (agent edit)" and diff["tabLabel"] == diff["title"]

    # The webview in Chromium rendered the chat.
    assert r["webviewRendered"] is True
    # The turn is over: its thinking is folded.
    assert "thinking" not in r["webviewOpenCards"], r["webviewOpenCards"]
    web = r["webviewText"]
    for text in (
        "Clean the build",
        "Let me look at the build first.",
        "Edit hello.py",
        "Approval: Run `rm -rf build`",
        "allowed for this session",
        "Using pytest.",
        "Turn completed",
    ):
        assert text in web, (text, web)

    # The keys, pressed in the workbench: Ctrl+Alt+A put the focus in the chat's input box
    # (from a text editor); Escape in the chat interrupted turn 2; Ctrl+Alt+X (from a text
    # editor) interrupted turn 5.
    assert r["keys"] == {
        "ctrl+alt+a": "chat input focused",
        "escape": "turn interrupted",
        "ctrl+alt+x": "turn interrupted",
        # the chat maps the extension's keys itself: code-server does not pass a key
        # pressed in a webview on to the workbench's keybindings
        "ctrl+alt+x in the chat": "turn interrupted",
    }
    # Every contributed command and keybinding has its handler; the keys for new chat,
    # send, interrupt, approve and focus are bound.
    assert r["unboundCommands"] == []
    bound = {
        k["command"]: k["key"]
        for k in json.loads((EXT_DIR / "package.json").read_text())["contributes"]["keybindings"]
    }
    assert bound == {
        "agentBridge.newSession": "ctrl+alt+n",
        "agentBridge.prompt": "ctrl+alt+p",
        "agentBridge.cancel": "ctrl+alt+x",
        "agentBridge.answerPending": "ctrl+alt+y",
        "agentBridge.focusChat": "ctrl+alt+a",
    }
    # Turn 2's thinking was drawn open while it streamed, and folded once the turn ended
    # (the webview once kept it open: its re-render's `open` counted as the user's toggle).
    assert "thinking" in r["webviewOpenWhileStreaming"], r["webviewOpenWhileStreaming"]
    assert "thinking" not in r["webviewOpenAfterTurn2"], r["webviewOpenAfterTurn2"]

    # Turn 3: the dismissed approval stayed pending and was counted in the tree; after the
    # chat was closed, reattaching replayed everything and asked the approval again.
    pend = r["pendingBeforeReattach"]
    assert pend["count"] == 1 and pend["modelPendingApprovals"] == 1
    assert "1 pending" in pend["tree"]["description"] and "pending" in pend["tree"]["contextValue"]
    assert r["pendingWhileClosed"]["count"] == 1
    deploy = [p for p in prompts if p["title"] == "Approval: Deploy to production"]
    assert [p["offered"] for p in deploy] == [["Allow once", "Deny"]] * 2
    assert [p["answered"] for p in deploy] == [None, "Allow once"]
    re = r["reattach"]
    assert re["via"] == "attach" and re["replayed"] == re["seqBeforeClose"]
    after = r["afterReattach"]
    assert after["gaps"] == [] and after["pendingApprovals"] == 0
    lines = after["transcript"].split("\n")
    assert "Agent: Working on it…" in lines and "-- Turn interrupted (user)" in lines
    assert "Approval: Deploy to production: allowed once" in lines and "Agent: Deployed." in lines
    assert after["transcript"].startswith(t1["transcript"]), "the replay rebuilt the same chat"

    # After the restart the session was listed (closed), resumed by id, and continued.
    listed = [n for n in r["treeAfterRestart"] if n["id"] == sid]
    assert listed and "closed" in listed[0]["description"]
    assert r["treeClick"] == "agentBridge.open"  # resumed by clicking the session in the view
    res = r["resume"]
    assert res["via"] == "resume" and res["state"] == "active"
    final = r["afterRestart"]
    assert final["gaps"] == [], final["gaps"]
    assert final["lastSequence"] > res["seqBeforeRestart"]
    tail = final["transcript"].split("\n")
    assert "-- Session resumed" in tail and "Agent: You said: After restart" in tail
    assert tail[-1] == "-- Turn completed (end_turn)"
    assert final["transcript"].startswith(after["transcript"]), (
        "no gap, nothing lost across the restart"
    )
    assert (
        r["webviewRenderedAfterRestart"] is True
        and "You said: After restart" in r["webviewTextAfterRestart"]
    )

    # Missing provider and missing bridge: clear messages with the next step.
    un = r["unavailableProvider"]
    assert un["sessionId"] is None
    assert any(
        "Gemini CLI is not available" in e and "Next step: install the Gemini CLI" in e
        for e in un["errors"]
    ), un
    # The model and mode chosen for a session are in its chat's header.
    head = r["chosenHeaderText"]
    # (as the session's settings name them, each a button that changes it)
    assert "claude-code" in head and "model sonnet ▾" in head and "mode plan ▾" in head, head
    mb = r["missingBridge"]["errors"]
    assert any(
        '"/nonexistent/agent-bridge") was not found' in e and "Next step" in e for e in mb
    ), mb

    # Subagents: the call made inside the subagent is under its call, not in the chat;
    # limits: a line and the header badge, the failure says when it resets (05:00 UTC,
    # shown in local time, UTC+2).
    lim = r["limits"]
    assert lim["children"] == ["Read completed"]
    assert lim["transcript"].splitlines() == [
        "You: Look into it",
        "Tool Task: completed",
        "-- Limit claude five_hour 100% exhausted, resets Wed 2 Jan 07:00",
        "-- Turn failed: the provider is rate limited (provider_rate_limited)"
        " — quota exhausted, resets Wed 2 Jan 07:00",
    ]
    wv = lim["webviewText"]
    assert "limit claude five_hour 100% exhausted, resets Wed 2 Jan 07:00" in wv, wv
    assert "Subagent Explore — Find the bug (completed, 1 tool use, 1200 tokens)" in wv, wv
    assert "quota exhausted, resets Wed 2 Jan 07:00" in wv, wv
    # Fork: at the first turn's end; the fork opens with that turn, then runs its own.
    fork = r["fork"]
    assert fork["fork"] != fork["original"] and fork["forkPanel"] is True
    assert fork["parent"] == {"sessionId": fork["original"], "sequence": fork["atEvent"]}
    turn = "You: ECHO:{0}\nAgent: {0}\n-- Turn completed (end_turn)"
    assert fork["originalTranscript"] == turn.format("first") + "\n" + turn.format("second")
    assert fork["forkTranscript"] == turn.format("first") + "\n" + turn.format("third")
    # Fork from a message (Claude Code: granularity message): at the text of a turn that
    # then called Read, its last delta; the fork's history ends with that text (the
    # call and the answer are the original's only), exact: nothing to tell. One in the
    # middle of the text is cut earlier by the provider: the user is told so.
    mf = r["messageFork"]
    assert mf["buttons"] == 4, mf  # every finished agent message of the three turns
    said = "You: SAY:Let me look at it.;READ:hello.py\nAgent: Let me look at it."
    assert said + "\nTool Read" in mf["originalTranscript"], mf["originalTranscript"]
    assert mf["forkTranscript"] == turn.format("first") + "\n" + turn.format("second") + "\n" + said
    assert mf["forkLast"] == mf["atEvent"]
    assert mf["parent"] == {"sessionId": fork["original"], "sequence": mf["atEvent"]}
    assert mf["exactInfos"] == [], mf
    assert mf["deltas"] > 1 and mf["cutAt"] < mf["atEvent"]
    assert len(mf["cutInfos"]) == 1 and mf["cutInfos"][0].startswith(
        f"The fork shows the history up to event {mf['cutAt']}, but the agent remembers"
        " it only up to event "
    ), mf["cutInfos"]

    # Context (issue 28): what the scripted provider received, block by block.
    ctx = r["context"]
    hello = str(host["tmp"] / "ws" / "hello.py")
    file_block = {"type": "file", "path": hello, "startLine": 1, "endLine": 1}
    assert ctx["selectionBlock"] == file_block
    assert ctx["barBeforeSend"].startswith("@ hello.py:1-1"), ctx["barBeforeSend"]
    resource = {
        "type": "resource",
        "text": "draft notes\nsecond line",
        "uri": "untitled:Untitled-1",
        "mimeType": "text/plain",
    }
    assert ctx["unsavedBlock"] == resource
    assert ctx["pastedInto"] == 1 and ctx["imageBar"].startswith("@ image image/png (70 B)")
    png = base64.b64decode(PNG)
    image = {
        "type": "image",
        "mimeType": "image/png",
        "size": len(png),
        "sha256": hashlib.sha256(png).hexdigest(),
    }
    assert [json.loads(t) for t in ctx["replies"]] == [
        [{"type": "text", "text": "Explain this"}, file_block],
        [{"type": "text", "text": "And these notes"}, resource],
        [{"type": "text", "text": "What is in the picture?"}, image],
        # an image file picked with the chat's attach button (a file dialog)
        [{"type": "text", "text": "And this file?"}, image],
    ]
    assert ctx["fileBar"].startswith("@ image image/png (70 B)"), ctx["fileBar"]
    assert [(d["title"], d["offered"]) for d in ctx["fileDialog"]] == [
        ("Attach which image?", ["Images: png jpg jpeg gif webp"])
    ]
    # checked against capabilities.input.image before the file is read: a type it does
    # not take, a file over its 10 MiB; nothing attached
    assert ctx["refusedFiles"] == [None, None]
    assert ctx["refusedFileErrors"] == [
        "This provider does not take image/bmp images"
        " (it takes image/png, image/jpeg, image/gif, image/webp).",
        "huge.png is 10485761 B; this provider takes images up to 10485760 B.",
    ]
    assert ctx["attachmentsAfterFileRefusal"] == 0
    # "Send the Selection…" with no session named: to the chat the user was in last (not
    # the newest chat, not a picker), from a text editor
    assert ctx["defaultTarget"] == {
        "block": file_block,
        "contextBar": ctx["defaultTarget"]["contextBar"],
        "contextAttachments": 1,
        "elsewhereAttachments": 0,
        "picks": 0,
    }
    assert ctx["defaultTarget"]["contextBar"].startswith("@ hello.py:1-1")
    assert ctx["refusedImage"] == [
        "This provider does not take image/bmp images"
        " (it takes image/png, image/jpeg, image/gif, image/webp)."
    ]
    assert ctx["attachmentsAfterRefusal"] == 0
    # what each prompt carried is shown under it, in the chat
    for line in ("@ hello.py:1-1", "@ untitled:Untitled-1 (2 lines)", "@ image image/png (70 B)"):
        assert f"\n  {line}\n" in ctx["transcript"] and f"\n{line}\n" in ctx["webviewText"], line

    # Fork (issue 29) only where the provider forks: the scripted provider's chat offers
    # none, and the command says why without asking the bridge.
    assert "Fork from here" not in ctx["webviewText"]
    refused = ctx["forkRefused"]
    assert refused["result"] is None and refused["requests"] == 0
    assert refused["infos"] == [
        "Scripted (built-in) cannot fork a session (its descriptor's capabilities.fork says so;"
        " the bridge does not fake a fork by replaying text). Next step: start a new session,"
        " or use a provider that forks (Claude Code, Codex)."
    ]

    # Slash commands and the model and mode in the chat (issues 28, 31): the "/" menu lists
    # the session's commands and runs the one picked as a command block with its
    # arguments; "/compact" typed is that command; the header's buttons show and change
    # the model and the mode (session/configure), and show the new ones.
    menus = r["menus"]
    assert menus["headerBefore"].startswith("Menus | scripted | model Small ▾ | mode ask ▾")
    # the second menu: after a run's commands.updated
    assert menus["menu"] == [["/review", "/compact"], ["/review", "/deploy"]]
    assert menus["models"] == [["Small", "Large"]]
    assert menus["modeChosen"] == "auto"
    assert menus["headerAfter"].startswith("Menus | scripted | model Large ▾ | mode auto ▾")
    assert menus["settings"]["model"]["current"] == "large"
    assert menus["settings"]["mode"]["current"] == "auto"
    assert menus["transcript"].splitlines() == [
        "You: /review the tests",
        'Agent: [{"type":"command","name":"review","arguments":"the tests"}]',
        "-- Turn completed (end_turn)",
        "You: /compact",
        'Agent: [{"type":"command","name":"compact"}]',
        "-- Turn completed (end_turn)",
        "You: Add a command",
        "Agent: Added deploy.",
        "-- Turn completed (end_turn)",
    ]

    # Continue a session (issue 26): one pick across the bridge's sessions of the workspace
    # and Claude Code's own; the CLI's session continued in the bridge, its turn imported,
    # a turn run on it by the resumed CLI; picked again, the same session (listed once).
    cont = r["continued"]
    assert cont["provider"] == "claude-code"
    assert cont["offered"][-1] == "say hello"  # the oldest: the CLI wrote it before the test
    assert {"Context", "Limits", "Chosen", "Forked"} <= set(cont["offered"])
    assert cont["offeredAgain"][0] == "say hello"  # now a bridge session, updated last
    assert cont["offeredAgain"].count("say hello") == 1
    assert cont["imported"].splitlines() == [
        "You: say hello",
        "Agent: (stand-in: no scripted reply left)",
        "-- Imported 7 earlier records from claude-code's own history",
    ]
    assert cont["transcript"].splitlines()[3:] == [
        "You: ECHO:again",
        "Agent: again",
        "-- Turn completed (end_turn)",
    ]
    assert "Imported 7 earlier records" in cont["webviewText"]
    assert cont["again"] == cont["sessionId"]

    # Closed at the end; the traffic log has the whole exchange.
    assert r["closed"] is True
    assert "closed" in next(n for n in r["treeAtEnd"] if n["id"] == sid)["description"]
    traffic = r["traffic"]
    assert traffic["initialize"] >= 2  # the first bridge and the one after the restart
    assert traffic["interactionRequests"] >= 4  # rm -rf, the question, deploy twice
    assert r["errors"] == un["errors"] + ctx["refusedImage"] + ctx["refusedFileErrors"] + mb, r[
        "errors"
    ]

    # The bridge was started with the settings' state dir: its journal is there.
    assert any(host["state"].iterdir())


@pytest.mark.timeout(300)
@pytest.mark.parametrize("host", [{"scenario": "other-host"}], indirect=True)
def test_vscode_chat_header_follows_a_model_and_mode_changed_by_another_host(
    host: dict[str, Any],
) -> None:
    """The extension on ``agent-bridge connect`` opens a session naming its model and mode;
    a second host attached to the same daemon session changes both (session/configure);
    the VS Code chat's header shows the new ones, learnt from ``settings.updated`` alone
    (the extension asked nothing after the chat opened)."""
    r = _wait_result(host)
    assert "error" not in r, r.get("error")
    assert r["steps"] == ["done"], r
    assert r["headerBefore"].startswith("Shared | scripted | model Small ▾ | mode ask ▾")
    assert r["headerAfter"].startswith("Shared | scripted | model Large ▾ | mode auto ▾")
    assert r["settings"]["model"]["current"] == "large"
    assert r["settings"]["mode"]["current"] == "auto"
    assert r["requestsAfterOpen"] == 0
    assert r["settingsEvents"] >= 1
    assert r["errors"] == []
