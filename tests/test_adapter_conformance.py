"""The adapter conformance kit (:mod:`agent_bridge.testing.conformance`) on the built-in
in-process adapter, and on deliberately broken providers, to show that each check can
fail: a kit that passes everything proves nothing."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from typing import Any

import anyio
import msgspec
import pytest
from stub_providers import stub_descriptor

from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.spi import (
    AgentProvider,
    ProviderRun,
    ProviderSession,
    RunContext,
    RunOutcome,
    SessionContext,
)
from agent_bridge.testing.conformance import (
    CONTRACT,
    AdapterUnderTest,
    ConformanceFailure,
    ProviderConformance,
    RunSpec,
    requirement,
    run_check,
)
from agent_bridge.wire.events import RunCompleted, TextDelta
from agent_bridge.wire.interactions import ApprovalRequest
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import ProviderDescriptor, RunCapabilities


def _script(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"script": {"steps": list(steps)}}


TEXT = RunSpec("hi", _script({"type": "text", "text": "hello there", "chunks": 3}), "hello there")
APPROVAL = RunSpec(
    "touch x",
    _script(
        {
            "type": "approval",
            "title": "touch x",
            "onAllow": [{"type": "text", "text": "allowed"}],
            "onDeny": [{"type": "text", "text": "denied"}],
        }
    ),
)
LONG = RunSpec("wait", _script({"type": "text", "text": "working"}, {"type": "waitForInterrupt"}))
SCRIPTED_DECLARED = {
    "late_interaction": "the scripted provider checks for an interrupt before every step, "
    "so it never raises an interaction after one (the runtime's side is tested in "
    "tests/test_interactions.py)",
}


def scripted(**changes: Any) -> AdapterUnderTest:
    fields: dict[str, Any] = {
        "provider": ScriptedProvider(),
        "text_run": TEXT,
        "approval_run": APPROVAL,
        "long_run": LONG,
        "not_exercised": SCRIPTED_DECLARED,
        "interrupt_grace": 2.0,
        "timeout": 20.0,
    }
    fields.update(changes)
    return AdapterUnderTest(**fields)


class TestScriptedConformance(ProviderConformance):
    """The scripted provider passes every item it can show, and declares the one it
    cannot."""

    @pytest.fixture
    def adapter(self) -> AdapterUnderTest:
        return scripted()


# ---------------------------------------------------------------------- the kit can fail


def _fails(item: str, adapter: AdapterUnderTest, match: str) -> None:
    with pytest.raises(ConformanceFailure, match=match):
        anyio.run(run_check, item, adapter)


def test_an_invalid_payload_fails_valid_payloads() -> None:
    bad = RunSpec("x", _script({"type": "text", "text": "a"}, {"type": "invalid"}))
    _fails("valid_payloads", scripted(text_run=bad), r"\[valid_payloads\].*contract violation")


def test_a_cyclic_payload_fails_valid_payloads() -> None:
    bad = RunSpec("x", _script({"type": "text", "text": "a"}, {"type": "cyclic"}))
    _fails("valid_payloads", scripted(text_run=bad), r"\[valid_payloads\]")


def test_completing_with_a_pending_interaction_fails_no_success_pending() -> None:
    bad = RunSpec("x", _script({"type": "completeWithPending"}))
    _fails(
        "no_success_pending",
        scripted(approval_run=bad),
        r"\[no_success_pending\]",
    )


def test_an_ignored_interrupt_fails_interrupt_not_dispose() -> None:
    deaf = RunSpec(
        "x",
        _script(
            {"type": "text", "text": "a"}, {"type": "waitForInterrupt", "ignoreInterrupt": True}
        ),
    )
    _fails(
        "interrupt_not_dispose",
        scripted(long_run=deaf, interrupt_grace=0.2),
        r"forced|disposed",
    )


def test_the_descriptor_declares_what_it_does_not_support() -> None:
    """A stub that cannot interrupt or ask: its descriptor says so, and the kit reads it."""
    plain = AdapterUnderTest(provider=_StubOnly(), text_run=TEXT)
    assert requirement("interrupt_not_dispose", plain) == (
        "declared",
        "the descriptor declares run.interrupt: unsupported",
    )
    assert requirement("settle_once", plain) == (
        "declared",
        "the descriptor declares no interaction kind",
    )


def test_an_undeclared_missing_hook_fails_and_a_declared_one_says_why() -> None:
    bare = AdapterUnderTest(provider=ScriptedProvider(), text_run=TEXT)
    with pytest.raises(ConformanceFailure, match="declare why"):
        requirement("settle_once", bare)
    declared = AdapterUnderTest(
        provider=ScriptedProvider(), text_run=TEXT, not_exercised={"settle_once": "no approvals"}
    )
    assert requirement("settle_once", declared) == ("declared", "no approvals")
    with pytest.raises(ConformanceFailure, match="but its hook is given"):
        requirement("late_interaction", scripted(late_interaction_run=LONG))
    with pytest.raises(ValueError, match="unknown contract items"):
        AdapterUnderTest(provider=ScriptedProvider(), text_run=TEXT, not_exercised={"nope": "x"})


# A provider that breaks the rest of the contract, one way per flag.


class _Run(ProviderRun):
    def __init__(self, owner: _Session, ctx: RunContext) -> None:
        self.owner = owner
        self.ctx = ctx
        self.stop = anyio.Event()

    async def wait(self) -> RunOutcome:
        flags = self.owner.provider.flags
        if "runtime_event" in flags:
            self.ctx.emit_nowait(RunCompleted())  # type: ignore[arg-type]
        if "ask_after_interrupt" in flags:
            await self.ctx.emit(TextDelta("a"))
            await self.stop.wait()
            self.ctx.open_interaction(ApprovalRequest(action="tool", title="late"))
            return RunOutcome.interrupted()
        if "long" in self.owner.provider.flags and not self.owner.runs:
            self.owner.runs += 1
            await self.ctx.emit(TextDelta("a"))
            await self.stop.wait()
            return RunOutcome.interrupted()
        self.owner.runs += 1
        await self.ctx.emit(TextDelta("hello"))
        return RunOutcome.completed()

    async def interrupt(self, reason: str) -> None:
        if "interrupt_disposes" in self.owner.provider.flags:
            await self.owner.dispose()
        self.stop.set()


class _Session(ProviderSession):
    def __init__(self, provider: Broken) -> None:
        self.provider = provider
        self.disposed = 0
        self.runs = 0
        self.child: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        if "dispose_leaks_child" in self.provider.flags:
            # a child the session owns, and that its dispose forgets
            self.child = subprocess.Popen(["sleep", "30"])

    async def start_run(
        self, input: RunInput, options: Mapping[str, Any], ctx: RunContext
    ) -> ProviderRun:
        if self.disposed and "interrupt_disposes" in self.provider.flags:
            from agent_bridge.errors import ProviderFailure

            raise ProviderFailure("provider_crashed", "disposed")
        return _Run(self, ctx)

    def export_recovery_record(self) -> Any:
        return None

    async def dispose(self) -> None:
        self.disposed += 1
        if "dispose_leaks_child" in self.provider.flags:
            return
        if "dispose_raises" in self.provider.flags and self.disposed > 1:
            raise RuntimeError("already disposed")
        if "dispose_hangs_after_cancel" in self.provider.flags and self.disposed > 1:
            await anyio.sleep_forever()
        await anyio.sleep(0)


class Broken(AgentProvider):
    id = "broken"

    def __init__(self, *flags: str) -> None:
        self.flags = set(flags)
        self.sessions: list[_Session] = []

    def describe(self) -> ProviderDescriptor:
        stub = stub_descriptor(self.id, "Broken")
        run = RunCapabilities(interrupt="cooperative")
        return msgspec.structs.replace(
            stub, capabilities=msgspec.structs.replace(stub.capabilities, run=run)
        )

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        session = _Session(self)
        self.sessions.append(session)
        await session.start()
        return session


class _StubOnly(Broken):
    def describe(self) -> ProviderDescriptor:
        return stub_descriptor(self.id, "Stub")


def broken(*flags: str, **changes: Any) -> AdapterUnderTest:
    fields: dict[str, Any] = {
        "provider": Broken(*flags),
        "text_run": RunSpec("x", expect_text="hello"),
        "long_run": RunSpec("long"),
        "late_interaction_run": RunSpec("late"),
        "interrupt_grace": 1.0,
        "timeout": 3.0,
    }
    fields.update(changes)
    return AdapterUnderTest(**fields)


def test_the_broken_provider_passes_when_nothing_is_broken() -> None:
    """The control: without a flag the items below pass, so each failure is the flag's."""
    for item in ("semantic_input", "dispose_idempotent", "dispose_retry"):
        assert anyio.run(run_check, item, broken()) == "passed"
    for item in ("interrupt_not_dispose", "terminal_bound"):
        assert anyio.run(run_check, item, broken("long")) == "passed"
    assert anyio.run(run_check, "late_interaction", broken("ask_after_interrupt")) == "passed"


