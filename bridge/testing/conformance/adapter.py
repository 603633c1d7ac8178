"""What an adapter author gives the conformance kit: the provider and how to make it do
each thing the contract speaks about (no pytest here: the checks can run anywhere)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from agent_bridge.spi import AgentProvider, ProviderSession

__all__ = ["CONTRACT", "AdapterUnderTest", "RunSpec"]

#: The contract items the kit checks, by id, with what each asks of an adapter
#: (the SPI's contract, :mod:`agent_bridge.spi`).
CONTRACT: Final[Mapping[str, str]] = {
    "semantic_input": "the provider emits semantic input only (content payloads), never "
    "ids, sequences, times or the runtime's own events",
    "valid_payloads": "every payload it emits is valid (no provider_contract diagnostic; "
    "every event decodes as the wire schema's EventEnvelope)",
    "interrupt_not_dispose": "interrupting a run ends that run as interrupted (not forced) "
    "and the session survives: not disposed, the next run goes on on the same session",
    "dispose_idempotent": "dispose may be called again and concurrently: it returns, in "
    "bounded time, and never raises",
    "dispose_retry": "a dispose that failed part-way (cancelled, or made to fail) can be "
    "retried and then completes",
    "settle_once": "each interaction is requested once and settled exactly once; the run "
    "goes on with the host's answer",
    "late_interaction": "an interaction the provider raises after the run's interrupt began "
    "is a provider_contract diagnostic, never offered to a host, and the run still ends "
    "as interrupted",
    "no_success_pending": "the run never reports success while an interaction it opened is "
    "pending; settlements come before the terminal event",
    "terminal_bound": "each run has exactly one terminal event, its own: a run started "
    "right after an interrupted one is not ended by the interrupted one's late frames",
}


@dataclass(frozen=True)
class RunSpec:
    """One run: the input ``text`` and the run ``options``; ``expect_text`` (if set) must
    appear in the text the run emits (``text.delta`` payloads, concatenated)."""

    text: str
    options: Mapping[str, Any] = field(default_factory=dict)
    expect_text: str | None = None


#: ``fail_dispose(session)``: make the session's next dispose fail part-way (e.g. make its
#: child ignore SIGTERM); may be async.
FailDispose = Callable[[ProviderSession], Awaitable[None] | None]
#: ``released(session)``: whether everything the session held is released (its child
#: reaped, pipes closed); may be async.
Released = Callable[[ProviderSession], Awaitable[bool] | bool]


@dataclass
class AdapterUnderTest:
    """The adapter the kit checks, and the scenario hooks the checks need.

    * ``provider``: a fresh provider instance (the author's, wired to their own fake);
    * ``text_run`` (required): a run that emits some text and completes;
    * ``approval_run``: a run that asks one approval, goes on when it is allowed and
      completes (also when it is denied, with any terminal event);
    * ``long_run``: a run that keeps going until it is interrupted (for the interrupt
      items; an ``approval_run`` left unanswered serves when this is ``None``);
    * ``late_interaction_run``: a run whose provider asks for an interaction after it was
      interrupted (a fake that does so on purpose);
    * ``fail_dispose`` / ``released``: see :data:`FailDispose` and :data:`Released`;
    * ``not_exercised``: contract items (keys of :data:`CONTRACT`) this adapter cannot be
      made to show, each with the reason.  An item whose hook is missing and that is not
      declared here fails: nothing is skipped silently.
    """

    provider: AgentProvider
    text_run: RunSpec
    approval_run: RunSpec | None = None
    long_run: RunSpec | None = None
    late_interaction_run: RunSpec | None = None
    fail_dispose: FailDispose | None = None
    released: Released | None = None
    session_options: Mapping[str, Any] = field(default_factory=dict)
    workspace: str | None = None
    not_exercised: Mapping[str, str] = field(default_factory=dict)
    #: how long the runtime waits for an interrupted run before forcing it
    interrupt_grace: float = 10.0
    #: the bound on each run and on each dispose
    timeout: float = 60.0
    #: before interrupting a ``long_run``: wait for its first content event (``True``) or
    #: only for the run to have started
    interrupt_after_content: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.not_exercised) - set(CONTRACT)
        if unknown:
            raise ValueError(f"not_exercised names unknown contract items: {sorted(unknown)}")
