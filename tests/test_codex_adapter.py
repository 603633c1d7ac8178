"""The Codex adapter against the fake app-server (tests/standins/fake_codex.py), through
the real bridge: a `python -m agent_bridge serve` child that spawns the fake as its provider.

The fake is put in front of the adapter as an executable wrapper script (via
AGENT_BRIDGE_CODEX_PATH or the `executable` option); its script comes from a file the
wrapper names, and it logs every message it receives, so a test can check what the
adapter actually sent (decisions, interrupt ids, resume settings).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from bridge_client import Answer, allow, codes, deny, drive, of_type, start, text_of
from conftest import running_bridge

from agent_bridge.adapters.codex import CodexProvider, probe
from agent_bridge.adapters.codex import launch as disc
from agent_bridge.adapters.codex import protocol as proto
from agent_bridge.adapters.codex.mapping import (
    MAX_CWD,
    MAX_PERMISSIONS_BYTES,
    MAX_POLICY_BYTES,
    MAX_POLICY_DEPTH,
    MAX_THREAD_ID,
    approval_policy_of,
    classify_error,
    cwd_ok,
    mode_of,
    permissions_ok,
    sandbox_mode,
    thread_id_ok,
)
from agent_bridge.adapters.codex.session import CodexSession

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "standins" / "fake_codex.py"
SCHEMA = ROOT / "adapters" / "codex" / "schema" / "app_server_protocol.json"
HELLO = "Hi! I am the stand-in model."

pytestmark = pytest.mark.timeout(30)

Msg = dict[str, Any]


class Fake:
    """A fake-codex executable plus its script, its log and a workspace."""

    def __init__(self, tmp: Path, script: dict[str, Any] | None = None, name: str = "codex"):
        self.tmp = tmp
        self.work = tmp / "work"
        self.home = tmp / "codex-home"
        self.work.mkdir(exist_ok=True)
        self.home.mkdir(exist_ok=True)
        self.log = tmp / f"{name}.log"
        self.script_path = tmp / f"{name}.json"
        self.write({} if script is None else script)
        self.exe = tmp / name
        self.exe.write_text(
            "#!/bin/sh\nexec "
            + " ".join(shlex.quote(a) for a in (sys.executable, str(FAKE), "--script"))
            + f' {shlex.quote(str(self.script_path))} "$@"\n'
        )
        self.exe.chmod(0o755)

    def write(self, script: dict[str, Any]) -> None:
        self.script_path.write_text(json.dumps({"log": str(self.log), **script}))

    def received(self) -> list[Msg]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def requests(self, method: str) -> list[Msg]:
        return [m for m in self.received() if m.get("method") == method]

    def replies(self) -> list[Msg]:
        return [m for m in self.received() if "method" not in m]

    def session_params(self, **options: Any) -> Msg:
        opts = {
            "codexHome": str(self.home),
            "approvalPolicy": "untrusted",
            "sandbox": "workspace-write",
            **options,
        }
        return {"provider": "codex", "workspace": str(self.work), "options": opts}

    @property
    def env(self) -> dict[str, str]:
        return {"AGENT_BRIDGE_CODEX_PATH": str(self.exe)}


async def create(bridge: Any, fake: Fake, **options: Any) -> str:
    result = await bridge.result("session/create", fake.session_params(**options))
    session_id: str = result["session"]["sessionId"]
    return session_id


# --------------------------------------------------------------------------- unit


def test_notification_and_request_lists_match_the_schema() -> None:
    methods = json.loads(SCHEMA.read_text())["x-methods"]
    assert set(proto.SERVER_NOTIFICATIONS) == set(methods["serverNotifications"])
    assert set(proto.SERVER_REQUESTS) == set(methods["serverRequests"])


def test_classify_error() -> None:
    def err(info: Any) -> proto.TurnError:
        return proto.TurnError(message="x", codex_error_info=info)

    assert classify_error(None) == "provider_failed"
    assert classify_error(err("unauthorized")) == "provider_auth_required"
    assert classify_error(err("usageLimitExceeded")) == "provider_rate_limited"
    assert classify_error(err("rateLimitExceeded")) == "provider_rate_limited"
    assert classify_error(err("contextWindowExceeded")) == "provider_failed"
    assert classify_error(err("other")) == "provider_failed"
    assert (
        classify_error(err({"httpConnectionFailed": {"httpStatusCode": 401}}))
        == "provider_auth_required"
    )
    assert (
        classify_error(err({"responseTooManyFailedAttempts": {"httpStatusCode": 429}}))
        == "provider_rate_limited"
    )
    assert (
        classify_error(err({"responseStreamDisconnected": {"httpStatusCode": None}}))
        == "provider_failed"
    )


def test_lenient_decoding_ignores_unknown_fields() -> None:
    raw = b'{"threadId":"T","turn":{"id":"U","status":"failed","new":1,"error":{"message":"m",'
    raw += b'"codexErrorInfo":"unauthorized","more":[1]}},"brandNew":true}'
    done = msgspec.json.decode(raw, type=proto.TurnCompleted)
    assert done.turn.id == "U" and done.turn.error is not None
    assert classify_error(done.turn.error) == "provider_auth_required"
    assert sandbox_mode({"type": "workspaceWrite", "writableRoots": []}) == "workspace-write"
    assert sandbox_mode({"type": "somethingNew"}) is None


def _nested(depth: int) -> dict[str, Any]:
    """An object whose objects nest ``depth`` deep."""
    value: Any = True
    for _ in range(depth):
        value = {"a": value}
    return value  # type: ignore[no-any-return]


def _policy_of_size(size: int) -> dict[str, Any]:
    """A granular policy (the shape 0.171.0 sends) padded to ``size`` bytes encoded."""
    policy: dict[str, Any] = {
        "granular": {"mcp_elicitations": True, "rules": True, "sandbox_approval": False}
    }
    policy["granular"]["note"] = ""
    policy["granular"]["note"] = "x" * (size - len(msgspec.json.encode(policy)))
    assert len(msgspec.json.encode(policy)) == size
    return policy


def test_approval_policies_codex_reports_are_kept_only_within_bounds() -> None:
    """``approval_policy_of``: a policy name, or an object of at most MAX_POLICY_BYTES
    encoded and MAX_POLICY_DEPTH deep (tested at N and N+1); anything else is not kept,
    and the mode it would make is unknown."""
    granular = {"granular": {"mcp_elicitations": True, "rules": True, "sandbox_approval": False}}
    for name in ("untrusted", "on-request", "never", "on-failure"):
        assert approval_policy_of(name) == name
    assert approval_policy_of(granular) == granular
    at = _policy_of_size(MAX_POLICY_BYTES)
    assert approval_policy_of(at) is at
    assert approval_policy_of(_policy_of_size(MAX_POLICY_BYTES + 1)) is None
    assert approval_policy_of(_policy_of_size(10 * 1024 * 1024)) is None
    assert approval_policy_of(_nested(MAX_POLICY_DEPTH)) == _nested(MAX_POLICY_DEPTH)
    assert approval_policy_of(_nested(MAX_POLICY_DEPTH + 1)) is None
    assert approval_policy_of({"a": [[[[[[[[1]]]]]]]]}) is None  # arrays count too
    assert approval_policy_of(_nested(5000)) is None  # deeper than the encoder goes
    wrong: list[Any] = [42, 1.5, True, ["never"], "", "x" * 65, "on request", "never\n"]
    for value in (*wrong, "n" * 1_000_000):
        assert approval_policy_of(value) is None, value
    assert mode_of(approval_policy_of(_policy_of_size(MAX_POLICY_BYTES + 1)), "read-only") is None
    assert mode_of(approval_policy_of("on-request"), "read-only") == "read-only"


def test_sandboxes_codex_reports_are_kept_only_as_modes() -> None:
    """``sandbox_mode``: a policy object of a known type or a mode string; any other
    string (however long), type or ``type`` is no mode."""
    assert sandbox_mode({"type": "readOnly", "networkAccess": False}) == "read-only"
    assert sandbox_mode({"type": "dangerFullAccess"}) == "danger-full-access"
    assert sandbox_mode("workspace-write") == "workspace-write"
    wrong: list[Any] = ["readOnly", "s" * 1_000_000, 42, None, ["read-only"], {}]
    for value in (*wrong, {"type": 5}, {"type": ["readOnly"]}, {"type": _nested(100)}):
        assert sandbox_mode(value) is None, value


def test_sandbox_policies_of_unknown_types_are_reported() -> None:
    """``CodexSession._take_policies``: a sandbox policy object of a type the adapter does
    not know (``externalSandbox`` of the 0.171.0 schema, a newer one) leaves the session's
    sandbox as it was and is reported by its field name, like any other sandbox that
    names no mode; a known one is taken and not reported."""
    holder: Any = type("Holder", (), {})()
    holder.settings = disc.Settings(executable="codex", cwd=None, env={}, sandbox="read-only")
    take = CodexSession._take_policies
    for unknown in ({"type": "externalSandbox", "networkAccess": "restricted"}, {}, "x"):
        assert take(holder, None, unknown) == ["sandbox"], unknown
        assert holder.settings.sandbox == "read-only"
    assert take(holder, None, {"type": "workspaceWrite", "writableRoots": []}) == []
    assert holder.settings.sandbox == "workspace-write"
    assert take(holder, "on-request", None) == []


def test_thread_ids_codex_reports_are_kept_only_within_bounds() -> None:
    """``thread_id_ok``: 1 to MAX_THREAD_ID printable ASCII characters without a space
    (tested at N and N+1); 0.171.0's UUIDv7 ids are."""
    assert thread_id_ok("01a22a1f-8c05-7770-a58a-a5dccbd7c628")  # captured from 0.171.0
    assert thread_id_ok("t" * MAX_THREAD_ID)
    assert not thread_id_ok("t" * (MAX_THREAD_ID + 1))
    assert not thread_id_ok("t" * 10_000_000)
    wrong: list[Any] = ["", "a b", "a\nb", "a\x00b", "a\x7fb", "caf\u00e9", "\ud800", None, 42]
    for value in (*wrong, ["t"], {"id": "t"}):
        assert not thread_id_ok(value), value


