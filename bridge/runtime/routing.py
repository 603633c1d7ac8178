"""Requests about a session another fleet member owns, handled by that member.

``run/start``, ``run/steer``, ``run/interrupt``, ``interaction/respond``,
``session/close``, ``session/settings``, ``session/configure`` and ``session/commands``
can only be handled where the session is open; so can three requests of front-ends
only, never on the wire (``agent-bridge acp``'s view of a session another member runs:
``session/state`` reads its provider's descriptor, its options as the journal keeps
them, its model and mode and its commands; ``session/reconfigure`` changes some of its
options; ``session/retitle`` titles it if it has no title yet).  ``session/create``,
``session/recreate`` (the same under the id of a session just deleted: a provider
switched) and ``session/takeover`` go to the member placement picked.  On a fleet (the
PostgreSQL journal, ``docs/fleet.md``) a member that finds the session open in another
live member (``session_in_use``, ``run_not_found``, ``interaction_not_found`` here) sends
the request through the database (:meth:`~agent_bridge.journal.base.Routable.route`) and
answers with the owner's result or its classified error (code, table message,
allowlisted details: :func:`encode_error`): :func:`route`.  The owner takes each request
once, in order, and runs it as its own host would (:func:`serve_routed`, started by the
runtime); a ``commandId`` makes ``run/start`` exactly once across retries through any
member (the receipts live in the shared journal).  Events reach the asking host the way
every event of a session owned elsewhere does: it attaches and follows
(:mod:`.following`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import History, JournalError, Routable
from agent_bridge.wire.errors import ErrorInfo
from agent_bridge.wire.inputs import SessionCommandsResult
from agent_bridge.wire.methods import (
    Empty,
    InteractionRespondParams,
    InteractionRespondResult,
    RunInterruptParams,
    RunInterruptResult,
    RunStartParams,
    RunStartResult,
    RunSteerParams,
    SessionCreateParams,
    SessionRef,
    SessionResult,
)
from agent_bridge.wire.providers import ProviderDescriptor
from agent_bridge.wire.settings import SessionConfigureParams, SessionSettings

if TYPE_CHECKING:
    from agent_bridge.runtime.runtime import Runtime

__all__ = [
    "ROUTED",
    "SessionReconfigure",
    "SessionRecreate",
    "SessionRetitle",
    "SessionState",
    "SessionTitle",
    "route",
    "serve_routed",
]

log = logging.getLogger("agent_bridge.runtime")


class SessionState(msgspec.Struct, frozen=True):
    """``session/state`` (front-ends only): what a front-end shows of a session open in
    another member, as that member has it: its provider's ``descriptor``, its
    ``options`` as the journal keeps them (credentials withheld), its model and mode
    (``settings``, ``None`` when the provider names neither), its ``commands`` and
    its ``title``."""

    descriptor: ProviderDescriptor
    options: dict[str, Any]
    settings: SessionSettings | None
    commands: SessionCommandsResult
    title: str | None = None


class SessionReconfigure(msgspec.Struct, frozen=True):
    """``session/reconfigure`` (front-ends only): give the session the options ``set``
    and drop those named in ``unset``, keeping the rest as its owner has them (values
    withheld from the journal included); answered with its :class:`SessionState`."""

    session_id: str
    set: dict[str, Any] = {}
    unset: tuple[str, ...] = ()


class SessionRecreate(msgspec.Struct, frozen=True):
    """``session/recreate`` (front-ends only, to the member placement picked):
    ``session/create`` of ``params`` under ``session_id``, the id of a session just
    deleted (``agent-bridge acp`` switching a session's provider)."""

    params: SessionCreateParams
    session_id: str


class SessionRetitle(msgspec.Struct, frozen=True):
    """``session/retitle`` (front-ends only): title the session ``title`` if it has no
    title yet."""

    session_id: str
    title: str


class SessionTitle(msgspec.Struct, frozen=True):
    """The answer to :class:`SessionRetitle`: the title given, ``None`` when the session
    had one already."""

    title: str | None = None


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
    "session/settings": (SessionRef, SessionSettings, "session", lambda p: p.session_id),
    "session/configure": (
        SessionConfigureParams,
        SessionSettings,
        "session",
        lambda p: p.session_id,
    ),
    "session/commands": (SessionRef, SessionCommandsResult, "session", lambda p: p.session_id),
    "session/state": (SessionRef, SessionState, "session", lambda p: p.session_id),
    "session/reconfigure": (SessionReconfigure, SessionState, "session", lambda p: p.session_id),
    "session/retitle": (SessionRetitle, SessionTitle, "session", lambda p: p.session_id),
    # to the member placement picked (runtime/fleet.py), not found by a session
    "session/create": (SessionCreateParams, SessionResult, "member", lambda p: p.node),
    "session/takeover": (SessionRef, SessionResult, "member", lambda p: p.session_id),
    "session/recreate": (SessionRecreate, SessionResult, "member", lambda p: p.session_id),
}

