"""Requests about a session another fleet member owns, handled by that member.

``run/start``, ``run/steer``, ``run/interrupt``, ``interaction/respond`` and
``session/close`` can only be handled where the session is open.  On a fleet (the
PostgreSQL journal, ``docs/fleet.md``) a member that finds the session open in another
live member (``session_in_use``, ``run_not_found``, ``interaction_not_found`` here) sends
the request through the database (:meth:`~agent_bridge.journal.base.Routable.route`) and
answers with the owner's result or error: :func:`route`.  The owner takes each request
once, in order, and runs it as its own host would (:func:`serve_routed`, started by the
runtime); a ``commandId`` makes ``run/start`` exactly once across retries through any
member (the receipts live in the shared journal).  Events reach the asking host the way
every event of a session owned elsewhere does: it attaches and follows
(:mod:`.following`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import History, JournalError, Routable
from agent_bridge.wire.methods import (
    Empty,
    InteractionRespondParams,
    InteractionRespondResult,
    RunInterruptParams,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    RunSteerParams,
    SessionRef,
    SessionResult,
)

if TYPE_CHECKING:
    from agent_bridge.runtime.runtime import Runtime

__all__ = ["ROUTED", "route", "serve_routed"]

log = logging.getLogger("agent_bridge.runtime")

#: method -> (params type, result type, what names the owner, the key)
ROUTED: Final[dict[str, tuple[type[Any], type[Any], str, Callable[[Any], str]]]] = {
    "run/start": (RunStartParams, RunStartResult, "session", lambda p: p.session_id),
    "run/steer": (RunSteerParams, Empty, "run", lambda p: p.run_id),
    "run/interrupt": (RunInterruptParams, RunInterruptResult, "run", lambda p: p.run_id),
    "interaction/respond": (
        InteractionRespondParams,
        InteractionRespondResult,
        "interaction",
        lambda p: p.interaction_id,
    ),
    "session/close": (SessionRef, SessionResult, "session", lambda p: p.session_id),
}

#: local errors that mean "not open here": the request may be another member's
NOT_HERE: Final = frozenset({"session_in_use", "run_not_found", "interaction_not_found"})


async def route(history: History, method: str, params: Any, local: BridgeError) -> Any:
    """Return the owner's result for ``method`` with ``params`` (the request that raised
    ``local`` here); re-raise ``local`` when no other live member owns the session, the
    owner's error (as a :class:`BridgeError`) when it failed."""
    if local.error_code not in NOT_HERE or not isinstance(history, Routable):
        raise local
    _, result_type, kind, key = ROUTED[method]
    try:
        reply = await history.route(kind, key(params), method, msgspec.json.encode(params))
    except JournalError:
        raise BridgeError("history_unavailable") from None
    if reply is None:
        raise local
    result, error = reply
    if error is not None or result is None:
        raise BridgeError(error or "internal_error")  # type: ignore[arg-type]
    return msgspec.json.decode(result, type=result_type)


async def _execute(runtime: Runtime, method: str, data: bytes) -> tuple[bytes | None, str | None]:
    """Run a routed request here; return its encoded result or its error code."""
    entry = ROUTED.get(method)
    if entry is None:
        return None, "method_not_found"
    params_type = entry[0]
    try:
        params = msgspec.json.decode(data, type=params_type)
        result: Any
        if method == "run/start":
            result = await runtime.start_run(params)
        elif method == "run/steer":
            await runtime.steer_run(params.run_id, params.input)
            result = Empty()
        elif method == "run/interrupt":
            result = runtime.interrupt_run(params.run_id, params.reason)
        elif method == "interaction/respond":
            status = runtime.respond(params.interaction_id, params.answer)
            await runtime.durable()
            result = InteractionRespondResult(params.interaction_id, status)
        else:
            result = SessionResult(await runtime.close_session(params.session_id))
    except BridgeError as exc:
        return None, str(exc.error_code)
    except msgspec.ValidationError:
        return None, "invalid_params"
    return msgspec.json.encode(result), None


async def serve_routed(runtime: Runtime) -> None:
    """Handle what other members route to this one until cancelled."""
    history = runtime.history
    assert isinstance(history, Routable)

    async def execute(method: str, data: bytes) -> tuple[bytes | None, str | None]:
        try:
            return await _execute(runtime, method, data)
        except Exception:
            log.exception("a routed %s failed", method)
            return None, "internal_error"

    await history.serve_commands(execute)
