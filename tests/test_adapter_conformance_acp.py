"""The adapter conformance kit (:mod:`agent_bridge.testing.conformance`) on the generic
``acp`` provider: any ACP agent, named by the ``command`` session option, here the
project's ACP agent stand-in (tests/standins/fake_acp.py) as a real child over real pipes.

Every item runs but ``late_interaction``, which no ACP adapter can show: it never raises
an interaction after its interrupt.  The stand-in can be made to lose that race on
purpose (``LATE``: a ``session/request_permission`` sent after the ``session/cancel``),
and the adapter answers such a request itself with ACP's ``cancelled`` outcome, as ACP
requires of a client that cancelled, so nothing reaches the runtime late;
:func:`test_a_request_after_the_cancel_is_answered_cancelled_by_the_adapter` shows it on
the kit's own bench.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_bridge.adapters.acp.provider import generic_provider
from agent_bridge.testing.conformance import AdapterUnderTest, ProviderConformance, RunSpec
from agent_bridge.testing.conformance.harness import bench
from agent_bridge.wire.events import RunInterrupted

pytestmark = pytest.mark.timeout(120)

FAKE = Path(__file__).resolve().parent / "standins" / "fake_acp.py"
LATE = (
    "the ACP adapter answers a permission request that arrives after its interrupt with "
    "ACP's cancelled outcome itself and never raises it as an interaction "
    "(test_a_request_after_the_cancel_is_answered_cancelled_by_the_adapter)"
)


def _adapter(tmp_path: Path, log: Path | None = None) -> AdapterUnderTest:
    work = tmp_path / "work"
    work.mkdir()
    script: dict[str, Any] = {"slow_delay": 0.05, "state_dir": str(tmp_path)}
    if log is not None:
        script["log"] = str(log)
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return AdapterUnderTest(
        provider=generic_provider(),
        workspace=str(work),
        session_options={"command": [sys.executable, str(FAKE), "--script", str(path)]},
        text_run=RunSpec("say hi", expect_text="Hi! I am the stand-in model."),
        approval_run=RunSpec("TOOL:touch approved.txt"),
        long_run=RunSpec("SLOW"),
        not_exercised={"late_interaction": LATE},
        interrupt_grace=5.0,
        timeout=30.0,
    )


class TestGenericAcpConformance(ProviderConformance):
    """The ``acp`` provider, its agent the stand-in, started from the ``command`` option."""

    @pytest.fixture
    def adapter(self, tmp_path: Path) -> Iterator[AdapterUnderTest]:
        yield _adapter(tmp_path)


async def _late_run(adapter: AdapterUnderTest) -> tuple[int, int, Any]:
    """Run ``LATE`` on the kit's bench and interrupt it; return the interactions the
    adapter opened after the interrupt, those offered to the host, and the terminal."""
    async with bench(adapter) as b:
        session_id = await b.create_session()
        run_id = await b.start(session_id, RunSpec("LATE"))
        await b.started(run_id, True)
        b.runtime.interrupt_run(run_id, "conformance")
        run = await b.finished(run_id)
        late = [handle for _r, handle, after in b.spi.opened if after]
        return len(late), len(b.host.asked), run.terminals[-1].payload


def test_a_request_after_the_cancel_is_answered_cancelled_by_the_adapter(tmp_path: Path) -> None:
    log = tmp_path / "acp.log"
    opened_late, asked, terminal = anyio.run(_late_run, _adapter(tmp_path, log))
    assert (opened_late, asked) == (0, 0)
    assert isinstance(terminal, RunInterrupted) and not terminal.forced
    messages = [json.loads(line) for line in log.read_text().splitlines()]
    asks = [
        m["msg"]
        for m in messages
        if m["dir"] == "<-" and m["msg"].get("method") == "session/request_permission"
    ]
    assert [a["params"]["toolCall"]["toolCallId"] for a in asks] == ["late_1"]
    cancel_at = next(
        i for i, m in enumerate(messages) if m["msg"].get("method") == "session/cancel"
    )
    ask_at = next(i for i, m in enumerate(messages) if m["msg"] is asks[0])
    assert cancel_at < ask_at  # asked after the cancel: the race the agent lost
    answer = next(
        m["msg"]
        for m in messages
        if m["dir"] == "->" and m["msg"].get("id") == asks[0]["id"] and "result" in m["msg"]
    )
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
