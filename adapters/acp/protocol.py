"""The Agent Client Protocol's wire shapes, as far as the adapter uses them.

ACP is JSON-RPC 2.0 over the agent's stdio, one JSON object a line (``"jsonrpc":"2.0"``
on every message).  The client (the bridge) sends ``initialize``, ``authenticate``,
``session/new`` / ``session/load`` / ``session/resume``, ``session/prompt`` and
``session/set_mode`` requests and the ``session/cancel`` notification; the agent sends
``session/update`` notifications and may call back: ``session/request_permission``,
``fs/read_text_file``, ``fs/write_text_file``, ``terminal/*`` and ``elicitation/create``.

Messages are read as plain JSON objects and looked at through the small readers here
(:class:`AgentInfo` for ``initialize``), leniently: ACP marks most fields "default on
error", so an odd value becomes its default instead of failing the session.  The shapes
follow ACP's published ``schema.json`` (protocol version 1); the tests validate every
message both ways against it.  What the agent side (:mod:`agent_bridge.frontends.acp`)
shares with it lives in :mod:`agent_bridge.wire.acp`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeGuard

from agent_bridge.wire.acp import AUTH_REQUIRED, PROTOCOL_VERSION, RESOURCE_NOT_FOUND, obj, objs
from agent_bridge.wire.inputs import (
    CommandInput,
    FileInput,
    ImageInput,
    InputKind,
    ResourceInput,
    TextInput,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.providers import ImageInputCapability, InputCapabilities
from agent_bridge.wire.settings import SessionSetting, SettingValue

__all__ = [
    "AUTH_REQUIRED",
    "CLIENT_CALLBACKS",
    "PROTOCOL_VERSION",
    "RESOURCE_NOT_FOUND",
    "AgentInfo",
    "client_capabilities",
    "initialize_params",
    "input_capabilities",
    "obj",
    "objs",
    "prompt_blocks",
    "session_id_ok",
    "text_prompt",
]

#: The agent→client requests the adapter can answer (when enabled for the session).
CLIENT_CALLBACKS: Final = (
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
    "elicitation/create",
)


#: The longest ``sessionId`` the adapter keeps (Gemini CLI and claude-agent-acp answer a
#: UUID, OpenCode ``ses_`` and 26 characters).
MAX_SESSION_ID: Final = 1000


def session_id_ok(session_id: Any) -> TypeGuard[str]:
    """Whether ``session_id`` (what ``session/new`` or ``session/fork`` answered, a
    recovery record or an agent's ``session/list`` names) can be kept: it is the session's
    identity in the recovery record and in every later request, so it is kept, journaled
    and sent back only when it is non-empty printable text of at most
    :data:`MAX_SESSION_ID` characters."""
    return (
        isinstance(session_id, str)
        and 0 < len(session_id) <= MAX_SESSION_ID
        and session_id.isprintable()
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def client_capabilities(*, fs: bool, terminal: bool, elicitation: bool) -> dict[str, Any]:
    """The ``clientCapabilities`` the bridge advertises for one session."""
    caps: dict[str, Any] = {
        "fs": {"readTextFile": fs, "writeTextFile": fs},
        "terminal": terminal,
    }
    if elicitation:
        caps["elicitation"] = {"form": {}}
    return caps


def initialize_params(version: str, capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """``initialize`` params."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": dict(capabilities),
        "clientInfo": {"name": "agent-bridge", "title": "agent-bridge", "version": version},
    }


def text_prompt(text: str) -> list[dict[str, Any]]:
    """A prompt of one text block."""
    return [{"type": "text", "text": text}]


#: The images the adapter gives an agent that takes images (ACP names no types or size:
#: the types every model API behind the known agents takes; at most 3.75 MiB, whose
#: base64 stays within the 5 MB per image those APIs accept).
IMAGES: Final = ImageInputCapability(
    mime_types=("image/png", "image/jpeg", "image/gif", "image/webp"),
    max_bytes=5 * 1024 * 1024 * 3 // 4,
)


