"""The journal's benchmark: what durable history costs the bridge.  Prints figures.

Three measurements, all over the bridge's real pipes with the harness client of
``bench/run.py`` (same framing, same client, same ratio-not-absolute discipline):

  (J1) streaming with the journal on, as a ratio to ``--state-dir :memory:`` measured in
       the same invocation: a scripted run streams N ``text.delta`` events (~100
       characters each); the two targets alternate for ``--reps`` repetitions and the
       medians are compared.  Target: >= 0.7x.
  (J2) journal bytes per event: the journal file's size (after a checkpoint) divided by
       the events it holds, for the same stream (one repeated ~100-character delta, which
       compresses very well); and, for a stream of varied short deltas (a few random
       words each, like a model's), the bytes of the event blocks alone per event (the
       scripted provider's raw records and recovery record repeat the whole script text,
       which says nothing about the journal's own cost).
  (J3) reading the last 100 events of a session holding ``--history`` events (default
       1,000,000): ``events/read {before: last + 1, limit: 100}`` timed at the client,
       the median of ``--reads`` requests, while the bridge that wrote it still has it
       open (warm) and from a fresh bridge on the same state directory (cold).
       Target: <= 20 ms.

Usage:  .venv/bin/python bench/journal.py [--reps 3] [--events 100000]
                                           [--history 1000000] [--reads 20] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as harness  # noqa: E402  (bench/run.py: the client and its drivers)

REPO = HERE.parent


def bridge_target(name: str, state_dir: str) -> harness.Target:
    """The bridge with ``--state-dir state_dir``, measured by run.py's events driver."""
    return harness.Target(
        name,
        [sys.executable, "-m", "agent_bridge", "serve", "--state-dir", state_dir],
        framing="content-length",
        cwd=str(REPO),
        env={"PYTHONPATH": str(REPO)},
        events=harness.bridge_events_driver,
        is_subject=True,
    )


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


async def stream_once(target: harness.Target, cfg: harness.Config) -> dict[str, Any]:
    """One (J1) sample: spawn, stream ``cfg.events`` events, close."""
    peer, _ = await harness.start_peer(target, cfg)
    try:
        assert target.events is not None
        return await target.events(peer, cfg)
    finally:
        await peer.close()


async def streaming(reps: int, cfg: harness.Config, log: Any) -> dict[str, Any]:
    """(J1) and (J2)."""
    rates: dict[str, list[float]] = {"memory": [], "journal": []}
    cpu: dict[str, list[float]] = {"memory": [], "journal": []}
    per_event: list[float] = []
    for rep in range(reps):
        order = ["memory", "journal"] if rep % 2 == 0 else ["journal", "memory"]
        for name in order:
            state_dir = tempfile.mkdtemp(prefix="bench-journal-")
            try:
                target = bridge_target(name, ":memory:" if name == "memory" else state_dir)
                result = await stream_once(target, cfg)
                rates[name].append(result["rate"])
                cpu[name].append(result["server_cpu_us"])
                log(f"  rep {rep + 1} {name}: {result['rate'] / 1000:.1f}k events/s")
                if name == "journal":
                    events = result["events"] + 2  # and session.closed, run.started's session
                    per_event.append(journal_bytes(state_dir) / events)
            finally:
                shutil.rmtree(state_dir, ignore_errors=True)
    memory = statistics.median(rates["memory"])
    journal = statistics.median(rates["journal"])
    return {
        "memory_rate": memory,
        "journal_rate": journal,
        "ratio": journal / memory,
        "memory_cpu_us": statistics.median(cpu["memory"]),
        "journal_cpu_us": statistics.median(cpu["journal"]),
        "bytes_per_event": statistics.median(per_event),
        "samples": {"rates": rates, "cpu_us": cpu, "bytes_per_event": per_event},
    }


async def timed_reads(peer: harness.Peer, session_id: str, last: int, reads: int) -> list[float]:
    """Time ``reads`` requests for the last 100 events; check each page."""
    times: list[float] = []
    for _ in range(reads):
        t0 = time.perf_counter()
        page = await peer.request(
            "events/read", {"sessionId": session_id, "before": last + 1, "limit": 100}
        )
        times.append((time.perf_counter() - t0) * 1000.0)
        events = page["events"]
        if (
            len(events) != 100
            or events[-1]["sequence"] != last
            or events[0]["sequence"] != last - 99
        ):
            raise harness.BenchError(f"unexpected page: {len(events)} events")
    return times


async def history_reads(history: int, reads: int, cfg: harness.Config, log: Any) -> dict[str, Any]:
    """(J3)."""
    state_dir = tempfile.mkdtemp(prefix="bench-journal-")
    try:
        target = bridge_target("journal", state_dir)
        peer, _ = await harness.start_peer(target, cfg)
        try:
            created = await peer.request(
                "session/create",
                harness.BridgeProtocol.session_create_params(
                    {"steps": [{"type": "stream", "count": history, "text": "x" * 100}]}
                ),
            )
            session_id = created["session"]["sessionId"]
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def on_event(env: harness.Envelope) -> None:
                if b'"run.completed"' in bytes(env.params) and not done.done():
                    done.set_result(None)

            peer.on_notification["event"] = on_event
            t0 = time.perf_counter()
            await peer.request("run/start", {"sessionId": session_id, "input": {"text": "go"}})
            await peer.wait(done, cfg.timeout * 10, "the long run")
            log(f"  wrote {history:,} events in {time.perf_counter() - t0:.1f} s")
            peer.on_notification.pop("event", None)
            last = history + 1  # run.started + the deltas (run.completed is last + 1)
            last += 1
            warm = await timed_reads(peer, session_id, last, reads)
        finally:
            await peer.close()
        peer, _ = await harness.start_peer(target, cfg)
        try:
            cold = await timed_reads(peer, session_id, last + 1, reads)  # + session.closed
        finally:
            await peer.close()
        size = journal_bytes(state_dir)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    return {
        "events": last + 1,
        "warm_ms": statistics.median(warm),
        "cold_ms": statistics.median(cold),
        "first_cold_ms": cold[0],
        "bytes_per_event": size / (last + 1),
        "samples": {"warm_ms": warm, "cold_ms": cold},
    }


