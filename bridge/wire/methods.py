"""Params and results of every method, and the method table the schema is built from."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec

from agent_bridge.wire.common import LenientStruct, PageLimit, WireStruct
from agent_bridge.wire.events import EventEnvelope, LimitMeter
from agent_bridge.wire.inputs import InputBlock, TextInput
from agent_bridge.wire.interactions import Answer, InteractionRequest
from agent_bridge.wire.providers import ProviderDescriptor

__all__ = [
    "ClientCapabilities",
    "ClientInfo",
    "InitializeParams",
    "InitializeResult",
    "JournalFault",
    "JournalState",
    "JournalStatusParams",
    "RecoveryRecord",
    "RunInput",
    "ServerCapabilities",
    "ServerInfo",
    "SessionForkParams",
    "SessionForkResult",
    "SessionInfo",
    "SessionParent",
]


# --------------------------------------------------------------------- lifecycle


class ClientInfo(LenientStruct, frozen=True):
    """Who the host is (shown in logs)."""

    name: str
    version: str | None = None


class InteractionSupport(LenientStruct, frozen=True):
    """Which interaction kinds the host can answer; unknown members are ignored."""

    approval: bool = False
    question: bool = False
    question_set: bool = False


class ClientCapabilities(LenientStruct, frozen=True):
    """The host's capabilities; unknown capabilities are accepted and treated as unsupported.

    ``experimental`` opts in to experimental methods by name.
    """

    interactions: InteractionSupport = InteractionSupport()
    experimental: tuple[str, ...] = ()


class InitializeParams(WireStruct, frozen=True):
    """``initialize``: the protocol version the host speaks, who it is, what it can do."""

    protocol_version: int
    client_info: ClientInfo
    capabilities: ClientCapabilities = ClientCapabilities()


class ServerInfo(WireStruct, frozen=True):
    """The bridge's name and version."""

    name: str
    version: str


class ServerCapabilities(WireStruct, frozen=True):
    """What this bridge offers: its methods (stable and, if opted in, experimental), the
    largest ``limit`` ``events/read`` accepts, and whether history is durable
    (``durableHistory``: kept in a journal on disk, so sessions, their events and command
    receipts survive a restart or crash of the bridge; absent with ``--state-dir :memory:``)."""

    methods: tuple[str, ...]
    experimental: tuple[str, ...] = ()
    events_read_max_limit: int = 1000
    durable_history: bool = False


JournalState = Literal["ok", "failing", "corrupt", "broken"]
JournalFault = Literal[
    "disk_full", "io_error", "read_only", "damaged", "other", "internal", "writer_exited"
]


class JournalStatusParams(WireStruct, frozen=True):
    """The journal's health, sent to every attached host when it changes (``journal/status``;
    out of band: no session, no sequence).  ``failing``: commits fail (``reason``) and are
    retried; events and command replies wait, new sessions and runs are refused
    (``journal_failing``) until ``ok`` again (``writer_exited``: the journal's writer
    process died; another is started and given what was not committed).  ``corrupt``: the
    file is damaged and is no
    longer written to (``history_corrupt``).  ``broken`` (reason ``internal``): a bug in
    the bridge stopped its journal writer; nothing more is recorded by this process, runs
    end, new work is refused (``internal``) and reads go on: restart the bridge.
    ``retryingForMs``: how long commits have been failing."""

    state: JournalState
    reason: JournalFault | None = None
    retrying_for_ms: int = 0


class InitializeResult(WireStruct, frozen=True):
    """The negotiated protocol version and the bridge's capabilities."""

    protocol_version: int
    server_info: ServerInfo
    capabilities: ServerCapabilities


class Empty(WireStruct, frozen=True):
    """No params, or an empty result."""


# --------------------------------------------------------------------- misc


class PingParams(WireStruct, frozen=True):
    """``bridge/ping``: any JSON value, echoed back."""

    data: Any = None


class PingResult(WireStruct, frozen=True):
    """The echoed ``data``."""

    data: Any = None


