"""A fleet member's part in placement and takeover (``docs/fleet.md``, Placement).

On the PostgreSQL journal each member records what it serves (:func:`declare`, once at
start: the bridge's providers narrowed by ``--node-providers``, its workspace roots);
``session/create`` goes to the member :func:`~.placement.place` picks
(:func:`create_placed`: this one, or another through the database, the host then
following the session from here); and a session whose owner died is resumed by a member
that can run its provider in its workspace (:func:`succeed`: this one, or the
:func:`~.placement.heir` it routes ``session/takeover`` to).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.journal import JournalError, Member, Routable
from agent_bridge.runtime.placement import heir, place
from agent_bridge.runtime.reading import guard
from agent_bridge.runtime.routing import SessionRecreate, owner_error
from agent_bridge.wire.methods import SessionCreateParams, SessionRef, SessionResult
from agent_bridge.workspace import resolve_workspace

if TYPE_CHECKING:
    from agent_bridge.runtime.runtime import Runtime
    from agent_bridge.runtime.stream import Subscriber
    from agent_bridge.wire.methods import SessionInfo

__all__ = ["create_placed", "declare", "succeed"]

log = logging.getLogger("agent_bridge.runtime")


def judged(workspace: str | None) -> str | None:
    """``workspace`` as placement compares it with the members' roots (which each member
    recorded as real paths): its real path when it is a folder on this machine
    (symbolic links followed, and ``..`` taken after them, so neither a link into a
    served root nor one out of it is judged by its name); else normalized (it may be a
    folder only on another member, which judges it by its own real path before it
    creates the session: :func:`create_placed` there).  Raises ``workspace_invalid``
    for a relative path or a NUL byte."""
    if workspace is None:
        return None
    try:
        real = resolve_workspace(workspace)
    except BridgeError as exc:
        if os.path.isabs(workspace) and "\x00" not in workspace:
            return os.path.normpath(workspace)  # not a folder here
        raise exc from None
    return real


def _fleet(runtime: Runtime) -> Routable:
    history = runtime.history
    assert isinstance(history, Routable)
    return history


async def declare(runtime: Runtime) -> None:
    """Record what this member serves, unless its command did before its first reply
    (:func:`agent_bridge.commands.boot.declare_member`): the providers of its
    registry, only those ``--node-providers`` names when it names some; then let
    placement proceed (also when the journal cannot be reached: this member then
    serves what it declared locally, and others see it once it declares again at its
    next start)."""
    history = _fleet(runtime)
    if history.declared:  # before the command's first reply (commands/boot.py)
        runtime.declared.set()
        return
    try:
        if history.serves is None:
            await runtime.registry.warm()
            ids = tuple(provider.id for provider in runtime.registry.all())
        else:
            ids = tuple(p for p in history.serves if _known(runtime, p))
        await history.declare(ids)
    except JournalError as exc:
        log.warning("fleet: cannot record what this member serves (%s)", exc)
    finally:
        runtime.declared.set()


def _known(runtime: Runtime, provider_id: str) -> bool:
    try:
        runtime.registry.get(provider_id)
    except BridgeError:
        log.warning(
            "fleet: --node-providers names %r, which this bridge does not have", provider_id
        )
        return False
    return True


async def create_placed(
    runtime: Runtime,
    params: SessionCreateParams,
    subscriber: Subscriber | None,
    session_id: str | None = None,
) -> SessionInfo:
    """Create the session ``params`` describes on the member placement picks (on the
    node ``params.node`` names, when it names one) with ``subscriber`` following it
    (``session_id``: the id of a session just deleted, created again).
    Raises ``invalid_params`` (``field: node``: no live member has that node name),
    ``provider_unavailable`` / ``workspace_invalid`` naming the node that cannot serve
    it, ``provider_not_found`` (no member has the provider), ``history_unavailable``
    and what ``session/create`` raises on the member that creates it."""
    history = _fleet(runtime)
    await runtime.declared.wait()
    members = await guard(history.members())
    me = history.me()
    known = params.provider in me.providers or any(params.provider in m.providers for m in members)
    if params.node is None and not known:
        runtime.registry.get(params.provider)  # provider_not_found when it is unknown
    workspace = judged(params.workspace)
    target = place(members, me, params.provider, workspace, params.node)
    if target.token == me.token:  # created in the folder judged, not its name again
        here = msgspec.structs.replace(params, workspace=workspace)
        return await runtime.create_here(here, subscriber, session_id)
    # the host's path: the member there resolves it on its machine, and judges it again
    there = msgspec.structs.replace(params, node=target.node)
    if session_id is None:
        result = await _ask(history, target, "session/create", msgspec.json.encode(there))
    else:
        again = SessionRecreate(there, session_id)
        result = await _ask(history, target, "session/recreate", msgspec.json.encode(again))
    info = msgspec.json.decode(result, type=SessionResult).session
    if subscriber is not None:  # the host follows it from here (as session/attach)
        await runtime.attach(info.session_id, subscriber)
    return info


async def _ask(history: Routable, target: Member, method: str, params: bytes) -> bytes:
    """The member ``target``'s encoded result for ``method``; raises its error."""
    try:
        result, error = await history.route_to(target.token, method, params)
    except JournalError:
        raise BridgeError("history_unavailable") from None
    if error is not None or result is None:
        raise owner_error(error)
    return result


async def succeed(runtime: Runtime, session_id: str) -> None:
    """A dead member's session this member just closed ``bridge_crashed``: resume it
    here when this member can run its provider in its workspace, else on the least
    loaded member that can (``session/takeover`` through the database; hosts here that
    followed it follow it on from there); when none can, it stays closed and
    resumable.  Never raises (what fails is logged)."""
    history = _fleet(runtime)
    try:
        stored = await runtime.stored(session_id)
        # judged as placement judges a new session's (its real path here), so a session
        # created through a link goes to the member serving the folder it really is in
        workspace = judged(stored.workspace)
        await runtime.declared.wait()
        members = await guard(history.members())
    except BridgeError as exc:
        log.warning("session %s: not taken over (%s)", session_id, exc)
        return
    me = history.me()
    target = heir(members, me, stored.provider_id, workspace)
    if target is None:
        log.warning(
            "session %s: no live member serves %s in its workspace; it stays closed",
            session_id,
            stored.provider_id,
        )
        return
    if target.token == me.token:
        try:
            await runtime.resume_taken_over(session_id)
        except BridgeError as exc:
            log.warning("session %s: not resumed here after takeover (%s)", session_id, exc)
        return
    try:
        params = msgspec.json.encode(SessionRef(session_id))
        await _ask(history, target, "session/takeover", params)
    except BridgeError as exc:
        log.warning("session %s: %s did not take it over (%s)", session_id, target.node, exc)
        return
    log.warning("session %s: taken over by %s", session_id, target.node)
    await runtime.follow_on(session_id)