def input_capabilities(info: AgentInfo | None) -> InputCapabilities:
    """What a run's input may hold for an agent that answered ``initialize`` with
    ``info``: text, file references and commands always (ACP's baseline: ``text`` and
    ``resource_link`` blocks; a command is text); images when its
    ``promptCapabilities.image`` says so; embedded resources when ``embeddedContext``
    does.  Audio is not a run input kind.  ``None`` (not asked yet): the baseline."""
    kinds: list[InputKind] = ["text"]
    if info is not None and info.prompt_image:
        kinds.append("image")
    kinds.append("file")
    if info is not None and info.prompt_embedded_context:
        kinds.append("resource")
    kinds.append("command")
    return InputCapabilities(kinds=tuple(kinds), image=IMAGES if "image" in kinds else None)


def prompt_blocks(input: RunInput) -> list[dict[str, Any]]:
    """The ``prompt`` of ``session/prompt`` for a run's (checked) input: its text as one
    text block; else one block per input block, in order: text as ``text``; an image as
    ``image`` (base64 ``data`` and ``mimeType``); a file reference as a ``resource_link``
    to its ``file://`` URI, followed, for a line range, by the text ``(lines a-b of
    <name>)`` (a link has no place for lines); an embedded resource as ``resource`` with
    its text (``uri`` ``untitled:resource-N`` when the host gave none: ACP requires one);
    a command as the text ``/<name> <arguments>``, as ACP's clients invoke one.
    The runtime refused beforehand every kind the agent did not advertise
    (:func:`input_capabilities`)."""
    if input.text is not None:
        return text_prompt(input.text)
    out: list[dict[str, Any]] = []
    for i, block in enumerate(input.content):
        if isinstance(block, TextInput):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageInput):
            out.append({"type": "image", "data": block.data, "mimeType": block.mime_type})
        elif isinstance(block, FileInput):
            name = os.path.basename(block.path.rstrip("/")) or block.path
            out.append({"type": "resource_link", "uri": Path(block.path).as_uri(), "name": name})
            if block.start_line is not None:
                end = block.end_line if block.end_line is not None else block.start_line
                text = f"(lines {block.start_line}-{end} of {name})"
                out.append({"type": "text", "text": text})
        elif isinstance(block, ResourceInput):
            resource: dict[str, Any] = {
                "uri": block.uri or f"untitled:resource-{i}",
                "text": block.text,
            }
            if block.mime_type is not None:
                resource["mimeType"] = block.mime_type
            out.append({"type": "resource", "resource": resource})
        elif isinstance(block, CommandInput):
            text = f"/{block.name} {block.arguments or ''}".rstrip()
            out.append({"type": "text", "text": text})
    return out


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """What an agent advertised in its ``initialize`` result."""

    protocol_version: int = PROTOCOL_VERSION
    name: str | None = None
    title: str | None = None
    version: str | None = None
    load_session: bool = False
    session_list: bool = False
    session_resume: bool = False
    session_close: bool = False
    #: ACP's unstable ``sessionCapabilities.fork``: ``session/fork`` of a whole session
    session_fork: bool = False
    prompt_image: bool = False
    prompt_audio: bool = False
    prompt_embedded_context: bool = False
    mcp_http: bool = False
    mcp_sse: bool = False
    auth_methods: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_result(cls, result: Any) -> AgentInfo:
        """Read an ``initialize`` result (leniently)."""
        r = obj(result)
        caps = obj(r.get("agentCapabilities"))
        session = obj(caps.get("sessionCapabilities"))
        prompt = obj(caps.get("promptCapabilities"))
        mcp = obj(caps.get("mcpCapabilities"))
        info = obj(r.get("agentInfo"))
        version = r.get("protocolVersion")
        return cls(
            protocol_version=version if isinstance(version, int) else PROTOCOL_VERSION,
            name=_str(info.get("name")),
            title=_str(info.get("title")),
            version=_str(info.get("version")),
            load_session=caps.get("loadSession") is True,
            session_list=isinstance(session.get("list"), dict),
            session_resume=isinstance(session.get("resume"), dict),
            session_close=isinstance(session.get("close"), dict),
            session_fork=isinstance(session.get("fork"), dict),
            prompt_image=prompt.get("image") is True,
            prompt_audio=prompt.get("audio") is True,
            prompt_embedded_context=prompt.get("embeddedContext") is True,
            mcp_http=mcp.get("http") is True,
            mcp_sse=mcp.get("sse") is True,
            auth_methods=tuple(
                m["id"] for m in objs(r.get("authMethods")) if isinstance(m.get("id"), str)
            ),
            raw=r,
        )

    @property
    def can_resume(self) -> bool:
        """Whether the agent advertises a way to continue a session (resume or load)."""
        return self.session_resume or self.load_session


