"""A session's ACP config options and modes, from its provider's declared options (pure).

Config options (``configOptions``, ``select`` unless said otherwise):

* ``provider`` — the configured providers; it can change while a session has had no
  prompt yet (the session is then recreated on the other provider, same id);
* the provider's session option ``model`` (category ``model``; a ``string`` option is
  offered as its current value, ``default`` and the provider's known aliases); when the
  provider names its models itself (``session/settings``: Claude Code's initialize
  answer, an ACP agent's, a script's), ``model`` offers those instead, switched live
  (``session/configure``), and a ``settings.updated`` model reaches the client as
  ``config_option_update`` (:func:`settings_model`);
* its permission option — ``permissionMode`` or ``approvalPolicy`` (category ``mode``,
  also offered as ACP ``modes``, so ``session/set_mode`` sets it);
* ``reasoningEffort`` (category ``thought_level``), and its other ``enum`` session options;
* its ``boolean`` session options as ``boolean`` toggles, only for a client that
  advertises them (``clientCapabilities.session.configOptions.boolean``): to any other
  client a ``boolean`` entry would be an unknown kind of option.

The value ``default`` stands for "not set": the provider's own default (a toggle shows
the provider's default, ``false`` when it declares none).  A change is applied between
runs (:meth:`agent_bridge.runtime.Runtime.reconfigure_session`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from agent_bridge.errors import BridgeError
from agent_bridge.wire.providers import OptionDescriptor, ProviderDescriptor
from agent_bridge.wire.settings import SessionSettings

__all__ = [
    "DEFAULT_VALUE",
    "MODE_OPTIONS",
    "PROVIDER_CONFIG_ID",
    "apply_choice",
    "config_options",
    "mcp_options",
    "mode_option",
    "mode_state",
    "settings_model",
    "settings_modes",
]

PROVIDER_CONFIG_ID: Final = "provider"
DEFAULT_VALUE: Final = "default"
#: The session options that are a provider's permission mode, in order of preference.
MODE_OPTIONS: Final = ("permissionMode", "approvalPolicy")
#: Known values of providers' free-text ``model`` options, offered as choices.
MODEL_ALIASES: Final[Mapping[str, tuple[str, ...]]] = {
    "claude-code": ("opus", "sonnet", "haiku"),
}
_CATEGORIES: Final = {"model": "model", "reasoningEffort": "thought_level"}
_LABELS: Final = {
    "model": "Model",
    "permissionMode": "Permission mode",
    "approvalPolicy": "Approval policy",
    "reasoningEffort": "Reasoning effort",
    "clientFs": "Serve the agent's file reads and writes",
    "clientTerminal": "Serve the agent's terminals",
    "strictConfig": "Strict config.toml",
}


def _select(
    config_id: str,
    name: str,
    current: str,
    values: Sequence[str],
    category: str | None,
    description: str | None = None,
) -> dict[str, Any]:
    option: dict[str, Any] = {
        "id": config_id,
        "name": name,
        "type": "select",
        "currentValue": current,
        "options": [
            {"value": v, "name": "Provider default" if v == DEFAULT_VALUE else v} for v in values
        ],
    }
    if category is not None:
        option["category"] = category
    if description:
        option["description"] = description
    return option


def _choices(option: OptionDescriptor, provider_id: str, current: Any) -> list[str]:
    if option.type == "enum":
        values = list(option.values)
    else:  # a free-text model
        values = list(MODEL_ALIASES.get(provider_id, ()))
        if isinstance(current, str) and current not in values:
            values.insert(0, current)
    if option.default is None:
        values.insert(0, DEFAULT_VALUE)
    return values


def _offered(descriptor: ProviderDescriptor, booleans: bool) -> list[OptionDescriptor]:
    """The provider's session options offered as config options (``boolean`` ones only
    when ``booleans``: the client takes toggles)."""
    out: list[OptionDescriptor] = []
    for option in descriptor.options:
        if option.scope != "session":
            continue
        if (
            option.type == "enum"
            or (option.name == "model" and option.type == "string")
            or (booleans and option.type == "boolean")
        ):
            out.append(option)
    return out


def _toggle(option: OptionDescriptor, options: Mapping[str, Any]) -> dict[str, Any]:
    value = options.get(option.name, option.default)
    toggle: dict[str, Any] = {
        "id": option.name,
        "name": _LABELS.get(option.name, option.name),
        "type": "boolean",
        "currentValue": value if isinstance(value, bool) else False,
    }
    if option.description:
        toggle["description"] = option.description
    return toggle


def mode_option(descriptor: ProviderDescriptor) -> OptionDescriptor | None:
    """The provider's permission-mode option (an ``enum`` session option), if any."""
    table = {o.name: o for o in descriptor.options if o.scope == "session" and o.type == "enum"}
    for name in MODE_OPTIONS:
        if name in table:
            return table[name]
    return None


def _current(option: OptionDescriptor, options: Mapping[str, Any]) -> str:
    value = options.get(option.name, option.default)
    return value if isinstance(value, str) else DEFAULT_VALUE


