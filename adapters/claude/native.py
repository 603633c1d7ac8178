"""Claude Code's own sessions, read from its session files (strictly read-only).

The CLI keeps each session as JSON Lines in
``$CLAUDE_CONFIG_DIR/projects/<encoded cwd>/<session id>.jsonl`` (``~/.claude`` when the
variable is unset), appending one record per line while it runs.  This module lists
those files and reads pages of one, for ``provider/sessions/list`` and
``provider/sessions/read``.  Files are only ever opened ``O_RDONLY``.

* A session reference is ``<project directory>/<session id>``: opaque to hosts, checked
  on the way back in (one path component each, the id a CLI session id), so a reference
  never names a file outside the projects directory.
* Paging is :mod:`agent_bridge.adapters.kit.jsonl_history` (as for Codex's rollouts and
  Gemini CLI's chats): byte-offset cursors that stay valid while the CLI appends, never
  part of a record, bounded memory whatever the file's size; this module gives the
  projection of one record (:func:`project_record`).

The blocking file work runs in a worker thread (:func:`list_sessions`,
:func:`read_session`); the functions it calls take paths and return values.
"""

from __future__ import annotations

import os
import re
from typing import Any, Final

from agent_bridge.adapters.kit import history_files, jsonl_history
from agent_bridge.adapters.kit.history_files import HistoryFile
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import EventPayload, RunStarted
from agent_bridge.wire.native import (
    NativeSessionInfo,
    NativeSessionsListResult,
)

__all__ = [
    "config_dir",
    "continuation",
    "list_page",
    "project_record",
    "read_page",
    "ref_for",
]

#: How much of a file's start is read to find its working directory, time and prompt.
HEAD_BYTES: Final = 256 * 1024

_DIR_RE: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}")
_ID_RE: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)

#: Record types the CLI writes that carry nothing for the bridge's events (not unknown).
_QUIET_TYPES: Final = frozenset(
    {
        "queue-operation",
        "attachment",
        "last-prompt",
        "summary",
        "custom-title",
        "ai-title",
        "file-history-snapshot",
        "system",
        "progress",
        "tag",
        "agent-name",
        "pr-link",
        "permission-mode",
        "worktree-state",
        "content-replacement",
    }
)


def config_dir() -> str:
    """The CLI's configuration directory: ``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return history_files.cli_home("CLAUDE_CONFIG_DIR", ".claude")


def _projects() -> str:
    return os.path.join(config_dir(), "projects")


def session_path(session_ref: str) -> str:
    """The file of ``session_ref``; raises ``invalid_params`` for a reference this module
    did not make (which could name another file)."""
    directory, _, session_id = session_ref.partition("/")
    if _DIR_RE.fullmatch(directory) is None or _ID_RE.fullmatch(session_id) is None:
        raise BridgeError("invalid_params", details={"field": "sessionRef"})
    return os.path.join(_projects(), directory, session_id + ".jsonl")


# --------------------------------------------------------------------------- listing


def _encoded(workspace: str) -> str:
    """The CLI's directory name for a working directory (every character that is not a
    letter or digit becomes ``-``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", workspace)


def ref_for(cwd: str, session_id: str) -> str | None:
    """The reference of the session ``session_id`` the CLI keeps for the working
    directory ``cwd`` (``None`` for a name the CLI shortens, or an id that is not one)."""
    directory = _encoded(cwd)
    if len(directory) > 200 or _ID_RE.fullmatch(session_id) is None:
        return None
    if _DIR_RE.fullmatch(directory) is None:
        return None
    return directory + "/" + session_id


def _entries(workspace: str | None) -> list[HistoryFile]:
    wanted = None
    if workspace is not None:
        encoded = _encoded(os.path.realpath(workspace))
        # The CLI shortens very long names; those are matched by their recorded cwd only.
        wanted = encoded if len(encoded) <= 200 else None
    out: list[HistoryFile] = []
    for directory in history_files.store_dirs(_projects(), _DIR_RE):
        if wanted is None or directory.name == wanted:
            out += history_files.jsonl_files(directory.path, directory.name + "/", _ID_RE)
    return out


def _prompt_text(record: dict[str, Any]) -> str | None:
    """The text a user typed, from a ``user`` record (``None`` for tool results and the
    CLI's own meta records)."""
    if record.get("type") != "user" or record.get("isMeta") is True:
        return None
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        if texts and not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return "\n".join(texts)
    return None