def test_thread_cwds_codex_reports_are_kept_only_within_bounds() -> None:
    """``cwd_ok``: an absolute path of 1 to MAX_CWD characters (tested at N and N+1), no
    control character, no lone surrogate."""
    assert cwd_ok("/home/user/demo/work")
    assert cwd_ok("/" + "c" * (MAX_CWD - 1))
    assert not cwd_ok("/" + "c" * MAX_CWD)
    for value in ("", "relative/dir", "/a\x00b", "/a\nb", "/\ud800", "/" + "c" * 10_000_000):
        assert not cwd_ok(value), value[:40]


def _permissions_of_size(size: int) -> dict[str, Any]:
    """A ``RequestPermissionProfile`` (0.171.0's shape) padded to ``size`` bytes encoded."""
    path = {"type": "path", "path": "/w/"}
    entry = {"access": "write", "path": path}
    permissions: dict[str, Any] = {
        "fileSystem": {"entries": [entry]},
        "network": {"enabled": True},
    }
    path["path"] = "/w/" + "p" * (size - len(msgspec.json.encode(permissions)))
    assert len(msgspec.json.encode(permissions)) == size
    return permissions


def test_permissions_codex_asks_for_are_shown_only_within_bounds() -> None:
    """``permissions_ok``: an object of at most MAX_PERMISSIONS_BYTES encoded and
    MAX_POLICY_DEPTH deep (tested at N and N+1); anything else is not shown (and so never
    granted)."""
    assert permissions_ok({"fileSystem": {"read": ["/a"], "write": None}, "network": None})
    assert permissions_ok({})
    assert permissions_ok(_permissions_of_size(MAX_PERMISSIONS_BYTES))
    assert not permissions_ok(_permissions_of_size(MAX_PERMISSIONS_BYTES + 1))
    assert not permissions_ok(_permissions_of_size(10 * 1024 * 1024))
    assert permissions_ok(_nested(MAX_POLICY_DEPTH))
    assert not permissions_ok(_nested(MAX_POLICY_DEPTH + 1))
    assert not permissions_ok({"fileSystem": {"entries": [[[[[[[["/a"]]]]]]]]}})
    assert not permissions_ok(_nested(5000))
    wrong: list[Any] = [[], "all", None, 1]
    for value in wrong:
        assert not permissions_ok(value), value


def test_descriptor() -> None:
    d = CodexProvider().describe()
    assert d.id == "codex"
    assert d.capabilities.run.steer is True
    assert d.capabilities.run.interrupt == "cooperative"
    assert d.capabilities.recovery.resume is True
    assert d.capabilities.interactions.approval.modes == ("once", "session")
    options = {o.name: o for o in d.options}
    assert set(options) == {
        "executable",
        "codexHome",
        "model",
        "reasoningEffort",
        "approvalPolicy",
        "sandbox",
        "config",
        "strictConfig",
        "passEnv",
    }
    assert options["sandbox"].values == ("read-only", "workspace-write", "danger-full-access")
    assert options["approvalPolicy"].values == ("untrusted", "on-request", "never")
    assert options["config"].type == "stringList"
    assert options["strictConfig"].default is True