def config_options(
    descriptor: ProviderDescriptor,
    options: Mapping[str, Any],
    providers: Sequence[str],
    *,
    booleans: bool = False,
    models: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The ``configOptions`` of a session on ``descriptor``'s provider with ``options``
    (with ``boolean`` toggles when ``booleans``: the client advertised them; ``models``:
    the ``model`` option the provider's own model list makes, :func:`settings_model`,
    in place of its ``model`` session option)."""
    out = [
        _select(
            PROVIDER_CONFIG_ID,
            "Provider",
            descriptor.id,
            list(providers) if descriptor.id in providers else [descriptor.id, *providers],
            None,
            "The agent behind agent-bridge (can change before the first prompt).",
        )
    ]
    if models is not None:
        out.append(models)
    for option in _offered(descriptor, booleans):
        if models is not None and option.name == "model":
            continue
        if option.type == "boolean":
            out.append(_toggle(option, options))
            continue
        category = _CATEGORIES.get(option.name)
        if option.name in MODE_OPTIONS:
            category = "mode"
        out.append(
            _select(
                option.name,
                _LABELS.get(option.name, option.name),
                _current(option, options),
                _choices(option, descriptor.id, options.get(option.name)),
                category,
                option.description,
            )
        )
    return out


def mode_state(descriptor: ProviderDescriptor, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ACP ``modes`` of a session (``None`` when the provider has no mode option)."""
    option = mode_option(descriptor)
    if option is None:
        return None
    values = _choices(option, descriptor.id, None)
    return {
        "currentModeId": _current(option, options),
        "availableModes": [
            {"id": v, "name": "Provider default" if v == DEFAULT_VALUE else v} for v in values
        ],
    }


def settings_modes(settings: SessionSettings | None) -> dict[str, Any] | None:
    """The ACP ``modes`` of a session whose provider names its modes itself
    (``session/settings``: Claude Code's permission modes, an ACP agent's modes, a
    script's), switched live with ``session/configure``; ``None`` when it names none, or
    not which is current."""
    mode = settings.mode if settings is not None else None
    if mode is None or mode.current is None or not mode.available:
        return None
    return {
        "currentModeId": mode.current,
        "availableModes": [{"id": v.id, "name": v.name or v.id} for v in mode.available],
    }


def settings_model(settings: SessionSettings | None) -> dict[str, Any] | None:
    """The ``model`` config option of a session whose provider names its models itself
    (``session/settings``), switched live with ``session/configure``; ``None`` when it
    names none, or not which is current."""
    model = settings.model if settings is not None else None
    if model is None or model.current is None or not model.available:
        return None
    values = [v.id for v in model.available]
    option = _select(
        "model",
        "Model",
        model.current,
        values if model.current in values else [model.current, *values],
        "model",
        "The models the provider offers (switched at once, between prompts).",
    )
    names = {v.id: v.name for v in model.available if v.name}
    for choice in option["options"]:
        choice["name"] = names.get(choice["value"], choice["value"])
    return option


def apply_choice(
    descriptor: ProviderDescriptor,
    options: Mapping[str, Any],
    config_id: str,
    value: Any,
    *,
    booleans: bool = False,
) -> dict[str, Any]:
    """The session options after choosing ``value`` for config option ``config_id`` (a
    toggle, with ``booleans``, takes ``true`` or ``false``; every other option one of its
    value ids).

    Raises ``invalid_params`` (``details.field``) for an unknown config id or a value it
    does not offer.
    """
    offered = {o.name: o for o in _offered(descriptor, booleans)}
    option = offered.get(config_id)
    if option is None:
        raise BridgeError("invalid_params", details={"field": "configId"})
    if option.type == "boolean":
        if not isinstance(value, bool):
            raise BridgeError("invalid_params", details={"field": "value"})
        return {**options, option.name: value}
    if not isinstance(value, str):
        raise BridgeError("invalid_params", details={"field": "value"})
    allowed = _choices(option, descriptor.id, options.get(option.name))
    if option.type == "enum" and value not in allowed:
        raise BridgeError("invalid_params", details={"field": "value"})
    out = dict(options)
    if value == DEFAULT_VALUE and option.default is None:
        out.pop(option.name, None)
    else:
        out[option.name] = value
    return out


def _env(value: Any) -> dict[str, str]:
    return {
        e["name"]: e["value"]
        for e in (value if isinstance(value, list) else [])
        if isinstance(e, dict)
        and isinstance(e.get("name"), str)
        and isinstance(e.get("value"), str)
    }


def mcp_options(
    descriptor: ProviderDescriptor, servers: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The session options that pass a client's ``mcpServers`` on to the provider: ACP
    agents take them as they are (``mcpServers``), Claude Code as an MCP configuration
    (``mcpConfig``); other providers take none (``{}``, and the servers are not used)."""
    if not servers:
        return {}
    names = {o.name for o in descriptor.options if o.scope == "session"}
    if "mcpServers" in names:
        return {"mcpServers": [dict(s) for s in servers]}
    if "mcpConfig" not in names:
        return {}
    config: dict[str, Any] = {}
    for server in servers:
        name = server.get("name")
        if not isinstance(name, str):
            continue
        if server.get("type") in ("http", "sse"):
            headers = {
                h["name"]: h["value"]
                for h in server.get("headers") or []
                if isinstance(h, dict) and isinstance(h.get("name"), str)
            }
            config[name] = {"type": server["type"], "url": server.get("url"), "headers": headers}
        else:
            config[name] = {
                "command": server.get("command"),
                "args": list(server.get("args") or []),
                "env": _env(server.get("env")),
            }
    return {"mcpConfig": {"mcpServers": config}}
