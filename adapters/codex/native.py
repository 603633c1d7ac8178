"""Codex's own sessions, read from its rollout files (strictly read-only).

The CLI (``codex``, ``codex exec``, ``codex app-server``) keeps each thread as JSON Lines
in ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``
(``~/.codex`` when ``CODEX_HOME`` is unset), appending one record per line: a
``session_meta`` first (thread id, cwd, time), then the model conversation
(``response_item``) and the CLI's own events (``event_msg``) as they happen.  This module
lists those files and reads pages of one, for ``provider/sessions/list`` and
``provider/sessions/read``; the paging is :mod:`agent_bridge.adapters.kit.jsonl_history`.

* A session reference is the file's path under ``sessions`` without ``.jsonl``
  (``2026/12/02/rollout-2026-12-02T03-39-33-<thread id>``): opaque to hosts, checked on
  the way back in, so it never names a file outside that directory.  The thread id (what
  ``codex resume`` and the app-server's ``thread/resume`` take) is its last 36 characters.
* Records are projected from the CLI's ``event_msg`` records, which carry each completed
  item once (the user's prompt as typed, the agent's messages, reasoning, commands);
  ``response_item`` records hold the same conversation as sent to the model and are
  delivered raw without events, so nothing is shown twice.
"""

from __future__ import annotations

import os
import re
from typing import Any, Final

from agent_bridge.adapters.codex.mapping import cwd_ok
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

__all__ = [
    "codex_home",
    "continuation",
    "is_ref",
    "list_page",
    "project_record",
    "read_page",
    "ref_for",
    "session_path",
    "thread_id",
]

#: How much of a file's start is read to find its thread, working directory and prompt
#: (the ``session_meta`` record carries the base instructions, tens of KiB).
HEAD_BYTES: Final = 256 * 1024

_UUID: Final = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_STEM_RE: Final = re.compile(
    r"rollout-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-(" + _UUID + ")"
)
_REF_RE: Final = re.compile(r"([0-9]{4})/([0-9]{2})/([0-9]{2})/(" + _STEM_RE.pattern + ")")
_YEAR_RE: Final = re.compile(r"[0-9]{4}")
_DAY_RE: Final = re.compile(r"[0-9]{2}")

#: Record types with nothing for the bridge's events (not unknown).
_QUIET_TYPES: Final = frozenset(
    {
        "session_meta",
        "response_item",
        "turn_context",
        "world_state",
        "token_usage_record",
        "compacted",
    }
)
#: ``event_msg`` types with nothing (more) for the bridge's events: lifecycle, usage,
#: settings, and the live deltas whose completed item is recorded too.
_QUIET_EVENTS: Final = frozenset(
    {
        "task_started",
        "task_complete",
        "turn_started",
        "turn_complete",
        "turn_aborted",
        "token_count",
        "thread_settings_applied",
        "item_started",
        "agent_message_delta",
        "agent_reasoning_delta",
        "agent_reasoning_raw_content",
        "agent_reasoning_raw_content_delta",
        "agent_reasoning_section_break",
        "exec_command_begin",
        "exec_command_end",
        "exec_command_output_delta",
        "patch_apply_begin",
        "patch_apply_end",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "web_search_begin",
        "web_search_end",
        "turn_diff",
        "plan_update",
        "thread_name_updated",
        "context_compacted",
        "background_event",
        "stream_error",
        "warning",
        "error",
        "entered_review_mode",
        "exited_review_mode",
    }
)


def codex_home() -> str:
    """The CLI's home: ``CODEX_HOME``, else ``~/.codex``."""
    return history_files.cli_home("CODEX_HOME", ".codex")


def _sessions() -> str:
    return os.path.join(codex_home(), "sessions")


def session_path(session_ref: str) -> str:
    """The rollout file of ``session_ref``; raises ``invalid_params`` for a reference
    this module did not make (which could name another file)."""
    if _REF_RE.fullmatch(session_ref) is None:
        raise BridgeError("invalid_params", details={"field": "sessionRef"})
    return os.path.join(_sessions(), *session_ref.split("/")) + ".jsonl"


def thread_id(session_ref: str) -> str:
    """The Codex thread id of ``session_ref`` (``invalid_params`` for a foreign one)."""
    match = _REF_RE.fullmatch(session_ref)
    if match is None:
        raise BridgeError("invalid_params", details={"field": "sessionRef"})
    return match.group(5)


# --------------------------------------------------------------------------- listing