def test_child_env_is_allowlisted_plus_declared(tmp_path: Path) -> None:
    home = tmp_path / "ch"
    home.mkdir()
    (home / "config.toml").write_text(
        '[model_providers.stub]\nenv_key = "STUB_KEY"\n[model_providers.other]\nname = "x"\n'
    )
    parent = {
        "PATH": "/usr/bin",
        "HOME": str(tmp_path),
        "STUB_KEY": "k1",
        "OVERRIDE_KEY": "k2",
        "OPENAI_API_KEY": "k3",
        "SOME_SECRET_TOKEN": "nope",
        "HTTPS_PROXY": "http://127.0.0.1:1",
        "CODEX_HOME": "/elsewhere",
    }
    env = disc.child_env(
        codex_home=str(home),
        overrides=['model_providers.o.env_key="OVERRIDE_KEY"', "model=x"],
        pass_env=["HTTPS_PROXY"],
        parent=parent,
    )
    assert env["CODEX_HOME"] == str(home)
    assert env["NO_COLOR"] == "1"
    assert env["STUB_KEY"] == "k1" and env["OVERRIDE_KEY"] == "k2"
    assert env["OPENAI_API_KEY"] == "k3" and env["HTTPS_PROXY"] == "http://127.0.0.1:1"
    assert "SOME_SECRET_TOKEN" not in env
    # Without the option, the bridge's own CODEX_HOME is kept; unset stays unset.
    assert disc.child_env(codex_home=None, parent=parent)["CODEX_HOME"] == "/elsewhere"
    bare = {k: v for k, v in parent.items() if k != "CODEX_HOME"}
    assert "CODEX_HOME" not in disc.child_env(codex_home=None, parent=bare)


def test_find_executable_order(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    on_path = bin_dir / "codex"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    other = tmp_path / "other-codex"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    found = disc.find_executable(None, env)
    assert found is not None and (found.path, found.source) == (str(on_path), "path")
    found = disc.find_executable(None, {**env, disc.ENV_EXECUTABLE: str(other)})
    assert found is not None and (found.path, found.source) == (str(other), "env")
    found = disc.find_executable(str(other), {**env, disc.ENV_EXECUTABLE: str(on_path)})
    assert found is not None and (found.path, found.source) == (str(other), "option")
    assert disc.find_executable(str(tmp_path / "missing"), env) is None
    assert disc.find_executable(None, {**env, disc.ENV_EXECUTABLE: "/no/such/codex"}) is None


def test_find_executable_npm_prefix_then_pypi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    launcher = tmp_path / "prefix" / "lib" / "node_modules" / "@openai" / "codex" / "bin"
    launcher.mkdir(parents=True)
    (launcher / "codex.js").write_text("#!/usr/bin/env node\n")
    (launcher / "codex.js").chmod(0o755)
    env = {"PATH": str(empty), "HOME": str(tmp_path), "NPM_CONFIG_PREFIX": str(tmp_path / "prefix")}
    found = disc.find_executable(None, env)
    assert found is not None and found.source == "npm"
    assert found.path == str(launcher / "codex.js")
    # The PyPI runtime package: module codex_cli_bin with its binary under bin/.
    package = tmp_path / "site" / "codex_cli_bin"
    (package / "bin").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    (package / "bin" / "codex").write_text("")
    (package / "bin" / "codex").chmod(0o755)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(disc, "_npm_candidates", lambda _env: iter(()))
    found = disc.find_executable(None, {"PATH": str(empty), "HOME": str(tmp_path)})
    assert found is not None and found.source == "pypi"
    assert found.path == str(package / "bin" / "codex")


def test_npm_launcher_is_replaced_by_its_native_binary(tmp_path: Path) -> None:
    import platform

    target = disc._NATIVE_TARGETS.get((sys.platform, platform.machine().lower()))
    if target is None:
        pytest.skip("no native Codex build for this platform")
    modules = tmp_path / "node_modules"
    launcher = modules / "@openai" / "codex" / "bin" / "codex.js"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/usr/bin/env node\n")
    launcher.chmod(0o755)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "codex").symlink_to(launcher)
    assert disc.native_for_launcher(str(modules / ".bin" / "codex")) is None
    native = modules / "@openai" / target[0] / "vendor" / target[1] / "bin" / "codex"
    native.parent.mkdir(parents=True)
    native.write_text("")
    native.chmod(0o755)
    assert disc.native_for_launcher(str(modules / ".bin" / "codex")) == str(native)


def test_version_parsing() -> None:
    assert probe.parse_version("codex-cli 0.171.0\n") == "0.171.0"
    assert probe.parse_version("agent_bridge/0.171.0 (Debian 12; x86_64) unknown") == "0.171.0"
    assert probe.parse_version("codex-cli 1.2.3-alpha.4") == "1.2.3-alpha.4"
    assert probe.parse_version("nothing") is None


# --------------------------------------------------------------------------- bridge + fake


