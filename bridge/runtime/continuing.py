"""Runs a dead bridge left open, continued where they were cut off (``docs/fleet.md``,
"Pending interactions at a takeover").

A provider with ``recovery.resumeTurn`` continues a run cut off while it waited on an
interaction.  Crash recovery (:mod:`agent_bridge.journal.recovery`) leaves such a run
and its pending interactions open in the journal; the bridge that reopens the session
(``session/resume``, or a fleet member taking a dead member's session over) reads them
(:func:`cut_turns`) and makes each run active again under its id
(:func:`restore_run`, then :meth:`~agent_bridge.runtime.runs.Run.continue_cut`), its
interactions pending under their original ids and offered again to every host.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import msgspec

from agent_bridge.journal import History
from agent_bridge.runtime.inputs import PreparedInput
from agent_bridge.runtime.reading import guard
from agent_bridge.runtime.runs import Run
from agent_bridge.wire.interactions import InteractionRequest
from agent_bridge.wire.methods import RunInput

if TYPE_CHECKING:
    from agent_bridge.runtime.sessions import Session

__all__ = ["CutTurn", "cut_turns", "restore_run"]

log = logging.getLogger("agent_bridge.runtime")


class CutTurn(msgspec.Struct, frozen=True):
    """A run left open in the journal: its id, the text it was started with, and its
    pending interactions ``(id, request)`` in the order the journal lists them."""

    run_id: str
    input: str
    pending: tuple[tuple[str, InteractionRequest], ...]


class _Started(msgspec.Struct):
    payload: _Input


class _Input(msgspec.Struct):
    input: str = ""


_started: Final = msgspec.json.Decoder(_Started)
_request: Final = msgspec.json.Decoder(InteractionRequest)


async def cut_turns(history: History, session_id: str) -> list[CutTurn]:
    """The runs of ``session_id`` the journal holds open, with their input and pending
    interactions (a request that does not read is left out: logged).  Raises
    ``history_unavailable``."""
    turns: list[CutTurn] = []
    for run_id, started, pending in await guard(history.open_turns(session_id)):
        page = await guard(history.read_events(session_id, started, started))
        text = ""
        if page:
            try:
                text = _started.decode(page[0]).payload.input
            except msgspec.DecodeError:
                log.warning("run %s: its run.started does not read", run_id)
        asked: list[tuple[str, InteractionRequest]] = []
        for interaction_id, request in pending:
            try:
                asked.append((interaction_id, _request.decode(request)))
            except msgspec.DecodeError:
                log.warning("interaction %s: its stored request does not read", interaction_id)
        turns.append(CutTurn(run_id, text, tuple(asked)))
    return turns


def restore_run(session: Session, turn: CutTurn, runs: dict[str, Run]) -> Run:
    """The run ``turn`` active again in the reopened ``session`` (and in ``runs``, the
    runtime's), its interactions pending under their ids (:meth:`Run.restore`); the
    caller then has the provider continue it (:meth:`Run.continue_cut`)."""
    run = Run(turn.run_id, session, PreparedInput(RunInput(text=turn.input), turn.input))
    runs[run.id] = run
    session.add_run(run)
    run.restore(turn.pending)
    return run
