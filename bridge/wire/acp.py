"""The Agent Client Protocol's wire shapes shared by both of the bridge's ACP sides.

The bridge speaks ACP (JSON-RPC 2.0, one JSON object a line, schema version 1) twice:
as a *client* of ACP agents (:mod:`agent_bridge.adapters.acp`) and as an *agent* that ACP
clients such as editors spawn (:mod:`agent_bridge.frontends.acp`).  What both need lives
here: the protocol version, ACP's error codes, the tool, plan and stop-reason
vocabularies, the permission and elicitation outcome shapes, small lenient readers for
plain JSON objects, and the (lenient) msgspec types of the requests an ACP agent
receives.  The shapes follow ACP's published ``schema.json``; the tests validate every
message both sides exchange against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec

__all__ = [
    "AUTH_REQUIRED",
    "CANCELLED_OUTCOME",
    "PLAN_STATUS_FROM_ACP",
    "PLAN_STATUS_TO_ACP",
    "PROTOCOL_VERSION",
    "RESOURCE_NOT_FOUND",
    "STOP_REASONS",
    "TOOL_KINDS",
    "AudioContent",
    "AuthenticateRequest",
    "CancelNotification",
    "CloseSessionRequest",
    "EmbeddedResource",
    "ForkSessionRequest",
    "ImageContent",
    "InitializeRequest",
    "ListSessionsRequest",
    "LoadSessionRequest",
    "NewSessionRequest",
    "Prompt",
    "PromptRequest",
    "ResourceContents",
    "ResourceLink",
    "ResumeSessionRequest",
    "SetSessionConfigOptionRequest",
    "SetSessionModeRequest",
    "TextContent",
    "obj",
    "objs",
    "selected_outcome",
    "text_block",
]

#: The ACP protocol version the bridge speaks (both sides).
PROTOCOL_VERSION: Final = 1
#: ACP's error code for "authentication required".
AUTH_REQUIRED: Final = -32000
#: ACP's error code for "resource not found".
RESOURCE_NOT_FOUND: Final = -32002

#: Every ACP stop reason of a prompt turn.
STOP_REASONS: Final = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")
#: ACP's tool kinds (the bridge's ``ToolKind`` uses the same words).
TOOL_KINDS: Final[frozenset[str]] = frozenset(
    ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other")
)
#: ACP plan entry status -> the bridge's plan step status, and back.
PLAN_STATUS_FROM_ACP: Final[dict[str, Literal["pending", "inProgress", "completed"]]] = {
    "pending": "pending",
    "in_progress": "inProgress",
    "completed": "completed",
}
PLAN_STATUS_TO_ACP: Final = {v: k for k, v in PLAN_STATUS_FROM_ACP.items()}

#: ``session/request_permission`` result: the prompt turn was cancelled.
CANCELLED_OUTCOME: Final = {"outcome": {"outcome": "cancelled"}}


def selected_outcome(option_id: str) -> dict[str, Any]:
    """``session/request_permission`` result: ``option_id`` was chosen."""
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def text_block(text: str) -> dict[str, Any]:
    """An ACP text content block."""
    return {"type": "text", "text": text}


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def objs(value: Any) -> list[Mapping[str, Any]]:
    """The JSON objects in ``value`` if it is an array (other items skipped)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# --------------------------------------------------------------------------- agent side
# The requests an ACP agent receives, decoded leniently (unknown members such as ``_meta``
# are ignored, as ACP asks); a missing required member or a wrong type is invalid params.


class _Acp(msgspec.Struct, rename="camel", frozen=True):
    """Base of the request types: camelCase, open to members of later versions."""


class InitializeRequest(_Acp, frozen=True):
    """``initialize``."""

    protocol_version: int
    client_capabilities: dict[str, Any] = {}
    client_info: dict[str, Any] | None = None


class AuthenticateRequest(_Acp, frozen=True):
    """``authenticate``."""

    method_id: str


class NewSessionRequest(_Acp, frozen=True):
    """``session/new``."""

    cwd: str
    mcp_servers: list[dict[str, Any]] | None = None


class LoadSessionRequest(_Acp, frozen=True):
    """``session/load``."""

    session_id: str
    cwd: str
    mcp_servers: list[dict[str, Any]] | None = None


class ForkSessionRequest(_Acp, frozen=True):
    """``session/fork`` (unstable in ACP: ``sessionCapabilities.fork``): a new session
    from the whole of ``sessionId``'s history."""

    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    mcp_servers: list[dict[str, Any]] | None = None


class ResumeSessionRequest(_Acp, frozen=True):
    """``session/resume``."""

    session_id: str
    cwd: str
    mcp_servers: list[dict[str, Any]] | None = None


class ListSessionsRequest(_Acp, frozen=True):
    """``session/list``."""

    cwd: str | None = None
    cursor: str | None = None


class CloseSessionRequest(_Acp, frozen=True):
    """``session/close``."""

    session_id: str


class DeleteSessionRequest(_Acp, frozen=True):
    """``session/delete``."""

    session_id: str


class TextContent(_Acp, frozen=True, tag="text", tag_field="type"):
    """A prompt's text."""

    text: str


class ImageContent(_Acp, frozen=True, tag="image", tag_field="type"):
    """An image, base64 ``data`` of ``mimeType``."""

    data: str
    mime_type: str
    uri: str | None = None


class AudioContent(_Acp, frozen=True, tag="audio", tag_field="type"):
    """Audio, base64 ``data`` of ``mimeType``."""

    data: str
    mime_type: str


class ResourceLink(_Acp, frozen=True, tag="resource_link", tag_field="type"):
    """A resource the agent can read itself (an ``@``-mentioned file)."""

    uri: str
    name: str
    mime_type: str | None = None
    title: str | None = None


class ResourceContents(_Acp, frozen=True):
    """An embedded resource's contents: ACP's text (``text``) or blob (``blob``, base64)
    resource contents; one of the two is required (checked where it is used: msgspec
    cannot tell two untagged shapes apart)."""

    uri: str
    text: str | None = None
    blob: str | None = None
    mime_type: str | None = None


class EmbeddedResource(_Acp, frozen=True, tag="resource", tag_field="type"):
    """A resource given inline (a selection, an unsaved buffer)."""

    resource: ResourceContents


#: A prompt: its content blocks (decoded strictly on ``type`` and the members' types, so
#: a block that is not valid ACP is invalid params).  A list type, not a union alias:
#: ACP's shapes stay out of the bridge's published schema.
Prompt = list[TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource]


class PromptRequest(_Acp, frozen=True):
    """``session/prompt``: ``prompt`` is a list of content blocks."""

    session_id: str
    prompt: Prompt


class CancelNotification(_Acp, frozen=True):
    """``session/cancel``."""

    session_id: str


class SetSessionModeRequest(_Acp, frozen=True):
    """``session/set_mode``."""

    session_id: str
    mode_id: str


class SetSessionConfigOptionRequest(_Acp, frozen=True):
    """``session/set_config_option``: ``value`` is a value id, or a boolean with
    ``type: boolean``."""

    session_id: str
    config_id: str
    value: str | bool
    type: str | None = None
