"""Where a daemon's socket, lock and log live, for one user and state directory.

The socket directory is ``$XDG_RUNTIME_DIR/agent-bridge`` when that variable names an
absolute directory, else ``<state dir>/run`` (for a ``:memory:`` state, a per-uid folder
in the temporary directory).  It is created with mode 0700 whatever the umask and
refused when another user owns it or others can write it
(``agent_bridge.private_files``).  Names carry a short hash of the state directory, so
each state directory has its own daemon: ``daemon-<hash>.sock``, ``daemon-<hash>.lock``
(an ``flock`` held for the daemon's lifetime, holding its pid) and ``daemon-<hash>.log``.

The socket directory depends on the environment (``XDG_RUNTIME_DIR`` is set in a desktop
session, often not under cron or some SSH set-ups), so the daemon also holds
``<state dir>/daemon.lock``, which names its pid and socket: one daemon per state
directory whatever the environment, and a ``connect`` from another environment finds it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from agent_bridge.journal.paths import MEMORY, resolve_state_dir

__all__ = ["DaemonPaths", "PathError", "daemon_paths", "prepare_dir"]

#: sockaddr_un's sun_path is 108 bytes on Linux, including the terminating NUL
_MAX_SOCKET_PATH = 107


class PathError(Exception):
    """The socket directory cannot be used safely; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class DaemonPaths:
    """The files of one daemon."""

    state_dir: str
    directory: str
    socket: str
    lock: str
    log: str
    #: ``<state dir>/daemon.lock`` (``None`` for a ``:memory:`` state: nothing to share)
    state_lock: str | None = None


def daemon_paths(state_dir: str | None, environ: Mapping[str, str] = os.environ) -> DaemonPaths:
    """Return the paths of the daemon for ``state_dir`` (the ``--state-dir`` value, or
    ``None`` for the environment or platform default).  Raises :class:`PathError` when
    the socket path would be too long."""
    resolved = resolve_state_dir(state_dir, environ)
    runtime_dir = environ.get("XDG_RUNTIME_DIR", "")
    if runtime_dir and os.path.isabs(runtime_dir):
        directory = os.path.join(runtime_dir, "agent-bridge")
    elif resolved == MEMORY:
        directory = os.path.join(tempfile.gettempdir(), f"agent-bridge-{os.getuid()}")
    else:
        directory = os.path.join(resolved, "run")
    tag = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    socket = os.path.join(directory, f"daemon-{tag}.sock")
    if len(os.fsencode(socket)) > _MAX_SOCKET_PATH:
        raise PathError(f"the daemon socket path is too long ({socket}); set XDG_RUNTIME_DIR")
    return DaemonPaths(
        resolved,
        directory,
        socket,
        os.path.join(directory, f"daemon-{tag}.lock"),
        os.path.join(directory, f"daemon-{tag}.log"),
        None if resolved == MEMORY else os.path.join(resolved, "daemon.lock"),
    )


def prepare_dir(paths: DaemonPaths) -> None:
    """Create the socket directory with mode 0700 (missing parents too, whatever the
    umask), or check an existing one: a directory, not a link, owned by this user, that
    no one else can write (one others can enter is made 0700).  The state directory (which
    holds the daemon's second lock) is created or checked the same way.  Raises
    :class:`PathError` (one line)."""
    from agent_bridge.private_files import UnsafeDirectory, private_dir

    try:
        if paths.state_dir != MEMORY:
            private_dir(paths.state_dir)
        private_dir(paths.directory, follow_symlinks=False, tighten=True)
    except UnsafeDirectory as exc:
        raise PathError(str(exc)) from None
    except OSError as exc:
        raise PathError(f"cannot create {paths.directory}: {exc.strerror}") from None
