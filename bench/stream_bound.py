"""How fast each server streams events when the client is not the bottleneck.

`bench/run.py` drives every server with one asyncio client that frames and decodes every
message; on this kind of machine that client is the slower side for the floor's event
stream (it is 90-95% busy, the floor server 60%), so its event rows compare the bridge
with the client's speed more than with the floor's. This script takes the client out:
it reads the newline-framed stream with plain blocking reads and only counts lines and
looks for the end, so each rate is the server's own. It prints, for interleaved
repetitions, each target's median rate and server CPU per event and the ratio to the
floor measured in the same run.

  .venv/bin/python bench/stream_bound.py [--events N] [--reps R]

Targets: `floor-nl` (bench/baselines/floor_server.py --newline: `bench/stream` of N
notifications of 200 characters), the bridge with `--state-dir :memory:`, and the bridge
with its journal on (a scratch state directory each time). The bridge streams N
`text.delta` events of ~100 characters from a scripted session. Newline framing only (the
client counts lines). Prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from run import BridgeProtocol  # noqa: E402 - the harness's one statement of the protocol

P = BridgeProtocol


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s children (every thread's)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [
                    int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                ]
    return out


class Child:
    """A server on pipes; newline-framed JSON-RPC in, raw bytes out."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            env=env,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        # Every target's output pipe gets the 1 MiB the bridge asks for on its side (the
        # floor keeps the default 64 KiB, and would wait on this reader's wake-ups).
        with contextlib.suppress(OSError):
            fcntl.fcntl(self._fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        self._buf = b""

    def send(self, message: dict[str, object]) -> None:
        self._in.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def reply(self, msg_id: int, timeout: float = 30.0) -> dict[str, object]:
        """Read messages until the response to ``msg_id``; return it (raises on error)."""
        deadline = time.monotonic() + timeout
        while True:
            nl = self._buf.find(b"\n")
            while nl >= 0:
                line, self._buf = self._buf[:nl], self._buf[nl + 1 :]
                message: dict[str, object] = json.loads(line)
                if message.get("id") == msg_id and "method" not in message:
                    if "error" in message:
                        raise RuntimeError(f"request {msg_id} failed: {message['error']}")
                    return message
                nl = self._buf.find(b"\n")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no reply to request {msg_id}")
            data = os.read(self._fd, 1 << 16)
            if not data:
                raise RuntimeError("the server closed its output")
            self._buf += data

    def count_until(self, marker: bytes) -> int:
        """Count lines until a chunk holds ``marker`` (the end); return the count."""
        lines = self._buf.count(b"\n")
        tail = self._buf[-256:]
        if marker in self._buf:
            return lines
        read, fd = os.read, self._fd
        while True:
            data = read(fd, 1 << 18)
            if not data:
                raise RuntimeError("the server closed its output mid-stream")
            lines += data.count(b"\n")
            if marker in tail + data[:256] or marker in data:
                return lines
            tail = data[-256:]

    def cpu_seconds(self) -> float:
        """CPU time of the server and of its live children (the journal's writer process,
        with ``--journal-writer process``)."""
        total = 0
        for pid in [self.proc.pid, *_children(self.proc.pid)]:
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self._in.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _timed(child: Child, start: Callable[[], None], marker: bytes) -> tuple[float, float]:
    """Run ``start`` and count to ``marker``; return (lines per second, CPU us per line)."""
    cpu0, t0 = child.cpu_seconds(), time.perf_counter()
    start()
    lines = child.count_until(marker)
    wall, cpu = time.perf_counter() - t0, child.cpu_seconds() - cpu0
    return lines / wall, cpu / lines * 1e6


def floor(events: int) -> tuple[float, float]:
    child = Child([sys.executable, str(ROOT / "bench/baselines/floor_server.py"), "--newline"])
    try:
        child.send({"id": 1, "method": "initialize", "params": {}})
        child.reply(1)
        return _timed(
            child,
            lambda: child.send(
                {"id": 2, "method": "bench/stream", "params": {"count": events, "size": 200}}
            ),
            b'"result"',
        )
    finally:
        child.close()


def bridge(
    events: int, state_dir: str, env: dict[str, str] | None = None, writer: str | None = None
) -> tuple[float, float]:
    """The bridge's server-bound rate and CPU per event, its writer process's included
    (``env``: added to this process's environment, e.g. ``PYTHONPATH`` for another tree;
    ``writer``: its ``--journal-writer``)."""
    argv = [sys.executable, "-m", "agent_bridge", "serve", "--framing", "newline"]
    if writer is not None:
        argv += ["--journal-writer", writer]
    child = Child([*argv, "--state-dir", state_dir], env={**os.environ, **(env or {})})
    try:
        child.send({"id": 1, "method": P.INITIALIZE, "params": P.INITIALIZE_PARAMS})
        child.reply(1)
        child.send({"method": P.INITIALIZED, "params": P.INITIALIZED_PARAMS})
        script = P.stream_scripts(events, P.STREAM_TEXT)[0]
        child.send({"id": 2, "method": P.SESSION_CREATE, "params": P.session_create_params(script)})
        session = P.session_id(child.reply(2)["result"])
        return _timed(
            child,
            lambda: child.send(
                {"id": 3, "method": P.RUN_START, "params": P.run_start_params(session)}
            ),
            b'"run.completed"',
        )
    finally:
        child.close()


def bridge_journal(
    events: int, env: dict[str, str] | None = None, writer: str | None = None
) -> tuple[float, float]:
    state = tempfile.mkdtemp(prefix="bench-bound-")
    try:
        return bridge(events, state, env, writer)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument(
        "--journal-writer",
        default="",
        metavar="W[,W]",
        help="the journal-on bridge once per writer named (thread, process, auto), in the "
        "same interleaved repetitions (default: the bridge's own default only)",
    )
    args = ap.parse_args()
    targets: dict[str, Callable[[int], tuple[float, float]]] = {
        "floor-nl": floor,
        "bridge-nl :memory:": lambda n: bridge(n, ":memory:"),
    }
    writers = [w.strip() for w in args.journal_writer.split(",") if w.strip()]
    if not writers:
        targets["bridge-nl journal"] = bridge_journal
    for writer in writers:
        targets[f"bridge-nl journal {writer}"] = functools.partial(bridge_journal, writer=writer)
    print(f"# {len(os.sched_getaffinity(0))} CPUs allowed to this run", flush=True)
    rates: dict[str, list[float]] = {name: [] for name in targets}
    cpus: dict[str, list[float]] = {name: [] for name in targets}
    names = list(targets)
    for rep in range(args.reps):
        order = names[rep % len(names) :] + names[: rep % len(names)]
        print(f"# repetition {rep + 1}/{args.reps}: {', '.join(order)}", flush=True)
        for name in order:
            rate, cpu = targets[name](args.events)
            rates[name].append(rate)
            cpus[name].append(cpu)
    base_rate = statistics.median(rates["floor-nl"])
    base_cpu = statistics.median(cpus["floor-nl"])
    print(f"\nserver-bound event streams, {args.events} events, medians of {args.reps}")
    print(f"{'target':22} {'events/s':>10} {'/ floor':>8} {'CPU us/event':>13} {'/ floor':>8}")
    for name in names:
        rate, cpu = statistics.median(rates[name]), statistics.median(cpus[name])
        # a run too short for the floor's CPU to register (0 us) has no CPU ratio
        ratio = f"{cpu / base_cpu:7.2f}x" if base_cpu else f"{'-':>8}"
        print(f"{name:22} {rate / 1e3:9.1f}k {rate / base_rate:7.2f}x {cpu:13.2f} {ratio}")


if __name__ == "__main__":
    main()
