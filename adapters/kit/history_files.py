"""Listing a CLI's own history files, for ``provider/sessions/list`` (strictly read-only).

Several CLIs keep each session as a ``.jsonl`` file in a directory tree of their own
(Codex's rollouts, Gemini CLI's chats, Claude Code's sessions).  Where the tree is and
what a file's reference is differ per CLI; what is the same lives here once:

* :func:`cli_home` is where a CLI keeps its files (its variable, else a folder in
  the home directory);
* :func:`store_dirs` lists the directories of the store (none when it does not exist,
  ``history_unavailable`` when it cannot be read), :func:`jsonl_files` the session files
  of one directory (a directory or file removed meanwhile is skipped, never an error);
* :func:`list_page` pages the files newest first (by last write, then reference), after
  a cursor ``<mtime ns>:<reference>`` of the last one shown, each file described by the
  adapter (which may skip it: one of another workspace, say), and :func:`session_info`
  is that description's common shape.

Functions here block (callers run them in a worker thread).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, TypeVar

from agent_bridge.adapters.kit.bounds import text_ok
from agent_bridge.adapters.kit.jsonl_history import rfc3339, unavailable
from agent_bridge.errors import BridgeError
from agent_bridge.wire.native import NativeSessionInfo, NativeSessionsListResult

__all__ = [
    "MAX_CWD",
    "TITLE_CHARS",
    "HistoryFile",
    "cli_home",
    "jsonl_files",
    "list_page",
    "recorded_cwd",
    "session_info",
    "store_dirs",
]

#: A listed session's title is at most this many characters of its first prompt (or title).
TITLE_CHARS: Final = 200

_LIST_CURSOR_RE: Final = re.compile(r"([0-9]{1,20}):(.{1,400})", re.DOTALL)

#: The longest working directory a provider's history is taken to name (Linux's
#: ``PATH_MAX``).
MAX_CWD: Final = 4096


def recorded_cwd(value: object) -> str | None:
    """``value`` when it can be a session's working directory, else ``None``: an absolute
    path of 1 to :data:`MAX_CWD` characters, no control character (a NUL makes
    ``os.path.realpath`` raise), no lone surrogate.  A provider's history or listing
    names it; it is shown to hosts, compared by real path, and a CLI is started in it."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_CWD:
        return None
    if not os.path.isabs(value) or not text_ok(value):
        return None
    return value


@dataclass(frozen=True, slots=True)
class HistoryFile:
    """One session file: its reference (opaque to hosts), path, last write and size."""

    ref: str
    path: str
    mtime_ns: int
    size: int


F = TypeVar("F", bound=HistoryFile)


def cli_home(variable: str, folder: str) -> str:
    """A CLI's home: the environment variable ``variable`` when set and not empty, else
    ``folder`` in the user's home directory."""
    configured = os.environ.get(variable)
    return configured if configured else os.path.join(os.path.expanduser("~"), folder)


def store_dirs(root: str, name: re.Pattern[str]) -> list[os.DirEntry[str]]:
    """The directories in ``root`` whose name is all of ``name``; ``[]`` when ``root``
    does not exist.  Raises ``history_unavailable`` when it cannot be read."""
    try:
        with os.scandir(root) as listing:
            found = list(listing)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise unavailable(exc) from None
    return [d for d in found if name.fullmatch(d.name) is not None and d.is_dir()]


def jsonl_files(directory: str, prefix: str, stem: re.Pattern[str]) -> list[HistoryFile]:
    """The files ``<stem>.jsonl`` in ``directory`` whose stem is all of ``stem``, each
    with the reference ``prefix + stem``; ``[]`` when the directory cannot be listed (it
    was removed meanwhile, say), and a file gone before its ``stat`` is left out."""
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError:
        return []
    out: list[HistoryFile] = []
    for entry in entries:
        name, dot, ext = entry.name.rpartition(".")
        if ext != "jsonl" or not dot or stem.fullmatch(name) is None:
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        out.append(HistoryFile(prefix + name, entry.path, st.st_mtime_ns, st.st_size))
    return out


def session_info(
    file: HistoryFile, *, title: object, workspace: str | None, created: object
) -> NativeSessionInfo:
    """The listed session of ``file``: ``title`` cut to :data:`TITLE_CHARS` and
    ``created`` kept when they are strings, the file's last write as ``updatedAt``."""
    return NativeSessionInfo(
        session_ref=file.ref,
        title=title[:TITLE_CHARS] if isinstance(title, str) else None,
        workspace=workspace,
        created_at=created if isinstance(created, str) else None,
        updated_at=rfc3339(file.mtime_ns),
        size_bytes=file.size,
    )


def list_page(
    files: Iterable[F],
    cursor: str | None,
    limit: int,
    describe: Callable[[F], NativeSessionInfo | None],
) -> NativeSessionsListResult:
    """A page of up to ``limit`` of ``files``, newest first, after ``cursor``, each as
    ``describe(file)`` (``None``: not listed); ``nextCursor`` when a further file is
    listed.  Raises ``invalid_params`` for a cursor this module did not make."""
    after: tuple[int, str] | None = None
    if cursor is not None:
        match = _LIST_CURSOR_RE.fullmatch(cursor)
        if match is None:
            raise BridgeError("invalid_params", details={"field": "cursor"})
        after = (-int(match.group(1)), match.group(2))
    sessions: list[NativeSessionInfo] = []
    last: F | None = None
    more = False
    for file in sorted(files, key=lambda f: (-f.mtime_ns, f.ref)):
        if after is not None and (-file.mtime_ns, file.ref) <= after:
            continue
        info = describe(file)
        if info is None:
            continue
        if len(sessions) == limit:
            more = True
            break
        sessions.append(info)
        last = file
    next_cursor = f"{last.mtime_ns}:{last.ref}" if more and last is not None else None
    return NativeSessionsListResult(tuple(sessions), next_cursor=next_cursor)