_failures = itertools.count(1)

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
        raise owner_error(error)
    return msgspec.json.decode(result, type=result_type)


def encode_error(exc: BridgeError) -> str:
    """The owner's classified error as it travels back through the database: its
    :class:`ErrorInfo` (code, table message, retryable, correlation id, allowlisted
    details) as JSON text."""
    return msgspec.json.encode(exc.info).decode()


def owner_error(error: str | None) -> BridgeError:
    """The :class:`BridgeError` for an error the owner sent back (:func:`encode_error`),
    rebuilt through :meth:`ErrorInfo.of` so the message is the table's and the details
    pass the allowlist again here; ``internal`` for anything that does not decode to an
    error of the closed set."""
    if error is not None:
        try:
            info = msgspec.json.decode(error, type=ErrorInfo)
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass
        else:
            return BridgeError(info.code, info.correlation_id, info.details)
    return BridgeError("internal")


async def _execute(runtime: Runtime, method: str, data: bytes) -> tuple[bytes | None, str | None]:
    """Run a routed request here; return its encoded result or its encoded error
    (:func:`encode_error`)."""
    entry = ROUTED.get(method)
    if entry is None:
        return None, encode_error(BridgeError("invalid_params", details={"field": "method"}))
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
            status = await runtime.answer(params.interaction_id, params.answer)
            await runtime.durable()
            result = InteractionRespondResult(params.interaction_id, status)
        elif method == "session/create":
            result = SessionResult(await runtime.create_placed(params, None))
        elif method == "session/recreate":
            info = await runtime.create_placed(params.params, None, params.session_id)
            result = SessionResult(info)
        elif method == "session/takeover":
            result = SessionResult(await runtime.resume_taken_over(params.session_id))
        elif method == "session/settings":
            result = await runtime.session_settings(params.session_id)
        elif method == "session/configure":
            result = await runtime.configure_session(params)
        elif method == "session/commands":
            result = await runtime.session_commands(params.session_id)
        elif method == "session/state":
            result = await runtime.session_state(params.session_id)
        elif method == "session/reconfigure":
            result = await runtime.change_options(params.session_id, params.set, params.unset)
        elif method == "session/retitle":
            result = SessionTitle(runtime.title_if_untitled(params.session_id, params.title))
        else:
            result = SessionResult(await runtime.close_session(params.session_id))
    except BridgeError as exc:
        return None, encode_error(exc)
    except msgspec.ValidationError:
        return None, encode_error(BridgeError("invalid_params"))
    return msgspec.json.encode(result), None


async def serve_routed(runtime: Runtime) -> None:
    """Handle what other members route to this one until cancelled."""
    history = runtime.history
    assert isinstance(history, Routable)

    async def execute(method: str, data: bytes) -> tuple[bytes | None, str | None]:
        try:
            return await _execute(runtime, method, data)
        except Exception:
            cid = f"routed-{next(_failures)}"
            log.exception("a routed %s failed (correlation id %s)", method, cid)
            return None, encode_error(BridgeError("internal", cid))

    await history.serve_commands(execute)
