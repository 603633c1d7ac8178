"""The contract checks: one async function per item of
:data:`~agent_bridge.testing.conformance.adapter.CONTRACT`, each raising
:class:`~agent_bridge.testing.conformance.harness.ConformanceFailure` when the adapter
breaks it (no pytest here; :mod:`agent_bridge.testing.conformance.suite` runs them as
tests).

:func:`requirement` says, for an adapter and an item, whether the item can be exercised,
is declared not exercisable (and why), or neither, which is a failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, Literal

import anyio

from agent_bridge.errors import BridgeError
from agent_bridge.runtime import Interaction
from agent_bridge.spi import ProviderSession
from agent_bridge.testing.conformance.adapter import CONTRACT, AdapterUnderTest, RunSpec
from agent_bridge.testing.conformance.harness import (
    SEMANTIC,
    Bench,
    ConformanceFailure,
    RunRecord,
    bench,
    fail,
    kind,
    maybe_await,
)
from agent_bridge.wire.events import InteractionRequested, InteractionSettled, RunInterrupted
from agent_bridge.wire.interactions import ApprovalAnswer, QuestionAnswer, QuestionSetAnswer

__all__ = ["CHECKS", "requirement"]

Check = Callable[[AdapterUnderTest], Awaitable[None]]


def _hooks(item: str, adapter: AdapterUnderTest) -> str | None:
    """The hook ``item`` needs that ``adapter`` lacks (``None``: it has what it needs)."""
    interrupting = adapter.long_run or adapter.approval_run
    needs: dict[str, tuple[object, str]] = {
        "interrupt_not_dispose": (interrupting, "long_run or approval_run"),
        "settle_once": (adapter.approval_run, "approval_run"),
        "no_success_pending": (adapter.approval_run, "approval_run"),
        "late_interaction": (adapter.late_interaction_run, "late_interaction_run"),
        "terminal_bound": (interrupting, "long_run or approval_run"),
    }
    value, name = needs.get(item, (True, ""))
    return None if value else name


_INTERRUPTING: Final = ("interrupt_not_dispose", "late_interaction", "terminal_bound")
_ASKING: Final = ("settle_once", "no_success_pending")


def _descriptor_declares(item: str, adapter: AdapterUnderTest) -> str | None:
    """The reason the provider's own descriptor gives for ``item`` not applying, if any:
    ``run.interrupt: unsupported``, or no interaction kind supported."""
    capabilities = adapter.provider.describe().capabilities
    if item in _INTERRUPTING and capabilities.run.interrupt == "unsupported":
        return "the descriptor declares run.interrupt: unsupported"
    asks = capabilities.interactions
    if item in _ASKING and not (asks.approval.supported or asks.question.supported):
        return "the descriptor declares no interaction kind"
    return None


def requirement(item: str, adapter: AdapterUnderTest) -> tuple[Literal["run", "declared"], str]:
    """Return ``("run", "")`` when ``item`` can be exercised on ``adapter``, or
    ``("declared", reason)`` when the adapter declared it cannot; raise
    :class:`ConformanceFailure` when it neither has the hook nor declares the item, or
    declares an item it does have the hook for."""
    by_descriptor = _descriptor_declares(item, adapter)
    if by_descriptor is not None:
        return "declared", by_descriptor
    missing = _hooks(item, adapter)
    declared = adapter.not_exercised.get(item)
    if missing is None:
        if declared is not None:
            raise fail(item, f"declared not exercisable ({declared}) but its hook is given")
        return "run", ""
    if declared is None:
        raise fail(
            item,
            f"cannot be exercised without {missing}; give it or declare why in not_exercised",
        )
    return "declared", declared


def _clean(b: Bench, item: str, allow_contract: bool = False) -> None:
    """The postconditions of every check: every event decoded under the schema, every
    emitted object a semantic payload, no ``provider_contract`` diagnostic."""
    if b.host.undecodable:
        raise fail("valid_payloads", f"an event did not match the schema: {b.host.undecodable[0]}")
    for run_id, payload in b.spi.emitted:
        if type(payload) not in SEMANTIC:
            raise fail(
                "semantic_input",
                f"{run_id} emitted a {type(payload).__name__}; only content payloads "
                "(text, thinking, tool activity, plan, usage, diagnostic) may be emitted",
            )
    if not allow_contract and (found := b.contract_diagnostics()):
        message = getattr(found[0].payload, "message", "")
        raise fail(
            "valid_payloads" if item in ("semantic_input", "valid_payloads") else item,
            f"the runtime reported a provider contract violation: {message!r}",
        )


def _one_terminal(item: str, run: RunRecord) -> str:
    terminals = run.terminals
    if len(terminals) != 1:
        raise fail(item, f"{run.run_id} has {len(terminals)} terminal events: {run.types}")
    if run.events[-1] is not terminals[0]:
        raise fail(item, f"{run.run_id} has events after its terminal event: {run.types}")
    return kind(terminals[0])


def _expect_text(item: str, spec: RunSpec, run: RunRecord) -> None:
    if spec.expect_text is not None and spec.expect_text not in run.text:
        raise fail(
            item, f"{run.run_id} emitted {run.text!r}; expected it to contain {spec.expect_text!r}"
        )


def _allow(interaction: Interaction) -> ApprovalAnswer | QuestionAnswer | QuestionSetAnswer:
    """The answer that lets a run go on: allow, the first choice, or text."""
    request = interaction.request
    if interaction.kind == "approval":
        return ApprovalAnswer("allow")
    if interaction.kind == "question":
        choices = getattr(request, "choices", None) or []
        return QuestionAnswer(choice=choices[0].id) if choices else QuestionAnswer(text="yes")
    items = getattr(request, "items", [])
    return QuestionSetAnswer(
        {item.key: (item.choices[0].id if item.choices else "yes") for item in items}
    )


def _long(adapter: AdapterUnderTest) -> RunSpec:
    spec = adapter.long_run or adapter.approval_run
    assert spec is not None
    return spec


async def _interrupted(b: Bench, item: str, session_id: str) -> RunRecord:
    """Start the adapter's long run, interrupt it once under way, return it ended."""
    adapter = b.adapter
    b.host.policy = lambda _i: None  # the long run's interactions stay pending
    run_id = await b.start(session_id, _long(adapter))
    await b.started(run_id, adapter.interrupt_after_content)
    if b.terminal_of(run_id) is not None:
        raise fail(
            item, f"the long run {run_id} ended by itself: {b.host.of_run(run_id)[-1].payload}"
        )
    b.runtime.interrupt_run(run_id, "conformance")
    return await b.finished(run_id)


