"""Soak: does the bridge give back what it takes?  Prints figures; not a timed test.

Spawns ``python -m agent_bridge serve`` (newline framing, a private temporary state directory)
and drives it over its real pipes:

1. **sessions** -- N sessions on the scripted provider (default 1,000), each created, run
   to completion and closed, one after the other;
2. **provider sessions** -- M sessions (default 100) on the ``claude-code`` adapter with
   the fake CLI of ``tests/standins/fake_claude.py``: a real child process per session,
   each spawned, run and stopped;
3. **stream** -- one scripted run that streams a given volume of events to the host
   (default 1 GiB of event frames), read as fast as the host can;
4. **disk full** -- a second bridge whose state directory is on a small tmpfs mounted
   for the phase (needs root; otherwise the phase is reported as not run, and with
   ``CI=true`` that is a failed check): a run streams, the filesystem is filled in the
   middle of it, then freed.  Checked: the host gets ``journal/status`` failing
   (``disk_full``), no event passes while the disk is full, ``session/create`` is refused
   with the retryable ``journal_failing``, the journal says ``ok`` again and the same run
   completes without a restart, and events offered by the provider = events the host saw
   = events committed (read back by a third bridge on the same state directory), gapless.

Before and after each phase it reads the bridge's file descriptors, threads, child
processes (its descendants other than the process reaper) and RSS from ``/proc``, and
checks them against fixed bounds (see ``BOUNDS`` below and bench/README.md).  It exits 1
if a bound is exceeded, 2 if the bridge could not be driven at all, else 0.

    .venv/bin/python bench/soak.py            # the full soak (~1-2 min)
    .venv/bin/python bench/soak.py --quick    # a small one (~5 s), as CI runs it
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FAKE_CLAUDE = ROOT / "tests" / "standins" / "fake_claude.py"
MiB = 1024 * 1024

#: The stated bounds, checked after each phase (``after - before`` unless noted).
BOUNDS = {
    "fds": 4,  # file descriptors the bridge holds beyond the start of the phase
    "threads": 8,  # threads beyond the start (worker threads may stay a while)
    "children": 0,  # descendant processes left (the process reaper not counted)
    "sessions_rss_kib_per_session": 48,  # RSS growth / sessions, KiB
    # RSS growth over the whole stream (and its peak), MiB.  What the design holds at most:
    # the host's outbound buffer (4 MiB), the outbox's high water (8,192 events, ~34 MiB
    # of 4,000-character events) in up to three copies on the way to the journal, and
    # allocator slack; a stream that retained what it sent would exceed it many times.
    "stream_rss_mib": 192,
    # RSS growth over the second half of the stream: flat, or it grows with the volume.
    "stream_second_half_mib": 48,
}


# --------------------------------------------------------------------------- /proc


def _stat_fields(pid: int) -> list[str]:
    data = Path(f"/proc/{pid}/stat").read_text()
    return data[data.rindex(")") + 2 :].split()


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat_fields(int(entry.name))
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@dataclass
class Snapshot:
    fds: int
    threads: int
    children: int
    reapers: int
    rss: int

    @classmethod
    def of(cls, pid: int) -> Snapshot:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        values = {line.split(":")[0]: line.split(":", 1)[1].split() for line in status}
        tree = _children_map()
        descendants: list[int] = []
        stack = [pid]
        while stack:
            for child in tree.get(stack.pop(), []):
                descendants.append(child)
                stack.append(child)
        reapers = [p for p in descendants if b"killpg" in _cmdline(p)]
        return cls(
            fds=len(os.listdir(f"/proc/{pid}/fd")),
            threads=int(values["Threads"][0]),
            children=len(descendants) - len(reapers),
            reapers=len(reapers),
            rss=int(values["VmRSS"][0]) * 1024,
        )


# --------------------------------------------------------------------------- host


class Host:
    """A newline-framed host over the bridge's pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdin is not None and proc.stdout is not None
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self._next = 0
        self.buffer = b""
        self.backlog: list[Any] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        await self.stdin.drain()

    async def request(self, method: str, params: Any) -> int:
        self._next += 1
        await self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    async def message(self) -> Any:
        while True:
            nl = self.buffer.find(b"\n")
            if nl >= 0:
                line, self.buffer = self.buffer[:nl], self.buffer[nl + 1 :]
                return json.loads(line)
            chunk = await self.stdout.read(1 << 20)
            if not chunk:
                raise EOFError("the bridge closed its output")
            self.buffer += chunk

    async def until(self, predicate: Any) -> Any:
        """The first message matching ``predicate``; others stay queued, in order."""
        for i, message in enumerate(self.backlog):
            if predicate(message):
                return self.backlog.pop(i)
        while True:
            message = await self.message()
            if isinstance(message, dict) and message.get("method") == "interaction/request":
                await self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32601, "message": "not answering"},
                    }
                )
                continue
            if predicate(message):
                return message
            if message.get("method") != "event" or message["params"]["payload"]["type"] in (
                "run.completed",
                "run.failed",
                "run.interrupted",
            ):
                self.backlog.append(message)  # replies and terminal events are kept

    async def call(self, method: str, params: Any) -> Any:
        id = await self.request(method, params)
        reply = await self.until(lambda m: m.get("id") == id and "method" not in m)
        if "error" in reply:
            raise RuntimeError(f"{method} failed: {reply['error']}")
        return reply["result"]

    async def terminal(self, run_id: str) -> str:
        message = await self.until(
            lambda m: (
                m.get("method") == "event"
                and m["params"].get("runId") == run_id
                and m["params"]["payload"]["type"]
                in ("run.completed", "run.failed", "run.interrupted")
            )
        )
        return str(message["params"]["payload"]["type"])