async def test_probe_reports_version_and_auth(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    env = {**fake.env, "CODEX_HOME": str(fake.home)}
    async with running_bridge("newline", env=env) as bridge:
        result = await bridge.result("providers/list", {"probe": True})
        codex = next(p for p in result["providers"] if p["id"] == "codex")
        availability = codex["availability"]
        assert availability["status"] == "available"
        assert availability["executable"] == str(fake.exe)
        assert availability["version"] == "0.171.0"
        # The fake's account/read: no account, no OpenAI login required -> not guessed.
        assert availability.get("authentication", "unknown") == "unknown"
    # --version ran with a throwaway CODEX_HOME: nothing was written to the real one.
    assert list(fake.home.iterdir()) == []


async def test_probe_without_an_executable(tmp_path: Path) -> None:
    env = {"AGENT_BRIDGE_CODEX_PATH": str(tmp_path / "no-codex")}
    async with running_bridge("newline", env=env) as bridge:
        result = await bridge.result("providers/list", {"probe": True})
        codex = next(p for p in result["providers"] if p["id"] == "codex")
        assert codex["availability"]["status"] == "unavailable"
        assert "not found" in codex["availability"]["reason"]
        assert "AGENT_BRIDGE_CODEX_PATH" in codex["availability"]["nextStep"]
        reply = await bridge.call(
            "session/create", {"provider": "codex", "workspace": str(tmp_path)}
        )
        assert reply["error"]["data"]["code"] == "provider_unavailable"
        assert reply["error"]["data"]["details"]["missing"] == "codex"


async def test_text_run_handshake_usage_and_diagnostics(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"replies": [[{"text": "Hello there, host", "deltas": 3}]]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        run = await start(bridge, session, "say hi")
        events = await drive(bridge, run)
        assert events[-1]["type"] == "run.completed"
        assert text_of(events) == "Hello there, host"
        assert len(of_type(events, "text.delta")) == 3
        usage = of_type(events, "usage")[-1]
        assert usage["context"] == {"usedTokens": 19, "maxTokens": 258400}
        assert usage["cumulative"]["inputTokens"] == 12
        assert usage["cumulative"]["outputTokens"] == 7
        # The startup configWarning (before any run) and the per-turn model warning.
        assert {"codex_config_warning", "codex_warning"} <= codes(events)
        assert not any("bubblewrap" in json.dumps(p) for p in events)
        run2 = await start(bridge, session, "again")
        events2 = await drive(bridge, run2)
        assert text_of(events2) == HELLO
        assert of_type(events2, "usage")[-1]["cumulative"]["inputTokens"] == 24
        # Provenance: each projected event points at the Codex message it came from.
        page = await bridge.result(
            "events/read", {"sessionId": session, "view": "raw", "limit": 1000}
        )
        by_seq = {e["sequence"]: e["payload"] for e in page["events"]}
        records = page["raw"]
        deltas = [r for r in records if r["record"]["method"] == "item/agentMessage/delta"]
        assert len(deltas) >= 4
        for record in deltas:
            for first, last in record["spans"]:
                assert {by_seq[q]["type"] for q in range(first, last + 1)} == {"text.delta"}
        usage_raw = [r for r in records if r["record"]["method"] == "thread/tokenUsage/updated"]
        assert usage_raw and "tokenUsage" in usage_raw[0]["record"]["params"]
    sent = fake.received()
    assert all("jsonrpc" not in m for m in sent)
    assert [m.get("method") for m in sent[:3]] == ["initialize", "initialized", "thread/start"]
    assert sent[0]["params"]["clientInfo"]["name"] == "agent_bridge"
    assert sent[2]["params"] == {
        "cwd": str(fake.work),
        "approvalPolicy": "untrusted",
        "sandbox": "workspace-write",
    }
    turns = fake.requests("turn/start")
    assert [t["params"]["input"][0]["text"] for t in turns] == ["say hi", "again"]


@pytest.mark.parametrize(
    ("answer", "decision", "status", "exists"),
    [
        (allow("once"), "accept", "completed", True),
        (deny, "decline", "failed", False),
    ],
    ids=["allow", "deny"],
)
async def test_command_approval(
    tmp_path: Path, answer: Answer, decision: str, status: str, exists: bool
) -> None:
    fake = Fake(tmp_path, {"replies": [[{"command": "touch made.txt", "output": "ok\n"}]]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        run = await start(bridge, session, "run it")
        events = await drive(bridge, run, answer)
        assert events[-1]["type"] == "run.completed"
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["kind"] == "approval" and asked["action"] == "command"
        assert asked["command"] == "/bin/bash -lc 'touch made.txt'"
        assert asked["title"] == "Run `touch made.txt`"
        assert asked["cwd"] == str(fake.work)
        # The fake's availableDecisions (like the real 0.171.0) offer no acceptForSession.
        assert asked["modes"] == ["once"]
        tools = of_type(events, "tool.activity")
        assert tools[0]["status"] == "started" and tools[0]["name"] == "command"
        assert tools[-1]["status"] == status
        if exists:
            assert [t["output"] for t in tools if t["status"] == "output"] == ["ok\n"]
            assert tools[-1]["exitCode"] == 0
    replies = [r for r in fake.replies() if "decision" in (r.get("result") or {})]
    assert [r["result"]["decision"] for r in replies] == [decision]


async def test_command_approval_for_the_session_when_offered(tmp_path: Path) -> None:
    step = {"command": "ls", "decisions": ["accept", "acceptForSession", "decline", "cancel"]}
    fake = Fake(tmp_path, {"replies": [[step], [step]]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        run = await start(bridge, session, "one")
        events = await drive(bridge, run, allow("session"))
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["modes"] == ["once", "session"]
        assert events[-1]["type"] == "run.completed"
        # The same command again: Codex does not ask any more.
        run = await start(bridge, session, "two")
        events = await drive(bridge, run, allow("once"))
        assert of_type(events, "interaction.requested") == []
        assert events[-1]["type"] == "run.completed"
    replies = [r["result"]["decision"] for r in fake.replies() if "result" in r]
    assert replies == ["acceptForSession"]


async def test_approval_resolved_by_codex_is_withdrawn(tmp_path: Path) -> None:
    early = {
        "notify": {
            "method": "serverRequest/resolved",
            "params": {"threadId": "$threadId", "requestId": 1},
        }
    }
    fake = Fake(
        tmp_path,
        {
            "replies": [
                # Codex gives up on request 0 itself while the host still looks at it.
                [{"command": "touch late", "self_resolve": 0.3}, {"text": "moving on"}],
                # Request 1 is reported resolved before it is even sent.
                [early, {"command": "touch never"}, {"text": "fine"}],
            ]
        },
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "one"))  # never answers
        assert [s["status"] for s in of_type(events, "interaction.settled")] == ["withdrawn"]
        assert events[-1]["type"] == "run.completed" and text_of(events) == "moving on"
        events = await drive(bridge, await start(bridge, session, "two"))
        assert of_type(events, "interaction.requested") == []
        assert events[-1]["type"] == "run.completed"
    # The late reply to request 0 is ignored by Codex; request 1 was answered at once.
    decisions = {r["id"]: r["result"]["decision"] for r in fake.replies() if "result" in r}
    assert decisions == {0: "decline", 1: "decline"}


def _settings_note(thread: str, model: str, approval: str, sandbox: str) -> Msg:
    """A ``thread/settings/updated`` step in the shape 0.171.0 sends (captured from the
    real app-server after a turn's overrides)."""
    settings = {
        "cwd": "/w",
        "approvalPolicy": approval,
        "approvalsReviewer": "user",
        "sandboxPolicy": {"type": sandbox, "writableRoots": [], "networkAccess": False},
        "model": model,
        "modelProvider": "stub",
        "effort": None,
        "collaborationMode": {"mode": "default", "settings": {"model": model}},
    }
    return {
        "notify": {
            "method": "thread/settings/updated",
            "params": {"threadId": thread, "threadSettings": settings},
        }
    }


async def test_a_settings_change_codex_makes_itself_reaches_the_host(tmp_path: Path) -> None:
    """``thread/settings/updated`` naming another model or approval preset than the
    session's (Codex changed them itself) is ``settings.updated`` in the run, and
    ``session/settings`` follows; the same settings again, or another thread's (an
    agent's), report nothing."""
    fake = Fake(
        tmp_path,
        {
            "replies": [
                [
                    _settings_note("$threadId", "codex-chosen", "never", "dangerFullAccess"),
                    _settings_note("$threadId", "codex-chosen", "never", "dangerFullAccess"),
                    _settings_note("agent-thread", "other", "on-request", "readOnly"),
                    {"text": "switched"},
                ]
            ]
        },
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        before = await bridge.result("session/settings", {"sessionId": session})
        assert before["model"]["current"] != "codex-chosen"
        assert before["mode"].get("current") is None  # untrusted: no preset
        events = await drive(bridge, await start(bridge, session, "go"))
        assert of_type(events, "settings.updated") == [
            {"type": "settings.updated", "model": "codex-chosen", "mode": "full-access"}
        ]
        assert "codex_unexpected_message" not in codes(events)
        assert events[-1]["type"] == "run.completed"
        after = await bridge.result("session/settings", {"sessionId": session})
        assert after["model"]["current"] == "codex-chosen"
        assert after["mode"]["current"] == "full-access"
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
        assert record["opaque"]["model"] == "codex-chosen"
        assert record["opaque"]["approvalPolicy"] == "never"


async def test_a_change_codex_makes_itself_outlives_a_bridge_restart(tmp_path: Path) -> None:
    """The host chose a model and mode (``session/configure``), then Codex changed both
    itself: the session's stored choice follows Codex's change, so a later bridge
    reopening the session (``session/resume {sessionId}``) runs on with what the session
    last ran with, as this bridge would have, instead of switching back to the host's
    older choice (docs/providers/codex.md, ``thread/settings/updated``)."""
    fake = Fake(
        tmp_path,
        {
            "replies": [
                [
                    _settings_note("$threadId", "codex-pick", "never", "dangerFullAccess"),
                    {"text": "switched"},
                ],
                [{"text": "again"}],
            ]
        },
    )
    state = ("--state-dir", str(tmp_path / "state"))
    async with running_bridge("newline", *state, env=fake.env) as bridge:
        session = await create(bridge, fake)
        configure = {"sessionId": session, "model": "host-pick", "mode": "auto"}
        await bridge.result("session/configure", configure)
        events = await drive(bridge, await start(bridge, session, "go"))
        assert of_type(events, "settings.updated") == [
            {"type": "settings.updated", "model": "codex-pick", "mode": "full-access"}
        ]
    assert fake.requests("turn/start")[-1]["params"]["model"] == "host-pick"
    async with running_bridge("newline", *state, env=fake.env) as bridge:
        await bridge.result("session/resume", {"sessionId": session})
        settings = await bridge.result("session/settings", {"sessionId": session})
        assert settings["model"]["current"] == "codex-pick"
        assert settings["mode"]["current"] == "full-access"
        events = await drive(bridge, await start(bridge, session, "more"))
        assert events[-1]["type"] == "run.completed", events[-1]
        assert "settings_not_restored" not in codes(events)
    params = fake.requests("turn/start")[-1]["params"]
    assert params.get("model", "codex-pick") == "codex-pick", params
    assert params.get("approvalPolicy", "never") == "never", params


async def test_host_without_approval_support_gets_a_decline(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"replies": [[{"command": "touch x"}]]})
    async with running_bridge("newline", env=fake.env, approval=False) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "go"))
        assert "approval_auto_denied" in codes(events)
        assert events[-1]["type"] == "run.completed"
    assert [r["result"]["decision"] for r in fake.replies()] == ["decline"]
    assert not (fake.work / "x").exists()


async def test_file_change_approval(tmp_path: Path) -> None:
    change = {"path": "new.txt", "kind": "add", "diff": "content\n"}
    fake = Fake(
        tmp_path,
        {
            "replies": [
                [{"file_change": [change], "reason": "add a file"}, {"text": "done"}],
                [{"file_change": [{**change, "path": "no.txt"}]}, {"text": "skipped"}],
            ]
        },
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "write"), allow("session"))
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["action"] == "fileChange" and asked["title"] == "Change new.txt"
        assert asked["modes"] == ["once", "session"]
        assert asked["input"]["changes"] == [
            {"path": "new.txt", "kind": "add", "diff": "content\n"}
        ]
        assert asked["input"]["reason"] == "add a file"
        tools = of_type(events, "tool.activity")
        assert [t["status"] for t in tools] == ["started", "completed"]
        assert tools[0]["name"] == "fileChange"
        assert (fake.work / "new.txt").read_text() == "content\n"
        events = await drive(bridge, await start(bridge, session, "write"), deny)
        assert [t["status"] for t in of_type(events, "tool.activity")] == ["started", "failed"]
        assert events[-1]["type"] == "run.completed"
    assert not (fake.work / "no.txt").exists()
    decisions = [r["result"]["decision"] for r in fake.replies()]
    assert decisions == ["acceptForSession", "decline"]


async def test_events_reasoning_plan_output_and_notices(tmp_path: Path) -> None:
    plan = [{"step": "Look", "status": "completed"}, {"step": "Fix", "status": "inProgress"}]
    steps = [
        {"reasoning": "Thinking it over", "deltas": 2},
        {"plan": plan},
        {"command": "echo hi", "approval": False, "output": "hi\n", "exit_code": 3},
        {"notify": {"method": "deprecationNotice", "params": {"summary": "old", "details": None}}},
        {
            "notify": {
                "method": "error",
                "params": {
                    "error": {"message": "Reconnecting... 1/5", "codexErrorInfo": "other"},
                    "willRetry": True,
                    "threadId": "$threadId",
                    "turnId": "$turnId",
                },
            }
        },
        {
            "notify": {
                "method": "thread/realtime/started",
                "params": {"threadId": "$threadId"},
            }
        },
        {
            "notify": {
                "method": "item/started",
                "params": {
                    "item": {"type": "imageView", "id": "iv1", "path": "/x.png"},
                    "threadId": "$threadId",
                    "turnId": "$turnId",
                    "startedAtMs": 0,
                },
            }
        },
        {"text": "All done"},
    ]
    fake = Fake(tmp_path, {"replies": [steps]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "work"))
    assert events[-1]["type"] == "run.completed"
    assert "".join(p["text"] for p in of_type(events, "thinking.delta")) == "Thinking it over"
    assert of_type(events, "plan.updated")[0]["steps"] == [
        {"text": "Look", "status": "completed"},
        {"text": "Fix", "status": "inProgress"},
    ]
    tools = of_type(events, "tool.activity")
    assert [t["status"] for t in tools] == ["started", "output", "failed"]
    assert tools[0]["input"] == {"command": "/bin/bash -lc 'echo hi'", "cwd": str(fake.work)}
    assert tools[1]["output"] == "hi\n" and tools[2]["exitCode"] == 3
    assert {
        "codex_deprecation",
        "codex_retrying",
        "codex_unmapped_notification",
        "codex_unmapped_item",
    } <= codes(events)
    assert "Reconnecting" not in json.dumps(events)
    # A follow-up agent message is separated from the first one.
    assert text_of(events).endswith("All done")


SECRET = "sk-SECRETSECRET123456"
HTTP_500 = {"httpStatusCode": 500}


async def test_failed_turns_are_classified(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {
            "replies": [
                [{"error": f"401 upstream {SECRET}", "codexErrorInfo": "unauthorized"}],
                [{"error": "slow down", "codexErrorInfo": "usageLimitExceeded"}],
                [{"error": "bad", "codexErrorInfo": {"httpConnectionFailed": HTTP_500}}],
            ]
        },
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        got = []
        for _ in range(3):
            events = await drive(bridge, await start(bridge, session, "x"))
            assert events[-1]["type"] == "run.failed"
            got.append(events[-1]["error"]["code"])
            assert "upstream" not in json.dumps(events)
        events = await drive(bridge, await start(bridge, session, "FAIL:boom"))
        got.append(events[-1]["error"]["code"])
    assert got == [
        "provider_auth_required",
        "provider_rate_limited",
        "provider_failed",
        "provider_failed",
    ]
    assert SECRET.encode() not in bridge.stderr


async def test_interrupt_a_stream_then_run_again(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"slow_delay": 0.2})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        run = await start(bridge, session, "SLOW please")

        async def on_event(payload: Msg) -> None:
            if payload["type"] == "text.delta" and payload["text"] == "word0":
                reply = await bridge.call("run/interrupt", {"runId": run})
                assert reply["result"]["state"] == "interrupting"

        t0 = time.monotonic()
        events = await drive(bridge, run, on_event=on_event)
        assert events[-1] == {"type": "run.interrupted", "reason": "user"}
        assert time.monotonic() - t0 < 3
        assert "word39" not in text_of(events)
        events = await drive(bridge, await start(bridge, session, "hello"))
        assert text_of(events) == HELLO
    interrupts = fake.requests("turn/interrupt")
    assert len(interrupts) == 1
    assert set(interrupts[0]["params"]) == {"threadId", "turnId"}


async def test_interrupt_with_a_pending_approval(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"replies": [[{"command": "touch never.txt"}]]})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        run = await start(bridge, session, "go")

        async def on_event(payload: Msg) -> None:
            if payload["type"] == "interaction.requested":
                await bridge.call("run/interrupt", {"runId": run})

        events = await drive(bridge, run, on_event=on_event)
        assert events[-1]["type"] == "run.interrupted"
        settled = of_type(events, "interaction.settled")
        assert [s["status"] for s in settled] == ["cancelled"]
        events = await drive(bridge, await start(bridge, session, "hi"))
        assert events[-1]["type"] == "run.completed"
    assert not (fake.work / "never.txt").exists()
    assert [r["result"]["decision"] for r in fake.replies() if "result" in r] == ["cancel"]


async def test_steer_adds_input_to_the_running_turn(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"slow_delay": 0.3, "steer_latency": 0.05})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        run = await start(bridge, session, "SLOW")

        async def on_event(payload: Msg) -> None:
            if payload["type"] == "text.delta" and payload["text"] == "word0":
                await bridge.result("run/steer", {"runId": run, "input": {"text": "say hello"}})

        events = await drive(bridge, run, on_event=on_event)
        assert events[-1]["type"] == "run.completed"
        assert text_of(events).endswith(HELLO)
        assert "word39" not in text_of(events)
        # Steering a finished run is refused.
        reply = await bridge.call("run/steer", {"runId": run, "input": {"text": "late"}})
        assert reply["error"]["data"]["code"] == "run_not_active"
    steer = fake.requests("turn/steer")[0]["params"]
    assert steer["input"][0]["text"] == "say hello" and steer["expectedTurnId"]


