"""A host that stops reading during its ``session/attach`` replay (issue 30, item 4,
looked for elsewhere): the live events of that time were buffered for it in memory
without bound.  Now at most :data:`~agent_bridge.runtime.stream.REPLAY_BUFFER_MAX` are
held (journaled sessions); past that they are dropped and the host, once it reads
again, catches up from the journal: every event, gapless, in order.  The runtime in
process over a real journal, the scripted provider streaming.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from runtime_hosts import FakeHost, StuckHost

from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.journal import open_history
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime
from agent_bridge.runtime.stream import REPLAY_BUFFER_MAX
from agent_bridge.wire.methods import RunInput, RunStartParams

FIRST = 3_000  # history to replay: three pages, so the replay waits for the stuck host
SECOND = 5 * REPLAY_BUFFER_MAX  # live events while it replays


async def test_a_host_stuck_in_its_attach_replay_holds_bounded_live_events(
    tmp_path: Path,
) -> None:
    runs = [{"steps": [{"type": "stream", "count": n, "text": "s" * 40}]} for n in (FIRST, SECOND)]
    script = {"script": {"runs": runs}}
    registry = ProviderRegistry([ScriptedProvider()], load_entry_points=False)
    fast, stuck = FakeHost(), StuckHost()
    async with Runtime(registry, history=open_history(str(tmp_path))) as runtime:
        info = await runtime.create_session("scripted", options=script, subscriber=fast)
        sid = info.session_id
        first = await runtime.start_run(RunStartParams(sid, RunInput("one")))
        await runtime.runs[first.run_id].done.wait()
        await runtime.flush()
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.attach, sid, stuck, 0)  # waits on the stuck host
            await anyio.sleep(0.1)
            subscription = runtime.sessions[sid].stream.subscriptions[stuck]
            assert subscription.replaying
            second = await runtime.start_run(RunStartParams(sid, RunInput("two")))
            await runtime.runs[second.run_id].done.wait()  # not held back by it
            await runtime.flush()
            held = sum(len(r.bodies) for r in subscription.buffer or [])
            assert held <= REPLAY_BUFFER_MAX, f"{held} live events buffered"
            stuck.reads()
        newest = runtime.sessions[sid].stream.committed_sequence()
        with anyio.fail_after(30):
            while not stuck.events or stuck.events[-1]["sequence"] < newest:
                await anyio.sleep(0.05)
        assert not subscription.lagging  # live again
    expected = [e["sequence"] for e in fast.events]
    seen = [e["sequence"] for e in stuck.events]
    assert seen[: len(expected)] == expected == list(range(1, len(expected) + 1))
    assert len(expected) > FIRST + SECOND


async def test_not_journaled_a_host_stuck_in_its_replay_holds_the_producers_back() -> None:
    """With ``:memory:`` there is no journal to catch up from: past the bound the
    producers wait for the stuck host's replay to end (the rule for any slow host when
    nothing is journaled), so its buffer stays bounded; once it reads it gets every
    event, gapless, and the run goes on."""
    runs = [{"steps": [{"type": "stream", "count": n, "text": "s" * 40}]} for n in (FIRST, SECOND)]
    script = {"script": {"runs": runs}}
    registry = ProviderRegistry([ScriptedProvider()], load_entry_points=False)
    fast, stuck = FakeHost(), StuckHost()
    async with Runtime(registry, history=open_history(":memory:")) as runtime:
        info = await runtime.create_session("scripted", options=script, subscriber=fast)
        sid = info.session_id
        first = await runtime.start_run(RunStartParams(sid, RunInput("one")))
        await runtime.runs[first.run_id].done.wait()
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.attach, sid, stuck, 0)  # waits on the stuck host
            await anyio.sleep(0.1)
            subscription = runtime.sessions[sid].stream.subscriptions[stuck]
            assert subscription.replaying
            second = await runtime.start_run(RunStartParams(sid, RunInput("two")))
            done = runtime.runs[second.run_id].done
            with anyio.move_on_after(1.0):
                await done.wait()
            assert not done.is_set(), "the run went on while the stuck host buffered"
            held = sum(len(r.bodies) for r in subscription.buffer or [])
            assert 0 < held <= 2 * REPLAY_BUFFER_MAX, f"{held} live events buffered"
            stuck.reads()
            with anyio.fail_after(30):
                await done.wait()
        assert not subscription.replaying
    expected = [e["sequence"] for e in fast.events]
    seen = [e["sequence"] for e in stuck.events]
    assert seen == expected == list(range(1, len(expected) + 1))
    assert len(expected) > FIRST + SECOND
