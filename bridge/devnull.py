"""Point an output descriptor at ``/dev/null`` once its reader has gone away.

It exists because three places print to a pipe whose reader may leave (``agent-bridge
demo | head``, ``exec``'s output, the command line's last resort): after the first
failed write, what the descriptor's buffer still holds must be dropped at exit instead of
failing again (Python flushes ``sys.stdout`` at exit and would print a traceback).
"""

from __future__ import annotations

import os

__all__ = ["point_at_devnull"]


def point_at_devnull(fd: int) -> None:
    """Make ``fd`` write to ``/dev/null`` (``dup2``); never raises (a descriptor already
    closed, or no ``/dev/null``, leaves things as they were)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
    except (OSError, ValueError):
        pass