async def test_crash_mid_turn_then_the_session_restarts(tmp_path: Path) -> None:
    secret = "sk-CRASHSECRET1234567890"
    fake = Fake(
        tmp_path,
        {
            "faults": {
                "crash": {
                    "after": "turn/started",
                    "count": 2,
                    "stderr": f"thread 'main' panicked: key {secret}",
                    "once": str(tmp_path / "crashed"),
                }
            }
        },
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        # Request id 0 of the first process is asked and resolved...
        events = await drive(bridge, await start(bridge, session, "TOOL:touch a"), allow())
        assert len(of_type(events, "interaction.requested")) == 1
        events = await drive(bridge, await start(bridge, session, "hello"))
        assert events[-1]["type"] == "run.failed"
        assert events[-1]["error"]["code"] == "provider_crashed"
        assert secret not in json.dumps(events)
        assert (await bridge.result("bridge/ping", {"data": 1}))["data"] == 1
        # The next run starts a new app-server and resumes the same thread.
        events = await drive(bridge, await start(bridge, session, "again"))
        assert events[-1]["type"] == "run.completed" and text_of(events) == HELLO
        # ...and id 0 of the new process is a new request, asked again.
        events = await drive(bridge, await start(bridge, session, "TOOL:touch b"), allow())
        assert len(of_type(events, "interaction.requested")) == 1
        assert events[-1]["type"] == "run.completed"
        await bridge.result("session/close", {"sessionId": session})
    decisions = [r["result"]["decision"] for r in fake.replies() if "result" in r]
    assert decisions == ["accept", "accept"]
    assert secret.encode() not in bridge.stderr
    assert b"panicked" in bridge.stderr  # the redacted tail reached the log
    resumes = fake.requests("thread/resume")
    assert len(resumes) == 1
    assert resumes[0]["params"]["sandbox"] == "workspace-write"
    assert resumes[0]["params"]["approvalPolicy"] == "untrusted"


async def test_exit_while_a_grandchild_holds_stdout(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {
            "replies": [[{"text": "partial"}, {"sleep": 10}]],
            "faults": {"crash": {"after": "item/agentMessage/delta", "code": 101}},
        },
    )
    seconds = f"30.{os.getpid()}{int(time.monotonic() * 1000) % 100000}"
    marker = f"sleep\0{seconds}"  # a unique command line: the grandchild
    wrapper = tmp_path / "codex-with-grandchild"
    wrapper.write_text(f'#!/bin/sh\nsleep {seconds} &\nexec {shlex.quote(str(fake.exe))} "$@"\n')
    wrapper.chmod(0o755)
    async with running_bridge("newline", env={disc.ENV_EXECUTABLE: str(wrapper)}) as bridge:
        session = await create(bridge, fake)
        t0 = time.monotonic()
        events = await drive(bridge, await start(bridge, session, "hello"), timeout=10)
        assert events[-1]["type"] == "run.failed"
        assert events[-1]["error"]["code"] == "provider_crashed"
        assert time.monotonic() - t0 < 5
        assert (await bridge.result("bridge/ping", {"data": 2}))["data"] == 2
    # The process group, grandchild included, is gone.
    deadline = time.monotonic() + 5
    while any(marker in _cmdline(pid) for pid in os.listdir("/proc") if pid.isdigit()):
        assert time.monotonic() < deadline, "the grandchild survived"
        await anyio.sleep(0.1)


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


async def test_eof_mid_turn(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path,
        {"faults": {"eof": {"after": "item/started", "count": 2, "exit": False}}},
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "hello"))
        assert events[-1]["error"]["code"] == "provider_crashed"
        closed = await bridge.result("session/close", {"sessionId": session})
        assert closed["session"]["state"] == "closed"
        # The bridge keeps serving: a fresh session works.
        (tmp_path / "b").mkdir()
        other = Fake(tmp_path / "b")
        session = await bridge.result(
            "session/create", other.session_params(executable=str(other.exe))
        )
        run = await start(bridge, session["session"]["sessionId"], "hi")
        assert (await drive(bridge, run))[-1]["type"] == "run.completed"