# ---------------------------------------------------------------------- the checks


async def check_semantic_input(adapter: AdapterUnderTest) -> None:
    async with bench(adapter) as b:
        session_id = await b.create_session()
        run = await b.run(session_id, adapter.text_run)
        if not b.spi.emitted:
            raise fail("semantic_input", "the text run emitted nothing")
        _clean(b, "semantic_input")
        if _one_terminal("semantic_input", run) != "run.completed":
            raise fail(
                "semantic_input", f"the text run did not complete: {run.terminals[0].payload}"
            )


async def check_valid_payloads(adapter: AdapterUnderTest) -> None:
    async with bench(adapter) as b:
        session_id = await b.create_session()
        first = await b.run(session_id, adapter.text_run)
        second = await b.run(session_id, adapter.text_run)
        _clean(b, "valid_payloads")
        for run in (first, second):
            if _one_terminal("valid_payloads", run) != "run.completed":
                raise fail(
                    "valid_payloads", f"{run.run_id} did not complete: {run.terminals[0].payload}"
                )
            if not run.text:
                raise fail("valid_payloads", f"{run.run_id} (the text run) emitted no text.delta")
            _expect_text("valid_payloads", adapter.text_run, run)


async def check_interrupt_not_dispose(adapter: AdapterUnderTest) -> None:
    item = "interrupt_not_dispose"
    async with bench(adapter) as b:
        session_id = await b.create_session()
        run = await _interrupted(b, item, session_id)
        terminal = run.terminals[-1].payload
        if not isinstance(terminal, RunInterrupted):
            raise fail(item, f"the interrupted run ended with {terminal}")
        if terminal.forced:
            raise fail(
                item, "the run did not end within the interrupt grace: the runtime forced it"
            )
        if b.spi.interrupts != 1:
            raise fail(item, f"the provider run was interrupted {b.spi.interrupts} times")
        if b.spi.disposes_by_runtime or len(b.spi.sessions) != 1:
            raise fail(item, "the session was disposed or replaced by the interrupt")
        after = await b.run(session_id, adapter.text_run)
        if _one_terminal(item, after) != "run.completed":
            raise fail(
                item, f"the run after the interrupt did not complete: {after.terminals[0].payload}"
            )
        _expect_text(item, adapter.text_run, after)
        if len(b.spi.sessions) != 1 or b.spi.resumes:
            raise fail(item, "the run after the interrupt needed a new provider session")
        _clean(b, item)


