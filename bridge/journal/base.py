"""What the runtime needs from history, whether kept in memory or in the journal.

:class:`History` is the runtime's port: synchronous, non-blocking writes (the journal
queues them for its writer thread), commit tickets to wait on, and asynchronous reads.
:class:`~agent_bridge.journal.memory.MemoryHistory` implements it in memory (``--state-dir
:memory:``); :class:`~agent_bridge.journal.journal.Journal` in SQLite.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal, Protocol, runtime_checkable

import msgspec

from agent_bridge.wire.methods import RawRecord

__all__ = [
    "SESSION_COLUMNS",
    "ClaimStatus",
    "DeleteStatus",
    "Followable",
    "History",
    "Member",
    "Routable",
    "SessionRecord",
    "decode_policy",
    "session_from_row",
]

ClaimStatus = Literal["claimed", "not_found", "in_use"]
DeleteStatus = Literal["deleted", "not_found", "in_use", "has_forks"]


class Member(msgspec.Struct, frozen=True):
    """A live fleet member as the journal holds it: its ``token`` (the owner token its
    sessions carry), ``node`` name, the ``providers`` it serves, the workspace ``roots``
    it runs sessions under (``None``: any) and how many sessions it has open."""

    token: str
    node: str
    providers: tuple[str, ...]
    roots: tuple[str, ...] | None
    sessions: int = 0


class SessionRecord(msgspec.Struct):
    """A session as history holds it.  ``recovery`` is the provider's opaque recovery
    record (``None``: none saved); ``state`` is ``active`` while some bridge process has
    the session open.  (A struct, not a dataclass: the journal is imported before
    ``serve`` answers ``initialize``, and ``dataclasses`` costs milliseconds there.)"""

    session_id: str
    provider_id: str
    provider_version: str
    workspace: str | None
    title: str | None
    created_at: str
    updated_at: str
    state: Literal["active", "closed"] = "active"
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    last_sequence: int = 0
    recovery: Any = None
    #: a fork's parent session, and the sequence it was forked at: its history reads the
    #: parent's up to ``fork_sequence`` (never copied), then its own
    parent_id: str | None = None
    fork_sequence: int = 0
    #: a fleet journal only: the node of the live member that has the session open, and
    #: how many interactions of the session wait for an answer (as journaled)
    node: str | None = None
    pending_interactions: int = 0
    #: the session's policy as the runtime keeps it across bridge processes (JSON:
    #: ``retryOnLimit``, and the ``model`` / ``mode`` switched by ``session/configure``);
    #: ``None``: none recorded
    policy: dict[str, Any] | None = None
    #: a fleet journal only: the hosts attached on every live member
    attached_hosts: int | None = None


def decode_policy(value: Any) -> dict[str, Any] | None:
    """A stored ``policy`` column (JSON bytes): the object, or ``None`` (none, or not a
    JSON object: a damaged value is not a reason to refuse the session)."""
    if value is None:
        return None
    try:
        decoded = msgspec.json.decode(value)
    except msgspec.DecodeError:
        return None
    return decoded if isinstance(decoded, dict) else None


#: the ``sessions`` columns both journals select for a :class:`SessionRecord`, in the
#: order :func:`session_from_row` reads them (a backend may select more after them)
SESSION_COLUMNS: Final = (
    "skey, session_id, provider_id, provider_version, workspace, title, options, "
    "created_at, updated_at, state, recovery, parent_id, fork_seq, policy"
)


def session_from_row(
    row: Sequence[Any],
    last: int | None,
    *,
    node: str | None = None,
    pending: int = 0,
    hosts: int | None = None,
) -> SessionRecord:
    """Return the :class:`SessionRecord` of a row starting with :data:`SESSION_COLUMNS`
    whose newest stored event is ``last`` (``None``: none stored, so the fork sequence
    or 0).  ``node``, ``pending`` (interactions) and ``hosts`` are a fleet journal's,
    and none of a closed session's."""
    (
        _skey,
        sid,
        provider,
        version,
        workspace,
        title,
        options,
        created,
        updated,
        state,
        recovery,
        parent,
        fork_seq,
        policy,
    ) = row[:14]
    closed = state == "closed"
    return SessionRecord(
        session_id=sid,
        provider_id=provider,
        provider_version=version,
        workspace=workspace,
        title=title,
        created_at=created,
        updated_at=updated,
        state="closed" if closed else "active",
        options=msgspec.json.decode(options) if options else {},
        last_sequence=int(fork_seq or 0) if last is None else int(last),
        recovery=None if recovery is None else msgspec.json.decode(recovery),
        parent_id=parent,
        fork_sequence=int(fork_seq or 0),
        node=None if closed else node,
        pending_interactions=0 if closed else pending,
        policy=decode_policy(policy),
        attached_hosts=(0 if closed else hosts) if hosts is not None else None,
    )


