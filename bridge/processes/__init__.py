"""Provider child processes: the package face of spawning, environments and redaction.

Why this package exists: every agent CLI the bridge drives is a child process, and the
rules for starting one safely (no shell, an allowlisted environment, an own process
group with a parent-death signal and a reaper, deadlock-free pipes, a bounded stop) are
kept in one place instead of in every adapter.  Import from here; the modules are

* :mod:`~agent_bridge.processes.environment` -- :func:`build_child_env` and its allowlist;
* :mod:`~agent_bridge.processes.spawning` -- :class:`ProcessSpec`, :func:`spawn`,
  :class:`ChildProcess`, :class:`SpawnError`: the one module that starts processes;
* :mod:`~agent_bridge.processes.pipes` -- the child's pipes as anyio byte streams;
* :mod:`~agent_bridge.processes.reaper` -- kills the children's groups if the bridge dies.

:func:`redact` lives in :mod:`agent_bridge.redaction` and is re-exported here, as before.

Tests that patch module globals must patch them where they are looked up:
``agent_bridge.processes.spawning._pdeathsig_preexec``, for example.
"""

from __future__ import annotations

from agent_bridge.processes.environment import CHILD_ENV_ALLOWLIST, build_child_env
from agent_bridge.processes.spawning import (
    DEFAULT_STDERR_TAIL_BYTES as DEFAULT_STDERR_TAIL_BYTES,
)
from agent_bridge.processes.spawning import (
    PDEATHSIG_SUPPORTED,
    ChildProcess,
    Detached,
    ProcessSpec,
    SpawnError,
    SpawnErrorReason,
    WaitTimeout,
    open_bridge,
    popen_bridge,
    spawn,
    spawn_detached,
)

# Private names tests reach for (the reaper's state; patch _pdeathsig_preexec in
# agent_bridge.processes.spawning, where spawn() looks it up).
from agent_bridge.processes.spawning import _pdeathsig_preexec as _pdeathsig_preexec
from agent_bridge.processes.spawning import _reaper as _reaper
from agent_bridge.redaction import redact

__all__ = [
    "CHILD_ENV_ALLOWLIST",
    "PDEATHSIG_SUPPORTED",
    "ChildProcess",
    "Detached",
    "ProcessSpec",
    "SpawnError",
    "SpawnErrorReason",
    "WaitTimeout",
    "build_child_env",
    "open_bridge",
    "popen_bridge",
    "redact",
    "spawn",
    "spawn_detached",
]
