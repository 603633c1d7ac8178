"""Two soak phases for issue 30: a slow host among fast ones on the daemon, and a junk flood.

* **slow host**: a daemon, one session, fast hosts attached (each reads everything); a
  run streams N events, once with only the fast hosts and once with one more host that
  attached and reads nothing.  Printed: the fast hosts' rate both times (same daemon,
  same run), the daemon's RSS while the slow host is N events behind, and whether the
  slow host, reading at last, gets every event gapless from the journal.
* **junk flood**: ``agent-bridge serve`` fed M MiB of junk (zeros, random bytes, a line
  that never ends, newline-framed garbage) through a pipe; printed: the bridge's CPU time
  per MiB (from ``/proc``), its peak RSS, how many replies it wrote.

Run by ``bench/soak.py`` (``--slow-host-events``, ``--junk-mib``) or alone:
``python bench/soak_faults.py [--events N] [--junk-mib M]``.  Figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BRIDGE = str(Path(sys.executable).with_name("agent-bridge"))
MiB = 1 << 20


def _agent_bridge(*args: str) -> list[str]:
    if os.path.exists(BRIDGE):
        return [BRIDGE, *args]
    return [sys.executable, "-m", "agent_bridge", *args]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


# ------------------------------------------------------------------ slow host


class _Reader:
    """A host on the daemon's socket that reads everything (in a thread)."""

    def __init__(self, path: str, name: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")
        self.next_id = 0
        self.events: dict[str, list[int]] = {}
        self.replies: dict[int, Any] = {}
        self.done = threading.Condition()
        self.call(
            "initialize", {"protocolVersion": 1, "clientInfo": {"name": name}, "capabilities": {}}
        )
        self.notify("initialized", {})

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, method: str, params: Any) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            message = json.loads(self.file.readline())
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self._note(message)

    completed = 0

    def _note(self, message: dict[str, Any]) -> None:
        if message.get("method") == "event":
            p = message["params"]
            self.events.setdefault(p["sessionId"], []).append(p["sequence"])
            if p["payload"]["type"] == "run.completed":
                self.completed += 1

    def read_until(self, completed: int, timeout: float) -> float:
        """Read until the ``completed``-th ``run.completed``; return when it came."""
        self.sock.settimeout(timeout)
        while self.completed < completed:
            line = self.file.readline()
            if not line:
                raise EOFError("the daemon closed the connection")
            self._note(json.loads(line))
        return time.monotonic()

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def slow_host_phase(events: int, fast_hosts: int = 2) -> dict[str, Any]:
    """Run the slow-host phase; return its figures."""
    runtime = tempfile.mkdtemp(prefix="ab-", dir="/tmp")
    tmp = Path(tempfile.mkdtemp(prefix="agent-bridge-slowhost-"))
    state = str(tmp / "state")
    env = {**os.environ, "XDG_RUNTIME_DIR": runtime}
    from agent_bridge.daemon.paths import daemon_paths

    path = daemon_paths(state, env).socket
    os.makedirs(state, exist_ok=True)
    log = open(tmp / "daemon.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        _agent_bridge("daemon", "--state-dir", state, "--idle-timeout", "0"),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    out: dict[str, Any] = {"events": events, "fast_hosts": fast_hosts}
    try:
        deadline = time.monotonic() + 20
        while True:  # until the daemon listens
            try:
                probe = socket.socket(socket.AF_UNIX)
                probe.connect(path)
                probe.close()
                break
            except OSError:
                probe.close()
                if time.monotonic() > deadline:
                    raise RuntimeError("the daemon did not start") from None
                time.sleep(0.05)
        hosts = [_Reader(path, f"fast{i}") for i in range(fast_hosts)]
        step = {"type": "stream", "count": events, "text": "s" * 40}
        script = {"script": {"runs": [{"steps": [step]}, {"steps": [step]}]}}
        created = hosts[0].call("session/create", {"provider": "scripted", "options": script})
        sid = created["session"]["sessionId"]
        for host in hosts[1:]:
            host.call("session/attach", {"sessionId": sid, "after": 0})

        def run(label: str, completed: int) -> float:
            started = time.monotonic()
            hosts[0].call("run/start", {"sessionId": sid, "input": {"text": label}})
            ends: list[float] = []
            threads = [
                threading.Thread(target=lambda h=h: ends.append(h.read_until(completed, 60)))
                for h in hosts
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if len(ends) != len(hosts):
                raise RuntimeError("a fast host did not see the run complete")
            return max(ends) - started

        alone = run("fast hosts only", 1)
        slow = socket.socket(socket.AF_UNIX)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        slow.connect(path)
        hello = {"protocolVersion": 1, "clientInfo": {"name": "slow"}, "capabilities": {}}
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/attach",
                "params": {"sessionId": sid, "after": hosts[0].events[sid][-1]},
            },
        ):
            slow.sendall(json.dumps(message).encode() + b"\n")
        time.sleep(0.5)
        rss_before = _status_kib(proc.pid, "VmRSS")
        with_slow = run("with a slow host", 2)
        last = hosts[0].events[sid][-1]
        rss_behind = _status_kib(proc.pid, "VmRSS")
        out["fast_rate_alone"] = events / alone
        out["fast_rate_with_slow_host"] = events / with_slow
        out["daemon_rss_mib_before"] = rss_before / 1024
        out["daemon_rss_mib_with_slow_host_behind"] = rss_behind / 1024
        # the slow host reads at last: from the journal, gapless
        slow.settimeout(120)
        reader = slow.makefile("rb")
        seen: list[int] = []
        started = time.monotonic()
        while not seen or seen[-1] < last:
            line = reader.readline()
            if not line:
                break
            message = json.loads(line)
            if message.get("method") == "event" and message["params"]["sessionId"] == sid:
                seen.append(message["params"]["sequence"])
        out["slow_host_caught_up_seconds"] = time.monotonic() - started
        first = seen[0] if seen else 0
        out["slow_host_gapless"] = bool(seen) and seen == list(range(first, first + len(seen)))
        out["slow_host_events"] = len(seen)
        reader.close()
        slow.close()
        for host in hosts:
            host.close()
    finally:
        subprocess.run(
            _agent_bridge("daemon", "--stop", "--state-dir", state),
            env=env,
            capture_output=True,
            timeout=40,
            check=False,
        )
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    return out