_TEXT = (
    "the of and to in is you that it he was for on are as with his they at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her "
    "would make like him into time has look two more write go see number no way could "
    "people my than first water been call who its now find long down day did get come made "
    "may part function return value error file path test class import module list string"
)
WORDS = _TEXT.split()


async def varied_deltas(cfg: harness.Config, log: Any) -> dict[str, Any]:
    """(J2) for varied short deltas: 20 text steps of 1,000 deltas of ~4 words each."""
    import random

    rng = random.Random(7)
    steps = [
        {"type": "text", "text": " ".join(rng.choice(WORDS) for _ in range(4000)), "chunks": 1000}
        for _ in range(20)
    ]
    state_dir = tempfile.mkdtemp(prefix="bench-journal-")
    try:
        target = bridge_target("journal", state_dir)
        peer, _ = await harness.start_peer(target, cfg)
        try:
            created = await peer.request(
                "session/create", harness.BridgeProtocol.session_create_params({"steps": steps})
            )
            session_id = created["session"]["sessionId"]
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def on_event(env: harness.Envelope) -> None:
                if b'"run.completed"' in bytes(env.params) and not done.done():
                    done.set_result(None)

            peer.on_notification["event"] = on_event
            await peer.request("run/start", {"sessionId": session_id, "input": {"text": "go"}})
            await peer.wait(done, cfg.timeout, "the varied run")
        finally:
            await peer.close()
        path = os.path.join(state_dir, "journal.sqlite3")
        with sqlite3.connect(path) as conn:
            events, stored, plain = conn.execute(
                "SELECT SUM(last_seq - first_seq + 1), "
                "SUM(length(bodies) + length(sizes) + length(types)), "
                "SUM(length(sizes) / 4) FROM event_blocks"
            ).fetchone()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    log(f"  varied deltas: {events:,} events, {stored / events:.1f} bytes each in blocks")
    return {"events": events, "block_bytes_per_event": stored / events, "rows": plain}


def report(stream: dict[str, Any], reads: dict[str, Any] | None, varied: dict[str, Any]) -> str:
    """The table printed on stdout."""
    rows = [
        ("(J1) events streamed, memory, /s", f"{stream['memory_rate'] / 1000:.1f}k", ""),
        ("(J1) events streamed, journal, /s", f"{stream['journal_rate'] / 1000:.1f}k", ""),
        (
            "(J1) journal / memory",
            f"{stream['ratio']:.2f}x",
            "PASS" if stream["ratio"] >= 0.7 else "FAIL",
        ),
        ("     server CPU per event, memory, us", f"{stream['memory_cpu_us']:.2f}", ""),
        ("     server CPU per event, journal, us", f"{stream['journal_cpu_us']:.2f}", ""),
        ("(J2) journal bytes per event", f"{stream['bytes_per_event']:.0f}", ""),
        (
            "(J2) block bytes per event, varied deltas",
            f"{varied['block_bytes_per_event']:.0f}",
            "",
        ),
    ]
    if reads is not None:
        verdict = "PASS" if max(reads["warm_ms"], reads["cold_ms"]) <= 20 else "FAIL"
        rows += [
            (
                f"(J3) last 100 of {reads['events']:,} events, warm, ms",
                f"{reads['warm_ms']:.2f}",
                verdict,
            ),
            (
                f"(J3) last 100 of {reads['events']:,} events, cold, ms",
                f"{reads['cold_ms']:.2f}",
                verdict,
            ),
            ("     first read after a restart, ms", f"{reads['first_cold_ms']:.2f}", ""),
            ("(J2) bytes per event in that journal", f"{reads['bytes_per_event']:.0f}", ""),
        ]
    width = max(len(r[0]) for r in rows)
    lines = [f"{'metric (median)':<{width}}  {'value':>9}  verdict", "-" * (width + 20)]
    lines += [f"{name:<{width}}  {value:>9}  {verdict}" for name, value, verdict in rows]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Run the sections; return every figure."""

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    cfg = harness.Config(events=args.events)
    log(f"(J1/J2) streaming {args.events:,} events, {args.reps} repetitions per target")
    stream = await streaming(args.reps, cfg, log)
    varied = await varied_deltas(cfg, log)
    reads = None
    if args.history > 0:
        log(f"(J3) a session of {args.history:,} events")
        reads = await history_reads(args.history, args.reads, cfg, log)
    return {"stream": stream, "reads": reads, "varied": varied}


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print the table (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--json", help="also write every sample here")
    args = parser.parse_args(argv)
    figures = asyncio.run(main_async(args))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"agent-bridge journal bench (python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, load {load:.2f})"
    )
    print(report(figures["stream"], figures["reads"], figures["varied"]))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
