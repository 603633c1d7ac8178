"""The PostgreSQL journal and the fleet, each figure as a ratio to the SQLite journal
measured in the same invocation.  Prints figures (never asserted by a test).

  (F1) events per second: one scripted run streams ``--events`` ``text.delta`` events
       through the runtime, from ``run/start`` until everything is committed; the
       PostgreSQL journal's rate over SQLite's (median of ``--reps``).
  (F2) append-to-host latency of each event, p50 and p99: for PostgreSQL a host attached
       to *another member* (it follows through LISTEN/NOTIFY and reads from the
       journal), for SQLite the host on the owning bridge (the only place it can be);
       from the moment the runtime hands the event to the journal to the moment the
       host receives it.
  (F3) an owner SIGKILLed mid-run to the first event written by its successor: for
       PostgreSQL another member already running (it finds the lease expired, lease
       ``--lease`` seconds), for SQLite the next bridge to open the state directory
       (started right after the kill; its recovery at open writes the event).
  (F4) ``--sessions`` sessions (default 10,000) created and run (a 5-event run each)
       across three members on one journal, then listed through one member; for SQLite
       three runtimes on one state directory.

Members are runtimes in this process, each with its own journal connections (F3's owner
is a child process).  The PostgreSQL server is a throwaway cluster started here as in
the tests (``tests/pgcluster.py``; root runs it as ``postgres``).

Usage:  .venv/bin/python bench/fleet.py [--events 100000] [--reps 3] [--sessions 10000]
                                        [--lease 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from pgcluster import Cluster, start_cluster  # noqa: E402

from agent_bridge.adapters.scripted import ScriptedProvider  # noqa: E402
from agent_bridge.journal import History, open_history  # noqa: E402
from agent_bridge.registry import ProviderRegistry  # noqa: E402
from agent_bridge.runtime import Interaction, Released, Runtime  # noqa: E402
from agent_bridge.wire.methods import RunInput, RunStartParams  # noqa: E402


class Host:
    """Records when each event of each session arrived."""

    congested = False

    def __init__(self) -> None:
        self.at: dict[tuple[str, int], float] = {}
        self.closed: dict[str, float] = {}

    def publish(self, events: Released) -> bool:
        now = time.perf_counter()
        for i in range(len(events.bodies)):
            self.at[(events.session_id, events.first + i)] = now
        return False

    async def drained(self) -> None:
        return None

    def can_answer(self, kind: str) -> bool:
        return False

    async def ask(self, interaction: Interaction) -> None:
        return None


def stream(count: int) -> dict[str, Any]:
    return {"script": {"steps": [{"type": "stream", "count": count, "text": "x" * 100}]}}


def runtime(history: History) -> Runtime:
    return Runtime(ProviderRegistry([ScriptedProvider()], load_entry_points=False), history=history)


Opener = Callable[[], History]


def openers(kind: str, cluster: Cluster | None, tmp: str) -> Opener:
    """A fresh journal location for one measurement; returns how to open it (again)."""
    if kind == "postgresql":
        assert cluster is not None
        url = cluster.new_database()
        return lambda: open_history(None, journal=url)
    state = tempfile.mkdtemp(dir=tmp)
    return lambda: open_history(state)


def stamp_appends(history: History, at: dict[tuple[str, int], float]) -> None:
    """Record when the runtime hands each event to the journal (bench-only wrapping)."""
    append, append_many = history.append, history.append_many

    def one(session_id: str, sequence: int, code: int, body: bytes, raw_id: int) -> None:
        at[(session_id, sequence)] = time.perf_counter()
        append(session_id, sequence, code, body, raw_id)

    def many(
        session_id: str,
        first: int,
        codes: bytes,
        bodies: list[bytes],
        raw_id: int,
        size: int | None = None,
    ) -> None:
        now = time.perf_counter()
        for i in range(len(bodies)):
            at[(session_id, first + i)] = now
        append_many(session_id, first, codes, bodies, raw_id, size)

    history.append = one  # type: ignore[method-assign]
    history.append_many = many  # type: ignore[method-assign]


# --------------------------------------------------------------------- F1, F2


async def throughput_and_latency(
    open_: Opener, kind: str, events: int
) -> tuple[float, list[float]]:
    """Return (events per second, per-event append-to-host latencies in ms)."""
    owner_history = open_()
    appended: dict[tuple[str, int], float] = {}
    stamp_appends(owner_history, appended)
    host = Host()
    async with runtime(owner_history) as owner:
        follower_ctx = runtime(open_()) if kind == "postgresql" else None
        watcher = Host()
        if follower_ctx is not None:
            await follower_ctx.__aenter__()
        try:
            info = await owner.create_session("scripted", options=stream(events), subscriber=host)
            if follower_ctx is not None:
                await follower_ctx.attach(info.session_id, watcher)
            seen = watcher if follower_ctx is not None else host
            began = time.perf_counter()
            started = await owner.start_run(RunStartParams(info.session_id, RunInput("x")))
            await owner.runs[started.run_id].done.wait()
            await owner.flush()
            took = time.perf_counter() - began
            last = events + 2
            with anyio.fail_after(120):
                while (info.session_id, last) not in seen.at:
                    await anyio.sleep(0.01)
        finally:
            if follower_ctx is not None:
                await follower_ctx.__aexit__(None, None, None)
    lat = [
        (seen.at[key] - t) * 1000 for key, t in appended.items() if key in seen.at and key[1] > 1
    ]
    return (events + 2) / took, lat


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------- F3

_OWNER = """
import sys, anyio
from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.journal import open_history
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime
from agent_bridge.wire.methods import RunInput, RunStartParams

