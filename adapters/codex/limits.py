"""Codex's rate limits read without a session (``provider/limits`` when no Codex session
is live): a short-lived ``codex app-server`` asked ``account/rateLimits/read``.

Like the login probe (:func:`~agent_bridge.adapters.codex.probe.probe_auth`) it runs on a
throwaway ``CODEX_HOME`` holding copies of the user's ``auth.json`` and ``config.toml``,
so the read writes nothing under the user's home, bounded in time, with
:data:`~agent_bridge.adapters.codex.launch.SILENT_CONFIG`.  Codex answers the read only
with a ChatGPT login; with an API key or another model provider it refuses
("authentication required"): that is :data:`NOT_AVAILABLE`, not a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final, Literal

from agent_bridge.adapters.codex import mapping
from agent_bridge.adapters.codex.probe import ask_app_server
from agent_bridge.adapters.codex.protocol import RateLimitsRead
from agent_bridge.adapters.kit.rpc_child import prose, request_quietly
from agent_bridge.rpc.connection import Connection
from agent_bridge.rpc.errors import ConnectionClosed, RequestTimedOut, RpcError
from agent_bridge.wire.events import LimitsUpdated

__all__ = ["NOT_AVAILABLE", "read_rate_limits"]

log = logging.getLogger("agent_bridge.codex")

#: The read was refused: this login has no rate limits to tell.
NOT_AVAILABLE: Final = "not_available"


async def read_rate_limits(
    executable: str, env: Mapping[str, str], timeout: float = 10.0
) -> LimitsUpdated | Literal["not_available"] | None:
    """The figures ``account/rateLimits/read`` gives now (``None`` when they name no
    meter, or the read could not be made: no answer in time, the child failed), or
    :data:`NOT_AVAILABLE` when Codex refused it."""

    async def ask(conn: Connection) -> LimitsUpdated | Literal["not_available"] | None:
        try:
            read = await request_quietly(
                conn, "account/rateLimits/read", None, result_type=RateLimitsRead
            )
        except (ConnectionClosed, RequestTimedOut):
            raise
        except RpcError as exc:
            if isinstance(exc.data, dict) and exc.data.get("reason") == "invalid_result":
                raise
            log.info("codex: rate limits are not available here: %s", prose(exc.message))
            return NOT_AVAILABLE
        return mapping.read_limits_payload(read)

    return await ask_app_server(executable, env, "limits", ask, timeout)
