"""Shared test set-up: make the helper modules in tests/ importable, offer both framings."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bridge_client import BridgeProcess


@pytest.fixture(params=["content-length", "newline"])
def framing(request: pytest.FixtureRequest) -> str:
    """Both framings a host may use."""
    return str(request.param)


@asynccontextmanager
async def running_bridge(
    framing: str = "content-length",
    *args: str,
    initialize: bool = True,
    approval: bool = True,
    question: bool = True,
    env: dict[str, str] | None = None,
) -> AsyncIterator[BridgeProcess]:
    """Spawn a bridge child for the duration of the block; it is stopped afterwards."""
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess(framing, args=args, env=env)
        await bridge.start(tg)
        try:
            if initialize:
                await bridge.initialize(approval=approval, question=question)
            yield bridge
        finally:
            with anyio.CancelScope(shield=True):
                await bridge.stop()
            tg.cancel_scope.cancel()