async def test_stray_frames_do_not_touch_the_run(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"faults": {"stray": True, "garbage_stdout": True}})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "hello"))
    assert events[-1]["type"] == "run.completed"
    assert text_of(events) == HELLO  # no "stray" delta, and not ended by a stray turn
    stray = [p for p in events if p.get("code") == "codex_stray_frame"]
    assert 1 <= len(stray) <= 2


async def test_unknown_server_request_is_answered_method_not_found(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"faults": {"unknown_server_request": {"method": "made/up"}}})
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "hello"))
        assert events[-1]["type"] == "run.completed" and text_of(events) == HELLO
    errors = [r for r in fake.replies() if "error" in r]
    assert errors and errors[0]["error"]["code"] == -32601
    assert "jsonrpc" not in errors[0]


async def test_ignored_interrupt_is_forced_and_the_session_revives(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"slow_delay": 0.2, "faults": {"ignore_interrupt": True}})
    async with running_bridge("newline", "--interrupt-grace", "1", env=fake.env) as bridge:
        session = await create(bridge, fake)
        run = await start(bridge, session, "SLOW")

        async def on_event(payload: Msg) -> None:
            if payload["type"] == "text.delta" and payload["text"] == "word0":
                await bridge.call("run/interrupt", {"runId": run})

        t0 = time.monotonic()
        events = await drive(bridge, run, on_event=on_event)
        assert events[-1] == {"type": "run.interrupted", "reason": "user", "forced": True}
        assert 0.9 < time.monotonic() - t0 < 4
        # The provider session was disposed; the next run resumes the thread.
        fake.write({"faults": {}})
        events = await drive(bridge, await start(bridge, session, "hello"))
        assert events[-1]["type"] == "run.completed" and text_of(events) == HELLO
    assert len(fake.requests("thread/resume")) == 1