class History(Protocol):
    """The runtime's port to history (see the module docstring).

    Writes are recorded in call order.  :meth:`mark` returns a ticket covering every write
    made so far; :meth:`committed_through` waits until those writes are durable (at once
    in memory).  ``appended`` and ``committed`` count events: the first ``committed``
    appended events are durable.
    """

    #: Whether writes survive the process (a journal, not memory).
    durable: bool
    appended: int
    committed: int
    #: ``ok``; ``failing`` while commits fail and are retried (:attr:`fault` says why,
    #: :attr:`failing_since` since when, ``time.monotonic()``); ``corrupt`` once the file
    #: is found damaged (never written again); ``broken`` once a bug made a commit fail
    #: (this process writes nothing more).  ``on_commit`` also runs when it changes.
    health: Literal["ok", "failing", "corrupt", "broken"]
    fault: (
        Literal[
            "disk_full", "io_error", "read_only", "damaged", "other", "internal", "writer_exited"
        ]
        | None
    )
    failing_since: float | None

    async def start(self, on_commit: Callable[[], None]) -> None:
        """Start recording; ``on_commit`` is called (in the event loop) after each commit
        and whenever :attr:`health` changes."""
        ...

    async def aclose(self) -> None:
        """Commit what is queued and stop; the history cannot be used afterwards."""
        ...

    # ------------------------------------------------------------ writes (never block)

    def add_session(self, record: SessionRecord) -> None:
        """Record a new session (open in this process)."""
        ...

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change ``state`` (closing also drops ownership), ``updated_at``, ``title``,
        ``workspace``, ``options`` (a dict), ``recovery`` (JSON bytes) or ``policy`` (a
        dict)."""
        ...

    def append(self, session_id: str, sequence: int, code: int, body: bytes, raw_id: int) -> None:
        """Record the event at ``sequence`` (its encoded envelope and type code); ``raw_id``
        names the raw record it was projected from (0: none)."""
        ...

    def append_many(
        self,
        session_id: str,
        first: int,
        codes: bytes,
        bodies: list[bytes],
        raw_id: int,
        size: int | None = None,
    ) -> None:
        """Record consecutive events from sequence ``first`` (one type code and one
        envelope each), all projected from the raw record ``raw_id`` (0: none): the same
        as :meth:`append` for each, in one call.  ``size``: the bytes of ``bodies``
        together, when the caller has counted them (a history that needs the figure
        does not count them again)."""
        ...

    def add_raw(self, session_id: str, raw_id: int, record: bytes) -> None:
        """Record a raw provider record, as received (``raw_id``: the sequence of the
        first event projected from it)."""
        ...

    def run_started(self, session_id: str, run_id: str, sequence: int) -> None:
        """Record that a run started (its ``run.started`` is at ``sequence``)."""
        ...

    def run_ended(
        self,
        session_id: str,
        run_id: str,
        sequence: int,
        state: str,
        position: bytes | None,
        points: Sequence[tuple[int, bytes]] = (),
    ) -> None:
        """Record that a run ended in ``state`` (its terminal event is at ``sequence``);
        ``position``: the provider's point at its end (encoded JSON) to fork at, if any;
        ``points``: ``(sequence, position)`` of the provider's checkpoints inside it."""
        ...

    def interaction_opened(
        self, session_id: str, interaction_id: str, run_id: str, request: bytes
    ) -> None:
        """Record a pending interaction (``request``: encoded JSON)."""
        ...

    def interaction_settled(
        self, session_id: str, interaction_id: str, status: str, answer: bytes | None
    ) -> None:
        """Record an interaction's settlement."""
        ...

    def save_receipt(
        self, command_id: str, session_id: str, payload: bytes, result: bytes, created_at: str
    ) -> None:
        """Record the first receipt of ``command_id``."""
        ...

    def add_blob(self, session_id: str, sha256: str, data: bytes) -> None:
        """Record a run input's image, ``data`` with SHA-256 ``sha256`` (hex): stored once
        however many runs and sessions send it, kept while a session references it."""
        ...

    def mark(self) -> int:
        """Return a ticket covering every write made so far."""
        ...

    async def committed_through(self, ticket: int) -> None:
        """Wait until the writes covered by ``ticket`` are durable (while failing: until
        commits succeed again); raises ``JournalCorrupt`` when the journal is damaged."""
        ...

    # ------------------------------------------------------------ reads

    async def find_receipt(self, command_id: str) -> tuple[bytes, bytes] | None:
        """Return ``(payload, result)`` of the first use of ``command_id``, if any."""
        ...

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """Return the stored session, or ``None``."""
        ...

    async def list_sessions(
        self, provider: str | None, workspace: str | None, cursor: str | None, limit: int
    ) -> tuple[list[SessionRecord], str | None]:
        """Return up to ``limit`` sessions, newest first, and the cursor of the next page."""
        ...

    async def read_events(self, session_id: str, lo: int, hi: int) -> list[bytes]:
        """Return the envelopes of sequences ``lo``..``hi`` that are stored."""
        ...

    async def read_raw(self, session_id: str, lo: int, hi: int) -> list[RawRecord]:
        """Return the raw records events ``lo``..``hi`` were projected from."""
        ...

    async def read_blob(self, sha256: str) -> bytes | None:
        """Return the image recorded with this SHA-256 (hex), or ``None``."""
        ...

    async def has_forks(self, session_id: str) -> bool:
        """Whether a fork reads from this session (it cannot be deleted before them)."""
        ...

    async def interaction_state(self, interaction_id: str) -> tuple[str, str] | None:
        """``(status, state of its session)`` of the journaled interaction, or ``None``
        (see :func:`agent_bridge.journal.queries.interaction_state`)."""
        ...

    async def open_turns(self, session_id: str) -> list[tuple[str, int, list[tuple[str, bytes]]]]:
        """The session's runs not ended (see :func:`agent_bridge.journal.queries.
        open_turns`): a bridge that died left them open for the one that resumes the
        session to continue (``recovery.resumeTurn``)."""
        ...

    async def position_at(self, session_id: str, sequence: int) -> tuple[int, bytes] | None:
        """Return ``(sequence, position)`` of the latest point of the session's history
        (through a fork's parents) at or before ``sequence`` where the provider's own
        history stood at a known position (encoded JSON): a run's end or a checkpoint
        inside one; ``None`` when there is none."""
        ...

    # ------------------------------------------------------------ ownership

    async def claim(self, session_id: str) -> tuple[ClaimStatus, SessionRecord | None]:
        """Take a stored session that no live process has open, to reopen it here."""
        ...

    async def delete(self, session_id: str) -> DeleteStatus:
        """Delete everything stored about a session no other live process has open and no
        fork reads from (``has_forks``)."""
        ...

    # ------------------------------------------------------------ provider sessions

    async def bind_native(self, provider_id: str, native_ref: str, session_id: str) -> str:
        """Bind the provider session ``native_ref`` to ``session_id`` unless it is bound
        already (atomically, across processes); return the session it is bound to."""
        ...

    async def unbind_native(self, provider_id: str, native_ref: str, session_id: str) -> None:
        """Drop the binding of ``native_ref`` if it is to ``session_id``."""
        ...

    async def native_bindings(self, provider_id: str, native_refs: list[str]) -> dict[str, str]:
        """The bridge session each of ``native_refs`` is bound to (only those bound)."""
        ...


