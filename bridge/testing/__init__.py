"""agent-bridge's pytest plugin: test a host, or a harness, against a real bridge.

Opt-in: ``pytest -p agent_bridge.testing``, ``pytest_plugins = ["agent_bridge.testing"]``
in a conftest, or ``agent_bridge = true`` in the pytest ini settings.  Being installed
changes nothing else (the ``pytest11`` entry point, :mod:`agent_bridge.testing.entry`,
only declares that ini setting).

Fixtures:

* ``agent_bridge_state_dir`` — a fresh state directory (the journal) for the test;
* ``agent_bridge_env`` — a dict of extra environment variables for the bridges the test
  starts (fill it before starting one);
* ``agent_bridge`` — a started, initialized :class:`BridgeClient` (synchronous); closed,
  and checked to exit 0, at the end of the test;
* ``agent_bridge_factory`` — ``factory(args=(), env=None)`` starts more (synchronous)
  bridges on the same state directory; all are closed at the end;
* ``agent_bridge_async`` — ``async with agent_bridge_async() as client:`` an initialized
  :class:`AsyncBridgeClient` (anyio or asyncio tests);
* ``agent_bridge_cassette`` — the :class:`Cassette` named by the test's
  ``@pytest.mark.agent_bridge_cassette("path/to/script.json")`` (relative to the test
  file); :func:`replay_cassette` replays it on a client and returns the runs' events.

Helpers: :class:`Script` (build scripts), :func:`event_types`, :func:`normalized`,
:func:`assert_event_types`, :func:`assert_payloads_in_order`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.testing.client import (
    AnswerFn,
    AsyncBridgeClient,
    BridgeClient,
    BridgeRequestError,
    answer_with,
)
from agent_bridge.testing.scripts import (
    Cassette,
    Script,
    assert_event_types,
    assert_payloads_in_order,
    event_types,
    normalized,
    payloads,
)

__all__ = [
    "AnswerFn",
    "AsyncBridgeClient",
    "BridgeClient",
    "BridgeRequestError",
    "Cassette",
    "Script",
    "answer_with",
    "areplay_cassette",
    "assert_event_types",
    "assert_payloads_in_order",
    "event_types",
    "normalized",
    "payloads",
    "replay_cassette",
]

Message = dict[str, Any]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "agent_bridge_cassette(path): the recorded script agent_bridge_cassette loads"
    )


def replay_cassette(client: BridgeClient, cassette: Cassette) -> list[list[Message]]:
    """Replay ``cassette`` on ``client``: a scripted session on its script, each recorded
    run started with its recorded input, its interactions answered as recorded (and
    interrupted where the recording was); return each run's events."""
    session_id = client.create_session(cassette.session())
    return [
        client.run(
            session_id,
            run["input"],
            answer_with(answers=cassette.answers(i)),
            interrupt_after=cassette.interrupt_after(i),
        )
        for i, run in enumerate(cassette.runs)
    ]


async def areplay_cassette(client: AsyncBridgeClient, cassette: Cassette) -> list[list[Message]]:
    """As :func:`replay_cassette`, on an :class:`AsyncBridgeClient`."""
    session_id = await client.create_session(cassette.session())
    out: list[list[Message]] = []
    for i, run in enumerate(cassette.runs):
        out.append(
            await client.run(
                session_id,
                run["input"],
                answer_with(answers=cassette.answers(i)),
                interrupt_after=cassette.interrupt_after(i),
            )
        )
    return out


@pytest.fixture
def agent_bridge_state_dir(tmp_path: Path) -> str:
    """A fresh state directory for the bridges of this test."""
    path = tmp_path / "agent-bridge-state"
    path.mkdir(mode=0o700)
    return str(path)


@pytest.fixture
def agent_bridge_env() -> dict[str, str]:
    """Extra environment variables for the bridges this test starts."""
    return {}


@pytest.fixture
def agent_bridge_factory(
    agent_bridge_state_dir: str, agent_bridge_env: dict[str, str]
) -> Iterator[Callable[..., BridgeClient]]:
    """Start (initialized) synchronous bridges; each is closed at the end of the test and
    must exit 0."""
    started: list[BridgeClient] = []

    def factory(
        args: Sequence[str] = (), env: dict[str, str] | None = None, initialize: bool = True
    ) -> BridgeClient:
        client = BridgeClient(
            agent_bridge_state_dir, args=args, env={**agent_bridge_env, **(env or {})}
        )
        started.append(client)
        if initialize:
            client.initialize()
        return client

    yield factory
    codes = [client.close() for client in started]
    assert all(code == 0 for code in codes), f"a bridge exited with {codes}"


@pytest.fixture
def agent_bridge(agent_bridge_factory: Callable[..., BridgeClient]) -> BridgeClient:
    """A started, initialized bridge (synchronous client)."""
    return agent_bridge_factory()


@pytest.fixture
def agent_bridge_async(
    agent_bridge_state_dir: str, agent_bridge_env: dict[str, str]
) -> Callable[..., contextlib.AbstractAsyncContextManager[AsyncBridgeClient]]:
    """``async with agent_bridge_async(args=(), env=None) as client:`` — an initialized
    asynchronous client; the bridge must exit 0 at the end of the block."""

    @contextlib.asynccontextmanager
    async def start(
        args: Sequence[str] = (), env: dict[str, str] | None = None
    ) -> AsyncIterator[AsyncBridgeClient]:
        client = AsyncBridgeClient(
            agent_bridge_state_dir, args=args, env={**agent_bridge_env, **(env or {})}
        )
        async with client:
            await client.initialize()
            yield client
        code = client.proc.returncode if client.proc is not None else None
        assert code == 0, f"the bridge exited with {code}"

    return start


@pytest.fixture
def agent_bridge_cassette(request: pytest.FixtureRequest) -> Cassette:
    """The cassette named by ``@pytest.mark.agent_bridge_cassette(path)`` (relative to the
    test's file); a missing one fails the test with a line saying how to make it."""
    marker = request.node.get_closest_marker("agent_bridge_cassette")
    if marker is None or not marker.args:
        raise pytest.UsageError("agent_bridge_cassette needs @pytest.mark.agent_bridge_cassette")
    path = Path(marker.args[0])
    if not path.is_absolute():
        path = Path(request.path).parent / path
    if not path.is_file():
        pytest.fail(
            f"no cassette {path} (a relative path is taken from the test's file): record "
            "one with `agent-bridge record SESSION_ID --out FILE` (docs/testing-hosts.md)",
            pytrace=False,
        )
    return Cassette(path)