def _head(path: str) -> dict[str, Any]:
    """What the start of a session file says: ``cwd``, ``created`` (the first record's
    time), ``prompt`` (the first user prompt) and ``title`` (a title record)."""
    found: dict[str, Any] = {}
    for record in jsonl_history.head_records(path, HEAD_BYTES):
        if "created" not in found and isinstance(record.get("timestamp"), str):
            found["created"] = record["timestamp"]
        if "cwd" not in found and isinstance(record.get("cwd"), str):
            # one the kit does not take (relative, a NUL, ...) is not the session's
            found["cwd"] = history_files.recorded_cwd(record["cwd"])
        kind = record.get("type")
        if kind == "custom-title" and isinstance(record.get("customTitle"), str):
            found["title"] = record["customTitle"]
        elif kind == "summary" and isinstance(record.get("summary"), str):
            found.setdefault("title", record["summary"])
        if "prompt" not in found:
            prompt = _prompt_text(record)
            if prompt is not None:
                found["prompt"] = prompt
    return found


def list_page(workspace: str | None, cursor: str | None, limit: int) -> NativeSessionsListResult:
    """A page of the CLI's sessions, newest first (by last write), of ``workspace`` when
    given, after ``cursor`` (``<mtime ns>:<reference>`` of the last one shown; a session
    written to meanwhile moves to the front and is not repeated).  Raises
    ``invalid_params`` for a malformed cursor and ``history_unavailable`` when the
    projects directory cannot be read."""
    real_workspace = os.path.realpath(workspace) if workspace is not None else None

    def describe(entry: HistoryFile) -> NativeSessionInfo | None:
        head = _head(entry.path)
        cwd = head.get("cwd")
        if (
            real_workspace is not None
            and cwd is not None
            and os.path.realpath(cwd) != real_workspace
        ):
            return None
        title = head.get("title") or head.get("prompt")
        return history_files.session_info(
            entry, title=title, workspace=cwd, created=head.get("created")
        )

    return history_files.list_page(_entries(workspace), cursor, limit, describe)


def continuation(session_ref: str) -> tuple[str, str | None]:
    """The CLI's session id of ``session_ref`` (what ``--resume`` takes) and the working
    directory its file records (the CLI finds a session only from there).  Raises
    ``invalid_params`` for a reference this module did not make, ``session_not_found``
    when there is no such file, ``history_unavailable`` when it cannot be read."""
    path = session_path(session_ref)
    try:
        os.stat(path)
    except FileNotFoundError:
        raise BridgeError("session_not_found") from None
    except OSError as exc:
        raise jsonl_history.unavailable(exc) from None
    cwd = _head(path).get("cwd")
    return session_ref.partition("/")[2], cwd if isinstance(cwd, str) else None


# --------------------------------------------------------------------------- reading


def project_record(data: bytes) -> tuple[EventPayload, ...]:
    """The bridge event payloads of one stored record: a user prompt is ``run.started``,
    an assistant message its text, thinking and tool starts, a tool result its tool's
    end; a record that is not JSON (``malformed_record``), of a type this adapter does
    not know (``unknown_record``) or that fails to project (``projection_failed``) is a
    diagnostic.  Each record is projected on its own (a tool result names its tool only
    when the name is in the same record)."""
    return jsonl_history.project_json(data, "session file", _project, typed=True)


def _project(record: dict[str, Any]) -> tuple[EventPayload, ...] | None:
    from agent_bridge.adapters.claude import mapping

    kind = record["type"]
    if kind == "user":
        out: list[EventPayload] = []
        prompt = _prompt_text(record)
        if prompt is not None:
            out.append(RunStarted(input=prompt))
        out.extend(mapping.tool_result_payloads(mapping.TurnState(), record))
        return tuple(out)
    if kind == "assistant":
        return tuple(mapping.assistant_payloads(mapping.TurnState(), record))
    if kind in _QUIET_TYPES:
        return ()
    return None


#: A page of a session file's records (:func:`agent_bridge.adapters.kit.jsonl_history.read_page`
#: of :func:`session_path`, each record by :func:`project_record`).
read_page = jsonl_history.file_reader(session_path, project_record)
