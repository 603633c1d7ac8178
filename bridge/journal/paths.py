"""Where the journal lives: the state directory, by platform convention or override.

Precedence: ``serve --state-dir DIR``, then the environment variable
``AGENT_BRIDGE_STATE_DIR``, then the platform's convention for per-user state:

* Linux and other POSIX systems: ``$XDG_STATE_HOME/agent-bridge`` when ``XDG_STATE_HOME``
  is an absolute path, else ``~/.local/state/agent-bridge``;
* macOS: ``~/Library/Application Support/agent-bridge``;
* Windows: ``%LOCALAPPDATA%\\agent-bridge``.

The value ``:memory:`` (flag or environment) keeps no journal: history lives in memory
and ends with the process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final

__all__ = [
    "DEFAULT_MEMORY_HISTORY_MB",
    "ENV_VAR",
    "JOURNAL_FILE",
    "MEMORY",
    "default_state_dir",
    "resolve_state_dir",
]

MEMORY: Final = ":memory:"
#: the memory history's default budget for ``:memory:`` (``--memory-history-mb``)
DEFAULT_MEMORY_HISTORY_MB: Final = 64
ENV_VAR: Final = "AGENT_BRIDGE_STATE_DIR"
JOURNAL_FILE: Final = "journal.sqlite3"
_APP: Final = "agent-bridge"


def default_state_dir(
    platform: str = sys.platform,
    environ: Mapping[str, str] = os.environ,
    home: str | None = None,
) -> str:
    """Return the platform's per-user state directory for agent-bridge (not created).

    Plain ``os.path``, not ``pathlib``: this runs on every start-up, and importing
    ``pathlib`` (with ``urllib.parse``) would cost more than the rest of the function.
    """
    home = home if home is not None else (environ.get("HOME") or os.path.expanduser("~"))
    if platform == "darwin":
        return os.path.join(home, "Library", "Application Support", _APP)
    if platform.startswith("win"):
        local = environ.get("LOCALAPPDATA")
        return os.path.join(local if local else os.path.join(home, "AppData", "Local"), _APP)
    xdg = environ.get("XDG_STATE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, _APP)
    return os.path.join(home, ".local", "state", _APP)


def resolve_state_dir(flag: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """Return ``":memory:"`` or the absolute state directory chosen by ``flag``, the
    environment or the platform default (in that order)."""
    chosen = flag if flag else environ.get(ENV_VAR) or None
    if chosen == MEMORY:
        return MEMORY
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    return default_state_dir(environ=environ)