@dataclass
class Check:
    phase: str
    metric: str
    before: float
    after: float
    bound: str
    ok: bool


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def check(
        self, phase: str, metric: str, before: float, after: float, bound: str, ok: bool
    ) -> None:
        self.checks.append(Check(phase, metric, before, after, bound, ok))

    def compare(self, phase: str, before: Snapshot, after: Snapshot) -> None:
        self.check(
            phase,
            "fds",
            before.fds,
            after.fds,
            f"+{BOUNDS['fds']}",
            after.fds - before.fds <= BOUNDS["fds"],
        )
        self.check(
            phase,
            "threads",
            before.threads,
            after.threads,
            f"+{BOUNDS['threads']}",
            after.threads - before.threads <= BOUNDS["threads"],
        )
        self.check(
            phase,
            "child processes",
            before.children,
            after.children,
            f"= {BOUNDS['children']}",
            after.children <= BOUNDS["children"],
        )
        self.check(
            phase, "process reapers", before.reapers, after.reapers, "<= 1", after.reapers <= 1
        )


async def spawn_bridge(state_dir: str, env_extra: dict[str, str]) -> Host:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(ROOT),
        "AGENT_BRIDGE_STATE_DIR": state_dir,
        **env_extra,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent_bridge",
        "serve",
        "--framing",
        "newline",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,
        cwd=str(ROOT),
        env=env,
        start_new_session=True,
    )
    host = Host(proc)
    await host.call(
        "initialize",
        {
            "protocolVersion": 1,
            "clientInfo": {"name": "soak"},
            "capabilities": {"interactions": {"approval": False, "question": False}},
        },
    )
    await host.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return host


async def one_session(host: Host, params: dict[str, Any]) -> str:
    created = await host.call("session/create", params)
    session_id = created["session"]["sessionId"]
    started = await host.call("run/start", {"sessionId": session_id, "input": {"text": "go"}})
    outcome = await host.terminal(started["runId"])
    await host.call("session/close", {"sessionId": session_id})
    return outcome


async def settle(pid: int, seconds: float = 0.5) -> Snapshot:
    await asyncio.sleep(seconds)
    return Snapshot.of(pid)


