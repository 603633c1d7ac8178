"""Which fleet member runs a new session, and which one takes a dead member's over.

Each member declares what it serves (``docs/fleet.md``, Placement): the providers
(``--node-providers``, default every provider of the bridge) and the workspace roots
(``--node-workspaces``, default any); the journal keeps the declarations of the live
members (:meth:`~agent_bridge.journal.base.Routable.members`).  This module decides from
them, without I/O: :func:`refusal` says why a member cannot run a session,
:func:`place` picks the member for ``session/create`` (this one when it can, else the
least loaded one that can, on the named node when the host named one) and :func:`heir`
the one to resume a session whose owner died.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from agent_bridge.errors import BridgeError
from agent_bridge.journal import Member

__all__ = ["heir", "place", "refusal", "within"]


def within(path: str, root: str) -> bool:
    """Whether the absolute ``path`` is ``root`` or below it, compared as written (the
    caller resolves symbolic links: :func:`agent_bridge.runtime.fleet.judged`, real
    paths on this machine; roots are recorded as real paths by their member)."""
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def refusal(member: Member, provider: str, workspace: str | None) -> BridgeError | None:
    """``None`` when ``member`` can run a session of ``provider`` in ``workspace``
    (``None``: the member's own default, which any member serves); else the error that
    says why: ``provider_unavailable`` (it does not serve the provider) or
    ``workspace_invalid`` (the workspace is outside its roots), each naming the node."""
    if provider not in member.providers:
        return BridgeError(
            "provider_unavailable",
            details={
                "provider": provider[:100],
                "reason": f"fleet member {member.node} does not serve this provider",
            },
        )
    roots = member.roots
    if workspace is None or roots is None or any(within(workspace, r) for r in roots):
        return None
    return BridgeError(
        "workspace_invalid",
        details={"reason": f"outside the workspace folders fleet member {member.node} serves"},
    )


def place(
    members: Sequence[Member],
    me: Member,
    provider: str,
    workspace: str | None,
    node: str | None = None,
) -> Member:
    """The member that creates a session of ``provider`` in ``workspace``: ``me`` when
    it can (and ``node`` is ``None`` or its own), else the one with the fewest open
    sessions among those that can (on ``node`` when given).  ``members`` are the live
    members (``me`` among them or not).  Raises ``invalid_params`` (``field: node``) for
    a node no live member has, else the :func:`refusal` of ``me`` (``node`` not given)
    or of the named node's member when none can."""
    others = [m for m in members if m.token != me.token]
    if node is None:
        candidates = [me, *others]
    else:
        candidates = ([me] if me.node == node else []) + [m for m in others if m.node == node]
        if not candidates:
            raise BridgeError(
                "invalid_params",
                details={
                    "field": "node",
                    "reason": "no live member of the fleet has this node name",
                },
            )
    if candidates[0] is me and refusal(me, provider, workspace) is None:
        return me
    able = [m for m in candidates if refusal(m, provider, workspace) is None]
    if able:
        return min(able, key=lambda m: (m.sessions, m.node, m.token))
    error = refusal(candidates[0], provider, workspace)
    assert error is not None
    raise error


def heir(
    members: Sequence[Member], me: Member, provider: str, workspace: str | None
) -> Member | None:
    """The member to resume a session of ``provider`` in ``workspace`` whose owner died:
    ``me`` when it can, else the least loaded live member that can; ``None`` when none
    can (the session then stays closed and resumable)."""
    try:
        return place(members, me, provider, workspace)
    except BridgeError:
        return None
