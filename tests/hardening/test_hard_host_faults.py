"""Host faults against a real ``agent-bridge serve`` process (cases 26, 27 and the
backpressure policy).

* A host that closes stdin mid-run, or whose end of stdout goes away (EPIPE): every
  provider process -- grandchildren included -- is stopped and the bridge exits 0.
* A host that stops reading while a provider streams millions of events: the bridge stops
  reading host input and the provider's emits wait once the outbound buffer passes its
  high-water mark, so the bridge's RSS stays bounded (and it stops burning CPU); nothing
  is lost when the host reads again.
* A host that sends requests faster than they can be served: past ``--max-inflight`` a
  retryable ``-32001`` with an ``ErrorInfo`` in ``data``, memory bounded; plain requests
  flooded while replies are not read are bounded by the same backpressure.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hardening.fakecli import FakeCLI, cpu_seconds, eventually, pids_with, rss_bytes
from hardening.hosts import RawHost, RecordingBridge

from agent_bridge.wire.errors import ERROR_CODES

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

MiB = 1024 * 1024
HANG = {
    "claude": {"turns": [[{"text": "working"}, {"hang": True}]]},
    "codex": {"replies": [[{"text": "working"}, {"sleep": 120}]]},
}


def scripted(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"provider": "scripted", "options": {"script": {"steps": steps}}}


async def start_everything(bridge: RecordingBridge, fakes: list[FakeCLI]) -> list[str]:
    """A hanging run on every fake provider and one on the scripted provider."""
    sessions = []
    for fake in fakes:
        created = await bridge.result("session/create", fake.create_params(), timeout=20)
        session_id = created["session"]["sessionId"]
        await bridge.result("run/start", {"sessionId": session_id, "input": {"text": "go"}})
        await bridge.event("text.delta", timeout=20)
        sessions.append(session_id)
    created = await bridge.result("session/create", scripted([{"type": "waitForInterrupt"}]))
    session_id = created["session"]["sessionId"]
    await bridge.result("run/start", {"sessionId": session_id, "input": {"text": "go"}})
    sessions.append(session_id)
    return sessions


# --------------------------------------------------------------------------- case 27


def close_read_end(process: Any) -> None:
    """Really close our end of a child's stdout pipe (anyio's ``aclose`` only stops the
    reader; the descriptor stays open and the child would block, not get EPIPE)."""
    transport = process._process._transport.get_pipe_transport(1)
    transport.close()
    assert transport.is_closing()


async def test_case_27_host_closes_stdin_mid_run_providers_stopped_exit_0(
    tmp_path: Path,
) -> None:
    fakes = [FakeCLI(tmp_path, k, HANG[k], grandchild=True) for k in ("claude", "codex")]
    env = {**fakes[0].env(), **fakes[1].env()}
    async with anyio.create_task_group() as tg:
        bridge = RecordingBridge("newline", env=env)
        await bridge.start(tg)
        try:
            await bridge.initialize()
            await start_everything(bridge, fakes)
            assert all(pids_with(f.marker) for f in fakes)
            started = time.monotonic()
            await bridge.close_stdin()
            assert await bridge.wait_exit(timeout=30) == 0
            elapsed = time.monotonic() - started
            # Stopped by the bridge on its way out, not found later by someone else.
            leftovers = [p for f in fakes for p in pids_with(f.marker)]
            assert await eventually(
                lambda: not [p for f in fakes for p in pids_with(f.marker)], 1.0
            ), leftovers
            assert elapsed < 20, elapsed
        finally:
            await bridge.stop()
            tg.cancel_scope.cancel()


async def test_case_27_writing_to_the_host_fails_epipe_providers_stopped_exit_0(
    tmp_path: Path,
) -> None:
    fake = FakeCLI(tmp_path, "claude", HANG["claude"], grandchild=True)
    async with anyio.create_task_group() as tg:
        bridge = RecordingBridge("newline", env=fake.env())
        await bridge.start(tg)
        try:
            await bridge.initialize()
            await start_everything(bridge, [fake])
            assert bridge.proc is not None
            close_read_end(bridge.proc)  # the host's end of the bridge's stdout is gone
            # Anything the bridge writes now fails with EPIPE.
            stream = scripted([{"type": "stream", "count": 10_000, "text": "x" * 100}])
            await bridge.send_request("session/create", stream)
            await bridge.send_request("bridge/ping", {})
            assert await bridge.wait_exit(timeout=30) == 0
            assert await eventually(lambda: not pids_with(fake.marker), 2.0), pids_with(fake.marker)
        finally:
            await bridge.stop()
            tg.cancel_scope.cancel()


# --------------------------------------------------------------------------- backpressure


async def test_backpressure_host_that_stops_reading_bounds_rss_and_pauses_the_provider() -> None:
    """Policy: once more than the outbound high-water mark (4 MiB) waits to be written to
    the host, the bridge stops reading host input and providers' emits wait; they resume
    below half of it.  A provider asked for 5,000,000 events therefore produces only what
    fits before the host stops reading: RSS stays within a fixed bound, CPU goes idle, and
    when the host reads again every event arrives, gapless and in order."""
    count = 5_000_000
    async with RawHost.spawn() as host:
        await host.initialize()
        baseline = rss_bytes(host.pid)
        created = await host.call(
            "session/create", scripted([{"type": "stream", "count": count, "text": "y" * 100}])
        )
        session_id = created["result"]["session"]["sessionId"]
        sequences: list[int] = []
        replies: dict[str, Any] = {}

        def note(message: Any) -> None:
            if message.get("method") == "event":
                sequences.append(message["params"]["sequence"])
            elif "id" in message:
                replies[message["id"]] = message

        start = await host.request("run/start", {"sessionId": session_id, "input": {"text": "go"}})
        await host.read_until(lambda m: start in replies, on_message=note)
        run_id = replies[start]["result"]["runId"]
        # The host stops reading here.
        await anyio.sleep(1.5)
        rss_1, cpu_1 = rss_bytes(host.pid), cpu_seconds(host.pid)
        await anyio.sleep(1.5)
        rss_2, cpu_2 = rss_bytes(host.pid), cpu_seconds(host.pid)
        assert rss_2 - baseline < 64 * MiB, (baseline, rss_1, rss_2)
        assert rss_2 - rss_1 < 4 * MiB, (rss_1, rss_2)
        assert cpu_2 - cpu_1 < 0.3, "the provider keeps producing while nobody reads"
        # Requests sent now are read once the host has drained the backlog; then the
        # interrupt cuts the stream short and everything up to the terminal event arrives.
        ping = await host.request("bridge/ping", {"data": "p"})
        await host.request("run/interrupt", {"runId": run_id})
        await host.read_until(
            lambda m: (
                m.get("method") == "event"
                and m["params"]["payload"]["type"] in ("run.interrupted", "run.completed")
            ),
            timeout=60,
            on_message=note,
        )
        assert replies[ping]["result"] == {"data": "p"}
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
        assert len(sequences) < count  # the interrupt really cut the stream short


# --------------------------------------------------------------------------- case 26


async def test_case_26_requests_beyond_max_inflight_get_overloaded_with_error_info() -> None:
    inflight = 4
    async with RawHost.spawn("--max-inflight", str(inflight), "--interrupt-grace", "3") as host:
        await host.initialize()
        # Four session/close requests that each take the interrupt grace period (their
        # runs ignore interrupts): four slots busy for ~3 s.
        sessions = []
        for _ in range(inflight):
            created = await host.call(
                "session/create", scripted([{"type": "waitForInterrupt", "ignoreInterrupt": True}])
            )
            session_id = created["result"]["session"]["sessionId"]
            await host.call("run/start", {"sessionId": session_id, "input": {"text": "go"}})
            sessions.append(session_id)
        closes = [await host.request("session/close", {"sessionId": s}) for s in sessions]
        await anyio.sleep(0.3)
        baseline = rss_bytes(host.pid)
        # Then 20,000 more async requests in one burst, faster than anything is served.
        burst = 20_000
        lines = [
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": f"b{i}",
                    "method": "session/create",
                    "params": {"provider": "scripted"},
                }
            ).encode()
            for i in range(burst)
        ]
        await host.send_raw(b"\n".join(lines) + b"\n")
        replies: dict[str, Any] = {}
        # A close may finish while the burst's replies are still being read (a slow
        # host): its reply is kept, not dropped with the messages read past.
        closed: dict[Any, Any] = {}

        def note(message: Any) -> None:
            if isinstance(message.get("id"), str) and message["id"].startswith("b"):
                replies[message["id"]] = message
            elif message.get("id") in closes:
                closed[message["id"]] = message

        await host.read_until(lambda m: len(replies) == burst, on_message=note, timeout=60)
        peak = rss_bytes(host.pid)
        overloaded = [r for r in replies.values() if "error" in r]
        assert len(overloaded) == burst  # every slot was taken by a close
        error = overloaded[0]["error"]
        assert error["code"] == -32001
        assert error["data"] == {
            "code": "overloaded",
            "message": ERROR_CODES["overloaded"].message,
            "retryable": True,
        }
        assert peak - baseline < 48 * MiB, (baseline, peak)
        # The closes finish; then requests are served again.
        if len(closed) < len(closes):
            await host.read_until(lambda m: len(closed) == len(closes), on_message=note, timeout=20)
        for reply in closed.values():
            assert "result" in reply, reply
        again = await host.call("session/create", {"provider": "scripted"})
        assert "result" in again, again


async def test_case_26_flood_of_requests_while_replies_are_not_read_stays_bounded() -> None:
    """100,000 pipelined pings while the host does not read the replies: the bridge stops
    reading input at the high-water mark instead of queueing replies without limit; every
    ping is answered once the host reads."""
    count = 100_000
    async with RawHost.spawn() as host:
        await host.initialize()
        baseline = rss_bytes(host.pid)
        payload = "z" * 200
        data = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"bridge/ping","params":{"data":"%s"}}\n'
            % (i, payload.encode())
            for i in range(count)
        )

        async def writer() -> None:
            await host.send_raw(data)

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            await anyio.sleep(2.0)  # not reading: the bridge must stall, not balloon
            stalled = rss_bytes(host.pid)
            answered: set[int] = set()

            def note(message: Any) -> None:
                if isinstance(message.get("id"), int):
                    assert message["result"] == {"data": payload}
                    answered.add(message["id"])

            await host.read_until(lambda m: len(answered) == count, on_message=note, timeout=60)
        assert stalled - baseline < 48 * MiB, (baseline, stalled)
        assert answered == set(range(count))
