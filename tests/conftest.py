"""Shared test set-up: make the helper modules in tests/ importable, offer both framings."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bridge_client import BridgeProcess

# The package's own pytest plugin (opt-in for everybody else); tests use its fixtures
# where they fit (tests/test_recorded_sessions.py, tests/test_harness.py).
pytest_plugins = ("agent_bridge.testing",)

# No test writes to the real home directory: a bridge spawned without a state directory of
# its own (tests/bridge_client.py and the conformance replayer make one per bridge) uses
# one under this temporary root, removed when the test session ends.
_STATE_ROOT = tempfile.mkdtemp(prefix="agent-bridge-tests-")
os.environ["AGENT_BRIDGE_STATE_DIR"] = os.path.join(_STATE_ROOT, "state")
os.environ["XDG_STATE_HOME"] = os.path.join(_STATE_ROOT, "xdg")
atexit.register(shutil.rmtree, _STATE_ROOT, True)
# Nor does a bridge read the developer's configuration file (~/.config/agent-bridge):
# a test that wants one points AGENT_BRIDGE_CONFIG at its own.
os.environ["AGENT_BRIDGE_CONFIG"] = ""


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


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL cluster for the test session (``tests/pgcluster.py``):
    skipped loudly where it cannot start, a failure in CI (``CI=true``)."""
    from pgcluster import ClusterUnavailable, start_cluster

    try:
        cluster = start_cluster()
    except ClusterUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL must run in CI: {exc}")
        pytest.skip(f"PostgreSQL unavailable, the PostgreSQL journal is NOT tested: {exc}")
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster: Any) -> str:
    """The address of a fresh, empty database on the session's cluster."""
    return str(pg_cluster.new_database())