#: The most modes, or values of one config option, kept of what an agent offers (each
#: session keeps its own, and hosts get them whole in ``session/settings`` and the
#: provider's descriptor: 250,000 models cost 50 MB a session), and the longest value id
#: and name kept.
MAX_SETTING_VALUES: Final = 1000
MAX_VALUE_ID_CHARS: Final = 1000
MAX_VALUE_NAME_CHARS: Final = 200


def _value_id(value: Any) -> str | None:
    """A mode or value id that can be kept: non-empty text within the bound."""
    if isinstance(value, str) and 0 < len(value) <= MAX_VALUE_ID_CHARS:
        return value
    return None


def _name(value: Any) -> str:
    return value[:MAX_VALUE_NAME_CHARS] if isinstance(value, str) else ""


def _modes(modes: Any) -> list[Mapping[str, Any]]:
    """The usable entries of a ``SessionModeState``'s ``availableModes`` (bounded)."""
    found = (m for m in objs(obj(modes).get("availableModes")) if _value_id(m.get("id")))
    return list(itertools.islice(found, MAX_SETTING_VALUES))


def mode_ids(modes: Any) -> tuple[str, ...]:
    """The ids of a ``SessionModeState``'s ``availableModes`` (the first
    :data:`MAX_SETTING_VALUES` usable ones)."""
    return tuple(m["id"] for m in _modes(modes))


def _select_entries(option: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The usable value entries of a ``select`` config option, flat or grouped (the
    first :data:`MAX_SETTING_VALUES`)."""

    def every() -> Iterator[Mapping[str, Any]]:
        for entry in objs(option.get("options")):
            yield entry
            yield from objs(entry.get("options"))

    found = (e for e in every() if _value_id(e.get("value")))
    return list(itertools.islice(found, MAX_SETTING_VALUES))


def select_values(option: Mapping[str, Any]) -> tuple[str, ...]:
    """The value ids of a ``select`` config option (flat or grouped; the first
    :data:`MAX_SETTING_VALUES` usable ones)."""
    return tuple(e["value"] for e in _select_entries(option))


def config_options(value: Any) -> Sequence[Mapping[str, Any]]:
    """A ``configOptions`` array."""
    return objs(value)


def mode_setting(modes: Any) -> SessionSetting | None:
    """A ``SessionModeState`` (``currentModeId``, ``availableModes``) as a setting;
    ``None`` when it offers no mode."""
    available = tuple(SettingValue(m["id"], _name(m.get("name"))) for m in _modes(modes))
    if not available:
        return None
    return SessionSetting(_value_id(obj(modes).get("currentModeId")), available)


def model_option(config: Any) -> Mapping[str, Any] | None:
    """The ``select`` config option of category ``model`` among ``configOptions``."""
    return next(
        (o for o in objs(config) if o.get("category") == "model" and o.get("type") == "select"),
        None,
    )


def model_setting(result: Mapping[str, Any]) -> tuple[SessionSetting | None, str | None]:
    """The model setting of a ``session/new`` (load, resume) result, and the config
    option id that sets it (``None``: ``session/set_model`` does, from the unstable
    ``models`` state).  ``(None, None)`` when the agent offers no model choice."""
    option = model_option(result.get("configOptions"))
    if option is not None:
        names: dict[str, str] = {}
        for value in _select_entries(option):
            names[value["value"]] = _name(value.get("name"))
        available = tuple(SettingValue(k, v) for k, v in names.items())
        current = _value_id(option.get("currentValue"))
        return SessionSetting(current, available), _value_id(option.get("id"))
    models = obj(result.get("models"))
    found = (m for m in objs(models.get("availableModels")) if _value_id(m.get("modelId")))
    available = tuple(
        SettingValue(m["modelId"], _name(m.get("name")))
        for m in itertools.islice(found, MAX_SETTING_VALUES)
    )
    if not available:
        return None, None
    return SessionSetting(_value_id(models.get("currentModelId")), available), None
