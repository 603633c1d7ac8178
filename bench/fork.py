"""Forking a long session: how long ``session/fork`` takes, and what it adds to the journal.
Prints figures.

A real ``claude`` CLI (the project's pinned one, ``.tools``) against the Anthropic stand-in
(``tests/standins/anthropic_server.py``, 127.0.0.1) runs one turn that streams ``--deltas``
text deltas, so the session holds about that many events (default 10,000) in a journal
(SQLite, a scratch state directory).  Then, in the same runtime (in process, so the
figures are the runtime's and the provider's, not a client's):

  (F1) ``fork_session`` at the end, at the first run's end after a second, short run
       (a fork midway), and at the middle delta of the long run (inside a run: Claude Code
       forks at its messages, here none is complete there, so the provider's history is
       cut before the run; its ``providerSequence`` is printed): wall time of the call,
       which includes spawning the forked CLI and its ``initialize`` (``--resume
       --fork-session --resume-session-at``; a new CLI when nothing is cut): the median of
       ``--reps`` forks each, beside a ``create_session`` (a new CLI) as the baseline of
       what spawning and initializing the CLI costs alone;
  (F2) the journal's bytes (after a checkpoint) before the forks and after them, per fork:
       a fork references its parent's events, so it adds a session row, not a copy of
       the ~N events;
  (F3) reading the whole history, in pages of 1,000 (``events/read``), of the parent and
       of a fork at its end (the fork's read goes through its parent's events and
       re-heads each): the median of ``--reps`` reads each.

Usage:  .venv/bin/python bench/fork.py [--deltas 10000] [--reps 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from provider_clis import find_cli  # noqa: E402  (tests/provider_clis.py)
from standins.anthropic_server import AnthropicStandIn, Text  # noqa: E402

from agent_bridge.journal.journal import Journal  # noqa: E402
from agent_bridge.registry import ProviderRegistry  # noqa: E402
from agent_bridge.runtime import Runtime  # noqa: E402
from agent_bridge.wire.methods import EventsReadParams, RunInput, RunStartParams  # noqa: E402


def journal_bytes(state_dir: str) -> int:
    """Checkpoint the journal in ``state_dir`` and return its size in bytes."""
    path = os.path.join(state_dir, "journal.sqlite3")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(
        os.path.getsize(path + suffix)
        for suffix in ("", "-wal", "-shm")
        if os.path.exists(path + suffix)
    )


async def run_turn(runtime: Runtime, session_id: str, text: str) -> int:
    """Run one turn to its end; return the sequence of its terminal event."""
    started = await runtime.start_run(RunStartParams(session_id, RunInput(text=text)))
    run = runtime.runs[started.run_id]
    with anyio.fail_after(300):
        await run.done.wait()
    await runtime.flush()
    return runtime.sessions[session_id].stream.last_sequence


async def read_all(runtime: Runtime, session_id: str) -> int:
    """Read a session's whole history in pages of 1,000; return how many events."""
    count, after = 0, 0
    while True:
        raw = await runtime.read_events(EventsReadParams(session_id, after=after, limit=1000))
        page = msgspec.json.decode(raw)
        count += len(page["events"])
        if not page["hasMore"]:
            return count
        after = page["events"][-1]["sequence"]


async def timed_forks(runtime: Runtime, session_id: str, at: int | None, reps: int) -> list[float]:
    """Fork ``reps`` times at ``at``; return each call's seconds (forks closed after)."""
    out: list[float] = []
    for _ in range(reps):
        t0 = time.perf_counter()
        info = (await runtime.fork_session(session_id, at_event=at)).session
        out.append(time.perf_counter() - t0)
        await runtime.close_session(info.session_id)
    return out


async def measure(args: argparse.Namespace, base: Path, server: AnthropicStandIn) -> dict[str, Any]:
    state = str(base / "state")
    pieces = ["w "] * args.deltas
    server.push(Text(deltas=pieces), Text("short"))
    from agent_bridge.adapters.claude.provider import ClaudeCodeProvider

    registry = ProviderRegistry([ClaudeCodeProvider()], load_entry_points=False)
    async with Runtime(registry, history=Journal.open(state)) as runtime:
        info = await runtime.create_session("claude-code", workspace=str(base / "work"))
        parent = info.session_id
        first_end = await run_turn(runtime, parent, "stream a long answer")
        before = journal_bytes(state)
        at_end = await timed_forks(runtime, parent, None, args.reps)
        after_end = journal_bytes(state)
        await run_turn(runtime, parent, "one more, short")
        before_mid = journal_bytes(state)
        midway = await timed_forks(runtime, parent, first_end, args.reps)
        after_mid = journal_bytes(state)
        inside = await timed_forks(runtime, parent, first_end // 2, args.reps)
        cut = await runtime.fork_session(parent, at_event=first_end // 2)
        await runtime.close_session(cut.session.session_id)
        fork = (await runtime.fork_session(parent, at_event=first_end)).session
        creates: list[float] = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            fresh = await runtime.create_session("claude-code", workspace=str(base / "work"))
            creates.append(time.perf_counter() - t0)
            await runtime.close_session(fresh.session_id)
        reads_parent, reads_fork = [], []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            parent_count = await read_all(runtime, parent)
            reads_parent.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            fork_count = await read_all(runtime, fork.session_id)
            reads_fork.append(time.perf_counter() - t0)
    return {
        "events_in_parent_at_fork": first_end,
        "fork_at_end_s": statistics.median(at_end),
        "fork_midway_s": statistics.median(midway),
        "fork_inside_a_run_s (at the long run's middle delta)": statistics.median(inside),
        "fork_inside_a_run_provider_sequence": cut.provider_sequence,
        "create_session_s (baseline: a new CLI)": statistics.median(creates),
        "journal_bytes_before": before,
        "journal_growth_per_fork_at_end_bytes": (after_end - before) / args.reps,
        "journal_growth_per_fork_midway_bytes": (after_mid - before_mid) / args.reps,
        "journal_bytes_per_parent_event": before / max(first_end, 1),
        "read_parent_events": parent_count,
        "read_parent_s": statistics.median(reads_parent),
        "read_fork_events": fork_count,
        "read_fork_s": statistics.median(reads_fork),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deltas", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    cli = find_cli("claude")
    if cli is None:
        sys.exit("bench/fork.py needs the claude CLI: run scripts/install-provider-clis.sh")
    with tempfile.TemporaryDirectory(prefix="bench-fork-") as tmp:
        base = Path(tmp)
        for name in ("home", "config", "tmp", "work", "state"):
            (base / name).mkdir()
        with AnthropicStandIn() as server:
            os.environ.update(
                {
                    "AGENT_BRIDGE_CLAUDE_PATH": cli,
                    "HOME": str(base / "home"),
                    "CLAUDE_CONFIG_DIR": str(base / "config"),
                    "TMPDIR": str(base / "tmp"),
                    "ANTHROPIC_BASE_URL": server.base_url,
                    "ANTHROPIC_API_KEY": "dummy",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "CLAUDE_CODE_MAX_RETRIES": "0",
                }
            )
            figures = anyio.run(measure, args, base, server)
    width = max(map(len, figures))
    for key, value in figures.items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {shown}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
