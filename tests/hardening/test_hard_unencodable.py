"""Text that cannot be encoded (issue 30, item 2): a ``str`` holding a lone surrogate,
which is what bytes that are not UTF-8 become when Python decodes argv, stdin or a file
name with ``surrogateescape``.

The rule: an event is encoded and validated before it is given a sequence number; what
a host was shown is recorded, always; input a provider cannot take is refused up front.
Before the fix, ``exec`` with such a prompt stamped ``run.started`` with sequence 1,
failed to encode it (a traceback), then recorded ``run.interrupted`` at sequence 2 after
nothing: a gap that made ``events/read`` answer ``history_unavailable`` for good.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from bridge_client import ROOT
from runtime_hosts import FakeHost
from stub_providers import BodyProvider

from agent_bridge.errors import BridgeError
from agent_bridge.journal import open_history
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime
from agent_bridge.spi import (
    RunContext,
)
from agent_bridge.wire.events import TextDelta
from agent_bridge.wire.methods import EventsReadParams, RunInput, RunStartParams

NOT_UTF8 = "caf\udce9"  # b"caf\xe9" decoded with surrogateescape


def exec_cli(
    state: Path, *args: str | bytes, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agent_bridge", "exec", "--state-dir", str(state), *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )


def read_back(state: Path) -> subprocess.CompletedProcess[bytes]:
    """``exec`` of a good prompt on the same journal: it must work."""
    return exec_cli(state, "--provider", "scripted", "after")


@pytest.mark.parametrize("where", ["argv", "stdin"])
def test_exec_refuses_a_prompt_that_is_not_utf8_before_opening_a_session(
    tmp_path: Path, where: str
) -> None:
    state = tmp_path / "state"
    if where == "argv":
        done = exec_cli(state, "--provider", "scripted", b"caf\xe9 au lait")
    else:
        done = exec_cli(state, "--provider", "scripted", "-", stdin=b"caf\xe9 au lait\n")
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""  # no event was shown
    lines = done.stderr.decode().splitlines()
    assert lines == ["agent-bridge exec: the prompt is not UTF-8 (byte 0xe9 at offset 3)"]
    # the journal is intact: the next exec works and its session's history is gapless
    after = read_back(state)
    assert after.returncode == 0, after.stderr
    events = [msgspec.json.decode(line) for line in after.stdout.splitlines()]
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert b"Traceback" not in done.stderr + after.stderr


def test_exec_refuses_a_workspace_or_option_that_is_not_utf8_naming_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    bad_dir = tmp_path / os.fsdecode(b"w\xe9")
    bad_dir.mkdir()
    done = exec_cli(state, "--provider", "scripted", "--workspace", str(bad_dir), "hi")
    assert done.returncode == 2, done.stderr
    assert b"invalid_params" in done.stderr and b"field: workspace" in done.stderr
    assert done.stdout == b"" and b"Traceback" not in done.stderr
    done = exec_cli(state, "--provider", "scripted", "--option", 'label="\\udce9"', "hi")
    assert done.returncode == 2, done.stderr
    assert b"field: options" in done.stderr and b"Traceback" not in done.stderr


async def _surrogates(ctx: RunContext) -> None:
    await ctx.emit(TextDelta("before "))
    await ctx.emit(TextDelta(NOT_UTF8))
    await ctx.emit_many([TextDelta("a"), TextDelta(NOT_UTF8), TextDelta("b")])
    await ctx.emit(TextDelta(" after"))


async def test_an_unencodable_provider_event_takes_no_sequence_and_the_host_saw_what_is_stored(
    tmp_path: Path,
) -> None:
    registry = ProviderRegistry(
        [BodyProvider(_surrogates, "surrogates", "Surrogates")], load_entry_points=False
    )
    host = FakeHost()
    async with Runtime(registry, history=open_history(str(tmp_path))) as runtime:
        info = await runtime.create_session("surrogates", subscriber=host)
        with pytest.raises(BridgeError) as refused:  # input refused up front
            await runtime.start_run(RunStartParams(info.session_id, RunInput(NOT_UTF8)))
        assert refused.value.error_code == "invalid_params"
        assert refused.value.info.details == {
            "field": "input",
            "reason": "text that is not valid Unicode (not UTF-8)",
        }
        started = await runtime.start_run(RunStartParams(info.session_id, RunInput("go")))
        await runtime.runs[started.run_id].done.wait()
        await runtime.flush()
        page = msgspec.json.decode(
            await runtime.read_events(EventsReadParams(info.session_id, after=0, limit=100))
        )
    stored = page["events"]
    assert [e["sequence"] for e in stored] == list(range(1, len(stored) + 1))
    assert stored == host.events[: len(stored)]  # every event shown is recorded, the same
    texts = [e["payload"].get("text") for e in stored if e["payload"]["type"] == "text.delta"]
    assert texts == ["before ", "a", "b", " after"]
    dropped = [e["payload"] for e in stored if e["payload"]["type"] == "diagnostic"]
    assert len(dropped) == 2 and all(d["code"] == "provider_contract" for d in dropped)
    assert any(e["payload"]["type"] == "run.completed" for e in stored)