# --------------------------------------------------------------------- providers


class ProvidersListParams(WireStruct, frozen=True):
    """``providers/list``: ``probe`` runs discovery now (installed? authenticated?)."""

    probe: bool = True


class ProvidersListResult(WireStruct, frozen=True):
    """Every registered provider's descriptor."""

    providers: tuple[ProviderDescriptor, ...]


class ProviderLimitsParams(WireStruct, frozen=True):
    """``provider/limits``: the latest limit figures a provider reported."""

    provider: str


class ProviderLimitsResult(WireStruct, frozen=True):
    """The latest figures of every meter ``provider`` reported in this bridge's lifetime
    (each meter as its last ``limits.updated`` gave it); ``updated_at`` is when the last
    report arrived, absent (and ``meters`` empty) when none has."""

    provider: str
    meters: tuple[LimitMeter, ...] = ()
    updated_at: str | None = None


# --------------------------------------------------------------------- sessions


class RecoveryRecord(WireStruct, frozen=True):
    """What ``session/resume`` needs; ``opaque`` is interpreted by the adapter only."""

    provider_id: str
    provider_version: str
    wire_version: int
    opaque: Any


class SessionParent(WireStruct, frozen=True):
    """The session a fork was made from, and the sequence of the event it was forked
    at: the fork's history is its parent's up to and including ``sequence``, then its
    own (numbered on from ``sequence + 1``)."""

    session_id: str
    sequence: int


class SessionInfo(WireStruct, frozen=True):
    """A session's identity and state.  ``updatedAt`` is the time of its last run start,
    run end or state change; ``parent``: the session and event it was forked from
    (``session/fork``)."""

    session_id: str
    provider_id: str
    state: Literal["active", "closing", "closed"]
    created_at: str
    workspace: str | None = None
    title: str | None = None
    active_run_id: str | None = None
    last_sequence: int = 0
    updated_at: str | None = None
    #: ``session/list`` only, for a session open in this bridge: the hosts attached to it
    attached_hosts: int = 0
    #: ``session/list`` only: interactions of its active run waiting for an answer
    pending_interactions: int = 0
    parent: SessionParent | None = None
    #: ``session/list`` only, with a fleet journal (``docs/fleet.md``): the node of the
    #: member that has the session open (absent: closed, or a journal of one machine)
    node: str | None = None


#: The longest wait for a limit's reset a session may ask for: a week (weekly quotas).
MAX_RETRY_WAIT_SECONDS: Final = 7 * 24 * 3600


class RetryOnLimit(WireStruct, frozen=True):
    """The session's policy for a run that hits a rate limit or quota: wait until the
    limit's reset (``details.resetsAt``/``retryAfterSeconds``), when that is at most
    ``max_wait_seconds`` (0 to a week) away, and run the same input again, once."""

    max_wait_seconds: Annotated[int, msgspec.Meta(ge=0, le=MAX_RETRY_WAIT_SECONDS)] = 300


class SessionCreateParams(WireStruct, frozen=True):
    """``session/create``: a session on ``provider`` in ``workspace`` with ``options``
    (as declared by the provider's descriptor); ``retry_on_limit`` sets the session's
    policy for runs that hit a limit (none: such a run fails at once).  On a fleet
    (``docs/fleet.md``), ``node`` names the member to run it (default: this one when it
    serves the provider in the workspace, else one that does)."""

    provider: str
    workspace: str | None = None
    options: dict[str, Any] = {}
    title: str | None = None
    retry_on_limit: RetryOnLimit | None = None
    node: str | None = None


class SessionResult(WireStruct, frozen=True):
    """A session."""

    session: SessionInfo


class SessionForkResult(WireStruct, frozen=True):
    """The fork, and ``providerSequence``: the sequence of the latest event of its
    history that the provider's own forked history holds (the effective fork point:
    ``atEvent`` itself at a run's end, an earlier event when ``atEvent`` falls inside a
    provider message or after the provider's last one, ``0`` when the provider was forked
    before anything).  Events after it and up to ``atEvent`` are in the fork's history
    but not in what the provider remembers."""

    session: SessionInfo
    provider_sequence: int