async def main():
    kind, where, lease = sys.argv[1], sys.argv[2], float(sys.argv[3])
    history = (open_history(None, journal=where, lease=lease) if kind == "postgresql"
               else open_history(where))
    registry = ProviderRegistry([ScriptedProvider()], load_entry_points=False)
    async with Runtime(registry, history=history) as runtime:
        steps = [{"type": "stream", "count": 100, "text": "x"}, {"type": "waitForInterrupt"}]
        info = await runtime.create_session("scripted", options={"script": {"steps": steps}})
        await runtime.start_run(RunStartParams(info.session_id, RunInput("x")))
        await runtime.flush()
        print(info.session_id, flush=True)
        await anyio.sleep(3600)

anyio.run(main)
"""


async def kill_to_successor(kind: str, cluster: Cluster | None, tmp: str, lease: float) -> float:
    """Seconds from the owner's SIGKILL to the first event its successor wrote."""
    if kind == "postgresql":
        assert cluster is not None
        where = cluster.new_database()
    else:
        where = tempfile.mkdtemp(dir=tmp)
    successor: Runtime | None = None
    host = Host()
    if kind == "postgresql":  # a member already running, following the session
        successor = runtime(open_history(None, journal=where, lease=lease))
        await successor.__aenter__()
    child = subprocess.Popen(
        [sys.executable, "-c", _OWNER, kind, where, str(lease)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        session_id = (await anyio.to_thread.run_sync(child.stdout.readline)).strip()
        if successor is not None:
            await successor.attach(session_id, host)
        killed = time.perf_counter()
        child.send_signal(signal.SIGKILL)
        child.wait()
        if successor is None:
            successor = runtime(open_history(where))
            await successor.__aenter__()
            await successor.attach(session_id, host)
        with anyio.fail_after(120):
            while (session_id, 102) not in host.at:  # run.failed bridge_crashed
                await anyio.sleep(0.005)
        return host.at[(session_id, 102)] - killed
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
        if successor is not None:
            await successor.__aexit__(None, None, None)


# --------------------------------------------------------------------- F4


async def many_sessions(open_: Opener, count: int) -> tuple[float, float]:
    """Seconds to create and run ``count`` sessions across three members, and to list
    them all through one."""
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        members = [await stack.enter_async_context(runtime(open_())) for _ in range(3)]
        began = time.perf_counter()

        async def work(member: Runtime, n: int) -> None:
            for _ in range(n):
                info = await member.create_session("scripted", options=stream(5))
                started = await member.start_run(RunStartParams(info.session_id, RunInput("x")))
                await member.runs[started.run_id].done.wait()

        async with anyio.create_task_group() as tg:
            for i, member in enumerate(members):
                tg.start_soon(work, member, count // 3 + (1 if i < count % 3 else 0))
        for member in members:
            await member.flush()
        created = time.perf_counter() - began
        began = time.perf_counter()
        total, cursor = 0, None
        while True:
            page, cursor = await members[0].history.list_sessions(None, None, cursor, 200)
            total += len(page)
            if cursor is None:
                break
        listed = time.perf_counter() - began
        assert total == count, total
    return created, listed


# --------------------------------------------------------------------- main


async def main(args: argparse.Namespace) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="bench-fleet-")
    cluster = start_cluster()
    out: dict[str, Any] = {}
    try:
        rates: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
        lats: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
        for _ in range(args.reps):
            for kind in ("sqlite", "postgresql"):
                rate, lat = await throughput_and_latency(
                    openers(kind, cluster, tmp), kind, args.events
                )
                rates[kind].append(rate)
                lats[kind] += lat
        f1 = {k: statistics.median(v) for k, v in rates.items()}
        out["F1 events/s"] = {**f1, "ratio": f1["postgresql"] / f1["sqlite"]}
        f2 = {k: {"p50 ms": pct(v, 0.5), "p99 ms": pct(v, 0.99)} for k, v in lats.items() if v}
        out["F2 append-to-host latency (pg: host on another member)"] = {
            **f2,
            "ratio p50": f2["postgresql"]["p50 ms"] / f2["sqlite"]["p50 ms"],
            "ratio p99": f2["postgresql"]["p99 ms"] / f2["sqlite"]["p99 ms"],
        }
        f3 = {
            k: await kill_to_successor(k, cluster, tmp, args.lease)
            for k in ("sqlite", "postgresql")
        }
        out[f"F3 SIGKILL to successor's first event, s (pg lease {args.lease} s)"] = {
            **f3,
            "ratio": f3["postgresql"] / f3["sqlite"],
        }
        f4: dict[str, Any] = {}
        for kind in ("sqlite", "postgresql"):
            created, listed = await many_sessions(openers(kind, cluster, tmp), args.sessions)
            f4[kind] = {"create+run s": created, "list all s": listed}
        f4["ratio create+run"] = f4["postgresql"]["create+run s"] / f4["sqlite"]["create+run s"]
        f4["ratio list"] = f4["postgresql"]["list all s"] / f4["sqlite"]["list all s"]
        out[f"F4 {args.sessions} sessions across 3 members"] = f4
    finally:
        cluster.destroy()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--json", metavar="OUT")
    ns = parser.parse_args()
    os.environ.setdefault("AGENT_BRIDGE_CONFIG", "")
    result = anyio.run(main, ns)
    text = json.dumps(result, indent=2, default=float)
    print(text)
    if ns.json:
        Path(ns.json).write_text(text + "\n")
