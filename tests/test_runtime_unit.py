"""The runtime in-process: identity, snapshots, state tables, options, third-party
providers through the entry-point group."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import running_bridge
from runtime_hosts import FakeHost
from stub_providers import BodyProvider

from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.errors import BridgeError
from agent_bridge.ids import Clock, IdFactory
from agent_bridge.options import resolve_options
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime
from agent_bridge.spi import (
    RunContext,
)
from agent_bridge.states import RUN_TRANSITIONS, IllegalTransition, transition
from agent_bridge.wire.events import ToolActivity
from agent_bridge.wire.methods import RunInput, RunStartParams
from agent_bridge.wire.providers import OptionDescriptor


async def mutating_run(ctx: RunContext) -> None:
    """Emits a payload, then mutates the object it emitted."""
    data: dict[str, Any] = {"path": "a.txt"}
    await ctx.emit(ToolActivity("t1", "Write", "started", input=data))
    data["path"] = "/etc/passwd"  # must not rewrite history


async def test_emitted_payloads_are_snapshotted_and_stamped_by_the_runtime() -> None:
    host = FakeHost()
    wall = iter(float(t) for t in range(1_700_000_000, 1_800_000_000))
    clock = Clock(wall=lambda: next(wall))
    registry = ProviderRegistry(
        [BodyProvider(mutating_run, "mutating", "Mutating")], load_entry_points=False
    )
    async with Runtime(registry, ids=IdFactory("t"), clock=clock) as runtime:
        info = await runtime.create_session("mutating", subscriber=host)
        assert info.session_id == "ses_t000001"
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
        assert started.run_id == "run_t000002"
        await runtime.runs[started.run_id].done.wait()
        with pytest.raises(BridgeError) as caught:
            runtime.interrupt_run(started.run_id)
        assert caught.value.error_code == "run_not_active"
    tool = next(e for e in host.events if e["payload"]["type"] == "tool.activity")
    assert tool["payload"]["input"] == {"path": "a.txt"}
    assert [e["sequence"] for e in host.events] == list(range(1, len(host.events) + 1))
    assert host.events[0]["eventId"] == "evt_t000001_1"
    assert (
        host.events[0]["occurredAt"].endswith("Z")
        and host.events[0]["occurredAt"] < host.events[1]["occurredAt"]
    )
    assert host.events[-1]["payload"] == {"type": "session.closed", "reason": "shutdown"}


async def test_interrupt_unsupported_is_stated_not_faked() -> None:
    registry = ProviderRegistry(
        [BodyProvider(mutating_run, "mutating", "Mutating")], load_entry_points=False
    )
    host = FakeHost()
    async with Runtime(registry) as runtime:
        info = await runtime.create_session("mutating", subscriber=host)
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
        run = runtime.runs[started.run_id]
        if not run.terminal:
            with pytest.raises(BridgeError) as caught:
                runtime.interrupt_run(started.run_id)
            assert caught.value.error_code == "unsupported"
        await run.done.wait()


def test_state_table_rejects_illegal_transitions() -> None:
    assert transition(RUN_TRANSITIONS, "run", "running", "completed") == "completed"
    for current, new in (
        ("completed", "running"),
        ("interrupted", "completed"),
        ("starting", "awaiting_input"),
    ):
        with pytest.raises(IllegalTransition):
            transition(RUN_TRANSITIONS, "run", current, new)


def test_options_are_validated_against_the_descriptor() -> None:
    declared = (
        OptionDescriptor("model", "session", "enum", "the model", values=("a", "b"), default="a"),
        OptionDescriptor("verbose", "session", "boolean", "chatty"),
        OptionDescriptor("tools", "run", "stringList", "tools"),
    )
    assert resolve_options(declared, {}, "session") == {"model": "a"}
    assert resolve_options(declared, {"model": "b", "verbose": True}, "session") == {
        "model": "b",
        "verbose": True,
    }
    for bad in ({"model": "c"}, {"verbose": "yes"}, {"tools": ["x"]}, {"nope": 1}):
        with pytest.raises(BridgeError) as caught:
            resolve_options(declared, bad, "session")
        assert caught.value.error_code == "invalid_option"
    assert resolve_options(declared, {"tools": ["x"]}, "run") == {"tools": ["x"]}


async def test_scripted_provider_rejects_a_bad_script_clearly() -> None:
    registry = ProviderRegistry([ScriptedProvider()], load_entry_points=False)
    async with Runtime(registry) as runtime:
        with pytest.raises(BridgeError) as caught:
            await runtime.create_session(
                "scripted",
                options={"script": {"steps": [{"type": "dance"}]}},
                subscriber=FakeHost(),
            )
        assert caught.value.error_code == "invalid_option"
        details = caught.value.info.details
        assert details is not None and details["option"] == "script"
        reason = str(details["reason"])
        assert reason.startswith("the script does not validate: ")
        assert "dance" in reason and "steps[0]" in reason


async def test_third_party_provider_is_found_through_the_entry_point_group(tmp_path: Path) -> None:
    """A distribution that declares ``agent_bridge.providers`` is picked up by a bridge
    that knows nothing else about it."""
    (tmp_path / "thirdparty_provider.py").write_text(
        textwrap.dedent(
            """
            from agent_bridge.adapters.scripted import ScriptedProvider

            class EchoProvider(ScriptedProvider):
                id = "echo-thirdparty"
            """
        )
    )
    dist = tmp_path / "thirdparty_provider-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: thirdparty-provider\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[agent_bridge.providers]\necho-thirdparty = thirdparty_provider:EchoProvider\n"
    )
    root = Path(__file__).resolve().parent.parent
    env = {"PYTHONPATH": os.pathsep.join([str(root), str(tmp_path)])}
    async with running_bridge(env=env) as bridge:
        providers = await bridge.result("providers/list", {"probe": False})
        assert "echo-thirdparty" in [p["id"] for p in providers["providers"]]
        created = await bridge.result("session/create", {"provider": "echo-thirdparty"})
        await bridge.result(
            "run/start", {"sessionId": created["session"]["sessionId"], "input": {"text": "hey"}}
        )
        text = await bridge.event("text.delta")
        assert text["payload"]["text"] == "You said: hey"
        unknown = await bridge.call("session/create", {"provider": "nope"})
        assert unknown["error"]["data"]["code"] == "provider_not_found"


_ONE_SCRIPTED_SESSION = """
import sys, anyio
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime

async def main():
    async with Runtime(ProviderRegistry.default()) as runtime:
        await runtime.create_session("scripted", options={"script": {"steps": []}})
        try:
            runtime.registry.get("from-config")
        except Exception as exc:
            print("from-config:", type(exc).__name__)
        else:
            print("from-config: found")
    heavy = ("agent_bridge.adapters.acp", "agent_bridge.processes", "ctypes", "tomllib")
    print("loaded:", " ".join(m for m in heavy if m in sys.modules))

anyio.run(main)
"""


@pytest.mark.parametrize("configured", [False, True])
def test_a_scripted_session_loads_no_other_adapter_unless_the_file_configures_agents(
    tmp_path: Path, configured: bool
) -> None:
    """The registry reads the configuration file for ``[acp.agents.<id>]`` before it
    hands out a provider (a configured id replaces a built-in's), but it imports the ACP
    adapter (and with it the spawning module, ``ctypes`` and a TOML parser) only when
    the file has that table: an idle bridge of scripted sessions holds none of them
    (bench/run.py's RSS per idle session)."""
    config = tmp_path / "config.toml"
    if configured:
        config.write_text('[acp.agents.from-config]\ncommand = ["/nonexistent/agent"]\n')
    env = {**os.environ, "AGENT_BRIDGE_CONFIG": str(config)}
    out = subprocess.run(
        [sys.executable, "-c", _ONE_SCRIPTED_SESSION],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    if configured:
        assert "from-config: found" in out
        assert "agent_bridge.adapters.acp" in out and "tomllib" in out
    else:
        assert "from-config: BridgeError" in out
        assert "loaded: \n" in out, out
