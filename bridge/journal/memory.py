"""History in memory (``--state-dir :memory:``): what the bridge kept before the journal.

Everything lives in this process and is gone when it ends; every write is "committed" at
once, so the runtime sends events to the host without waiting.

It is bounded: the events of all sessions (and the raw provider records they came from)
share a budget of ``max_bytes`` (``--memory-history-mb``, :data:`DEFAULT_MEMORY_HISTORY_MB`
MiB by default).  Each session's events are a ring: when an append takes the total over
the budget, the appending session's oldest events (and raw records no longer referenced)
are dropped until the total fits again with a slack of 1/32 of the budget (so drops come
in batches), always keeping that session's newest event.  So
a quiet session keeps its history while a busy one keeps its recent past, and the total
never exceeds the budget by more than one event.  Sequences stay gapless and are never
reused; reading events that were dropped answers ``history_unavailable``.

Images sent as run input are not kept (``run.started`` still records their hash).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any, Final, Literal

import msgspec

from agent_bridge.journal.base import ClaimStatus, DeleteStatus, SessionRecord
from agent_bridge.journal.forks import position_through_forks, read_through_forks, rehead
from agent_bridge.journal.paths import DEFAULT_MEMORY_HISTORY_MB
from agent_bridge.journal.raw import raw_records
from agent_bridge.wire.methods import RawRecord

__all__ = ["DEFAULT_MEMORY_HISTORY_MB", "MemoryHistory"]

#: what one kept envelope costs besides its bytes (the bytes object and its deque slot)
_OVERHEAD: Final = 48
#: the most envelopes one stretch of :attr:`_Stored.spans` counts (a batch is added to
#: the newest stretch up to this; a batch larger than it is a stretch of its own)
_SPAN: Final = 256


def _span(spans: list[int], count: int, cost: int) -> None:
    """Count ``count`` more envelopes costing ``cost`` in ``spans`` (see
    :attr:`_Stored.spans`): in its newest stretch while that stays within
    :data:`_SPAN`, else as a new one."""
    if spans and spans[-2] + count <= _SPAN:
        spans[-2] += count
        spans[-1] += cost
    else:
        spans += (count, cost)


class _Stored:
    __slots__ = (
        "bodies",
        "changes",
        "first",
        "positions",
        "raw",
        "raw_id",
        "record",
        "size",
        "spanned",
        "spans",
    )

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        #: the kept envelopes, oldest first; ``bodies[0]`` is sequence ``first`` (a list,
        #: not a deque: an empty deque costs ~600 bytes per session, an empty list 56)
        self.bodies: list[bytes] = []
        #: a fork's own events follow its parent's, from the fork point on
        self.first = record.fork_sequence + 1
        #: ``(terminal sequence, position)`` of the runs that ended with one, in order
        self.positions: list[tuple[int, bytes]] = []
        #: bytes this session holds against the budget
        self.size = 0
        self.raw: dict[int, bytes] = {}
        #: the latest event's raw record (0: none), and ``(sequence, raw_id)`` where it changed
        self.raw_id = 0
        self.changes: list[tuple[int, int]] = []
        #: what the oldest ``spanned`` envelopes cost, by consecutive stretches, oldest
        #: first: ``[count, cost, count, cost, ...]`` (cost: their bytes and
        #: :data:`_OVERHEAD` each), so that eviction frees whole stretches without
        #: reading the size of each old envelope (its memory is long out of the CPU's
        #: caches).  Batches (:meth:`add`) are counted; single appends are not (counting
        #: each costs more than it saves) until the next batch counts them with it.
        #: ``None``: no batch yet (an idle session holds no list)
        self.spans: list[int] | None = None
        self.spanned = 0

    def add(self, bodies: list[bytes], cost: int) -> None:
        """Keep the batch ``bodies`` (newest last), which costs ``cost`` (counted here in
        :attr:`size`), and count it in :attr:`spans` (with the envelopes appended one at
        a time since the last batch)."""
        kept = self.bodies
        spans = self.spans
        if spans is None:
            spans = self.spans = []
        loose = len(kept) - self.spanned
        if loose:
            tail = kept[self.spanned :]
            _span(spans, loose, sum(map(len, tail)) + loose * _OVERHEAD)
        kept += bodies
        self.size += cost
        count = len(bodies)
        if spans and spans[-2] + count <= _SPAN:  # (_span, inline: once per batch)
            spans[-2] += count
            spans[-1] += cost
        else:
            spans += (count, cost)
        self.spanned = len(kept)

    @property
    def last_sequence(self) -> int:
        return self.first + len(self.bodies) - 1

    def page(self, lo: int, hi: int) -> list[bytes]:
        """The kept envelopes of sequences ``lo``..``hi`` (fewer when some were dropped)."""
        start = max(lo, self.first) - self.first
        stop = min(hi, self.last_sequence) - self.first + 1
        if stop <= start:
            return []
        return self.bodies[start:stop]

    def evict(self, need: int) -> int:
        """Drop the oldest envelopes (keeping the newest) until ``need`` bytes are freed or
        only one is left; return the bytes freed.  Callers ask for a slack beyond what
        they must free, so the one ``del`` of a list prefix is amortised over many appends.

        Whole stretches of :attr:`spans` go while all of their cost is needed (each
        envelope costs more than nothing, so dropping one by one would drop every one of
        them too); sizes are read only past them."""
        bodies = self.bodies
        spans = self.spans
        freed = count = 0
        keep = len(bodies) - 1
        i = 0
        if spans is not None:
            while i < len(spans):
                span_count, span_cost = spans[i], spans[i + 1]
                if freed + span_cost > need or count + span_count > keep:
                    break
                freed += span_cost
                count += span_count
                i += 2
        whole_freed, whole_count = freed, count
        while freed < need and count < keep:
            # The running sizes of a stretch of the oldest envelopes, summed in C (no
            # Python bytecode per envelope; the search costs a few calls), the stretch
            # sized by a guess from the first of them.
            guess = (need - freed) // (len(bodies[count]) + _OVERHEAD) + 16
            stretch = bodies[count : min(keep, count + guess)]
            ends = list(accumulate(map(len, stretch)))
            cut = bisect_left(
                range(len(ends)), need - freed, key=lambda j: ends[j] + (j + 1) * _OVERHEAD
            )
            if cut < len(ends):  # the stretch up to ``cut`` frees enough
                freed += ends[cut] + (cut + 1) * _OVERHEAD
                count += cut + 1
                break
            freed += ends[-1] + len(ends) * _OVERHEAD
            count += len(ends)
        if spans is not None:
            if count > whole_count and i < len(spans):
                # dropped one by one into stretch ``i`` (never past it: all of it frees
                # enough, or it holds the newest envelope)
                spans[i] -= count - whole_count
                spans[i + 1] -= freed - whole_freed
                if not spans[i]:
                    i += 2
            del spans[:i]
            self.spanned = max(0, self.spanned - count)
        del bodies[:count]
        self.first += count
        changes = self.changes
        while len(changes) > 1 and changes[1][0] <= self.first:
            _, raw_id = changes.pop(0)
            record = self.raw.pop(raw_id, None)
            if record is not None:
                freed += len(record)
        self.size -= freed
        return freed

    def links(self) -> list[tuple[int, int, int]]:
        """The ``(first_seq, last_seq, raw_id)`` spans of events that came from a raw record."""
        if not self.changes:
            return []
        bounds = [seq for seq, _ in self.changes[1:]] + [self.last_sequence + 1]
        return [
            (seq, stop - 1, raw_id)
            for (seq, raw_id), stop in zip(self.changes, bounds, strict=True)
            if raw_id and stop > seq
        ]

    def raw_page(self, lo: int, hi: int) -> list[RawRecord]:
        """The kept raw records events ``lo``..``hi`` were projected from."""
        return raw_records(self.links(), self.raw, lo, hi)

    def position_at(self, sequence: int) -> tuple[int, bytes] | None:
        """The latest kept ``(sequence, position)`` at or before ``sequence``, or ``None``."""
        for ended, position in reversed(self.positions):
            if ended <= sequence:
                return ended, position
        return None


class MemoryHistory:
    """:class:`~agent_bridge.journal.base.History` kept in this process only, within
    ``max_bytes`` (see the module docstring)."""

    durable = False
    health: Literal["ok", "failing", "corrupt", "broken"] = "ok"
    fault: (
        Literal[
            "disk_full", "io_error", "read_only", "damaged", "other", "internal", "writer_exited"
        ]
        | None
    ) = None
    failing_since: float | None = None

    def __init__(self, max_bytes: int = DEFAULT_MEMORY_HISTORY_MB * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        #: bytes held by every session's kept events and raw records
        self.size = 0
        self.appended = 0
        self.committed = 0
        self._sessions: dict[str, _Stored] = {}
        self._receipts: dict[str, tuple[bytes, bytes]] = {}
        self._ops = 0
        #: (provider, provider session) -> the bridge session bound to it
        self._bindings: dict[tuple[str, str], str] = {}

    async def start(self, on_commit: Callable[[], None]) -> None:
        """Nothing to start."""

    async def aclose(self) -> None:
        """Nothing to stop."""

    # ------------------------------------------------------------------ writes

    def add_session(self, record: SessionRecord) -> None:
        """Keep a new session."""
        self._sessions[record.session_id] = _Stored(msgspec.structs.replace(record))

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Change stored fields of a session (``recovery`` arrives as JSON bytes)."""
        stored = self._sessions.get(session_id)
        if stored is None:
            return
        if "recovery" in fields and isinstance(fields["recovery"], bytes):
            fields["recovery"] = msgspec.json.decode(fields["recovery"])
        for name, value in fields.items():
            if hasattr(stored.record, name):
                setattr(stored.record, name, value)

    def append(self, session_id: str, sequence: int, code: int, body: bytes, raw_id: int) -> None:
        """Append the event at ``sequence``."""
        stored = self._sessions[session_id]
        stored.bodies.append(body)
        cost = len(body) + _OVERHEAD
        stored.size += cost
        self.size += cost
        self.appended += 1
        self.committed += 1
        if raw_id != stored.raw_id:
            stored.changes.append((sequence, raw_id))
            stored.raw_id = raw_id
        if self.size > self.max_bytes:
            self.size -= stored.evict(self.size - self.max_bytes + (self.max_bytes >> 5))

    def append_many(
        self,
        session_id: str,
        first: int,
        codes: bytes,
        bodies: list[bytes],
        raw_id: int,
        size: int | None = None,
    ) -> None:
        """Append the consecutive events from sequence ``first`` (``size``: their bytes
        together, if the caller counted them)."""
        stored = self._sessions[session_id]
        count = len(bodies)
        if size is None:
            size = sum(map(len, bodies))
        cost = size + count * _OVERHEAD
        stored.add(bodies, cost)
        self.size += cost
        self.appended += count
        self.committed += count
        if raw_id != stored.raw_id:
            stored.changes.append((first, raw_id))
            stored.raw_id = raw_id
        if self.size > self.max_bytes:
            self.size -= stored.evict(self.size - self.max_bytes + (self.max_bytes >> 5))

    def add_raw(self, session_id: str, raw_id: int, record: bytes) -> None:
        """Keep a raw provider record."""
        stored = self._sessions[session_id]
        stored.raw[raw_id] = record
        stored.size += len(record)
        self.size += len(record)

    def run_started(self, session_id: str, run_id: str, sequence: int) -> None:
        """Runs are only in the runtime's memory."""

    def run_ended(
        self,
        session_id: str,
        run_id: str,
        sequence: int,
        state: str,
        position: bytes | None,
        points: Sequence[tuple[int, bytes]] = (),
    ) -> None:
        """Keep the run's position and checkpoints (the rest of a run is only in the
        runtime's memory)."""
        stored = self._sessions.get(session_id)
        if stored is not None:
            stored.positions.extend(points)
            if position is not None:
                stored.positions.append((sequence, position))

    def interaction_opened(
        self, session_id: str, interaction_id: str, run_id: str, request: bytes
    ) -> None:
        """Interactions are only in the runtime's memory."""

    def interaction_settled(
        self, session_id: str, interaction_id: str, status: str, answer: bytes | None
    ) -> None:
        """Interactions are only in the runtime's memory."""

    def save_receipt(
        self, command_id: str, session_id: str, payload: bytes, result: bytes, created_at: str
    ) -> None:
        """Keep the first receipt of ``command_id``."""
        self._receipts.setdefault(command_id, (payload, result))

    def add_blob(self, session_id: str, sha256: str, data: bytes) -> None:
        """Not kept in memory (see the module docstring)."""

    async def read_blob(self, sha256: str) -> bytes | None:
        """Always ``None``: images are not kept in memory."""
        return None

    def mark(self) -> int:
        """Every write is committed already."""
        return 0

    async def committed_through(self, ticket: int) -> None:
        """Return at once."""

    # ------------------------------------------------------------------ reads

    async def find_receipt(self, command_id: str) -> tuple[bytes, bytes] | None:
        """Return ``(payload, result)`` of the first use of ``command_id``."""
        return self._receipts.get(command_id)

    def _record(self, stored: _Stored) -> SessionRecord:
        return msgspec.structs.replace(stored.record, last_sequence=stored.last_sequence)

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """Return the session, or ``None``."""
        stored = self._sessions.get(session_id)
        return None if stored is None else self._record(stored)

    async def list_sessions(
        self, provider: str | None, workspace: str | None, cursor: str | None, limit: int
    ) -> tuple[list[SessionRecord], str | None]:
        """Return up to ``limit`` sessions newest first; the cursor is a position."""
        try:
            start = int(cursor) if cursor is not None else 0
        except ValueError:
            start = 0
        matching = [
            s
            for s in reversed(self._sessions.values())
            if (provider is None or s.record.provider_id == provider)
            and (workspace is None or s.record.workspace == workspace)
        ]
        page = matching[start : start + limit]
        more = start + limit < len(matching)
        return [self._record(s) for s in page], str(start + limit) if more else None

    async def read_events(self, session_id: str, lo: int, hi: int) -> list[bytes]:
        """Return the envelopes of sequences ``lo``..``hi`` (of a fork: its parent's up to
        the fork point, as the fork's, then its own)."""
        return self._events(session_id, lo, hi)

    def _fork_of(self, session_id: str) -> tuple[_Stored, str | None, int] | None:
        stored = self._sessions.get(session_id)
        if stored is None:
            return None
        return stored, stored.record.parent_id, stored.record.fork_sequence

    def _events(self, session_id: str, lo: int, hi: int) -> list[bytes]:
        return read_through_forks(
            session_id, lo, hi, fork_of=self._fork_of, own=_Stored.page, adopt=rehead
        )

    async def read_raw(self, session_id: str, lo: int, hi: int) -> list[RawRecord]:
        """Return the raw records events ``lo``..``hi`` were projected from (through a
        fork's parent)."""
        return self._raw(session_id, lo, hi)

    def _raw(self, session_id: str, lo: int, hi: int) -> list[RawRecord]:
        return read_through_forks(session_id, lo, hi, fork_of=self._fork_of, own=_Stored.raw_page)

    async def interaction_state(self, interaction_id: str) -> tuple[str, str] | None:
        """None: a memory history keeps no interaction a live runtime does not have."""
        return None

    async def open_turns(self, session_id: str) -> list[tuple[str, int, list[tuple[str, bytes]]]]:
        """None: a memory history ends with its process, which closes its runs."""
        return []

    async def has_forks(self, session_id: str) -> bool:
        """Whether a fork reads from this session."""
        return any(s.record.parent_id == session_id for s in self._sessions.values())

    async def position_at(self, session_id: str, sequence: int) -> tuple[int, bytes] | None:
        """The latest ``(sequence, position)`` (a run's end or a checkpoint) at or before
        ``sequence``, through a fork's parents."""
        return position_through_forks(
            session_id, sequence, fork_of=self._fork_of, latest=_Stored.position_at
        )

    # ------------------------------------------------------------------ ownership

    async def claim(self, session_id: str) -> tuple[ClaimStatus, SessionRecord | None]:
        """Reopen a closed session of this process."""
        stored = self._sessions.get(session_id)
        if stored is None:
            return "not_found", None
        if stored.record.state != "closed":
            return "in_use", None
        stored.record.state = "active"
        return "claimed", self._record(stored)

    async def bind_native(self, provider_id: str, native_ref: str, session_id: str) -> str:
        """Bind ``native_ref`` to ``session_id`` unless bound; return its session."""
        return self._bindings.setdefault((provider_id, native_ref), session_id)

    async def unbind_native(self, provider_id: str, native_ref: str, session_id: str) -> None:
        """Drop the binding of ``native_ref`` if it is to ``session_id``."""
        if self._bindings.get((provider_id, native_ref)) == session_id:
            del self._bindings[(provider_id, native_ref)]

    async def native_bindings(self, provider_id: str, native_refs: list[str]) -> dict[str, str]:
        """The bridge session each of ``native_refs`` is bound to (only those bound)."""
        bindings = self._bindings
        return {
            ref: bindings[(provider_id, ref)]
            for ref in native_refs
            if (provider_id, ref) in bindings
        }

    async def delete(self, session_id: str) -> DeleteStatus:
        """Forget a session (not one a fork reads from)."""
        if session_id not in self._sessions:
            return "not_found"
        if any(s.record.parent_id == session_id for s in self._sessions.values()):
            return "has_forks"
        stored = self._sessions.pop(session_id)
        self._bindings = {k: v for k, v in self._bindings.items() if v != session_id}
        self.size -= stored.size
        self._receipts = {
            k: v for k, v in self._receipts.items() if not _for_session(v[0], session_id)
        }
        return "deleted"


def _for_session(payload: bytes, session_id: str) -> bool:
    try:
        return bool(msgspec.json.decode(payload)[0] == session_id)
    except (msgspec.DecodeError, IndexError, TypeError, KeyError):
        return False