class SessionListParams(WireStruct, frozen=True):
    """``session/list``: newest first (by creation); filter by provider and workspace (the
    resolved path, as ``SessionInfo.workspace`` shows it); ``cursor`` is a previous
    result's ``nextCursor``."""

    provider: str | None = None
    limit: PageLimit = 100
    workspace: str | None = None
    cursor: str | None = None


class SessionListResult(WireStruct, frozen=True):
    """Sessions, newest first; ``nextCursor`` when more follow."""

    sessions: tuple[SessionInfo, ...]
    next_cursor: str | None = None


class SessionRef(WireStruct, frozen=True):
    """A session id (``session/close``, ``session/export``)."""

    session_id: str


class SessionResumeParams(WireStruct, frozen=True):
    """``session/resume``: exactly one of

    * ``record``: a *new* session continuing the provider session in ``record``;
    * ``sessionId``: reopen that session from the journal (in this or a later bridge
      process): same session id, its sequence continues after a ``session.resumed``
      event.  ``after`` then also replays the events after that sequence, as
      ``session/attach`` does.

    ``workspace``, ``options`` and ``title`` override what the session had.
    """

    record: RecoveryRecord | None = None
    session_id: str | None = None
    after: int | None = None
    workspace: str | None = None
    options: dict[str, Any] = {}
    title: str | None = None


class SessionForkParams(WireStruct, frozen=True):
    """``session/fork``: a new session, on the same provider, whose history is that of
    ``sessionId`` up to and including the event ``atEvent`` (its whole history when
    omitted) and whose next run continues from there; the original is unchanged.

    The provider forks natively (its descriptor's ``capabilities.fork``); where it cannot,
    the fork is refused ``unsupported``.  With ``granularity: run`` (the default),
    ``atEvent`` must be a run's last event (its ``run.completed``, ``run.failed`` or
    ``run.interrupted``) or an event outside any run, and the provider's history is cut at
    the end of the latest run that ended at or before it; with ``granularity: message``
    it may be any event of a run that has ended, and the provider's history is cut after
    its last complete message at or before it (the reply's ``providerSequence``).  Past
    the end of the history, inside a run a ``run`` provider cannot cut, or inside a run
    still going: ``invalid_params`` (``details.field`` ``atEvent``).  ``title`` names the
    fork (default: the original's).  The fork is open in this bridge and attached to the
    host that made it."""

    session_id: str
    at_event: int | None = None
    title: str | None = None


class SessionAttachParams(WireStruct, frozen=True):
    """``session/attach``: (re)subscribe to a session: the events after sequence ``after``
    are sent as ``event`` notifications, in order, then its live events follow with no
    gap and no duplicate, and its pending interactions are asked again
    (``interaction/request`` with their original interaction ids)."""

    session_id: str
    after: int = 0


class SessionAttachResult(WireStruct, frozen=True):
    """Sent after the replayed events: how many were replayed and the sequence they
    reached (live events continue after it)."""

    session: SessionInfo
    replayed: int
    last_sequence: int


class SessionDeleteResult(WireStruct, frozen=True):
    """``session/delete``: the session (closed first if it was open) and its history,
    receipts and recovery record are gone."""

    session_id: str
    deleted: bool


class SessionExportResult(WireStruct, frozen=True):
    """The recovery record to give ``session/resume`` later (in any bridge process)."""

    record: RecoveryRecord


# --------------------------------------------------------------------- runs


