"""Workspace paths from hosts: accepted only as existing directories, by their real path.

Relative paths, NUL bytes and paths that do not resolve to a directory are rejected.
:func:`contained` checks that a path (from a provider, say) stays inside a workspace on
the resolved real path, so ``..``, sibling prefixes (``/work/a`` vs ``/work/ab``) and
symlink escapes are caught.
"""

from __future__ import annotations

import os

from agent_bridge.errors import BridgeError

__all__ = ["contained", "resolve_workspace", "workspace_filter"]


def resolve_workspace(path: str | None) -> str | None:
    """Return the real path of the workspace directory ``path`` (``None`` stays ``None``).

    Raises ``BridgeError("workspace_invalid")`` for a relative path, a NUL byte, or a path
    that is not an existing directory.
    """
    if path is None:
        return None
    real = os.path.realpath(_absolute(path))
    if not os.path.exists(real):
        raise _invalid("no such directory")
    if not os.path.isdir(real):
        raise _invalid("not a directory")
    return real


def workspace_filter(path: str | None) -> str | None:
    """Return the workspace a listing is filtered by: the real path of ``path`` when it
    exists, else ``path`` as given (a workspace removed since still matches what was
    recorded in it); ``None`` stays ``None``.

    Raises ``BridgeError("workspace_invalid")`` for a relative path or a NUL byte: no
    recorded workspace is either, and a NUL makes path functions raise.
    """
    if path is None:
        return None
    real = os.path.realpath(_absolute(path))
    return real if os.path.isdir(real) else path


def _absolute(path: str) -> str:
    """``path``; raises ``workspace_invalid`` for a NUL byte or a relative path."""
    if "\x00" in path:
        raise _invalid("the path has a NUL byte")
    if not os.path.isabs(path):
        raise _invalid("the path is relative: give an absolute path")
    return path


def _invalid(reason: str) -> BridgeError:
    """``workspace_invalid`` with ``reason`` (the bridge's own sentence)."""
    return BridgeError("workspace_invalid", details={"reason": reason})


def contained(workspace: str, path: str) -> str:
    """Return the real path of ``path`` (relative paths are taken from ``workspace``) if it
    lies inside ``workspace``; raise ``BridgeError("workspace_invalid")`` otherwise."""
    if "\x00" in path:
        raise _invalid("the path has a NUL byte")
    root = os.path.realpath(workspace)
    real = os.path.realpath(os.path.join(root, path))
    # commonpath, not a string prefix: "/work/ab" is not inside "/work/a", and every
    # path is inside "/" (root + os.sep would be "//" there).
    if os.path.commonpath((root, real)) != root:
        raise _invalid("the path is outside the workspace")
    return real
