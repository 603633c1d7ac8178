"""An ACP agent's own sessions, through ACP's ``session/list``.

An agent that advertises ``sessionCapabilities.list`` in its ``initialize`` answer
(claude-agent-acp, codex-acp) lists the sessions it keeps itself, created in its own UI,
another client or this bridge.  Each call starts the agent (its configured command and
environment: its real store, never a throwaway home), asks ``initialize`` and then
``session/list``, and stops it: bounded in time, scanning only when asked.

* A session reference is the agent's ``sessionId``, the same id a bridge session's
  recovery record holds, so a session the bridge created is listed with its bridge
  session.
* ACP's ``session/list`` pages by the agent's own cursor and page size; this module
  cuts its pages to the bridge's ``limit``: its cursor (``a1:<skip>:<agent cursor>``)
  names the agent's page and how many of it were already shown.
* Continuing a session needs its working directory (ACP's ``session/load`` and
  ``session/resume`` take it): :func:`find_session` pages the agent's list until it
  finds the reference.
* ACP has no way to read a session's history in pages (``session/load`` replays it only
  into a live session), so the descriptor says ``read: unsupported``; continuing loads
  the session with ``session/load`` and imports what it replays
  (:meth:`~agent_bridge.adapters.acp.session.AcpSession.replayed_history`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_bridge import __version__ as BRIDGE_VERSION
from agent_bridge.adapters.acp import protocol as p
from agent_bridge.adapters.kit import history_files
from agent_bridge.adapters.kit.rpc_child import probe_rpc, request_quietly
from agent_bridge.errors import BridgeError
from agent_bridge.processes import ProcessSpec
from agent_bridge.rpc.connection import Connection
from agent_bridge.wire.native import NativeSessionInfo, NativeSessionsListResult

__all__ = ["Listing", "check_ref", "find_session", "list_page", "parse_cursor", "session_entry"]

log = logging.getLogger("agent_bridge.acp")

#: The whole exchange (start, initialize, the list pages), in seconds.
LIST_TIMEOUT: Final = 45.0
#: The agent's pages one call reads at most (a page then ends early, with a cursor).
MAX_AGENT_PAGES: Final = 20
#: The agent's pages :func:`find_session` reads at most before it gives up.
MAX_FIND_PAGES: Final = 100
TITLE_CHARS: Final = 200
REF_CHARS: Final = p.MAX_SESSION_ID

_CURSOR_RE: Final = re.compile(r"a1:([0-9]{1,9}):(.{0,4000})", re.DOTALL)


def parse_cursor(cursor: str | None) -> tuple[str | None, int]:
    """The agent's cursor (``None``: its first page) and how many of that page were
    shown; raises ``invalid_params`` for a cursor this module did not make."""
    if cursor is None:
        return None, 0
    match = _CURSOR_RE.fullmatch(cursor)
    if match is None:
        raise BridgeError("invalid_params", details={"field": "cursor"})
    return (match.group(2) or None), int(match.group(1))


def _cursor(agent_cursor: str | None, skip: int) -> str:
    return f"a1:{skip}:{agent_cursor or ''}"


def check_ref(session_ref: str) -> None:
    """Raise ``invalid_params`` for a reference no agent's list could have given."""
    if not p.session_id_ok(session_ref):
        raise BridgeError("invalid_params", details={"field": "sessionRef"})


def session_entry(item: Mapping[str, Any]) -> NativeSessionInfo | None:
    """The bridge's entry for one ACP ``SessionInfo`` (``None`` for one without a usable
    ``sessionId``)."""
    session_id = item.get("sessionId")
    if not p.session_id_ok(session_id):
        return None
    title = item.get("title")
    cwd = item.get("cwd")
    updated = item.get("updatedAt")
    return NativeSessionInfo(
        session_ref=session_id,
        title=title[:TITLE_CHARS] if isinstance(title, str) and title else None,
        workspace=history_files.recorded_cwd(cwd),
        updated_at=updated if isinstance(updated, str) and updated else None,
    )


@dataclass(slots=True)
class Listing:
    """What one call learned: the agent's ``initialize`` answer and, when it advertises
    ``session/list``, a page (``page``) or the session looked for (``found``)."""

    info: p.AgentInfo
    page: NativeSessionsListResult | None = None
    found: NativeSessionInfo | None = None
    searched: bool = False