async def _bounded(
    adapter: AdapterUnderTest, item: str, what: str, call: Callable[[], Awaitable[None]]
) -> None:
    with anyio.move_on_after(adapter.timeout) as scope:
        try:
            await call()
        except Exception as exc:
            leaf: BaseException = exc
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            raise fail(item, f"{what} raised {type(leaf).__name__}: {leaf}") from exc
    if scope.cancelled_caught:
        raise fail(item, f"{what} did not return within {adapter.timeout:g}s")


async def _released(b: Bench, item: str, session: ProviderSession) -> None:
    """The session's resources are released: the adapter's ``released`` hook says so,
    and every child process started since the session was created is gone (reaped)."""
    adapter = b.adapter
    if adapter.released is not None and not await maybe_await(adapter.released(session)):
        raise fail(item, "the session's resources were not released after dispose")
    left = await b.children_left()
    if left:
        raise fail(item, f"child processes {sorted(left)} outlived the session's dispose")


async def check_dispose_idempotent(adapter: AdapterUnderTest) -> None:
    item = "dispose_idempotent"
    async with bench(adapter) as b:
        session_id, session = await _after_a_run(b, adapter)

        async def twice() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.dispose)
                tg.start_soon(session.dispose)

        await _bounded(adapter, item, "two concurrent disposes", twice)
        await _bounded(adapter, item, "a third dispose", session.dispose)
        await _released(b, item, session)
        # the runtime's own close disposes once more
        await _bounded(adapter, item, "closing the session", lambda: _close(b, session_id))
        _clean(b, item, allow_contract=True)


async def _after_a_run(b: Bench, adapter: AdapterUnderTest) -> tuple[str, ProviderSession]:
    """A new session of ``b`` after one text run: its id and the adapter's session."""
    session_id = await b.create_session()
    await b.run(session_id, adapter.text_run)
    return session_id, b.provider_session()


async def _close(b: Bench, session_id: str) -> None:
    await b.runtime.close_session(session_id)


async def check_dispose_retry(adapter: AdapterUnderTest) -> None:
    item = "dispose_retry"
    async with bench(adapter) as b:
        session_id, session = await _after_a_run(b, adapter)
        # a dispose that fails part-way: cancelled at its first wait
        with anyio.CancelScope() as scope:
            scope.cancel()
            await session.dispose()
        if adapter.fail_dispose is not None:
            await maybe_await(adapter.fail_dispose(session))
            await _bounded(adapter, item, "a dispose made to fail", session.dispose)
        await _bounded(adapter, item, "the retried dispose", session.dispose)
        await _released(b, item, session)
        await _bounded(adapter, item, "closing the session", lambda: _close(b, session_id))


async def check_settle_once(adapter: AdapterUnderTest) -> None:
    item = "settle_once"
    spec = adapter.approval_run
    assert spec is not None
    async with bench(adapter) as b:
        session_id = await b.create_session()
        b.host.policy = _allow
        run = await b.run(session_id, spec)
        _clean(b, item)
        if _one_terminal(item, run) != "run.completed":
            raise fail(item, f"the allowed run did not complete: {run.terminals[0].payload}")
        requested = [
            e.payload.interaction_id
            for e in run.events
            if isinstance(e.payload, InteractionRequested)
        ]
        settled = [e.payload for e in run.events if isinstance(e.payload, InteractionSettled)]
        if not requested:
            raise fail(item, "the approval run raised no interaction")
        if len(set(requested)) != len(requested):
            raise fail(item, f"an interaction was requested twice: {requested}")
        ids = [s.interaction_id for s in settled]
        if sorted(ids) != sorted(requested):
            raise fail(item, f"requested {requested}, settled {ids}: each must settle exactly once")
        if any(s.status != "responded" for s in settled):
            raise fail(item, f"an answered interaction settled otherwise: {settled}")
        for _run_id, handle, _late in b.spi.opened:
            outcome = await handle.wait()
            if outcome.status != "responded":
                raise fail(item, f"the provider saw {outcome.status} for an answered interaction")
            # a second, different answer is refused; the first stands
            other = ApprovalAnswer("deny")
            try:
                b.runtime.respond(handle.interaction_id, other)
            except BridgeError as exc:
                if exc.error_code not in ("interaction_already_settled", "invalid_answer"):
                    raise fail(item, f"a second answer was refused as {exc.error_code}") from exc
            else:
                raise fail(item, "a second, different answer was accepted")
        _expect_text(item, spec, run)