async def test_stderr_flood_does_not_block(tmp_path: Path) -> None:
    fake = Fake(
        tmp_path, {"faults": {"stderr_flood": {"lines": 5000, "bytes": 400, "when": "turn"}}}
    )
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "hello"))
    assert events[-1]["type"] == "run.completed" and text_of(events) == HELLO


async def test_user_input_question_and_question_set(tmp_path: Path) -> None:
    one = {
        "method": "item/tool/requestUserInput",
        "params": {
            "threadId": "$threadId",
            "turnId": "$turnId",
            "itemId": "call_q1",
            "isBlocking": True,
            "questions": [
                {
                    "id": "color",
                    "header": "Color",
                    "question": "Which color?",
                    "options": [
                        {"label": "Red (Recommended)", "description": "warm"},
                        {"label": "Blue", "description": "cold"},
                    ],
                }
            ],
        },
    }
    two = json.loads(json.dumps(one))
    two["params"]["questions"].append(
        {"id": "size", "header": "Size", "question": "How big?", "options": None}
    )
    fake = Fake(tmp_path, {"replies": [[{"server_request": one}], [{"server_request": two}]]})

    def answer(params: Msg) -> Msg:
        request = params["request"]
        if request["kind"] == "question":
            return {"kind": "question", "choice": "Blue"}
        return {"kind": "questionSet", "answers": {"color": "Red (Recommended)", "size": "huge"}}

    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake)
        events = await drive(bridge, await start(bridge, session, "q"), answer)
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["kind"] == "question" and asked["prompt"] == "Color: Which color?"
        assert [c["id"] for c in asked["choices"]] == ["Red (Recommended)", "Blue"]
        assert asked["allowFreeText"] is True
        events = await drive(bridge, await start(bridge, session, "q"), answer)
        asked = of_type(events, "interaction.requested")[0]["request"]
        assert asked["kind"] == "questionSet"
        assert [i["key"] for i in asked["items"]] == ["color", "size"]
    answers = [r["result"]["answers"] for r in fake.replies() if "result" in r]
    assert answers == [
        {"color": {"answers": ["Blue"]}},
        {"color": {"answers": ["Red (Recommended)"]}, "size": {"answers": ["huge"]}},
    ]