async def _initialize(conn: Connection) -> p.AgentInfo:
    caps = p.client_capabilities(fs=False, terminal=False, elicitation=False)
    result = await request_quietly(conn, "initialize", p.initialize_params(BRIDGE_VERSION, caps))
    return p.AgentInfo.from_result(result)


async def _list(conn: Connection, cwd: str | None, cursor: str | None) -> tuple[list[Any], Any]:
    params: dict[str, Any] = {}
    if cwd is not None:
        params["cwd"] = cwd
    if cursor is not None:
        params["cursor"] = cursor
    result = p.obj(await request_quietly(conn, "session/list", params))
    sessions = result.get("sessions")
    return (sessions if isinstance(sessions, list) else []), result.get("nextCursor")


def _spec(argv: tuple[str, ...], env: Mapping[str, str], cwd: str | None) -> ProcessSpec:
    where = cwd if cwd is not None and os.path.isdir(cwd) else os.path.expanduser("~")
    if not os.path.isdir(where):
        where = "/"
    return ProcessSpec(argv, cwd=where, env=dict(env), name=f"{argv[0]} (session list)")


def _real(path: str | None) -> str | None:
    return os.path.realpath(path) if path is not None else None


async def list_page(
    argv: tuple[str, ...],
    env: Mapping[str, str],
    workspace: str | None,
    cursor: str | None,
    limit: int,
    *,
    timeout: float = LIST_TIMEOUT,
) -> Listing:
    """Start the agent, ask ``initialize`` and, if it advertises ``session/list``, a page of
    at most ``limit`` of its sessions (of ``workspace`` when given), from ``cursor``.
    Raises ``invalid_params`` for a malformed cursor and ``history_unavailable`` when the
    agent did not start or answer in time."""
    agent_cursor, skip = parse_cursor(cursor)
    wanted = _real(workspace)

    async def ask(conn: Connection) -> Listing:
        listing = Listing(await _initialize(conn))
        if not listing.info.session_list:
            return listing
        out: list[NativeSessionInfo] = []
        at, shown = agent_cursor, skip
        next_cursor: str | None = None
        for _ in range(MAX_AGENT_PAGES):
            items, following = await _list(conn, wanted, at)
            rest = items[shown:]
            for index, item in enumerate(rest):
                if len(out) == limit:
                    next_cursor = _cursor(at, shown + index)
                    break
                entry = session_entry(p.obj(item))
                if entry is None:
                    continue
                if wanted is not None and _real(entry.workspace) != wanted:
                    continue
                out.append(entry)
            if next_cursor is not None:
                break
            if not isinstance(following, str) or not following:
                break
            at, shown = following, 0
            if len(out) == limit:
                next_cursor = _cursor(at, 0)
                break
        else:
            next_cursor = _cursor(at, shown)
        listing.page = NativeSessionsListResult(tuple(out), next_cursor=next_cursor)
        return listing

    result = await probe_rpc(
        _spec(argv, env, workspace), ask, jsonrpc=True, timeout=timeout, log=log
    )
    if result is None:
        raise BridgeError("history_unavailable")
    return result


async def find_session(
    argv: tuple[str, ...],
    env: Mapping[str, str],
    session_ref: str,
    *,
    timeout: float = LIST_TIMEOUT,
) -> Listing:
    """Start the agent and page its ``session/list`` until the session ``session_ref``
    (``found``; ``searched`` when the list was read).  Raises ``history_unavailable``
    when the agent did not start or answer in time."""

    async def ask(conn: Connection) -> Listing:
        listing = Listing(await _initialize(conn))
        if not listing.info.session_list:
            return listing
        listing.searched = True
        at: str | None = None
        for _ in range(MAX_FIND_PAGES):
            items, following = await _list(conn, None, at)
            for item in items:
                entry = session_entry(p.obj(item))
                if entry is not None and entry.session_ref == session_ref:
                    listing.found = entry
                    return listing
            if not isinstance(following, str) or not following:
                break
            at = following
        return listing

    result = await probe_rpc(_spec(argv, env, None), ask, jsonrpc=True, timeout=timeout, log=log)
    if result is None:
        raise BridgeError("history_unavailable")
    return result
