"""Claude Code's stream-json protocol: the frames the adapter writes, and the names and
constants of the frames it reads.

The shapes are those of Claude Code 2.1.197 (see ``docs/providers/claude-code.md``).
What those frames *mean* for a host — payloads, interactions, outcomes — is
:mod:`agent_bridge.adapters.claude.mapping`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ASK_TOOL",
    "CLIENT_ID_PREFIX",
    "DENY_MESSAGE",
    "IGNORED_TYPES",
    "NO_ANSWER_MESSAGE",
    "UNSUPPORTED_MESSAGE",
    "allow_reply",
    "control_error",
    "control_request",
    "control_success",
    "deny_reply",
    "parse_client_id",
    "unreadable_request_id",
    "user_message",
]

#: Our control requests carry ``request_id`` ``bridge_<ledger id>``; the CLI's own
#: requests use UUIDs, so the two id spaces cannot collide.
CLIENT_ID_PREFIX: Final = "bridge_"

#: What the model is told when the host denies (or does not answer) a tool request.
DENY_MESSAGE: Final = "The user denied this tool use."
UNSUPPORTED_MESSAGE: Final = "Unsupported control request subtype"
#: What the model is told when the host does not answer its question.
NO_ANSWER_MESSAGE: Final = "The user did not answer the question."

#: The tool through which the model asks the user questions; the CLI asks permission for
#: it like for any tool, and the answers go back in ``updatedInput.answers``.
ASK_TOOL: Final = "AskUserQuestion"

#: Message types the CLI sends that carry nothing for a host (ignored without a
#: diagnostic).  Anything else unknown becomes a diagnostic.
IGNORED_TYPES: Final = frozenset(
    {"keep_alive", "tool_progress", "auth_status", "prompt_suggestion"}
)


def user_message(content: str | list[dict[str, Any]]) -> dict[str, Any]:
    """A user turn: its text, or its Messages API content blocks (see
    :func:`agent_bridge.adapters.claude.mapping.user_content`); the CLI ignores the
    ``session_id`` of input messages."""
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": "default",
    }


def control_request(request_id: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """A control request from the adapter (``initialize``, ``interrupt``)."""
    return {"type": "control_request", "request_id": request_id, "request": dict(request)}


def control_success(request_id: str, response: Mapping[str, Any]) -> dict[str, Any]:
    """A successful reply to one of the CLI's control requests."""
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": dict(response)},
    }


def control_error(request_id: str, error: str = UNSUPPORTED_MESSAGE) -> dict[str, Any]:
    """An error reply to one of the CLI's control requests."""
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }


#: The head of a control request as the CLI writes it (``type``, then ``request_id``),
#: read in a line too deep to decode so that the request still gets an answer.
_REQUEST_HEAD: Final = re.compile(
    rb'\s*\{\s*"type"\s*:\s*"control_request"\s*,\s*"request_id"\s*:\s*"([!#-\[\]-~]{1,256})"'
)


def unreadable_request_id(line: bytes) -> str | None:
    """The ``request_id`` of a control request in ``line``, a line that could not be
    decoded (nested too deep), when its head says it is one; else ``None``.  Only ids of
    1 to 256 printable ASCII characters without quote or backslash are read."""
    found = _REQUEST_HEAD.match(line, 0, 4096)
    return found.group(1).decode("ascii") if found else None


def parse_client_id(raw: object) -> int | None:
    """Our ledger id from a ``request_id`` we sent, or ``None`` for anything else."""
    if not isinstance(raw, str) or not raw.startswith(CLIENT_ID_PREFIX):
        return None
    digits = raw[len(CLIENT_ID_PREFIX) :]
    return int(digits) if digits.isdigit() and len(digits) < 19 else None


def allow_reply(
    tool_input: Mapping[str, Any], updated_permissions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``can_use_tool`` → allow.  ``updatedInput`` is required by the CLI (without it the
    tool fails validation); it is the input as asked, unchanged."""
    reply: dict[str, Any] = {"behavior": "allow", "updatedInput": dict(tool_input)}
    if updated_permissions:
        reply["updatedPermissions"] = updated_permissions
    return reply


def deny_reply(*, interrupt: bool = False, message: str = DENY_MESSAGE) -> dict[str, Any]:
    """``can_use_tool`` → deny with a fixed message; ``interrupt`` also ends the turn."""
    reply: dict[str, Any] = {"behavior": "deny", "message": message}
    if interrupt:
        reply["interrupt"] = True
    return reply