async def check_no_success_pending(adapter: AdapterUnderTest) -> None:
    item = "no_success_pending"
    spec = adapter.approval_run
    assert spec is not None
    async with bench(adapter) as b:
        session_id = await b.create_session()
        held: list[Interaction] = []
        b.host.policy = lambda i: held.append(i)
        run_id = await b.start(session_id, spec)
        await b.host.until(
            lambda: bool(held) or b.terminal_of(run_id) is not None, adapter.timeout, "the approval"
        )
        if not held:
            raise fail(
                item, f"the approval run ended without asking: {b.host.of_run(run_id)[-1].payload}"
            )
        await anyio.sleep(0.5)  # the provider has time to misbehave
        if (terminal := b.terminal_of(run_id)) is not None:
            raise fail(item, f"the run ended while its interaction was pending: {terminal.payload}")
        for interaction in held:
            b.runtime.respond(
                interaction.interaction_id,
                ApprovalAnswer("deny") if interaction.kind == "approval" else _allow(interaction),
            )
        b.host.policy = lambda i: ApprovalAnswer("deny") if i.kind == "approval" else _allow(i)
        run = await b.finished(run_id)
        _clean(b, item)
        _one_terminal(item, run)
        types = run.types
        last_settled = max(i for i, t in enumerate(types) if t == "interaction.settled")
        if last_settled > types.index(kind(run.terminals[0])):
            raise fail(item, f"a settlement came after the terminal event: {types}")


async def check_late_interaction(adapter: AdapterUnderTest) -> None:
    item = "late_interaction"
    spec = adapter.late_interaction_run
    assert spec is not None
    async with bench(adapter) as b:
        session_id = await b.create_session()
        b.host.policy = lambda _i: None
        run_id = await b.start(session_id, spec)
        await b.started(run_id, adapter.interrupt_after_content)
        offered = len(b.host.asked)
        b.runtime.interrupt_run(run_id, "conformance")
        run = await b.finished(run_id)
        late = [handle for _r, handle, after in b.spi.opened if after]
        if not late:
            raise fail(item, "the late-interaction run raised no interaction after its interrupt")
        if len(b.host.asked) != offered:
            raise fail(item, "an interaction raised after the interrupt was offered to the host")
        if not b.contract_diagnostics():
            raise fail(
                item, "the late interaction was not reported as a provider_contract diagnostic"
            )
        for handle in late:
            if (await handle.wait()).status != "cancelled":
                raise fail(item, "a late interaction was not settled cancelled at once")
        terminal = run.terminals[-1].payload
        if not isinstance(terminal, RunInterrupted) or terminal.forced:
            raise fail(item, f"the run did not end as interrupted (unforced): {terminal}")
        _clean(b, item, allow_contract=True)


async def check_terminal_bound(adapter: AdapterUnderTest) -> None:
    item = "terminal_bound"
    async with bench(adapter) as b:
        session_id = await b.create_session()
        first = await _interrupted(b, item, session_id)
        b.host.policy = _allow
        second = await b.run(session_id, adapter.text_run)
        if _one_terminal(item, first) != "run.interrupted":
            raise fail(item, f"the interrupted run ended with {first.terminals[0].payload}")
        if _one_terminal(item, second) != "run.completed":
            raise fail(item, f"the next run ended with {second.terminals[0].payload}")
        if not second.text:
            raise fail(item, "the next run ended before any of its own text: ended by the old run?")
        _expect_text(item, adapter.text_run, second)
        await anyio.sleep(0.2)  # late frames of either run would show up now
        again = b.host.of_run(first.run_id) + b.host.of_run(second.run_id)
        if len(again) != len(first.events) + len(second.events):
            raise fail(item, "events arrived for a run after its terminal event")
        _clean(b, item)


CHECKS: Final[dict[str, Check]] = {
    "semantic_input": check_semantic_input,
    "valid_payloads": check_valid_payloads,
    "interrupt_not_dispose": check_interrupt_not_dispose,
    "dispose_idempotent": check_dispose_idempotent,
    "dispose_retry": check_dispose_retry,
    "settle_once": check_settle_once,
    "late_interaction": check_late_interaction,
    "no_success_pending": check_no_success_pending,
    "terminal_bound": check_terminal_bound,
}
assert set(CHECKS) == set(CONTRACT)


async def run_check(item: str, adapter: AdapterUnderTest) -> Literal["passed"] | str:
    """Run the check of ``item`` on ``adapter``: ``"passed"``, or the declared reason it
    is not exercisable; raises :class:`ConformanceFailure`."""
    how, reason = requirement(item, adapter)
    if how == "declared":
        return reason
    try:
        await CHECKS[item](adapter)
    except BaseExceptionGroup as group:
        # a failure raised inside the bench's task group: report it, not the group
        failures = group.subgroup(ConformanceFailure)
        if failures is None:
            raise
        first: BaseException = failures
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    return "passed"


__all__ += ["ConformanceFailure", "run_check"]