class RunInput(WireStruct, frozen=True):
    """What a run is asked to do: ``text`` (as always), or ``content``, a list of input
    blocks (text, images, file references, embedded resources; each tagged by its
    ``type``).  Exactly one of the two is given.

    A provider whose descriptor takes only text receives ``text`` (text blocks joined by
    a newline); any other receives what the host sent, with paths resolved and images'
    ``data`` filled in.
    """

    text: str | None = None
    content: tuple[InputBlock, ...] = ()

    def blocks(self) -> tuple[InputBlock, ...]:
        """The input as blocks (``text`` as one text block)."""
        if self.text is not None:
            return (TextInput(self.text),)
        return self.content

    def plain_text(self) -> str:
        """The input's text: ``text``, or its text blocks joined by a newline."""
        if self.text is not None:
            return self.text
        return "\n".join(b.text for b in self.content if isinstance(b, TextInput))


class RunStartParams(WireStruct, frozen=True):
    """``run/start``: returns at once; ``commandId`` makes a retry idempotent."""

    session_id: str
    input: RunInput
    options: dict[str, Any] = {}
    command_id: str | None = None


class RunStartResult(WireStruct, frozen=True):
    """The new run's id; ``duplicate`` when ``commandId`` was seen with the same payload."""

    run_id: str
    session_id: str
    duplicate: bool = False


class RunInterruptParams(WireStruct, frozen=True):
    """``run/interrupt``: acknowledged at once; the terminal event follows."""

    run_id: str
    reason: str = "user"


class RunInterruptResult(WireStruct, frozen=True):
    """The run's state after the interrupt was accepted (``interrupted`` when an earlier
    interrupt already ended it)."""

    run_id: str
    state: Literal["interrupting", "interrupted"]


class RunSteerParams(WireStruct, frozen=True):
    """``run/steer``: extra input for an active run (only where the descriptor says so)."""

    run_id: str
    input: RunInput


# --------------------------------------------------------------------- interactions


class InteractionRespondParams(WireStruct, frozen=True):
    """``interaction/respond``: settle an interaction by id (same as answering the
    ``interaction/request`` the bridge sent)."""

    interaction_id: str
    answer: Answer


class InteractionRespondResult(WireStruct, frozen=True):
    """``applied`` for the settling answer, ``duplicate`` for the same answer again."""

    interaction_id: str
    status: Literal["applied", "duplicate"]


class InteractionRequestParams(WireStruct, frozen=True):
    """Server→client ``interaction/request``: answer with an ``Answer`` result."""

    interaction_id: str
    session_id: str
    run_id: str
    request: InteractionRequest


# --------------------------------------------------------------------- events


class EventsReadParams(WireStruct, frozen=True):
    """``events/read``: a page of a session's events; ``after`` pages forward, ``before``
    backward (newest first is *not* used: pages are always in ascending order).
    ``limit`` is capped at ``eventsReadMaxLimit``.

    ``projection``: ``exact`` (every event as it was streamed) or ``settled`` (runs of
    consecutive ``text.delta`` of one run folded into one event, likewise
    ``thinking.delta``; see ``EventEnvelope.foldedFrom``).  ``view``: ``events``, or
    ``raw`` to also return the raw provider records the page's events were projected
    from (exact pages only).
    """

    session_id: str
    after: Annotated[int, msgspec.Meta(ge=0)] | None = None
    before: Annotated[int, msgspec.Meta(ge=1)] | None = None
    limit: PageLimit = 100
    projection: Literal["exact", "settled"] = "exact"
    view: Literal["events", "raw"] = "events"


class RawRecord(WireStruct, frozen=True):
    """A provider record as the adapter received it, and the events projected from it.

    ``rawId`` is the sequence of the first event projected from it; ``spans`` are the
    ``[first, last]`` sequence ranges of this page's events that came from it.  ``record``
    is the record when it is JSON, ``text`` when it is not.
    """

    raw_id: int
    spans: tuple[tuple[int, int], ...]
    record: Any = None
    text: str | None = None


class EventsReadResult(WireStruct, frozen=True):
    """A page of events in ascending sequence order.  ``exact`` is false for a settled
    page; ``raw`` is the page's provenance in the ``raw`` view."""

    events: tuple[EventEnvelope, ...]
    has_more: bool
    exact: bool = True
    last_sequence: int = 0
    raw: tuple[RawRecord, ...] = ()