async def phase_sessions(host: Host, report: Report, count: int) -> None:
    params = {
        "provider": "scripted",
        "options": {"script": {"steps": [{"type": "text", "text": "hello", "chunks": 2}]}},
    }
    for _ in range(20):  # warm-up: caches, first-use allocations
        await one_session(host, params)
    before = await settle(host.proc.pid)
    started = time.monotonic()
    for _ in range(count):
        outcome = await one_session(host, params)
        if outcome != "run.completed":
            raise RuntimeError(f"a scripted run ended {outcome}")
    elapsed = time.monotonic() - started
    after = await settle(host.proc.pid)
    report.compare("sessions", before, after)
    per_session = (after.rss - before.rss) / 1024 / max(count, 1)
    report.check(
        "sessions",
        "RSS MiB",
        before.rss / MiB,
        after.rss / MiB,
        f"+{BOUNDS['sessions_rss_kib_per_session']} KiB/session",
        per_session <= BOUNDS["sessions_rss_kib_per_session"],
    )
    report.notes.append(
        f"sessions: {count} created, run and closed in {elapsed:.1f} s "
        f"({count / elapsed:.0f}/s), RSS {per_session:+.1f} KiB per session"
    )


async def phase_provider_sessions(host: Host, report: Report, count: int) -> None:
    if count <= 0:
        return
    params = {"provider": "claude-code", "options": {"startupTimeoutSeconds": 20}}
    await one_session(host, params)  # warm-up (and the reaper starts)
    before = await settle(host.proc.pid)
    started = time.monotonic()
    for _ in range(count):
        outcome = await one_session(host, params)
        if outcome != "run.completed":
            raise RuntimeError(f"a claude-code run ended {outcome}")
    elapsed = time.monotonic() - started
    after = await settle(host.proc.pid, 1.0)
    report.compare("provider sessions", before, after)
    report.check(
        "provider sessions",
        "RSS MiB",
        before.rss / MiB,
        after.rss / MiB,
        f"+{BOUNDS['sessions_rss_kib_per_session']} KiB/session",
        (after.rss - before.rss) / 1024 / count <= BOUNDS["sessions_rss_kib_per_session"],
    )
    report.notes.append(
        f"provider sessions: {count} claude-code sessions (a fake CLI process each) in "
        f"{elapsed:.1f} s"
    )


async def phase_stream(host: Host, report: Report, total: int, event_size: int) -> None:
    text = "s" * event_size
    count = max(1, total // (event_size + 200))  # ~200 bytes of envelope per event
    created = await host.call(
        "session/create",
        {
            "provider": "scripted",
            "options": {"script": {"steps": [{"type": "stream", "count": count, "text": text}]}},
        },
    )
    session_id = created["session"]["sessionId"]
    before = await settle(host.proc.pid)
    peak = before.rss
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, Snapshot.of(host.proc.pid).rss)
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    started = time.monotonic()
    run_id = await host.request("run/start", {"sessionId": session_id, "input": {"text": "go"}})
    received = len(host.buffer)
    lines = host.buffer.count(b"\n")
    tail = b""
    marker = b'"type":"run.'
    middle: Snapshot | None = None
    while True:
        chunk = await host.stdout.read(1 << 20)
        if not chunk:
            raise EOFError("the bridge closed its output mid-stream")
        received += len(chunk)
        if middle is None and received >= total // 2:
            middle = Snapshot.of(host.proc.pid)
        lines += chunk.count(b"\n")
        window = tail + chunk
        if marker in window and (b'"run.completed"' in window or b'"run.failed"' in window):
            host.buffer = b""
            break
        tail = chunk[-64:]
    elapsed = time.monotonic() - started
    end = Snapshot.of(host.proc.pid)
    done.set()
    await sampler
    del run_id
    await host.call("session/close", {"sessionId": session_id})
    after = await settle(host.proc.pid)
    peak = max(peak, after.rss)
    report.compare("stream", before, after)
    bound = BOUNDS["stream_rss_mib"]
    report.check(
        "stream",
        "RSS MiB",
        before.rss / MiB,
        after.rss / MiB,
        f"+{bound}",
        (after.rss - before.rss) / MiB <= bound,
    )
    report.check(
        "stream",
        "peak RSS MiB",
        before.rss / MiB,
        peak / MiB,
        f"+{bound}",
        (peak - before.rss) / MiB <= bound,
    )
    if middle is not None:
        half = BOUNDS["stream_second_half_mib"]
        report.check(
            "stream",
            "2nd-half RSS MiB",
            middle.rss / MiB,
            end.rss / MiB,
            f"+{half}",
            (end.rss - middle.rss) / MiB <= half,
        )
    report.notes.append(
        f"stream: {received / MiB:.0f} MiB in {lines} frames ({count} events of "
        f"{event_size} characters) in {elapsed:.1f} s = {received / MiB / elapsed:.0f} MiB/s"
    )


