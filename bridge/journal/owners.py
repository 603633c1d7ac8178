"""Which bridge processes are alive: one lock file per process, held for its lifetime.

A bridge that opens the journal takes an exclusive ``flock`` on
``<state dir>/owners/<token>.lock`` (a fresh random token) *before* it records itself in
the journal, and keeps it until it exits.  The operating system drops the lock when the
process ends however it ends (SIGKILL included), so another bridge can tell a live owner
from a crashed one by trying the lock: if it gets it, the owner is gone and its sessions
need crash recovery, and it keeps holding that lock while it recovers them so that two
bridges never recover the same owner at once.  (POSIX ``flock``: Linux and macOS.)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Final

from agent_bridge.journal.errors import JournalError

__all__ = ["OwnerLock", "dead_owner", "owner_alive"]

_DIR: Final = "owners"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def _path(state_dir: str, token: str) -> str:
    return os.path.join(state_dir, _DIR, token + ".lock")


class OwnerLock:
    """This process's lock file; :attr:`token` names it in the journal."""

    def __init__(self, state_dir: str) -> None:
        """Create and lock a fresh lock file; raises :class:`JournalError`."""
        self.token = os.urandom(8).hex()
        self.path = _path(state_dir, self.token)
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise JournalError(
                f"cannot create a lock file in {os.path.dirname(self.path)}: {exc.strerror}"
            ) from None

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(fd)


@contextlib.contextmanager
def dead_owner(state_dir: str, token: str) -> Iterator[bool]:
    """Yield whether the bridge process ``token`` is gone; while the block runs, hold its
    lock (so no other bridge recovers it at the same time).  Its lock file is removed when
    the block ends without an error."""
    path = _path(state_dir, token)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        yield True
        return
    except OSError:
        yield False
        return
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
        yield True
        with contextlib.suppress(OSError):
            os.unlink(path)
    finally:
        os.close(fd)


def owner_alive(state_dir: str, token: str) -> bool:
    """Return whether the bridge process ``token`` still holds its lock (no side effect
    beyond a momentary lock)."""
    try:
        fd = os.open(_path(state_dir, token), os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        if fcntl is None:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        return False
    finally:
        os.close(fd)
