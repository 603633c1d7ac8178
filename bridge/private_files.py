"""Directories and files only this user can use, whatever the umask.

Why this exists: the state directory holds the journal (every prompt and reply) and the
runtime directory the daemon's socket and lock. Created with ``os.makedirs(mode=0o700)``
their missing parents got ``0o777`` minus the umask (0777 under umask 0), files opened
with a default mode were 0666 under umask 0, and an existing directory that another user
owned or could write was used as it was (that user could then replace the journal or
the socket). Every place that creates one goes through here:

* :func:`private_dir` creates each missing component with mode 0700 (the XDG base
  directory rule) and refuses, with a one-line reason, a directory that is not a
  directory, belongs to another user, or that others can write (as OpenSSH refuses a key
  file others can change);
* :func:`open_private` creates a file with mode 0600 (set again with ``fchmod``, so the
  umask cannot widen or narrow it), and opens an existing one as it is.

Only the directory itself is checked, not every ancestor as OpenSSH does: a state
directory under ``/tmp`` (sticky, world-writable) is legitimate.
"""

from __future__ import annotations

import os
import stat

__all__ = ["UnsafeDirectory", "open_private", "private_dir"]


class UnsafeDirectory(Exception):
    """A directory cannot be used safely; the message says why, in one line."""


def private_dir(path: str, *, follow_symlinks: bool = True, tighten: bool = False) -> None:
    """Create ``path`` (and each missing parent) with mode 0700, or check an existing one.

    Raises :class:`UnsafeDirectory` when it is not a directory (a symbolic link counts as
    one only with ``follow_symlinks``), belongs to another user, or is writable by its
    group or others; with ``tighten``, an acceptable directory others can still read or
    enter is made 0700. Raises ``OSError`` when it cannot be created.
    """
    _make(path)
    try:
        info = os.stat(path) if follow_symlinks else os.lstat(path)
    except OSError as exc:
        raise UnsafeDirectory(f"{path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeDirectory(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise UnsafeDirectory(
            f"{path} belongs to another user (uid {info.st_uid}); use a directory of your own"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022:
        raise UnsafeDirectory(
            f"{path} can be written by other users (mode {mode:04o}); "
            f"run `chmod go-w {path}` or use another directory"
        )
    if tighten and mode & 0o077:
        os.chmod(path, 0o700)


def _make(path: str) -> None:
    """Create the missing components of ``path``, each with mode exactly 0700."""
    missing = []
    head = os.path.abspath(path)
    while not os.path.lexists(head):
        missing.append(head)
        parent = os.path.dirname(head)
        if parent == head:
            break
        head = parent
    for component in reversed(missing):
        try:
            os.mkdir(component, 0o700)
        except FileExistsError:
            continue  # made by another process meanwhile: checked like any existing one
        os.chmod(component, 0o700)  # the umask may have taken bits away (or all of them)


def open_private(path: str, flags: int = os.O_WRONLY | os.O_APPEND) -> int:
    """Return a descriptor for ``path`` opened with ``flags``, creating the file with mode
    0600 whatever the umask when it does not exist (an existing file keeps its mode).
    Raises ``OSError``."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return os.open(path, flags & ~os.O_EXCL)
    try:
        os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd
