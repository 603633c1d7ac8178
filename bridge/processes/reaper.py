"""The process reaper: kills the process groups of live children if the bridge dies.

Why this module exists: ``PR_SET_PDEATHSIG`` covers a provider but not the processes it
starts, and nothing inside the bridge can act once it has been SIGKILLed, so a helper
process must.  This module is the helper's program and the bookkeeping of which groups
it must kill; the helper itself is started by :mod:`agent_bridge.processes.spawning`, the one
module that starts processes, through the ``start`` function given to :class:`Reaper`.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Final, Protocol

__all__ = ["REAPER_PROGRAM", "Helper", "Reaper"]

# The reaper's whole program.  It reads "+PGID" / "-PGID" lines on stdin, and at EOF --
# the bridge exited or was killed, and the kernel closed its end of the pipe -- it sends
# SIGKILL to every process group still listed.  It ignores SIGINT (a Ctrl-C in a
# terminal is the bridge's business; the EOF follows) and runs with -I -S, cwd "/" and an
# empty environment so it starts in milliseconds and pins nothing.
REAPER_PROGRAM: Final = """
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups, pending = set(), b""
while True:
    try:
        data = os.read(0, 4096)
    except OSError:
        break
    if not data:
        break
    pending += data
    *lines, pending = pending.split(b"\\n")
    for line in lines:
        if line[1:].isdigit() and int(line[1:]) > 1:
            (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class Helper(Protocol):
    """A running reaper helper process (what ``start`` returns)."""

    @property
    def pid(self) -> int:
        """The helper's process id."""
        ...

    def running(self) -> bool:
        """Return whether the helper has not exited yet."""
        ...

    def write(self, data: bytes) -> None:
        """Write ``data`` to the helper's stdin; raise :class:`OSError` if it is gone."""
        ...

    def close(self, wait: float) -> None:
        """Close the helper's stdin (EOF) and reap it, waiting up to ``wait`` seconds;
        never raises."""
        ...


class Reaper:
    """Kills the process groups of live children if the bridge dies without stopping them.

    ``PR_SET_PDEATHSIG`` covers a child but not its own children: the kernel clears the
    setting across ``fork``, so after a SIGKILL of the bridge a provider's grandchild (a
    tool it ran, a language server) would be orphaned and live on.  Nothing inside the
    bridge can act once it is killed, so one helper process per bridge does: it is told
    each child's process group as the child starts (``register``) and when it is gone
    (``unregister``), and at EOF on its stdin -- which the kernel delivers when the
    bridge's last descriptor of the pipe closes, at exit or at SIGKILL -- it SIGKILLs the
    groups still listed.  Children never inherit the pipe (``close_fds``), so only the
    bridge's death closes it.

    The helper is started lazily with the first child (a bridge that only runs the
    scripted provider never has one), restarted if it dies, and told the whole list
    again then.  Everything here is best effort: failures are logged, never raised, and
    spawning works without a reaper.  Limits: a grandchild that leaves its group
    (``setsid``) escapes it, as it escapes the group kill of :meth:`ChildProcess.stop`.

    ``start`` starts a helper running :data:`REAPER_PROGRAM` and returns it, or returns
    ``None`` (having logged why) when it cannot.
    """

    def __init__(self, start: Callable[[], Helper | None]) -> None:
        self.enabled = os.name == "posix" and bool(sys.executable)
        self._start = start
        self._proc: Helper | None = None
        self._groups: set[int] = set()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The helper's pid while it runs (for tests)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.running() else None

    def register(self, pgid: int) -> None:
        """Add ``pgid`` to the groups killed if the bridge dies."""
        if pgid > 1:
            with self._lock:
                self._groups.add(pgid)
                self._send(b"+%d\n" % pgid)

    def unregister(self, pgid: int) -> None:
        """Remove ``pgid`` (its group is gone, so the id may be reused)."""
        with self._lock:
            if pgid in self._groups:
                self._groups.discard(pgid)
                self._send(b"-%d\n" % pgid)

    def _send(self, line: bytes) -> None:
        if not self.enabled:
            return
        for _attempt in range(2):
            proc = self._proc
            fresh = False
            if proc is None or not proc.running():
                if proc is not None:  # it died: release its pipe before starting another
                    proc.close(wait=0)
                proc = self._proc = self._start()
                fresh = True
                if proc is None:
                    return
            data = b"".join(b"+%d\n" % g for g in sorted(self._groups)) if fresh else line
            try:
                if data:
                    proc.write(data)
                return
            except OSError:  # it died (EPIPE): start another one and tell it everything
                proc.close(wait=0)
                self._proc = None

    def close(self) -> None:
        """At a normal exit: EOF to the helper (it kills any group still listed) and reap it."""
        with self._lock:
            proc, self._proc = self._proc, None
            if proc is not None:
                proc.close(wait=2.0)