def _entries() -> list[HistoryFile]:
    out: list[HistoryFile] = []
    for year in history_files.store_dirs(_sessions(), _YEAR_RE):
        for month in _subdirs(year.path, _DAY_RE):
            for day in _subdirs(month.path, _DAY_RE):
                prefix = f"{year.name}/{month.name}/{day.name}/"
                out += history_files.jsonl_files(day.path, prefix, _STEM_RE)
    return out


def _subdirs(path: str, pattern: re.Pattern[str]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as listing:
            found = list(listing)
    except OSError:
        return []  # removed or unreadable meanwhile
    return [d for d in found if pattern.fullmatch(d.name) is not None and d.is_dir()]


def _user_text(payload: dict[str, Any]) -> str | None:
    """The prompt of an ``event_msg`` payload that is the user's message, else ``None``."""
    kind = payload.get("type")
    if kind == "user_message":
        message = payload.get("message")
        return message if isinstance(message, str) else None
    if kind == "item_completed":
        item = payload.get("item")
        if isinstance(item, dict) and item.get("type") == "UserMessage":
            return _texts(item.get("content"), "text")
    return None


def _texts(content: object, kind: str) -> str | None:
    if not isinstance(content, list):
        return None
    texts = [
        c["text"]
        for c in content
        if isinstance(c, dict) and c.get("type") == kind and isinstance(c.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


def _head(path: str) -> dict[str, Any]:
    """What the start of a rollout says: ``cwd`` and ``created`` (its ``session_meta``),
    ``prompt`` (the first user prompt).  A ``cwd`` that :func:`cwd_ok` does not keep
    (relative, over-long, a control character such as NUL) is not returned;
    ``cwd_unusable`` says there was one."""
    found: dict[str, Any] = {}
    for record in jsonl_history.head_records(path, HEAD_BYTES):
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        if record.get("type") == "session_meta" and "cwd" not in found:
            cwd = payload.get("cwd")
            if isinstance(cwd, str) and cwd_ok(cwd):
                found["cwd"] = cwd
            elif cwd is not None:
                found["cwd_unusable"] = True
            created = payload.get("timestamp") or record.get("timestamp")
            if isinstance(created, str):
                found["created"] = created
        elif record.get("type") == "event_msg" and "prompt" not in found:
            prompt = _user_text(payload)
            if prompt is not None:
                found["prompt"] = prompt
                break
    return found


def list_page(workspace: str | None, cursor: str | None, limit: int) -> NativeSessionsListResult:
    """A page of the CLI's threads, newest first (by last write), of ``workspace`` when
    given, after ``cursor`` (``<mtime ns>:<reference>`` of the last one shown).  Raises
    ``invalid_params`` for a malformed cursor and ``history_unavailable`` when the
    sessions directory cannot be read."""
    real_workspace = os.path.realpath(workspace) if workspace is not None else None

    def describe(entry: HistoryFile) -> NativeSessionInfo | None:
        head = _head(entry.path)
        cwd = head.get("cwd")
        if real_workspace is not None and (cwd is None or os.path.realpath(cwd) != real_workspace):
            return None
        return history_files.session_info(
            entry, title=head.get("prompt"), workspace=cwd, created=head.get("created")
        )

    return history_files.list_page(_entries(), cursor, limit, describe)


def ref_for(thread: str, home: str | None = None) -> str | None:
    """The reference of thread ``thread``'s rollout file in ``home`` (default
    :func:`codex_home`), or ``None`` when there is none (yet) or the id does not say when
    it was made.  Thread ids are UUIDv7: their first 48
    bits are the creation time in milliseconds, so only the day directories around that
    time (in UTC and local time, a day either side) are listed: a few small directory
    reads, never a walk of the whole store."""
    if re.fullmatch(_UUID, thread) is None or thread[14] != "7":
        return None
    import datetime
    import time

    millis = int(thread[:8] + thread[9:13], 16)
    moment = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.UTC)
    offset = datetime.timedelta(seconds=-time.timezone)
    days = {
        (moment + shift + delta).date()
        for shift in (datetime.timedelta(0), offset)
        for delta in (
            datetime.timedelta(days=-1),
            datetime.timedelta(0),
            datetime.timedelta(days=1),
        )
    }
    suffix = f"-{thread}.jsonl"
    for day in sorted(days):
        prefix = f"{day.year:04d}/{day.month:02d}/{day.day:02d}"
        try:
            names = os.listdir(os.path.join(home or codex_home(), "sessions", prefix))
        except OSError:
            continue
        for name in names:
            if name.endswith(suffix) and _STEM_RE.fullmatch(name[: -len(".jsonl")]):
                return f"{prefix}/{name[: -len('.jsonl')]}"
    return None


def is_ref(value: object) -> bool:
    """Whether ``value`` is a reference this module makes."""
    return isinstance(value, str) and _REF_RE.fullmatch(value) is not None


def continuation(session_ref: str) -> tuple[str, str | None]:
    """The thread id of ``session_ref`` and the working directory its ``session_meta``
    records (``None`` when the file has none yet).  Raises ``invalid_params`` (a foreign
    reference), ``session_not_found`` (no such file) and ``workspace_invalid`` (a
    working directory :func:`cwd_ok` does not keep)."""
    path = session_path(session_ref)
    if not os.path.isfile(path):
        raise BridgeError("session_not_found")
    head = _head(path)
    if head.get("cwd_unusable"):
        raise BridgeError(
            "workspace_invalid",
            details={"reason": "the rollout's working directory is not a usable absolute path"},
        )
    cwd = head.get("cwd")
    return thread_id(session_ref), cwd if isinstance(cwd, str) else None


# --------------------------------------------------------------------------- reading


def project_record(data: bytes) -> tuple[EventPayload, ...]:
    """The bridge event payloads of one rollout record: the user's prompt is
    ``run.started``, an agent message its text, reasoning its thinking, a command its
    tool activity (started and its end); a record that is not JSON
    (``malformed_record``), of a type this adapter does not know (``unknown_record``) or
    that fails to project (``projection_failed``) is a diagnostic."""
    return jsonl_history.project_json(data, "rollout file", _project, typed=True)


def _project(record: dict[str, Any]) -> tuple[EventPayload, ...] | None:
    kind = record["type"]
    if kind in _QUIET_TYPES:
        return ()
    payload = record.get("payload")
    if kind == "event_msg" and isinstance(payload, dict):
        return _event(payload)
    return None


def _event(payload: dict[str, Any]) -> tuple[EventPayload, ...] | None:
    """The payloads of an ``event_msg`` record; ``None`` for one this adapter does not
    know."""
    kind = payload.get("type")
    prompt = _user_text(payload)
    if prompt is not None:
        return (RunStarted(input=prompt),)
    if kind == "agent_message" and isinstance(payload.get("message"), str):
        return (TextDelta(text=payload["message"]),)
    if kind == "agent_reasoning" and isinstance(payload.get("text"), str):
        return (ThinkingDelta(text=payload["text"]),)
    if kind == "item_completed":
        item = payload.get("item")
        if isinstance(item, dict):
            return _item(item)
        return None
    if kind in _QUIET_EVENTS:
        return ()
    return None


def _item(item: dict[str, Any]) -> tuple[EventPayload, ...] | None:
    kind = item.get("type")
    item_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
    if kind == "AgentMessage":
        text = _texts(item.get("content"), "Text")
        return (TextDelta(text=text, message_id=item_id),) if text else ()
    if kind == "Reasoning":
        parts = item.get("summary_text") or item.get("raw_content")
        texts = [p for p in parts if isinstance(p, str)] if isinstance(parts, list) else []
        return (ThinkingDelta(text="\n".join(texts), message_id=item_id),) if texts else ()
    if kind == "CommandExecution":
        call_id = item.get("id")
        if not isinstance(call_id, str):
            raise ValueError("a command without an id")
        command = item.get("command")
        shown = command[-1] if isinstance(command, list) and command else command
        exit_code = item.get("exit_code")
        output = item.get("aggregated_output")
        failed = item.get("status") != "completed" or (isinstance(exit_code, int) and exit_code)
        return (
            ToolActivity(
                call_id,
                "exec_command",
                "started",
                input={"command": command},
                kind="execute",
                title=shown if isinstance(shown, str) else None,
            ),
            ToolActivity(
                call_id,
                "exec_command",
                "failed" if failed else "completed",
                output=output if isinstance(output, str) else None,
                exit_code=exit_code if isinstance(exit_code, int) else None,
            ),
        )
    if kind == "UserMessage":
        return ()  # without text (an image only, say)
    return None


#: A page of a rollout file's records (:func:`agent_bridge.adapters.kit.jsonl_history.read_page`
#: of :func:`session_path`, each record by :func:`project_record`).
read_page = jsonl_history.file_reader(session_path, project_record)
