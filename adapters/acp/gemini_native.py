"""Gemini CLI's own sessions, read from its chat files (strictly read-only).

Gemini CLI 0.61 keeps each chat as JSON Lines in
``$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<time>-<id prefix>.jsonl`` (``~``
when ``GEMINI_CLI_HOME`` is unset), the project directory holding ``.project_root`` (the
working directory).  A file is a log: a header record (``sessionId``, ``projectHash``,
``startTime``), message records (``type`` ``user``/``gemini``/``info``…, each with its
``id``; a message rewritten later, with its tool calls' results say, is appended again
under the same ``id``) and ``{"$set": …}`` updates of the header's fields.

The pinned Gemini CLI does not advertise ACP's ``session/list`` (nor ``session/resume``),
so the files are the only source; paging is :mod:`agent_bridge.adapters.kit.
jsonl_history`.

* A session reference is ``<project directory>/<file name without .jsonl>``: opaque to
  hosts, checked on the way back in against that exact shape.
* Projection: a user message's text is ``run.started`` (one that only returns tool
  results projects to nothing: the results come with the ``gemini`` message's tool
  calls); a ``gemini`` message is its thoughts, its text and, per tool call, a
  ``tool.activity`` start and end.  Header, ``$set`` and ``info``/``warning``/``error``
  records project to nothing; any other record is an ``unknown_record`` diagnostic.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Final

from agent_bridge.adapters.kit import history_files, jsonl_history
from agent_bridge.adapters.kit.history_files import HistoryFile
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import (
    EventPayload,
    RunStarted,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
)
from agent_bridge.wire.native import (
    NativeSessionInfo,
    NativeSessionsListResult,
)

__all__ = ["gemini_dir", "list_page", "project_record", "read_page", "session_path"]

HEAD_BYTES: Final = 256 * 1024

_DIR_RE: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}")
_STEM_RE: Final = re.compile(r"session-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9a-fA-F]{8}")
_QUIET_MESSAGES: Final = frozenset({"info", "warning", "error"})


def gemini_dir() -> str:
    """The CLI's ``.gemini`` directory: under ``GEMINI_CLI_HOME``, else the home."""
    home = os.environ.get("GEMINI_CLI_HOME") or os.path.expanduser("~")
    return os.path.join(home, ".gemini")


def _projects() -> str:
    return os.path.join(gemini_dir(), "tmp")


def session_path(session_ref: str) -> str:
    """The chat file of ``session_ref``; raises ``invalid_params`` for a reference this
    module did not make (which could name another file)."""
    directory, _, stem = session_ref.partition("/")
    if _DIR_RE.fullmatch(directory) is None or _STEM_RE.fullmatch(stem) is None:
        raise BridgeError("invalid_params", details={"field": "sessionRef"})
    return os.path.join(_projects(), directory, "chats", stem + ".jsonl")


# --------------------------------------------------------------------------- listing


@dataclass(frozen=True, slots=True)
class _Entry(HistoryFile):
    root: str | None


def _project_root(directory: str) -> str | None:
    try:
        with open(os.path.join(directory, ".project_root"), "rb") as f:
            data = f.read(8192)
    except OSError:
        return None
    try:
        root = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    return history_files.recorded_cwd(root)  # not one it takes (a NUL, ...): none


def _entries(workspace: str | None) -> list[_Entry]:
    out: list[_Entry] = []
    for directory in history_files.store_dirs(_projects(), _DIR_RE):
        root = _project_root(directory.path)
        if workspace is not None and (root is None or os.path.realpath(root) != workspace):
            continue
        chats = os.path.join(directory.path, "chats")  # none (yet), or removed meanwhile: []
        for file in history_files.jsonl_files(chats, directory.name + "/", _STEM_RE):
            out.append(_Entry(file.ref, file.path, file.mtime_ns, file.size, root))
    return out


def _user_text(record: dict[str, Any]) -> str | None:
    """The text a user typed, from a ``user`` message record (``None`` for one that only
    returns tool results)."""
    if record.get("type") != "user":
        return None
    content = record.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return "\n".join(texts) if texts else None


def _head(path: str) -> dict[str, Any]:
    """``created`` (the header's ``startTime``) and ``prompt`` (the first user message
    outside a ``$set``, which holds the CLI's injected context)."""
    found: dict[str, Any] = {}
    for record in jsonl_history.head_records(path, HEAD_BYTES):
        if "created" not in found and isinstance(record.get("startTime"), str):
            found["created"] = record["startTime"]
        prompt = _user_text(record)
        if prompt is not None:
            found["prompt"] = prompt
            break
    return found


def list_page(workspace: str | None, cursor: str | None, limit: int) -> NativeSessionsListResult:
    """A page of the CLI's chats, newest first (by last write), of ``workspace`` when
    given (the project's ``.project_root``), after ``cursor`` (``<mtime ns>:<reference>``
    of the last one shown).  Raises ``invalid_params`` for a malformed cursor and
    ``history_unavailable`` when the CLI's directory cannot be read."""
    real = os.path.realpath(workspace) if workspace is not None else None

    def describe(entry: _Entry) -> NativeSessionInfo:
        head = _head(entry.path)
        return history_files.session_info(
            entry, title=head.get("prompt"), workspace=entry.root, created=head.get("created")
        )

    return history_files.list_page(_entries(real), cursor, limit, describe)


# --------------------------------------------------------------------------- reading


def project_record(data: bytes) -> tuple[EventPayload, ...]:
    """The bridge event payloads of one chat record (see the module docstring); a record
    that is not JSON (``malformed_record``), of a kind this adapter does not know
    (``unknown_record``) or that fails to project (``projection_failed``) is a
    diagnostic."""
    return jsonl_history.project_json(data, "chat file", _project)


def _project(record: dict[str, Any]) -> tuple[EventPayload, ...] | None:
    if "$set" in record or ("sessionId" in record and "type" not in record):
        return ()  # a header or an update of its fields
    kind = record.get("type")
    if kind == "user":
        prompt = _user_text(record)
        return (RunStarted(input=prompt),) if prompt is not None else ()
    if kind == "gemini":
        return _gemini(record)
    if kind in _QUIET_MESSAGES:
        return ()
    return None


def _gemini(record: dict[str, Any]) -> tuple[EventPayload, ...]:
    out: list[EventPayload] = []
    for thought in record.get("thoughts") or ():
        if isinstance(thought, dict):
            parts = [thought.get("subject"), thought.get("description")]
            text = ": ".join(p for p in parts if isinstance(p, str) and p)
            if text:
                out.append(ThinkingDelta(text=text))
    content = record.get("content")
    if isinstance(content, str) and content:
        out.append(TextDelta(text=content))
    for call in record.get("toolCalls") or ():
        if not isinstance(call, dict):
            raise ValueError("a tool call that is not an object")
        call_id, name = call["id"], call["name"]
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise ValueError("a tool call without an id or a name")
        title = call.get("description")
        out.append(
            ToolActivity(
                call_id,
                name,
                "started",
                input=call.get("args"),
                title=title if isinstance(title, str) else None,
            )
        )
        status = call.get("status")
        if status in ("success", "error", "cancelled"):
            shown = call.get("resultDisplay")
            out.append(
                ToolActivity(
                    call_id,
                    name,
                    "completed" if status == "success" else "failed",
                    output=shown if isinstance(shown, str) else None,
                )
            )
    return tuple(out)


#: A page of a chat file's records (:func:`agent_bridge.adapters.kit.jsonl_history.read_page`
#: of :func:`session_path`, each record by :func:`project_record`).
read_page = jsonl_history.file_reader(session_path, project_record)
