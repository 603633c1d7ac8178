"""Validate session and run options against a provider's declared option descriptors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from agent_bridge.errors import BridgeError
from agent_bridge.wire.providers import OptionDescriptor

__all__ = ["resolve_options"]


def _fits(option: OptionDescriptor, value: Any) -> bool:
    kind = option.type
    if kind == "enum":
        return isinstance(value, str) and value in option.values
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "stringList":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return True  # json


def _expected(option: OptionDescriptor) -> str:
    """What ``option`` takes, for a reason: "one of 'a', 'b'", "a string", …"""
    if option.type == "enum":
        return "one of " + ", ".join(repr(v) for v in option.values)
    return {
        "string": "a string",
        "boolean": "true or false",
        "integer": "an integer",
        "stringList": "a list of strings",
    }.get(option.type, "JSON")


def resolve_options(
    declared: tuple[OptionDescriptor, ...],
    given: Mapping[str, Any],
    scope: Literal["session", "run"],
) -> dict[str, Any]:
    """Return ``given`` with the defaults of ``scope``'s options filled in.

    Raises ``BridgeError("invalid_option")`` for an option the provider does not declare
    for ``scope`` or a value it does not allow, its ``reason`` saying which.
    """
    table = {o.name: o for o in declared if o.scope == scope}
    out: dict[str, Any] = {}
    for name, value in given.items():
        option = table.get(name)
        if option is None:
            others = sorted(table)
            reason = f"the provider has no {scope} option {name[:60]!r}" + (
                f" (its {scope} options: {', '.join(others)})"[:200] if others else ""
            )
        elif not _fits(option, value):
            reason = f"{name!r} takes {_expected(option)}"
        else:
            out[name] = value
            continue
        raise BridgeError(
            "invalid_option",
            details={"option": name[:100], "scope": scope, "reason": reason[:300]},
        )
    for name, option in table.items():
        if name not in out and option.default is not None:
            out[name] = option.default
    return out