@runtime_checkable
class Followable(Protocol):
    """A history other processes write to and that says when they commit (the PostgreSQL
    journal, through ``LISTEN``/``NOTIFY``): the runtime follows a session another
    member owns for a host attached here."""

    async def wait_committed(self, session_id: str, after: int) -> None:
        """Return once the session has committed events after sequence ``after`` (told by
        the database, never by polling it); raises ``JournalError`` when it cannot be
        asked."""
        ...

    async def pending_interactions(self, session_id: str) -> list[tuple[str, str, bytes]]:
        """Return ``(interaction id, run id, request JSON)`` of each of the session's
        interactions journaled as pending (in id order); raises ``JournalError``."""
        ...


@runtime_checkable
class Routable(Protocol):
    """A history shared by members that can carry a request to the member owning its
    session (the PostgreSQL journal): see :mod:`agent_bridge.runtime.routing`; and that
    records what each member serves, for placement (:mod:`agent_bridge.runtime.fleet`)."""

    #: the providers ``--node-providers`` names (``None``: every provider of the bridge)
    serves: tuple[str, ...] | None
    #: whether it has recorded what it serves (:meth:`declare_now` or :meth:`declare`)
    declared: bool

    async def route(
        self, kind: str, key: str, method: str, params: bytes, timeout: float = 30.0
    ) -> tuple[bytes | None, str | None] | None:
        """The owner's ``(result, None)`` or ``(None, error)`` (its ``ErrorInfo`` as JSON
        text), or ``None`` when no other live member owns the session ``key`` names."""
        ...

    async def serve_commands(
        self, execute: Callable[[str, bytes], Awaitable[tuple[bytes | None, str | None]]]
    ) -> None:
        """Run the requests routed to this member through ``execute`` until cancelled."""
        ...

    async def route_to(
        self, token: str, method: str, params: bytes, timeout: float = 30.0
    ) -> tuple[bytes | None, str | None]:
        """As :meth:`route`, to the live member ``token`` (chosen by placement)."""
        ...

    def me(self) -> Member:
        """This member as it declares itself (its token, node, providers, roots)."""
        ...

    async def declare(self, providers: tuple[str, ...]) -> Member:
        """Record in the journal what this member serves: ``providers`` (the bridge's,
        narrowed by ``--node-providers``) and its workspace roots; return it."""
        ...

    def declare_now(self, providers: tuple[str, ...]) -> Member:
        """:meth:`declare`, blocking: before the event loop runs."""
        ...

    async def members(self) -> list[Member]:
        """The live members that declared what they serve, this one included."""
        ...

    async def publish_hosts(self, counts: dict[str, int]) -> None:
        """Record how many hosts are attached on this member to each session in
        ``counts`` (0: none any more), for every member's ``session/list``."""
        ...
