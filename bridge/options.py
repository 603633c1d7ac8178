"""Validate session and run options against a provider's declared option descriptors,
and say what of them may be stored.

An option named ``env`` (type ``json``: an object of strings) is, by the adapters'
convention (``acp``, ``gemini``), environment for the agent's process: its values may be
credentials.  The journal keeps session options so a later bridge can resume a session;
:func:`storable_options` is what it keeps -- the ``env`` option's names with every value
withheld, and any other string with the credentials this process passed to a child
redacted.  A session reopened in the same process gets its withheld values back from
memory (:func:`restore_withheld`); after a restart they are gone by design, and a resume
without ``options`` is refused (``invalid_option``, option ``env``) so the host resumes
it with its options again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from agent_bridge.errors import BridgeError
from agent_bridge.wire.providers import OptionDescriptor

if TYPE_CHECKING:
    from agent_bridge.spi import AgentProvider

__all__ = [
    "ENV_OPTION",
    "WITHHELD",
    "check_session_options",
    "resolve_options",
    "restore_withheld",
    "storable_options",
]

#: the option holding environment variables for the agent's process (see above)
ENV_OPTION = "env"
#: what the journal holds in place of each of its values
WITHHELD = "[withheld]"


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


def storable_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return what of ``options`` may be stored: each value of the ``env`` option replaced
    by :data:`WITHHELD`, and every other string with remembered credentials redacted."""
    from agent_bridge.redaction import redact_values

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact_values(value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        return value

    out = {name: clean(value) for name, value in options.items()}
    env = options.get(ENV_OPTION)
    if isinstance(env, dict):
        out[ENV_OPTION] = dict.fromkeys(env, WITHHELD)
    return out


def restore_withheld(
    stored: Mapping[str, Any], remembered: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Return the options to resume with from ``stored`` (the journal's) and
    ``remembered`` (the same session's full options, kept in this process, or ``None``).

    Raises ``BridgeError("invalid_option")`` naming ``env`` when values were withheld and
    this process does not have them: the host must resume with the options again."""
    env = stored.get(ENV_OPTION)
    if not (isinstance(env, dict) and WITHHELD in env.values()):
        return dict(stored)
    if remembered is not None:
        return dict(remembered)
    raise BridgeError(
        "invalid_option",
        details={
            "option": ENV_OPTION,
            "scope": "session",
            "reason": "the journal keeps no credential: resume with the session's options",
        },
    )


def check_session_options(provider: AgentProvider, options: Mapping[str, Any]) -> dict[str, Any]:
    """Check session options for ``provider`` as ``session/create`` would, without a
    session (``agent-bridge acp`` checks its ``-o`` options at start): the declared
    names and types, then the provider's own check. Returns the resolved options; raises
    ``BridgeError("invalid_option")`` with a ``reason``."""
    resolved = resolve_options(provider.describe().options, options, "session")
    provider.check_options(resolved)
    return resolved
