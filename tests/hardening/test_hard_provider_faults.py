"""Provider faults through the real adapters (``claude-code`` and ``codex``) and fake CLIs.

Cases 28, 29, 30, 33, 34, 36, 37 and 38 where the adapters' own suites
(``tests/test_claude_adapter.py``, ``tests/test_codex_adapter.py``) do not already cover
them (see docs/hardening.md for the mapping): the environment a provider really receives,
secrets in provider stderr and errors against every byte a host received and the log
file, prompt text that looks like shell, provider stdout noise / CRLF / truncated and
oversized lines, and a provider that exits while an interaction is pending.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hardening.fakecli import FakeCLI, alive, eventually, pids_with
from hardening.hosts import RawHost, RecordingBridge, recording_bridge

from agent_bridge.processes import CHILD_ENV_ALLOWLIST
from agent_bridge.wire.errors import ERROR_CODES

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

KINDS = ["claude", "codex"]


def one_turn(kind: str, text: str = "hello") -> dict[str, Any]:
    return {"turns": [text]} if kind == "claude" else {"replies": [[{"text": text}]]}


async def create(bridge: RecordingBridge, fake: FakeCLI, **options: Any) -> str:
    result = await bridge.result("session/create", fake.create_params(**options), timeout=20)
    return str(result["session"]["sessionId"])


async def run(bridge: RecordingBridge, session_id: str, text: str = "go") -> str:
    result = await bridge.result("run/start", {"sessionId": session_id, "input": {"text": text}})
    return str(result["runId"])


def check_closed_set_errors(bridge: RecordingBridge) -> None:
    """Every error a host saw -- replies and run.failed events -- carries a message from the
    closed table, never upstream prose."""
    for message in bridge.received:
        if not isinstance(message, dict):
            continue
        info = None
        if "error" in message and isinstance(message["error"].get("data"), dict):
            info = message["error"]["data"]
        elif message.get("method") == "event":
            payload = message["params"]["payload"]
            if payload["type"] == "run.failed":
                info = payload["error"]
        if info is not None and "code" in info and info["code"] in ERROR_CODES:
            assert info["message"] == ERROR_CODES[info["code"]].message, info


# --------------------------------------------------------------------------- case 37

SECRET_ENV = {
    "FOO_API_KEY": "sk-foo-must-not-leak-000001",
    "MY_SERVICE_TOKEN": "tok-must-not-leak-000002",
    "DB_SECRET": "must-not-leak-000003",
    "SOME_PASSWORD": "must-not-leak-000004",
    "GITHUB_TOKEN": "ghp_mustnotleak000000000000000005",
    "UNRELATED_SETTING": "unrelated-000008",
}
DECLARED = {
    "claude": {"ANTHROPIC_API_KEY": "sk-ant-declared-000006", "CLAUDE_CODE_MAX_RETRIES": "0"},
    "codex": {"OPENAI_API_KEY": "sk-openai-declared-000007"},
}
#: What each adapter adds on top of the bridge allowlist (docs/hardening.md).
ADAPTER_NAMES = {
    "claude": {"CLAUDE_CONFIG_DIR", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"},
    "codex": {"CODEX_HOME", "NO_COLOR"},
}


@pytest.mark.parametrize("kind", KINDS)
async def test_case_37_credentials_in_the_bridge_env_do_not_reach_the_provider(
    tmp_path: Path, kind: str
) -> None:
    fake = FakeCLI(tmp_path, kind, one_turn(kind), dump_env=True)
    env = fake.env(**SECRET_ENV, **DECLARED[kind])
    async with recording_bridge("newline", env=env) as bridge:
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        assert (await bridge.terminal(timeout=20))["payload"]["type"] == "run.completed"
    [child_env] = fake.envs()
    for name in SECRET_ENV:
        assert name not in child_env, name
    for value in SECRET_ENV.values():
        assert value not in json.dumps(child_env)
    for name, value in DECLARED[kind].items():
        assert child_env[name] == value  # declared by the adapter: passed on purpose
    assert "AGENT_BRIDGE_CLAUDE_PATH" not in child_env
    assert "AGENT_BRIDGE_CODEX_PATH" not in child_env
    assert "PYTHONPATH" not in child_env  # the bridge's own, not allowlisted
    allowed = CHILD_ENV_ALLOWLIST | ADAPTER_NAMES[kind] | set(DECLARED[kind])
    assert set(child_env) - {"LC_CTYPE"} <= allowed  # Python may set LC_CTYPE itself


async def test_case_37_codex_pass_env_names_a_variable_explicitly(tmp_path: Path) -> None:
    fake = FakeCLI(tmp_path, "codex", one_turn("codex"), dump_env=True)
    async with recording_bridge("newline", env=fake.env(**SECRET_ENV)) as bridge:
        session_id = await create(bridge, fake, passEnv=["MY_SERVICE_TOKEN"])
        await run(bridge, session_id)
        await bridge.terminal(timeout=20)
    [child_env] = fake.envs()
    assert child_env["MY_SERVICE_TOKEN"] == SECRET_ENV["MY_SERVICE_TOKEN"]
    assert "FOO_API_KEY" not in child_env


# --------------------------------------------------------------------------- case 38

SECRETS = (
    "Error: 401 Unauthorized: key sk-ant-api03-HARDENINGsecretVALUE0001 rejected\n"
    "Authorization: Bearer hardeningBEARERtoken0002abcdef\n"
    "retrying with curl -H 'x-api-key: hardeningXAPIKEY0003' https://api.example\n"
    "OPENAI_API_KEY=sk-proj-HARDENINGsecretVALUE0004\n"
    "sent Bearer hardeningBEARERtoken0005xyz to the proxy\n"
)
NEEDLES = [
    "HARDENINGsecretVALUE0001",
    "hardeningBEARERtoken0002",
    "hardeningXAPIKEY0003",
    "HARDENINGsecretVALUE0004",
    "hardeningBEARERtoken0005",
]

CRASH_MID_RUN: dict[str, Any] = {
    "claude": {
        "turns": [
            [
                {"stderr": SECRETS.splitlines()[0]},
                {"text": "partial"},
                {"crash": {"exit_code": 3, "stderr": SECRETS}},
            ]
        ]
    },
    "codex": {
        "replies": [[{"stderr": SECRETS.splitlines()[1]}, {"text": "partial"}, {"sleep": 5}]],
        "faults": {"crash": {"after": "item/agentMessage/delta", "code": 101, "stderr": SECRETS}},
    },
}
CRASH_AT_START: dict[str, Any] = {
    "claude": {"startup": [{"crash": {"exit_code": 2, "stderr": SECRETS}}]},
    "codex": {"faults": {"exit_at_start": {"code": 1, "stderr": SECRETS}}},
}
UPSTREAM_ERROR: dict[str, Any] = {
    "claude": {"turns": [[{"api_error": {"status": 401, "message": SECRETS}}]]},
    "codex": {"replies": [[{"error": SECRETS, "codexErrorInfo": "unauthorized"}]]},
}


def assert_no_secret_anywhere(bridge: RecordingBridge, log_file: Path) -> None:
    host_bytes = bridge.all_bytes()
    stderr = bytes(bridge.stderr)
    log = log_file.read_bytes() if log_file.exists() else b""
    for needle in NEEDLES:
        assert needle.encode() not in host_bytes, f"{needle} reached the host"
        assert needle.encode() not in stderr, f"{needle} reached the bridge's stderr"
        assert needle.encode() not in log, f"{needle} reached the log file"
    check_closed_set_errors(bridge)


@pytest.mark.parametrize("kind", KINDS)
async def test_case_38_secrets_in_provider_stderr_and_errors_are_redacted(
    tmp_path: Path, kind: str
) -> None:
    log_file = tmp_path / "bridge.log"
    fake = FakeCLI(tmp_path, kind, CRASH_MID_RUN[kind])
    args = ("--log-file", str(log_file), "--log-level", "DEBUG")
    async with recording_bridge("newline", *args, env=fake.env()) as bridge:
        # 1. A crash mid-run, with secrets on stderr before and at the crash.
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        terminal = await bridge.terminal(timeout=20)
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_crashed"
        await bridge.result("session/close", {"sessionId": session_id}, timeout=20)
        # 2. A crash at start-up with secrets on stderr.
        fake.write_script(CRASH_AT_START[kind])
        reply = await bridge.call("session/create", fake.create_params(), timeout=20)
        assert reply["error"]["data"]["code"] in ("provider_crashed", "provider_unavailable")
        # 3. An upstream error whose text carries secrets.
        fake.write_script(UPSTREAM_ERROR[kind])
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        terminal = await bridge.terminal(timeout=20)
        assert terminal["payload"]["type"] == "run.failed"
        # The bridge keeps serving.
        await bridge.result("bridge/ping", {})
    assert_no_secret_anywhere(bridge, log_file)
    log = log_file.read_text()
    assert "[REDACTED]" in log, "the stderr tail was not logged at all; the test proves nothing"


# --------------------------------------------------------------------------- case 36

INJECTION = (
    "; rm -rf ~ && $(id) `id` | cat /etc/passwd\n--dangerously-skip-permissions\n-rf ' \" \\"
)


@pytest.mark.parametrize("kind", KINDS)
async def test_case_36_prompt_text_reaches_the_provider_as_data_never_in_argv(
    tmp_path: Path, kind: str
) -> None:
    fake = FakeCLI(tmp_path, kind, one_turn(kind))
    async with recording_bridge("newline", env=fake.env()) as bridge:
        session_id = await create(bridge, fake)
        await run(bridge, session_id, INJECTION)
        assert (await bridge.terminal(timeout=20))["payload"]["type"] == "run.completed"
        if kind == "claude":
            # A session option starting with "-" stays one argv element, glued to its flag.
            reply = await bridge.call(
                "session/create", fake.create_params(model="--help; id"), timeout=20
            )
            assert "result" in reply, reply
        else:
            # Config overrides are checked before they become argv.
            reply = await bridge.call(
                "session/create", fake.create_params(config=["--help=1"]), timeout=20
            )
            assert reply["error"]["data"]["code"] == "invalid_option"
    for start in fake.pids():
        argv = start["argv"]
        assert not any("rm -rf" in a or "$(id)" in a or "/etc/passwd" in a for a in argv), argv
        assert "--dangerously-skip-permissions" not in argv
        assert "-rf" not in argv
    if kind == "claude":
        assert "--model=--help; id" in fake.pids()[-1]["argv"]
        texts = [json.dumps(r["in"]) for r in fake.records() if isinstance(r, dict) and "in" in r]
    else:
        texts = [json.dumps(r) for r in fake.records()]
    assert any(json.dumps(INJECTION)[1:-1] in t for t in texts), "the prompt never arrived"


# --------------------------------------------------------------------------- case 33

NOISE = [
    "Debugger listening on ws://127.0.0.1:9229/x\n",
    "\n",
    "   \n",
    "\x1b[31mwarning:\x1b[0m something\n",
    "{not json\n",
    "[1,2,3]\n",
    "\xff\xfe binary\n",
]


@pytest.mark.parametrize("kind", KINDS)
async def test_case_33_stdout_noise_lines_and_crlf_are_skipped_and_accepted(
    tmp_path: Path, kind: str
) -> None:
    fake = FakeCLI(
        tmp_path, kind, one_turn(kind, "clean text"), stdout={"crlf": True, "noise": NOISE}
    )
    async with recording_bridge("newline", env=fake.env()) as bridge:
        session_id = await create(bridge, fake)
        run_id = await run(bridge, session_id)
        terminal = await bridge.terminal(timeout=20)
        assert terminal["payload"]["type"] == "run.completed", terminal
        text = "".join(
            m["params"]["payload"]["text"]
            for m in bridge.received
            if m.get("method") == "event"
            and m["params"].get("runId") == run_id
            and m["params"]["payload"]["type"] == "text.delta"
        )
        assert text == "clean text"
        await bridge.result("bridge/ping", {})
    assert b"Debugger listening" not in bridge.all_bytes()


TRUNCATED_RESULT: dict[str, Any] = {
    # A result record cut short at EOF: it must not complete the run.
    "claude": '{"type":"result","subtype":"success","is_error":false,"result":"forged","sessi',
    "codex": '{"method":"turn/completed","params":{"threadId":"x","turn":{"id":"t","status":"compl',
}
EXIT_MID_TURN: dict[str, Any] = {
    "claude": {"turns": [[{"text": "partial"}, {"exit": 0}]]},
    "codex": {
        "replies": [[{"text": "partial"}, {"sleep": 5}]],
        "faults": {"eof": {"after": "item/agentMessage/delta", "exit": True}},
    },
}


@pytest.mark.parametrize("kind", KINDS)
async def test_case_33_truncated_last_line_is_dropped_and_the_run_fails_cleanly(
    tmp_path: Path, kind: str
) -> None:
    fake = FakeCLI(tmp_path, kind, EXIT_MID_TURN[kind], stdout={"tail": TRUNCATED_RESULT[kind]})
    async with recording_bridge("newline", env=fake.env()) as bridge:
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        terminal = await bridge.terminal(timeout=20)
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_crashed"
        await bridge.result("bridge/ping", {})
    assert b"forged" not in bridge.all_bytes()


OVERSIZED: dict[str, Any] = {
    # Just over each adapter's line limit: Codex goes through rpc.Connection (16 MiB),
    # Claude's reader has its own 64 MiB limit.
    # (more than one read chunk over, so the limit is crossed before the newline arrives)
    "claude": 65 * 1024 * 1024,
    "codex": 17 * 1024 * 1024,
}
AFTER = {"claude": '"subtype":"init"', "codex": "turn/started"}
TWO_TURNS: dict[str, Any] = {
    "claude": {"turns": [[{"sleep": 0.2}, {"text": "after the big line"}], "second"]},
    "codex": {"replies": [[{"sleep": 0.2}, {"text": "after the big line"}], [{"text": "second"}]]},
}


@pytest.mark.parametrize("kind", KINDS)
async def test_case_33_oversized_stdout_line_is_a_per_message_error(
    tmp_path: Path, kind: str
) -> None:
    fake = FakeCLI(
        tmp_path,
        kind,
        TWO_TURNS[kind],
        stdout={"oversized_after": AFTER[kind], "oversized_bytes": OVERSIZED[kind]},
    )
    async with recording_bridge("newline", env=fake.env()) as bridge:
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        terminal = await bridge.terminal(timeout=30)
        assert terminal["payload"]["type"] == "run.completed", terminal
        await run(bridge, session_id)
        assert (await bridge.terminal(timeout=30))["payload"]["type"] == "run.completed"
    assert len(fake.pids()) == 1  # the same provider process went on


# --------------------------------------------------------------------------- case 28/45

EXIT_WITH_PENDING: dict[str, Any] = {
    "claude": {
        "turns": [
            [
                {
                    "control_request": {
                        "subtype": "can_use_tool",
                        "tool_name": "Bash",
                        "input": {"command": "ls"},
                        "tool_use_id": "toolu_1",
                    }
                },
                {"sleep": 0.5},
                {"crash": {"exit_code": 9, "stderr": "gone"}},
            ]
        ]
    },
    "codex": {
        "replies": [[{"command": "ls", "approval": True}]],
        "faults": {
            "crash": {"after": "item/commandExecution/requestApproval", "code": 9, "stderr": "x"}
        },
    },
}


@pytest.mark.parametrize("kind", KINDS)
async def test_case_28_provider_exits_while_an_interaction_is_pending(
    tmp_path: Path, kind: str
) -> None:
    fake = FakeCLI(tmp_path, kind, EXIT_WITH_PENDING[kind])
    async with recording_bridge("newline", env=fake.env()) as bridge:
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        # The interaction.requested event always comes; the interaction/request itself
        # may not, when the provider is gone before the event was released to the host
        # (the bridge never asks a host about an interaction that is already settled).
        requested = await bridge.event("interaction.requested", timeout=20)
        interaction_id = requested["payload"]["interactionId"]
        terminal = await bridge.terminal(timeout=20)
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_crashed"
        settled = [
            m["params"]["payload"]
            for m in bridge.received
            if m.get("method") == "event"
            and m["params"]["payload"]["type"] == "interaction.settled"
            and m["params"]["payload"]["interactionId"] == interaction_id
        ]
        # Settled exactly once, by the bridge, before the terminal event.
        assert [s["status"] for s in settled] in (["cancelled"], ["withdrawn"]), settled
        # The settlement came before the terminal event; a late answer is refused.
        sequences = [m["params"]["sequence"] for m in bridge.received if m.get("method") == "event"]
        assert sequences == sorted(sequences)
        late = await bridge.call(
            "interaction/respond",
            {"interactionId": interaction_id, "answer": {"kind": "approval", "decision": "allow"}},
        )
        assert late["error"]["data"]["code"] in (
            "interaction_already_settled",
            "interaction_not_pending",
        )
        # The provider's process group is gone, grandchild included, and the bridge serves.
        assert await eventually(lambda: not pids_with(fake.marker), timeout=10), pids_with(
            fake.marker
        )
        await bridge.result("bridge/ping", {})


CRASH_PLAIN: dict[str, Any] = {
    "claude": {"turns": [[{"text": "partial"}, {"crash": {"exit_code": 3, "stderr": "boom"}}]]},
    "codex": {
        "replies": [[{"text": "partial"}, {"sleep": 5}]],
        "faults": {"crash": {"after": "item/agentMessage/delta", "code": 101, "stderr": "boom"}},
    },
}


@pytest.mark.parametrize("kind", KINDS)
async def test_case_31_provider_exits_while_a_grandchild_holds_its_stdout(
    tmp_path: Path, kind: str
) -> None:
    """Case 28 with the twist of case 31: the provider dies mid-run but a grandchild it
    started keeps the stdout pipe open, so no EOF comes.  The run must still fail with a
    classified error, soon, and the whole process group must be gone."""
    fake = FakeCLI(tmp_path, kind, CRASH_PLAIN[kind], grandchild=True)
    async with recording_bridge("newline", env=fake.env()) as bridge:
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        terminal = await bridge.terminal(timeout=5)
        assert terminal["payload"]["type"] == "run.failed"
        assert terminal["payload"]["error"]["code"] == "provider_crashed"
        assert await eventually(lambda: not pids_with(fake.marker), timeout=5), pids_with(
            fake.marker
        )
        await bridge.result("bridge/ping", {})


# --------------------------------------------------------------------------- case 34

HANDSHAKE_NEVER_ANSWERED: dict[str, Any] = {
    "claude": {"startup_delay": 60},
    "codex": {"faults": {"hang": {"on": "initialize"}}},
}


@pytest.mark.parametrize("kind", KINDS)
async def test_case_34_handshake_never_answered_is_a_timeout_and_leaves_no_process(
    tmp_path: Path, kind: str
) -> None:
    """A provider that starts but never answers its handshake: ``provider_timeout`` after
    the start-up budget, and nothing of it left (grandchild included).  Codex's budget is
    a 30 s constant, shortened here in the bridge process itself."""
    fake = FakeCLI(tmp_path, kind, HANDSHAKE_NEVER_ANSWERED[kind], grandchild=True)
    prelude = (
        "import agent_bridge.adapters.codex.session as s\ns.STARTUP_TIMEOUT = 1.5"
        if kind == "codex"
        else ""
    )
    async with RawHost.spawn(env=fake.env(), prelude=prelude) as host:
        await host.initialize()
        params = fake.create_params()
        if kind == "claude":
            params["options"]["startupTimeoutSeconds"] = 1
        started = time.monotonic()
        reply = await host.call("session/create", params)
        elapsed = time.monotonic() - started
        assert reply["error"]["data"]["code"] == "provider_timeout", reply
        assert reply["error"]["data"]["retryable"] is True
        assert elapsed < 8, elapsed
        assert fake.pids(), "the provider was never started"
        assert await eventually(lambda: not pids_with(fake.marker), timeout=5), pids_with(
            fake.marker
        )
        assert "result" in await host.call("bridge/ping", {})


# --------------------------------------------------------------------------- case 29/30


@pytest.mark.parametrize("kind", KINDS)
async def test_case_30_close_finishes_while_the_provider_floods_and_is_blocked_writing(
    tmp_path: Path, kind: str
) -> None:
    """A provider blocked writing (stdout and stderr both flooded, nobody reading fast
    enough) when the session closes: close still finishes within its budget and the
    process group is gone."""
    flood = (
        {"turns": [[{"stderr": "e" * 1000, "repeat": 200_000}]]}
        if kind == "claude"
        else {
            "replies": [[{"stderr": "e" * 1000, "repeat": 200_000}]],
            "faults": {"stderr_flood": {"lines": 200_000, "bytes": 1000, "when": "turn"}},
        }
    )
    fake = FakeCLI(tmp_path, kind, flood, grandchild=True)
    async with recording_bridge("newline", env=fake.env()) as bridge:
        session_id = await create(bridge, fake)
        await run(bridge, session_id)
        pid = fake.pids()[-1]["pid"]
        assert alive(pid)
        started = time.monotonic()
        await bridge.result("session/close", {"sessionId": session_id}, timeout=30)
        elapsed = time.monotonic() - started
        assert elapsed < 15, elapsed
        assert await eventually(lambda: not pids_with(fake.marker), timeout=5)
        await bridge.result("bridge/ping", {})
