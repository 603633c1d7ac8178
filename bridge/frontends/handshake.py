"""What ``initialize`` agrees on (pure): the methods offered, the interaction kinds the
host can answer, the experimental methods it opted into, and the result sent.

Shared by :class:`~agent_bridge.frontends.bridge_protocol.BridgeFrontend` and by
:mod:`~agent_bridge.frontends.first_reply`, which answers ``initialize`` before the front-end
is loaded: one place decides, so both answer with the same bytes.  Light on purpose: it
imports only the wire types (msgspec), not the runtime or the connection.
"""

from __future__ import annotations

from typing import Final

from agent_bridge import __version__
from agent_bridge.wire.catalog import CATALOG
from agent_bridge.wire.common import SUPPORTED_PROTOCOL_VERSIONS
from agent_bridge.wire.methods import (
    InitializeParams,
    InitializeResult,
    ServerCapabilities,
    ServerInfo,
)

__all__ = ["EXPERIMENTAL_METHODS", "STABLE_METHODS", "Handshake", "agree"]

STABLE_METHODS: Final = tuple(
    m.name for m in CATALOG if m.direction == "host->bridge" and m.stability == "stable"
)
EXPERIMENTAL_METHODS: Final = tuple(
    m.name for m in CATALOG if m.direction == "host->bridge" and m.stability == "experimental"
)


class Handshake:
    """An accepted ``initialize``: :attr:`answers` (the interaction kinds the host declared
    it can answer), :attr:`experimental` (the experimental methods it opted into, of those
    offered) and the :attr:`result` to send."""

    __slots__ = ("answers", "experimental", "result")

    def __init__(self, answers: set[str], experimental: set[str], result: InitializeResult) -> None:
        self.answers = answers
        self.experimental = experimental
        self.result = result


def agree(params: InitializeParams, *, durable: bool) -> Handshake | None:
    """Return the handshake for ``params`` (``durable``: whether history is kept in a
    journal), or ``None`` when the host's protocol version is not supported."""
    if params.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
        return None
    support = params.capabilities.interactions
    answers = {
        kind
        for kind, declared in (
            ("approval", support.approval),
            ("question", support.question),
            ("questionSet", support.question_set),
        )
        if declared is True
    }
    experimental = set(params.capabilities.experimental) & set(EXPERIMENTAL_METHODS)
    result = InitializeResult(
        protocol_version=params.protocol_version,
        server_info=ServerInfo("agent-bridge", __version__),
        capabilities=ServerCapabilities(
            methods=STABLE_METHODS,
            experimental=tuple(sorted(experimental)),
            durable_history=durable,
        ),
    )
    return Handshake(answers, experimental, result)
