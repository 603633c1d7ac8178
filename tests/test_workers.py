"""The worker pool is bounded and shrinks (issue 11, case 7).

Before: journal reads ran in anyio's default pool (40 threads, an idle one retired only
when a later call came in), so 40,000 pipelined ``session/list`` took a bridge from 2
threads to 42 for good.  Nothing here is timed: shrinking is waited for with a bound that
only stops a hung test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import pytest

from agent_bridge.workers import MAX_WORKERS, WorkerPool


def _wait_until(predicate: object, bound: float = 30.0) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_worker_pool_runs_many_jobs_on_at_most_max_workers_then_shrinks_to_none() -> None:
    pool = WorkerPool(max_workers=3, idle_seconds=0.05)

    def job(i: int) -> int:
        time.sleep(0.001)
        if i == 7:
            raise ValueError("seven")
        return i * 2

    async def main() -> list[int]:
        results: list[int] = []

        async def one(i: int) -> None:
            try:
                results.append(await pool.run(job, i))
            except ValueError:
                results.append(-1)

        async with anyio.create_task_group() as tg:
            for i in range(200):
                tg.start_soon(one, i)
        return results

    results = anyio.run(main)
    assert sorted(results) == sorted([-1] + [i * 2 for i in range(200) if i != 7])
    assert pool.peak <= 3
    assert _wait_until(lambda: pool.threads == 0), "idle workers never exited"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_serve_threads_bounded_after_pipelined_history_requests_and_shrink_back() -> None:
    env = dict(os.environ)
    state = tempfile.mkdtemp(prefix="ab-workers-")
    with subprocess.Popen(
        [sys.executable, "-m", "agent_bridge", "serve", "--framing", "newline"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**env, "AGENT_BRIDGE_STATE_DIR": state},
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None

        def send(obj: object) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(obj).encode() + b"\n")

        def threads() -> int:
            return len(os.listdir(f"/proc/{proc.pid}/task"))

        init = {"protocolVersion": 1, "clientInfo": {"name": "t"}, "capabilities": {}}
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        proc.stdin.flush()
        proc.stdout.readline()
        # initialize is answered before the runtime (and its journal writer thread) is
        # loaded: count the threads once a request past it has been answered
        send({"jsonrpc": "2.0", "id": "warm", "method": "bridge/ping", "params": {"data": "x"}})
        proc.stdin.flush()
        assert b'"warm"' in proc.stdout.readline()
        before = threads()
        count = 3000
        for i in range(count):
            send({"jsonrpc": "2.0", "id": i + 1, "method": "session/list", "params": {}})
        proc.stdin.flush()
        for _ in range(count):
            assert b'"id"' in proc.stdout.readline()  # a result, or "overloaded" past 256
        during = threads()
        assert during <= before + MAX_WORKERS, (before, during)
        assert _wait_until(lambda: threads() <= before), "worker threads stayed"
        proc.stdin.close()
        proc.wait(30)
    shutil.rmtree(state, ignore_errors=True)
