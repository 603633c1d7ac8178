"""What the contract is made of, collected from :mod:`agent_bridge.wire`: the published methods
(``CATALOG`` and the rpc layer's own), every named ``Literal``/union alias of the wire
modules, and one message Struct per method (its request or notification, and for a
request its response)."""

from __future__ import annotations

import importlib
import pkgutil
import types
from typing import Any, Final, Literal, Union, get_origin

import msgspec

import agent_bridge.wire
from agent_bridge.schema.common import SCRIPT_MODULE, pascal
from agent_bridge.wire.catalog import CATALOG, MethodInfo
from agent_bridge.wire.jsonrpc import CancelParams, JsonRpcId

__all__ = ["Messages", "message_structs", "published_methods", "wire_aliases"]

#: Per method name: ``[(role, struct)]``, role ``"message"`` then ``"response"``.
Messages = dict[str, list[tuple[str, Any]]]

#: Protocol-level methods served by the rpc layer rather than by a handler; published
#: unless CATALOG lists them itself.  ``$/cancelRequest`` goes both ways, which
#: ``MethodInfo.direction`` does not spell yet.
_PROTOCOL_METHODS: Final = (
    MethodInfo(
        "$/cancelRequest",
        "both",  # type: ignore[arg-type]
        "notification",
        CancelParams,
        None,
        1,
        "stable",
        "Cancel a pending request by id (the bridge also sends it to withdraw an "
        "interaction/request settled some other way).",
    ),
)


def published_methods() -> list[MethodInfo]:
    """Return every published method: CATALOG's, then the rpc layer's that it lacks."""
    out = list(CATALOG)
    names = {m.name for m in out}
    out.extend(m for m in _PROTOCOL_METHODS if m.name not in names)
    return out


def _is_alias(value: Any) -> bool:
    origin = get_origin(value)
    return origin is Literal or origin is Union or isinstance(value, types.UnionType)


def wire_aliases() -> dict[str, Any]:
    """Every public named ``Literal``/union alias of the :mod:`agent_bridge.wire` modules
    but the scripted provider's script language (published apart, see
    :mod:`~agent_bridge.schema.ts_extras`).  Raises :class:`ValueError` when two different
    ones share a name."""
    aliases: dict[str, Any] = {}
    for info in sorted(pkgutil.iter_modules(agent_bridge.wire.__path__), key=lambda i: i.name):
        if f"agent_bridge.wire.{info.name}" == SCRIPT_MODULE:
            continue
        module = importlib.import_module(f"agent_bridge.wire.{info.name}")
        for name, value in vars(module).items():
            if name.startswith("_") or not name[:1].isupper() or not _is_alias(value):
                continue
            seen = aliases.get(name)
            if seen is not None and seen != value:
                raise ValueError(f"two different wire aliases are named {name}")
            aliases[name] = value
    return aliases


def _params_optional(params: Any) -> bool:
    if isinstance(params, type) and issubclass(params, msgspec.Struct):
        return not any(f.required for f in msgspec.structs.fields(params))
    return False


def message_structs(methods: list[MethodInfo]) -> Messages:
    """Per method: ``[(role, struct)]`` for its request/notification and response
    (``SessionCreateRequest``, ``SessionCreateResponse`` …; ``params`` may be left out
    when every member of the params type has a default)."""
    out: Messages = {}
    for m in methods:
        base = pascal(m.name)
        params_type: Any = m.params
        params_field: tuple[Any, ...]
        if _params_optional(m.params):
            params_field = ("params", params_type | msgspec.UnsetType, msgspec.UNSET)
        else:
            params_field = ("params", params_type)
        fields: list[Any] = [("jsonrpc", Literal["2.0"])]
        if m.kind == "request":
            fields.append(("id", JsonRpcId))
        fields += [("method", Literal[m.name]), params_field]
        suffix = "Request" if m.kind == "request" else "Notification"
        message = msgspec.defstruct(base + suffix, fields, forbid_unknown_fields=True)
        message.__doc__ = f"The `{m.name}` {m.kind} ({m.direction}): {m.summary}"
        roles: list[tuple[str, Any]] = [("message", message)]
        if m.kind == "request":
            response = msgspec.defstruct(
                base + "Response",
                [("jsonrpc", Literal["2.0"]), ("id", JsonRpcId), ("result", m.result)],
                forbid_unknown_fields=True,
            )
            response.__doc__ = f"The successful response to `{m.name}`."
            roles.append(("response", response))
        out[m.name] = roles
    return out