# ------------------------------------------------------------------ junk flood


def _junk(kind: str, size: int) -> bytes:
    if kind == "zeros":
        return bytes(size)
    if kind == "random":
        return os.urandom(size)
    if kind == "endless line":
        return b"{" + b"a" * (size - 1)
    return (b'{"jsonrpc":"2.0","id":1,"method":' + b"x" * 40 + b"\n") * (size // 74)


def junk_phase(mib: int) -> list[dict[str, Any]]:
    """Feed ``mib`` MiB of each kind of junk to ``serve``; return the figures per kind."""
    results = []
    for kind in ("zeros", "random", "endless line", "garbage lines"):
        tmp = Path(tempfile.mkdtemp(prefix="agent-bridge-junk-"))
        chunk = _junk(kind, MiB)
        proc = subprocess.Popen(
            _agent_bridge("serve", "--state-dir", str(tmp / "state")),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        replies = bytearray()

        def drain(proc: subprocess.Popen[bytes] = proc, out: bytearray = replies) -> None:
            assert proc.stdout is not None
            while data := proc.stdout.read(65536):
                out.extend(data)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        assert proc.stdin is not None
        time.sleep(0.3)
        cpu_start = _cpu_seconds(proc.pid)
        started = time.monotonic()
        for _ in range(mib):
            proc.stdin.write(chunk)
        proc.stdin.flush()
        cpu = _cpu_seconds(proc.pid) - cpu_start  # what the bridge spent reading it
        wall = time.monotonic() - started
        peak = _status_kib(proc.pid, "VmHWM")
        proc.stdin.close()
        proc.wait(60)
        reader.join(10)
        shutil.rmtree(tmp, ignore_errors=True)
        results.append(
            {
                "kind": kind,
                "mib": mib,
                "cpu_ms_per_mib": 1000 * cpu / mib,
                "mib_per_s": mib / wall,
                "peak_rss_mib": peak / 1024,
                "reply_bytes": len(replies),
                "exit": proc.returncode,
            }
        )
    return results


def print_figures(slow: dict[str, Any] | None, junk: list[dict[str, Any]] | None) -> None:
    if slow is not None:
        print(
            f"slow host ({slow['fast_hosts']} fast hosts, {slow['events']} events a run): "
            f"fast hosts {slow['fast_rate_alone']:,.0f} events/s alone, "
            f"{slow['fast_rate_with_slow_host']:,.0f} events/s with a host not reading; "
            f"daemon RSS {slow['daemon_rss_mib_before']:.1f} -> "
            f"{slow['daemon_rss_mib_with_slow_host_behind']:.1f} MiB with it "
            f"{slow['events']} events behind; it then caught up from the journal in "
            f"{slow['slow_host_caught_up_seconds']:.1f} s ({slow['slow_host_events']} events, "
            f"gapless: {slow['slow_host_gapless']})"
        )
    for j in junk or []:
        print(
            f"junk flood ({j['kind']}, {j['mib']} MiB): {j['cpu_ms_per_mib']:.1f} ms CPU/MiB, "
            f"{j['mib_per_s']:.0f} MiB/s, peak RSS {j['peak_rss_mib']:.1f} MiB, "
            f"{j['reply_bytes']} bytes of replies, exit {j['exit']}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events a run (slow host)")
    parser.add_argument("--junk-mib", type=int, default=256, help="MiB of each kind of junk")
    args = parser.parse_args(argv)
    slow = slow_host_phase(args.events) if args.events > 0 else None
    junk = junk_phase(args.junk_mib) if args.junk_mib > 0 else None
    print_figures(slow, junk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
