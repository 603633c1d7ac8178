"""Pipe capacity (sans-I/O apart from one ``fcntl``; no anyio, so ``agent-bridge serve``
can widen its pipes before its first reply)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat

__all__ = ["PIPE_BYTES", "widen_pipe"]

#: The pipe capacity asked for (Linux ``F_SETPIPE_SZ``; the default is 64 KiB).  A larger
#: pipe means fewer, larger reads and writes (and wake-ups of the other end) when one side
#: streams.  1 MiB is the unprivileged maximum by default (``/proc/sys/fs/pipe-max-size``).
PIPE_BYTES = 1 << 20


def widen_pipe(fd: int) -> None:
    """Ask for a :data:`PIPE_BYTES` buffer on ``fd`` if it is a pipe; never raises (not
    Linux, not a pipe, or over the system's limit: the pipe stays as it was)."""
    getsize = getattr(fcntl, "F_GETPIPE_SZ", None)
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if getsize is None or setsize is None or not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return
    with contextlib.suppress(OSError):
        if fcntl.fcntl(fd, getsize) < PIPE_BYTES:
            fcntl.fcntl(fd, setsize, PIPE_BYTES)