def mount_small_fs(where: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` at ``where``; return why not, or ``None``."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or "mount failed")


def fill(where: Path) -> Path:
    """Fill the filesystem at ``where`` to the last byte; return the filler file."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size) == size:
                    pass
    finally:
        os.close(fd)
    return filler


class Tally:
    """What a host saw of one session's stream: events, whether gapless, statuses."""

    def __init__(self, host: Host, session_id: str) -> None:
        self.host = host
        self.session_id = session_id
        self.seen = 0
        self.deltas = 0
        self.last = 0
        self.gapless = True
        self.terminal: str | None = None
        self.statuses: list[dict[str, Any]] = []
        self.replies: dict[int, Any] = {}

    def take(self, message: Any) -> None:
        method = message.get("method")
        if method == "event" and message["params"]["sessionId"] == self.session_id:
            params = message["params"]
            self.seen += 1
            self.gapless = self.gapless and params["sequence"] == self.last + 1
            self.last = params["sequence"]
            kind = params["payload"]["type"]
            self.deltas += kind == "text.delta"
            if kind in ("run.completed", "run.failed", "run.interrupted"):
                self.terminal = kind
        elif method == "journal/status":
            self.statuses.append(message["params"])
        elif method is None and "id" in message:
            self.replies[message["id"]] = message

    async def until(self, predicate: Any, timeout: float) -> None:
        """Read until ``predicate()`` holds; raises TimeoutError after ``timeout``."""

        async def pump() -> None:
            while not predicate():
                self.take(await self.host.message())

        await asyncio.wait_for(pump(), timeout)

    async def quiet(self, seconds: float) -> int:
        """Read for ``seconds``; return how many events of the session arrived."""
        before = self.seen
        with contextlib.suppress(TimeoutError):
            await self.until(lambda: False, seconds)
        return self.seen - before


async def phase_disk_full(root: Path, report: Report, count: int) -> None:
    mnt = root / "smallfs"
    why = mount_small_fs(mnt, "24m")
    if why is not None:
        report.notes.append(f"disk full: not run (cannot mount a small tmpfs: {why})")
        if os.environ.get("CI") == "true":
            report.check("disk full", "mounted", 0, 0, "CI=true: must run", False)
        return
    try:
        await _disk_full(mnt, report, count)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


async def _disk_full(mnt: Path, report: Report, count: int) -> None:
    state = str(mnt / "state")
    host = await spawn_bridge(state, {})
    script = {"steps": [{"type": "stream", "count": count, "text": "d" * 40}]}
    created = await host.call(
        "session/create", {"provider": "scripted", "options": {"script": script}}
    )
    session_id = created["session"]["sessionId"]
    before = await settle(host.proc.pid)
    tally = Tally(host, session_id)
    started = time.monotonic()
    await host.request("run/start", {"sessionId": session_id, "input": {"text": "go"}})
    await tally.until(lambda: tally.last >= 500, 60)
    filler = fill(mnt)
    at_fill = tally.last
    await tally.until(lambda: bool(tally.statuses), 60)
    failing = tally.statuses[0]
    refusal = await host.request("session/create", {"provider": "scripted"})
    await tally.until(lambda: refusal in tally.replies, 30)
    error = tally.replies[refusal].get("error", {}).get("data", {})
    passed = await tally.quiet(1.0)
    held_at = tally.last
    filler.unlink()
    await tally.until(lambda: tally.terminal is not None, 120)
    elapsed = time.monotonic() - started
    after = await settle(host.proc.pid)
    host.stdin.close()
    await asyncio.wait_for(host.proc.wait(), 30)
    # a third bridge reads back what was committed
    reader = await spawn_bridge(state, {})
    committed = deltas = 0
    after_seq = 0
    while True:
        page = await reader.call(
            "events/read", {"sessionId": session_id, "after": after_seq, "limit": 1000}
        )
        for event in page["events"]:
            if event["sequence"] > tally.last:
                break
            committed += 1
            deltas += event["payload"]["type"] == "text.delta"
        if not page["hasMore"] or not page["events"]:
            break
        after_seq = page["events"][-1]["sequence"]
    reader.stdin.close()
    await asyncio.wait_for(reader.proc.wait(), 30)
    ok_again = [s for s in tally.statuses if s["state"] == "ok"]

    def flag(metric: str, ok: bool, bound: str = "yes") -> None:
        report.check("disk full", metric, 0, float(ok), bound, ok)

    flag(
        "status failing", (failing.get("state"), failing.get("reason")) == ("failing", "disk_full")
    )
    flag("mid-run fault", at_fill < held_at < count)
    flag("held while full", passed == 0)
    flag("refused retryably", error.get("code") == "journal_failing" and error.get("retryable"))
    flag("status ok again", bool(ok_again))
    flag("run completed", tally.terminal == "run.completed")
    flag("gapless", tally.gapless)
    report.check("disk full", "offered=seen", count, tally.deltas, "equal", tally.deltas == count)
    report.check(
        "disk full", "seen=committed", tally.seen, committed, "equal", tally.seen == committed
    )
    report.check("disk full", "deltas committed", count, deltas, "equal", deltas == count)
    report.compare("disk full", before, after)
    report.notes.append(
        f"disk full: {count} events offered, {tally.seen} seen (run.started .. terminal), "
        f"{committed} committed; the disk filled at event {at_fill}, the stream was held at "
        f"{held_at} ({passed} passed while full), run {tally.terminal} in {elapsed:.1f} s"
    )


def write_fake_claude(directory: Path) -> Path:
    script = directory / "script.json"
    script.write_text(json.dumps({"when_exhausted": "echo"}))
    wrapper = directory / "claude"
    wrapper.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE_CLAUDE)!r}, "
        f"'--fake-script', {str(script)!r}, *sys.argv[1:]])\n"
    )
    wrapper.chmod(0o755)
    return wrapper


async def phase_faults(report: Report, slow_host_events: int, junk_mib: int) -> None:
    """The issue-30 phases (bench/soak_faults.py): a slow host among fast ones on the
    daemon, and a junk flood; their figures go to the report's notes."""
    if str(ROOT / "bench") not in sys.path:  # a copy of this script run from elsewhere
        sys.path.insert(0, str(ROOT / "bench"))
    import soak_faults

    slow = junk = None
    if slow_host_events > 0:
        slow = await asyncio.to_thread(soak_faults.slow_host_phase, slow_host_events)
        report.check(
            "slow host",
            "caught up gapless",
            1,
            float(slow["slow_host_gapless"]),
            "= 1",
            bool(slow["slow_host_gapless"]),
        )
    if junk_mib > 0:
        junk = await asyncio.to_thread(soak_faults.junk_phase, junk_mib)
    import contextlib
    import io

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        soak_faults.print_figures(slow, junk)
    report.notes.extend(text.getvalue().splitlines())


def print_report(report: Report, total: Snapshot, start: Snapshot) -> None:
    print(f"{'phase':<18} {'metric':<16} {'before':>10} {'after':>10}  {'bound':<22} result")
    for c in report.checks:
        print(
            f"{c.phase:<18} {c.metric:<16} {c.before:>10.1f} {c.after:>10.1f}  "
            f"{c.bound:<22} {'PASS' if c.ok else 'FAIL'}"
        )
    print()
    print(
        f"whole run: fds {start.fds} -> {total.fds}, threads {start.threads} -> {total.threads}, "
        f"children {start.children} -> {total.children}, RSS {start.rss / MiB:.1f} -> "
        f"{total.rss / MiB:.1f} MiB"
    )
    for note in report.notes:
        print(note)


async def soak(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="agent-bridge-soak-"))
    state_dir = args.state_dir or str(tmp / "state")
    report = Report()
    host: Host | None = None
    try:
        fake = write_fake_claude(tmp)
        host = await spawn_bridge(
            state_dir,
            {
                "AGENT_BRIDGE_CLAUDE_PATH": str(fake),
                "CLAUDE_CONFIG_DIR": str(tmp),
                "TMPDIR": str(tmp),
            },
        )
        start = await settle(host.proc.pid)
        await phase_sessions(host, report, args.sessions)
        await phase_provider_sessions(host, report, args.provider_sessions)
        await phase_stream(host, report, args.stream_bytes, args.event_size)
        if args.disk_full_events > 0:
            await phase_disk_full(tmp, report, args.disk_full_events)
        await phase_faults(report, args.slow_host_events, args.junk_mib)
        total = await settle(host.proc.pid)
        report.check(
            "whole run",
            "child processes",
            start.children,
            total.children,
            "= 0",
            total.children == 0,
        )
        host.stdin.close()
        code = await asyncio.wait_for(host.proc.wait(), 30)
        report.check("exit", "exit status", 0, code, "= 0", code == 0)
        print_report(report, total, start)
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {"checks": [c.__dict__ for c in report.checks], "notes": report.notes}, indent=2
                )
            )
    except (TimeoutError, OSError, RuntimeError, EOFError, json.JSONDecodeError) as exc:
        print(f"soak: the bridge could not be driven: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        if host is not None and host.proc.returncode is None:
            host.proc.kill()
            await host.proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    failed = [c for c in report.checks if not c.ok]
    if failed:
        print(f"\nFAIL: {len(failed)} bound(s) exceeded", file=sys.stderr)
        return 1
    print("\nPASS: every bound held")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small soak (~5 s)")
    parser.add_argument("--sessions", type=int, help="scripted sessions (default 1000)")
    parser.add_argument(
        "--provider-sessions", type=int, help="claude-code sessions with the fake CLI (default 100)"
    )
    parser.add_argument("--stream-bytes", type=int, help="bytes of events to stream (1 GiB)")
    parser.add_argument("--event-size", type=int, default=4000, help="characters per event")
    parser.add_argument("--state-dir", help="the bridge's state directory (default: a temp one)")
    parser.add_argument(
        "--disk-full-events",
        type=int,
        help="events of the disk-full phase's run (default 100000, --quick 40000; 0: skip)",
    )
    parser.add_argument(
        "--slow-host-events",
        type=int,
        help="events a run of the slow-host phase (default 100000, --quick 0: skip)",
    )
    parser.add_argument(
        "--junk-mib", type=int, help="MiB of each junk of the junk-flood phase (256, --quick 0)"
    )
    parser.add_argument("--json", help="also write the checks here")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        print("soak: needs /proc (Linux)", file=sys.stderr)
        return 2
    quick = args.quick
    if args.sessions is None:
        args.sessions = 100 if quick else 1000
    if args.provider_sessions is None:
        args.provider_sessions = 5 if quick else 100
    if args.disk_full_events is None:
        args.disk_full_events = 40_000 if quick else 100_000
    if args.slow_host_events is None:
        args.slow_host_events = 0 if quick else 100_000
    if args.junk_mib is None:
        args.junk_mib = 0 if quick else 256
    if args.stream_bytes is None:
        args.stream_bytes = 32 * MiB if quick else 1024 * MiB
    return asyncio.run(soak(args))


if __name__ == "__main__":
    sys.exit(main())