async def test_resume_in_a_fresh_bridge(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with running_bridge("newline", env=fake.env) as bridge:
        session = await create(bridge, fake, model="stub-model", reasoningEffort="low")
        events = await drive(bridge, await start(bridge, session, "first"))
        assert events[-1]["type"] == "run.completed"
        record = (await bridge.result("session/export", {"sessionId": session}))["record"]
    assert record["providerId"] == "codex"
    opaque = record["opaque"]
    assert opaque["codexHome"] == str(fake.home)
    assert opaque["sandbox"] == "workspace-write" and opaque["approvalPolicy"] == "untrusted"
    assert opaque["cwd"] == str(fake.work) and opaque["cliVersion"] == "0.171.0"
    thread_id = opaque["threadId"]
    async with running_bridge("content-length", env=fake.env) as bridge:
        resumed = await bridge.result("session/resume", {"record": record})
        session = resumed["session"]["sessionId"]
        events = await drive(bridge, await start(bridge, session, "second"))
        assert events[-1]["type"] == "run.completed"
        bad = dict(record, opaque={"threadId": "not-a-uuid"})
        reply = await bridge.call("session/resume", {"record": bad})
        assert reply["error"]["data"]["code"] == "recovery_invalid"
        reply = await bridge.call("session/resume", {"record": dict(record, opaque=[1])})
        assert reply["error"]["data"]["code"] == "recovery_invalid"
    resume = fake.requests("thread/resume")[0]["params"]
    assert resume == {
        "threadId": thread_id,
        "excludeTurns": True,
        "cwd": str(fake.work),
        "approvalPolicy": "untrusted",
        "sandbox": "workspace-write",
        "model": "stub-model",
    }
    efforts = [t["params"].get("effort") for t in fake.requests("turn/start")]
    assert efforts == ["low", "low"]


async def test_startup_failures_are_classified(tmp_path: Path) -> None:
    fake = Fake(tmp_path, {"faults": {"exit_at_start": {"code": 1, "stderr": "Error: bad config"}}})
    async with running_bridge("newline", env=fake.env) as bridge:
        reply = await bridge.call("session/create", fake.session_params())
        assert reply["error"]["data"]["code"] == "provider_unavailable"
        reply = await bridge.call(
            "session/create", fake.session_params(codexHome=str(tmp_path / "missing"))
        )
        assert reply["error"]["data"]["code"] == "invalid_option"
        assert reply["error"]["data"]["details"]["option"] == "codexHome"
        for bad in (["no equals sign"], ["--dangerously-bypass-approvals-and-sandbox=1"]):
            reply = await bridge.call("session/create", fake.session_params(config=bad))
            assert reply["error"]["data"]["code"] == "invalid_option"
        reply = await bridge.call("session/create", fake.session_params(passEnv=["A=B"]))
        assert reply["error"]["data"]["code"] == "invalid_option"
        reply = await bridge.call("session/create", fake.session_params(sandbox="everything"))
        assert reply["error"]["data"]["code"] == "invalid_option"
        assert (await bridge.result("bridge/ping", {})).get("data") is None
    assert b"bad config" in bridge.stderr


async def test_argv_carries_strict_config_and_overrides(tmp_path: Path) -> None:
    argv_log = tmp_path / "argv.txt"
    fake = Fake(tmp_path)
    wrapper = tmp_path / "codex-argv"
    wrapper.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(argv_log))}\n'
        f"env > {shlex.quote(str(tmp_path / 'env.txt'))}\n"
        f'exec {shlex.quote(str(fake.exe))} "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {**fake.env, "OPENAI_API_KEY": "sk-test-not-real", "UNRELATED_TOKEN": "x"}
    async with running_bridge("newline", env=env) as bridge:
        params = fake.session_params(
            executable=str(wrapper), config=['model_reasoning_summary="auto"', "a.b=1"]
        )
        session = (await bridge.result("session/create", params))["session"]["sessionId"]
        await bridge.result("session/close", {"sessionId": session})
    assert argv_log.read_text().splitlines() == [
        "app-server",
        "--strict-config",
        "-c",
        "features.plugins=false",
        "-c",
        'model_reasoning_summary="auto"',
        "-c",
        "a.b=1",
    ]
    lines = (tmp_path / "env.txt").read_text().splitlines()
    child_env = dict(line.split("=", 1) for line in lines if "=" in line)
    assert child_env["CODEX_HOME"] == str(fake.home)
    assert child_env["OPENAI_API_KEY"] == "sk-test-not-real"
    assert "UNRELATED_TOKEN" not in child_env and "AGENT_BRIDGE_CODEX_PATH" not in child_env
    assert os.path.realpath(child_env["PWD"]) == os.path.realpath(fake.work)


async def test_the_payloads_of_one_message_are_emitted_in_one_batch() -> None:
    """Several payloads projected from one app-server message go to the runtime in one
    ``emit_nowait_many`` (each its own event there), with the message as their raw record;
    nothing once the run ended."""
    from agent_bridge.adapters.codex.session import CodexRun
    from agent_bridge.spi import RunOutcome
    from agent_bridge.wire.events import ProviderPayload, TextDelta, ThinkingDelta

    calls: list[tuple[str, list[Any], Any]] = []

    class Ctx:
        def emit_nowait(self, payload: Any, raw: Any = None) -> None:
            calls.append(("one", [payload], raw))

        def emit_nowait_many(self, payloads: Any, raw: Any = None) -> None:
            calls.append(("many", list(payloads), raw))

    class Session:
        def run_finished(self, run: Any) -> None:
            return None

    run = CodexRun(Session(), Ctx())  # type: ignore[arg-type]
    run.raw = b'{"method":"item/agentMessage/delta"}'
    payloads: list[ProviderPayload] = [TextDelta(text="a"), ThinkingDelta(text="b")]
    run.emit_all(payloads)
    run.emit_all([])
    assert calls == [("many", payloads, run.raw)]
    run.finish(RunOutcome.completed(), emit=False)
    run.emit_all([TextDelta(text="late")])
    assert len(calls) == 1


async def test_provider_limits_reads_them_from_codex(tmp_path: Path) -> None:
    """provider/limits asks Codex (account/rateLimits/read): without a live session a
    short-lived app-server (at most once in 30 s), else the live session's, and keeps
    the figures; where Codex refuses the read (no ChatGPT login) it answers with what it
    knows, and does not ask that way again."""
    snapshot = {
        "limitId": "codex",
        "primary": {"usedPercent": 42, "windowDurationMins": 300, "resetsAt": 1796200000},
        "secondary": {"usedPercent": 7, "windowDurationMins": 10080, "resetsAt": 1796800000},
        "credits": None,
        "rateLimitReachedType": None,
    }
    import jsonschema  # a declared test dependency (pyproject [test])

    bundle = json.loads(SCHEMA.read_text())
    result_ref = bundle["x-methods"]["clientRequests"]["account/rateLimits/read"]["result"]
    answer = {"rateLimits": snapshot, "rateLimitsByLimitId": None}  # what the fake answers
    jsonschema.validate(answer, {"$ref": result_ref, "definitions": bundle["definitions"]})
    fake = Fake(tmp_path, {"rate_limits": snapshot})

    def reads() -> int:
        return len(fake.requests("account/rateLimits/read"))

    async with running_bridge("newline", env=fake.env) as bridge:
        for _ in range(2):  # no session: a short-lived app-server, once
            limits = await bridge.result("provider/limits", {"provider": "codex"})
            meters = {m["meter"]: m for m in limits["meters"]}
            assert meters["primary"]["percent"] == 42
            assert meters["primary"]["windowSeconds"] == 18000
            assert meters["secondary"]["resetsAt"].startswith("2026-")
            assert limits["updatedAt"]
        assert reads() == 1
        await create(bridge, fake)
        limits = await bridge.result("provider/limits", {"provider": "codex"})
        assert {m["meter"] for m in limits["meters"]} == {"primary", "secondary"}
        assert reads() == 2  # the live session's app-server

    other = tmp_path / "no-login"
    other.mkdir()
    fake = Fake(other)  # no snapshot: refused as without a ChatGPT login
    async with running_bridge("newline", env=fake.env) as bridge:
        for _ in range(2):
            limits = await bridge.result("provider/limits", {"provider": "codex"})
            assert limits.get("meters", []) == [] and "updatedAt" not in limits
        assert reads() == 1
        await create(bridge, fake)
        for _ in range(2):
            limits = await bridge.result("provider/limits", {"provider": "codex"})
            assert limits.get("meters", []) == [] and "updatedAt" not in limits
    assert reads() == 2  # once without a session, once in it: not asked again