def test_emitting_a_runtime_event_fails_semantic_input() -> None:
    _fails("semantic_input", broken("runtime_event"), r"\[semantic_input\].*RunCompleted")


def test_an_interrupt_that_disposes_fails_interrupt_not_dispose() -> None:
    _fails(
        "interrupt_not_dispose", broken("long", "interrupt_disposes"), r"\[interrupt_not_dispose\]"
    )


def test_a_dispose_that_raises_when_repeated_fails_dispose_idempotent() -> None:
    _fails("dispose_idempotent", broken("dispose_raises"), r"raised RuntimeError")


def test_a_dispose_that_leaves_a_child_fails_dispose_idempotent() -> None:
    adapter = broken("dispose_leaks_child")
    try:
        _fails("dispose_idempotent", adapter, r"outlived the session")
    finally:
        for session in adapter.provider.sessions:  # type: ignore[attr-defined]
            if session.child is not None:
                session.child.kill()
                session.child.wait()


def test_a_dispose_that_hangs_on_retry_fails_dispose_retry() -> None:
    _fails("dispose_retry", broken("dispose_hangs_after_cancel"), r"did not return")


def test_no_late_interaction_fails_late_interaction() -> None:
    _fails("late_interaction", broken("long"), r"raised no interaction after its interrupt")


def test_every_contract_item_has_a_check_here() -> None:
    assert set(CONTRACT) == {
        "semantic_input",
        "valid_payloads",
        "interrupt_not_dispose",
        "dispose_idempotent",
        "dispose_retry",
        "settle_once",
        "late_interaction",
        "no_success_pending",
        "terminal_bound",
    }
