"""Case 35 (and 31 for grandchildren): the bridge itself is killed with SIGKILL mid-run --
no provider process and no grandchild of one may survive it.

The providers are the real adapters (``claude-code`` and ``codex``) driving fake CLIs
whose wrapper starts a grandchild that sleeps, holds the provider's pipes and stays in its
process group.  The bridge gets no chance to clean up; what is checked, by reading the
process table in ``/proc``, is that the kernel (parent-death signal) and the bridge's
reaper (a tiny helper that kills the providers' process groups when the bridge's end of
its pipe closes) leave nothing behind.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import pytest
from bridge_client import BridgeProcess
from hardening.fakecli import FakeCLI, alive, pids_with, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

HANG_CLAUDE = {"turns": [[{"text": "working"}, {"hang": True}]]}
HANG_CODEX = {"replies": [[{"text": "working"}, {"sleep": 120}]]}


async def test_case_35_sigkill_of_the_bridge_leaves_no_provider_or_grandchild(
    tmp_path: Path,
) -> None:
    claude = FakeCLI(tmp_path, "claude", HANG_CLAUDE, grandchild=True)
    codex = FakeCLI(tmp_path, "codex", HANG_CODEX, grandchild=True)
    async with anyio.create_task_group() as tg:
        bridge = BridgeProcess("newline", env={**claude.env(), **codex.env()})
        await bridge.start(tg)
        try:
            await bridge.initialize()
            for fake in (claude, codex):
                created = await bridge.result("session/create", fake.create_params(), timeout=20)
                session_id = created["session"]["sessionId"]
                await bridge.result("run/start", {"sessionId": session_id, "input": {"text": "go"}})
                await bridge.event("text.delta", timeout=20)
            procs = {f.kind: f.pids()[-1] for f in (claude, codex)}
            everything = [e[k] for e in procs.values() for k in ("pid", "grandchild")]
            assert len(everything) == 4 and all(alive(p) for p in everything), procs
            assert bridge.proc is not None
            bridge.proc.send_signal(signal.SIGKILL)
            assert await bridge.wait_exit() == -signal.SIGKILL
            gone = await anyio.to_thread.run_sync(
                lambda: wait_until(
                    lambda: not pids_with(claude.marker) and not pids_with(codex.marker),
                    timeout=10,
                )
            )
            survivors = pids_with(claude.marker) + pids_with(codex.marker)
            assert gone, f"survived the bridge: {survivors} of {everything}"
        finally:
            for fake in (claude, codex):
                for pid in pids_with(fake.marker):
                    with_signal(pid)
            await bridge.stop()
            tg.cancel_scope.cancel()


def with_signal(pid: int) -> None:
    import contextlib
    import os

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def test_case_35_reaper_restarts_and_kills_every_registered_group_at_eof() -> None:
    """The reaper itself: it is told each child's group; if it dies a new one is started
    and told all of them again; at EOF on its pipe (what the bridge's death looks like)
    it SIGKILLs every group still registered; a stopped child is unregistered."""
    import os

    from agent_bridge.processes import ProcessSpec, _reaper, build_child_env, spawn

    def sleeper() -> ProcessSpec:
        return ProcessSpec(
            (sys.executable, "-c", "import time; time.sleep(60)"), None, build_child_env()
        )

    async with anyio.create_task_group() as tg:
        first_child = await spawn(sleeper(), tg)
        first_reaper = _reaper.pid
        assert first_reaper is not None
        os.kill(first_reaper, signal.SIGKILL)
        assert await anyio.to_thread.run_sync(lambda: wait_until(lambda: not alive(first_reaper)))
        second_child = await spawn(sleeper(), tg)  # a new reaper, told about both groups
        second_reaper = _reaper.pid
        assert second_reaper not in (None, first_reaper)
        _reaper.close()  # EOF, as when the bridge dies
        with anyio.fail_after(5):
            assert await first_child.wait() == -signal.SIGKILL
            assert await second_child.wait() == -signal.SIGKILL
        for child in (first_child, second_child):
            await child.stop()
        third = await spawn(sleeper(), tg)
        assert third.pgid in _reaper._groups
        await third.stop(eof_grace=0.1, term_grace=0.5)
        assert third.pgid not in _reaper._groups
