"""The baseline agent of bench/acp.py: an ACP agent on the ACP Python SDK
(``agent-client-protocol``), shaped like the SDK's own ``examples/echo_agent.py`` (an
``Agent`` with ``on_connect``, ``initialize``, ``new_session`` and ``prompt``, served by
``run_agent``), plus a ``stream N`` prompt for throughput.

A prompt ``stream N`` is answered with N ``agent_message_chunk`` updates of ``x``; any
other prompt is echoed back as one chunk, as the example does.

    python bench/baselines/acp_sdk_echo_agent.py
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

from acp import Agent, InitializeResponse, NewSessionResponse, PromptResponse, run_agent
from acp.interfaces import Client
from acp.schema import AgentMessageChunk, ClientCapabilities, Implementation, TextContentBlock


class StreamingEchoAgent(Agent):
    """Echoes a prompt, or streams ``N`` chunks for ``stream N``."""

    _conn: Client

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") or "" for block in prompt)
        words = text.split()
        if len(words) == 2 and words[0] == "stream" and words[1].isdigit():
            for _ in range(int(words[1])):
                chunk = AgentMessageChunk(
                    session_update="agent_message_chunk",
                    content=TextContentBlock(type="text", text="x"),
                )
                await self._conn.session_update(session_id=session_id, update=chunk)
        else:
            chunk = AgentMessageChunk(
                session_update="agent_message_chunk",
                content=TextContentBlock(type="text", text=text),
            )
            await self._conn.session_update(session_id=session_id, update=chunk)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    # as in the SDK's example: the Protocol's other methods keep their defaults
    asyncio.run(run_agent(StreamingEchoAgent()))  # type: ignore[abstract]
