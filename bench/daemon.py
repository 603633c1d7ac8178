"""How the daemon scales to several hosts, measured against stdio ``serve`` in one run.

Prints (medians of ``--reps`` interleaved repetitions; ratios within this invocation):

* events per second of one streaming run (``--events`` text deltas) to 1, 2 and 10 hosts
  attached through the daemon socket, each as a ratio to one host on stdio ``serve``;
* the same to one host through ``agent-bridge connect`` (the relay's cost), as a ratio;
* attach-and-catch-up: a second host attaching with ``after: 0`` to a finished session of
  ``--catchup`` events, time until it has them all.

Every host is a thread reading its own connection; the rate is the slowest host's (all
events at all hosts) over the wall time from ``run/start`` to the last terminal event.

    .venv/bin/python bench/daemon.py [--reps 3] [--events 20000] [--catchup 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from transports import daemon_socket, start_daemon, stop_daemon  # noqa: E402

INIT = {
    "protocolVersion": 1,
    "clientInfo": {"name": "bench"},
    "capabilities": {"interactions": {"approval": True}},
}


class Conn:
    """A newline-JSON connection with a reader thread that counts events."""

    def __init__(self, write: Callable[[bytes], None], reader: Any) -> None:
        self._write = write
        self._reader = reader
        self.replies: dict[int, Any] = {}
        self.events = 0
        self.done = threading.Event()
        self.cond = threading.Condition()
        self.target = -1
        self._id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._reader:
            if b'"method":"event"' in line:
                self.events += 1
                if self.events == self.target:
                    self.done.set()
                continue
            message = json.loads(line)
            if "id" in message and "method" not in message:
                with self.cond:
                    self.replies[message["id"]] = message
                    self.cond.notify_all()

    def call(self, method: str, params: Any) -> Any:
        self._id += 1
        rid = self._id
        self._write(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
            + b"\n"
        )
        with self.cond:
            self.cond.wait_for(lambda: rid in self.replies, timeout=60)
        return self.replies[rid]["result"]

    def init(self) -> None:
        self.call("initialize", INIT)
        self._write(b'{"jsonrpc":"2.0","method":"initialized"}\n')


def socket_conn(path: str) -> Conn:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    return Conn(sock.sendall, sock.makefile("rb"))


def process_conn(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Conn]:
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def write(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    return proc, Conn(write, proc.stdout)


def script(events: int) -> dict[str, Any]:
    return {"script": {"steps": [{"type": "stream", "count": events, "text": "x" * 100}]}}


def stream_rate(conns: list[Conn], events: int) -> float:
    """Create a session on the first, attach the others, run; events/s at the slowest."""
    first = conns[0]
    sid = first.call("session/create", {"provider": "scripted", "options": script(events)})[
        "session"
    ]["sessionId"]
    for conn in conns[1:]:
        conn.call("session/attach", {"sessionId": sid, "after": 0})
    total = events + 2  # run.started, deltas, run.completed
    for conn in conns:
        conn.events = 0
        conn.target = total
        conn.done.clear()
    t0 = time.perf_counter()
    first.call("run/start", {"sessionId": sid, "input": {"text": "go"}})
    for conn in conns:
        if not conn.done.wait(300):
            raise RuntimeError(f"a host got {conn.events}/{total} events")
    return events / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--catchup", type=int, default=100000)
    args = ap.parse_args()
    py = sys.executable
    results: dict[str, list[float]] = {}
    work = tempfile.mkdtemp(prefix="ab-bench-", dir="/tmp")
    try:
        for rep in range(args.reps):
            state = os.path.join(work, f"s{rep}")
            env = {**os.environ, "XDG_RUNTIME_DIR": os.path.join(work, f"x{rep}")}
            os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
            # stdio serve, one host
            proc, conn = process_conn(
                [py, "-m", "agent_bridge", "serve", "--state-dir", state + "-stdio"], env
            )
            conn.init()
            results.setdefault("stdio, 1 host", []).append(stream_rate([conn], args.events))
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(30)
            daemon = start_daemon(env, state)
            path = daemon_socket(env, state)
            for hosts in (1, 2, 10):
                conns = [socket_conn(path) for _ in range(hosts)]
                for c in conns:
                    c.init()
                results.setdefault(f"daemon, {hosts} hosts", []).append(
                    stream_rate(conns, args.events)
                )
            proc, conn = process_conn(
                [py, "-m", "agent_bridge", "connect", "--state-dir", state], env
            )
            conn.init()
            results.setdefault("connect relay, 1 host", []).append(stream_rate([conn], args.events))
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(30)
            # attach and catch up
            writer = socket_conn(path)
            writer.init()
            writer.target = args.catchup + 2
            sid = writer.call(
                "session/create", {"provider": "scripted", "options": script(args.catchup)}
            )["session"]["sessionId"]
            writer.call("run/start", {"sessionId": sid, "input": {"text": "go"}})
            writer.done.wait(600)
            late = socket_conn(path)
            late.init()
            late.target = args.catchup + 2
            t0 = time.perf_counter()
            late.call("session/attach", {"sessionId": sid, "after": 0})
            late.done.wait(600)
            results.setdefault(f"attach + catch up {args.catchup} events, s", []).append(
                time.perf_counter() - t0
            )
            stop_daemon(env, state)
            daemon.wait(30)
            print(f"# rep {rep + 1}/{args.reps} done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(results["stdio, 1 host"])
    print(f"agent-bridge daemon bench: medians of {args.reps} reps, {args.events} events")
    print(f"{'measure':44} {'median':>12} {'vs stdio 1 host':>16}")
    for name, values in results.items():
        median = statistics.median(values)
        ratio = f"{median / base:.2f}x" if not name.startswith("attach") else ""
        unit = "" if name.startswith("attach") else " ev/s"
        print(
            f"{name:44} {median:>9.0f}{unit:5} {ratio:>12}"
            if unit
            else f"{name:44} {median:>12.3f} {ratio:>16}"
        )
    relay = statistics.median(results["connect relay, 1 host"])
    direct = statistics.median(results["daemon, 1 hosts"])
    print(
        f"relay cost per event: {(1 / relay - 1 / direct) * 1e6:.2f} µs (connect vs direct socket)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
