"""agent-bridge benchmark harness: prints figures, is not a test.

Every target is a child process spoken to over its stdin/stdout pipes by one client
written with asyncio + msgspec. Targets are measured in interleaved repetitions (the
order rotates every repetition) and the table shows medians and ratios taken within this
one invocation, because absolute numbers drift a lot on shared machines.

Measurements, per target and repetition:
  (1) ping     pipelined ``bridge/ping`` requests per second (N requests, up to W in flight)
  (2) events   notifications per second: ``bench/stream`` for the baselines, a scripted
               run streaming ``text.delta`` events for the bridge
  (3) startup  spawn -> ``initialize`` reply, in ms
  (4) rss      idle RSS after ``initialize``; for the bridge also RSS per idle session
               after creating 1,000 sessions

Usage:  .venv/bin/python bench/run.py [--quick] [--json OUT] [--targets a,b,...]
                                     [--baseline-bridge DIR]

Adding a target: see ``build_targets()``. Adjusting to the bridge's protocol: everything
the harness assumes about it is in ``BridgeProtocol``.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import dataclasses
import gc
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


# =====================================================================================
# What the harness assumes about the bridge's protocol. Adjust here, nowhere else.
# =====================================================================================
class BridgeProtocol:
    INITIALIZE = "initialize"
    INITIALIZE_PARAMS: dict[str, Any] = {
        "protocolVersion": 1,
        "clientInfo": {"name": "bench"},
        "capabilities": {"interactions": {"approval": True, "question": True}},
    }
    INITIALIZED = "initialized"  # notification sent after the initialize reply
    INITIALIZED_PARAMS: dict[str, Any] = {}
    PING = "bridge/ping"  # {data} -> {data}
    SESSION_CREATE = "session/create"
    RUN_START = "run/start"
    EVENT = "event"  # server -> client notification carrying one event
    TERMINAL = {
        "run.completed": "completed",
        "run.failed": "failed",
        "run.interrupted": "interrupted",
    }
    # events of a streaming run besides its deltas: run.started and the terminal one (if
    # there are more, the harness finds the end one event at a time)
    STREAM_EXTRA_EVENTS = 2
    # ~100 characters of text per streamed delta
    STREAM_TEXT = ("The quick brown fox jumps over the lazy dog; " * 3)[:100]
    # script for a session that is only created, never run
    IDLE_SCRIPT: dict[str, Any] = {"steps": []}

    @staticmethod
    def session_create_params(script: dict[str, Any]) -> dict[str, Any]:
        return {"provider": "scripted", "options": {"script": script}}

    @staticmethod
    def stream_scripts(count: int, text: str) -> list[dict[str, Any]]:
        """Scripts for the streaming run, tried in order until session/create accepts one.

        The first is the shape bridge/wire/script.py decodes (steps tagged by
        ``type``); the second is the shape first announced for the harness."""
        return [
            {"steps": [{"type": "stream", "count": count, "text": text}]},
            {"steps": [{"stream": {"count": count, "text": text}}]},
        ]

    @staticmethod
    def session_id(result: Any) -> str:
        # expected {session: {sessionId, ...}}; also accept a bare {sessionId}
        if isinstance(result, dict):
            sess = result.get("session")
            for holder in (sess, result):
                if isinstance(holder, dict) and isinstance(holder.get("sessionId"), str):
                    return str(holder["sessionId"])
        raise BenchError(f"session/create result has no session.sessionId: {_short(result)}")

    @staticmethod
    def run_start_params(session_id: str) -> dict[str, Any]:
        return {"sessionId": session_id, "input": {"text": "go"}}

    @staticmethod
    def run_id(result: Any) -> str | None:
        if isinstance(result, dict):
            for holder in (result, result.get("run")):
                if isinstance(holder, dict) and isinstance(holder.get("runId"), str):
                    return str(holder["runId"])
        return None


# Typed view of the bridge's `event` params: only what the harness looks at.
class _EventPayload(msgspec.Struct):
    type: str = ""


class _EventParams(msgspec.Struct):
    sessionId: str | None = None
    runId: str | None = None
    sequence: int | None = None
    payload: _EventPayload | None = None


# =====================================================================================
# Errors
# =====================================================================================
class BenchError(Exception):
    """A measurement could not be taken; the message says why."""


class PeerGone(BenchError):
    pass


class RpcError(BenchError):
    def __init__(self, method: str, error: Any) -> None:
        code = error.get("code") if isinstance(error, dict) else None
        msg = error.get("message") if isinstance(error, dict) else error
        super().__init__(f"{method} -> error {code}: {_short(msg)}")
        self.error = error


class FramingError(BenchError):
    pass


def _short(obj: Any, limit: int = 160) -> str:
    text = obj if isinstance(obj, str) else repr(obj)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# =====================================================================================
# Framing (sans-I/O): bytes in, message bodies out
# =====================================================================================
Sink = Callable[[bytes], None]


class ContentLengthFramer:
    name = "content-length"
    max_header = 8192

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._need = 0  # bytes the pending data must reach before parsing again

    @staticmethod
    def encode(body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def feed(self, data: bytes, sink: Sink) -> None:
        if self._pending:
            self._pending.append(data)
            self._pending_len += len(data)
            if self._pending_len < self._need:
                return
            data = b"".join(self._pending)
            self._pending = []
        end = len(data)
        find = data.find
        startswith = data.startswith
        pos = 0
        need = 0
        # Small bodies are sliced as bytes: measured cheaper here than memoryview slices.
        while pos < end:
            hdr_end = find(b"\r\n\r\n", pos)
            if hdr_end < 0:
                if data[pos] not in (0x43, 0x63) or end - pos > self.max_header:  # 'C' / 'c'
                    raise FramingError(
                        f"stdout is not Content-Length framed: {data[pos : pos + 60]!r}"
                    )
                need = end - pos + 1
                break
            if startswith(b"Content-Length: ", pos):
                eol = find(b"\r", pos + 16, hdr_end)  # other header lines may follow
                length = int(data[pos + 16 : hdr_end if eol < 0 else eol])
            elif data[pos] in (0x43, 0x63):
                length = _content_length_slow(data[pos:hdr_end])
            else:
                raise FramingError(f"stdout is not Content-Length framed: {data[pos : pos + 60]!r}")
            start = hdr_end + 4
            stop = start + length
            if stop > end:
                need = stop - pos
                break
            sink(data[start:stop])
            pos = stop
        if pos < end:
            rest = data[pos:]
            self._pending = [rest]
            self._pending_len = len(rest)
            self._need = need
        else:
            self._pending_len = 0


def _content_length_slow(header: bytes) -> int:
    for line in header.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise FramingError(f"no Content-Length in header {header[:80]!r}")


class NewlineFramer:
    name = "newline"

    def __init__(self) -> None:
        self._rest = b""

    @staticmethod
    def encode(body: bytes) -> bytes:
        return body + b"\n"

    def feed(self, data: bytes, sink: Sink) -> None:
        if self._rest:
            data = self._rest + data
        find = data.find
        pos = 0
        while True:
            nl = find(b"\n", pos)
            if nl < 0:
                break
            if nl > pos:
                sink(data[pos:nl])  # a trailing \r is whitespace to the JSON decoder
            pos = nl + 1
        self._rest = data[pos:]


FRAMERS: dict[str, type[ContentLengthFramer] | type[NewlineFramer]] = {
    "content-length": ContentLengthFramer,
    "newline": NewlineFramer,
}


# =====================================================================================
# The client side of one child process
# =====================================================================================
class Envelope(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


def _has_error(env: Envelope) -> bool:
    return bool(env.error) and bytes(env.error) != b"null"


_ENVELOPE = msgspec.json.Decoder(Envelope)
_ENCODER = msgspec.json.Encoder()


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Event-loop callbacks for one child; stdout bytes go straight to the framer
    (no StreamReader, no wake-up per read)."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[None] = loop.create_future()
        self._paused = False
        self._drain: asyncio.Future[None] | None = None

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.peer._on_data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.peer._on_stdout_closed("stdout closed")
        elif fd == 0:
            self.resume_writing()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self.resume_writing()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)
        self._drain = None

    async def drain(self) -> None:
        if self._paused:
            if self._drain is None:
                self._drain = asyncio.get_running_loop().create_future()
            await self._drain


class Peer:
    """A spawned target: requests, notifications and the process around them."""

    def __init__(self, target: Target, stderr: Any) -> None:
        self.target = target
        self._stderr = stderr
        self._framer = FRAMERS[target.framing]()
        self.encode_frame = self._framer.encode
        self._next_id = 1
        self._pending: dict[int | str, asyncio.Future[Envelope]] = {}
        loop = asyncio.get_running_loop()
        self.gone: asyncio.Future[str] = loop.create_future()
        self.on_notification: dict[str, Callable[[Envelope], None]] = {}
        self.on_untracked_response: Callable[[Envelope], None] | None = None
        self.server_requests = 0
        self.bad_messages = 0
        self.protocol = _ChildProtocol(self)
        self._transport: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self.pid = 0
        self._closing_task: asyncio.Task[None] | None = None

    @classmethod
    async def spawn(cls, target: Target) -> Peer:
        env = dict(os.environ)
        # Installed packages have their bytecode (pip compiles it; the warm-up spawn of
        # each target writes it for a source tree): a PYTHONDONTWRITEBYTECODE inherited
        # from the caller would make every start-up compile every module of the bridge
        # from source and none of the floor's (the standard library ships compiled).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(target.env)
        stderr = tempfile.TemporaryFile(prefix="bench-stderr-")  # noqa: SIM115 (closed in close())
        peer = cls(target, stderr)
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: peer.protocol,
                *target.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=target.cwd,
                env=env,
                start_new_session=True,  # own process group, so teardown reaches children
            )
        except OSError as exc:
            stderr.close()
            raise BenchError(f"cannot spawn {target.argv[0]}: {exc}") from exc
        peer._transport = transport
        peer._stdin = transport.get_pipe_transport(0)  # type: ignore[assignment]
        peer.pid = transport.get_pid()
        return peer

    # -- sending ---------------------------------------------------------------------
    def alloc_ids(self, n: int) -> int:
        first = self._next_id
        self._next_id += n
        return first

    def write(self, data: bytes) -> None:
        if self.gone.done():
            raise PeerGone(self.gone.result())
        assert self._stdin is not None
        if self._stdin.is_closing():
            raise PeerGone("stdin closed")
        self._stdin.write(data)

    async def drain(self) -> None:
        await self.protocol.drain()
        if self.gone.done():
            raise PeerGone(self.gone.result())

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.write(self.encode_frame(_ENCODER.encode(msg)))

    def send_request(self, method: str, params: Any = None) -> asyncio.Future[Envelope]:
        msg_id = self._next_id
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.write(self.encode_frame(_ENCODER.encode(msg)))
        fut: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        return fut

    async def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        try:
            fut = self.send_request(method, params)
        except PeerGone as exc:  # e.g. stdin already closed: wait for the real reason
            await asyncio.wait({self.gone}, timeout=2.0)
            raise PeerGone(self.gone.result() if self.gone.done() else str(exc)) from None
        await self.drain()
        env = await self.wait(fut, timeout, method)
        if _has_error(env):
            raise RpcError(method, msgspec.json.decode(env.error))
        return msgspec.json.decode(env.result) if env.result else None

    async def wait(self, fut: asyncio.Future[Any], timeout: float, what: str) -> Any:
        """Wait for ``fut``; fail if the child goes away or the deadline passes."""
        if not fut.done():
            await asyncio.wait(
                {fut, self.gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        if fut.done():
            return fut.result()
        fut.cancel()  # nobody will look at it again
        if self.gone.done():
            raise PeerGone(self.gone.result())
        raise BenchError(f"{what}: no answer within {timeout:g} s")

    # -- receiving -------------------------------------------------------------------
    def _on_data(self, data: bytes) -> None:
        if self.gone.done():
            return
        try:
            self._framer.feed(data, self._dispatch)
        except FramingError as exc:
            self._on_stdout_closed(str(exc))
        except Exception as exc:  # a bug in a hook: report it as this peer's failure
            self._on_stdout_closed(f"client error while reading: {type(exc).__name__}: {exc}")

    def _on_stdout_closed(self, why: str) -> None:
        if self._closing_task is None:
            self._closing_task = asyncio.get_running_loop().create_task(self._settle_gone(why))

    async def _settle_gone(self, why: str) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self.protocol.exited), 1.0)
            assert self._transport is not None
            code = f"exited with code {self._transport.get_returncode()}"
            why = code if why == "stdout closed" else f"{why}; {code}"
        except TimeoutError:
            pass
        tail = self.stderr_tail()
        reason = f"{why}: {tail}" if tail else why
        if not self.gone.done():
            self.gone.set_result(reason)
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(PeerGone(reason))
                fut.exception()  # mark retrieved: whoever waits still gets it
        self._pending.clear()

    def stderr_tail(self, lines: int = 1) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 4096))
            text = self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        rows = [r.strip() for r in text.splitlines() if r.strip()]
        return " | ".join(rows[-lines:])

    def _dispatch(self, body: bytes) -> None:
        try:
            env = _ENVELOPE.decode(body)
        except msgspec.DecodeError:
            self.bad_messages += 1
            return
        method = env.method
        if method is None:
            fut = self._pending.pop(env.id, None) if env.id is not None else None
            if fut is not None:
                if not fut.done():
                    fut.set_result(env)
            elif self.on_untracked_response is not None:
                self.on_untracked_response(env)
        elif env.id is None:
            handler = self.on_notification.get(method)
            if handler is not None:
                handler(env)
        else:
            # a request from the child: decline it so nothing waits on us
            self.server_requests += 1
            reply = {
                "jsonrpc": "2.0",
                "id": env.id,
                "error": {"code": -32601, "message": "bench client"},
            }
            if not self.gone.done():
                self.write(self.encode_frame(_ENCODER.encode(reply)))

    # -- process ---------------------------------------------------------------------
    def rss_kb(self) -> int:
        return rss_tree_kb(self.pid)

    def cpu_ns(self) -> int:
        return cpu_ns(self.pid)

    async def close(self) -> None:
        """stdin EOF -> SIGTERM to the child's group -> SIGKILL, each with a budget."""
        exited = self.protocol.exited
        try:
            if self._stdin is not None and not self._stdin.is_closing():
                self._stdin.close()
            for sig, budget in ((None, 3.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
                if sig is not None:
                    _signal_group(self.pid, sig)
                try:
                    await asyncio.wait_for(asyncio.shield(exited), budget)
                    break
                except TimeoutError:
                    continue
            _signal_group(self.pid, signal.SIGTERM)  # stragglers left in our child's group
        finally:
            if self._transport is not None:
                self._transport.close()
            if self._closing_task is not None:
                self._closing_task.cancel()
            self._stderr.close()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# =====================================================================================
# /proc readings
# =====================================================================================
def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def rss_tree_kb(pid: int) -> int:
    """RSS of ``pid`` plus all its descendants (adapters may run children)."""
    kids = _children_map()
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss_kb(p)
        todo.extend(kids.get(p, ()))
    return total


def cpu_ns(pid: int) -> int:
    """CPU time of all live threads of ``pid`` and of its live descendants (the journal's
    writer process, a provider's process; schedstat: nanosecond resolution)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                total += sum(cpu_ns(int(child)) for child in f.read().split())
        except (OSError, ValueError, IndexError):
            pass
    return total


# =====================================================================================
# Targets
# =====================================================================================
@dataclass
class Config:
    reps: int = 5
    startup_samples: int = 3
    pings: int = 20_000
    window: int = 10_000
    batch: int = 100
    events: int = 100_000
    event_size: int = 200
    sessions: int = 1_000
    small_window: int = 64  # (1b) pipelined with few in flight
    big_bytes: int = 10 * 1024 * 1024  # (5) one large request round trip
    big_samples: int = 3
    memory_history_mb: int = 8  # the subject's budget in the :memory: run (2m)
    bound_events: int = 300_000  # (2b) server-bound streams; 0: not measured
    settle: float = 0.3
    init_timeout: float = 20.0
    timeout: float = 120.0


EventsDriver = Callable[["Peer", Config], Awaitable[dict[str, Any]]]
SessionsDriver = Callable[["Target", Config], Awaitable[dict[str, Any]]]


@dataclass
class Target:
    name: str
    argv: list[str]
    framing: str = "content-length"
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    initialize_params: dict[str, Any] = field(
        default_factory=lambda: dict(BridgeProtocol.INITIALIZE_PARAMS)
    )
    events: EventsDriver | None = None  # measurement (2)
    sessions: SessionsDriver | None = None  # measurement (4), per-session part
    #: (2m) the same events driver on a fresh process started with these extra arguments
    #: (the bridge without its journal); ``None``: not measured
    memory_args: list[str] | None = None
    is_subject: bool = False  # the thing under test (gets ratios and target checks)
    before: str | None = None  # the name of its bridge-before target (subjects only)
    writer: str | None = None  # the bridge's journal writer (subjects only)
    # filled in at run time
    available: bool = True
    reason: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)
    extra: dict[str, list[Any]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def add(self, metric: str, value: float) -> None:
        self.samples.setdefault(metric, []).append(value)

    def median(self, metric: str) -> float | None:
        vals = self.samples.get(metric)
        return statistics.median(vals) if vals else None


BEFORE = "bridge-before"  # the --baseline-bridge target


def build_targets(
    bridge_framing: str = "content-length",
    bridge_argv: list[str] | None = None,
    baseline_bridge: str | None = None,
    writers: list[str] | None = None,
) -> list[Target]:
    """The targets measured. To add one, append a Target here: a name, an argv vector,
    its framing, and drivers for (2) events and optionally (4) per-session RSS.
    It must answer ``initialize`` and ``bridge/ping {data}`` -> ``{data}``.

    ``baseline_bridge`` (``--baseline-bridge DIR``): a checkout of an older tree, where the
    package was still the top-level ``bridge``, measured as ``bridge-before`` with the
    same drivers, for a before/after comparison within one invocation.

    ``writers`` (``--journal-writer thread,process``): the bridge once per journal writer
    named, as ``bridge+thread``, ``bridge+process``, ... (each with its own ratios), in
    the same interleaved repetitions; ``None``: once, with the bridge's own default."""
    py = sys.executable
    base = HERE / "baselines"

    def scratch_state() -> str:
        # Every bridge keeps its journal (the default) in a scratch state directory of
        # its own, never in the user's: removed when the benchmark ends.
        state_dir = tempfile.mkdtemp(prefix="bench-state-")
        atexit.register(shutil.rmtree, state_dir, True)
        return state_dir

    other = "newline" if bridge_framing == "content-length" else "content-length"
    suffix = {"content-length": "", "newline": "-nl"}
    targets = [
        Target("stock-pylsp", [py, str(base / "stock_pylsp_server.py")], events=stream_driver),
        Target("floor", [py, str(base / "floor_server.py")], events=stream_driver),
        Target(
            "floor-nl",
            [py, str(base / "floor_server.py"), "--newline"],
            framing="newline",
            events=stream_driver,
        ),
    ]
    # The bridge in both framings (the per-session part only in the first), each with its
    # journal on and, in a second process, off.  Installed in .venv (scripts/setup.sh,
    # editable): no PYTHONPATH needed.
    argv = bridge_argv or [py, "-m", "agent_bridge", "serve"]
    variants = [(f"+{w}", ["--journal-writer", w]) for w in writers] if writers else [("", [])]
    for (tag, extra), framing in [(v, f) for v in variants for f in (bridge_framing, other)]:
        name = "bridge" + ("" if framing == bridge_framing else suffix[framing] or "-cl") + tag
        targets.append(
            Target(
                name,
                [*argv, "--framing", framing, *extra],
                framing=framing,
                cwd=str(REPO),
                env={"AGENT_BRIDGE_STATE_DIR": scratch_state()},
                events=bridge_events_driver,
                sessions=bridge_sessions_driver if framing == bridge_framing else None,
                memory_args=["--state-dir", ":memory:", "--memory-history-mb", "8"],
                is_subject=True,
                before=None if baseline_bridge is None else BEFORE + name[len("bridge") :],
                writer=_writer_of(extra),
            )
        )
    if baseline_bridge is not None:
        tree = Path(baseline_bridge).resolve()
        if (tree / "rpc").is_dir():
            # After the rename: bridge/ is agent_bridge, rpc/ and adapters/ its subpackages
            # (setuptools package-dir), so run it from a link tree of its own.
            old_argv = [py, "-m", "agent_bridge", "serve"]
            path = str(_link_tree(tree))
        else:
            old_argv = [py, "-m", "bridge", "serve"]
            path = str(tree)
        for t in [t for t in targets if t.is_subject]:
            targets.append(
                Target(
                    t.before or BEFORE,
                    [*old_argv, "--framing", t.framing],
                    framing=t.framing,
                    cwd=str(tree),
                    env={"PYTHONPATH": path, "AGENT_BRIDGE_STATE_DIR": scratch_state()},
                    events=bridge_events_driver,
                    sessions=t.sessions,
                    memory_args=["--state-dir", ":memory:"],
                )
            )
    return targets


def _writer_of(extra: list[str]) -> str:
    """The journal writer a bridge started with ``extra`` arguments uses here: the one
    named, resolved as the bridge does (``auto`` by this run's CPUs, which the bridge
    inherits), or, with none named, the bridge's default so resolved."""
    from agent_bridge.commands.options import DEFAULT_WRITER
    from agent_bridge.journal.writer_process import choose_writer, usable_cpus

    mode = extra[1] if extra else DEFAULT_WRITER
    chosen = choose_writer(mode)  # type: ignore[arg-type]
    how = f"{mode}: " if mode == "auto" else ""
    return f"{chosen} ({how}{usable_cpus()} CPUs allowed)"


def _link_tree(tree: Path) -> Path:
    """A temporary import root where ``agent_bridge`` is ``tree``'s bridge/ folder with
    its rpc/ and adapters/ folders as subpackages (what the editable install builds)."""
    root = Path(tempfile.mkdtemp(prefix="bench-before-"))
    atexit.register(shutil.rmtree, str(root), True)
    pkg = root / "agent_bridge"
    pkg.mkdir()
    for entry in (tree / "bridge").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for sub in ("rpc", "adapters"):
        if (tree / sub).is_dir() and not (pkg / sub).exists():
            (pkg / sub).symlink_to(tree / sub)
    return root


# =====================================================================================
# Measurements
# =====================================================================================
async def start_peer(target: Target, cfg: Config) -> tuple[Peer, float]:
    """Spawn and initialize; returns the peer and spawn->initialize-reply in ms."""
    t0 = time.perf_counter()
    peer = await Peer.spawn(target)
    try:
        await peer.request(
            BridgeProtocol.INITIALIZE, target.initialize_params, timeout=cfg.init_timeout
        )
        elapsed = (time.perf_counter() - t0) * 1000.0
        peer.notify(BridgeProtocol.INITIALIZED, BridgeProtocol.INITIALIZED_PARAMS)
        await peer.drain()
    except BaseException:
        await peer.close()
        raise
    return peer, elapsed


class _Timed:
    """Wall time, client CPU and child CPU over a measured section (gc paused)."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer

    def __enter__(self) -> _Timed:
        gc.collect()
        gc.disable()
        self.cpu0 = self.peer.cpu_ns()
        self.client0 = time.process_time()
        self.t0 = time.perf_counter()
        return self

    def stop(self) -> None:
        self.wall = time.perf_counter() - self.t0
        self.client = time.process_time() - self.client0
        self.server_ns = self.peer.cpu_ns() - self.cpu0

    def __exit__(self, *exc: object) -> None:
        gc.enable()


async def bench_ping(peer: Peer, cfg: Config, window: int | None = None) -> dict[str, Any]:
    """(1) N pipelined bridge/ping requests, at most `window` in flight."""
    n, window = cfg.pings, window or cfg.window
    batch = min(cfg.batch, window)
    data = "ping"
    first = peer.alloc_ids(n)
    frames: list[bytes] = []
    frame = peer.encode_frame
    for lo in range(0, n, batch):
        frames.append(
            b"".join(
                frame(
                    _ENCODER.encode(
                        {
                            "jsonrpc": "2.0",
                            "id": first + i,
                            "method": BridgeProtocol.PING,
                            "params": {"data": data},
                        }
                    )
                )
                for i in range(lo, min(n, lo + batch))
            )
        )
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    wake = asyncio.Event()
    state = {"sent": 0, "got": 0, "errors": 0, "checked": False}
    sample: list[Envelope] = []

    def on_response(env: Envelope) -> None:
        got = state["got"] + 1
        state["got"] = got
        if _has_error(env):
            state["errors"] += 1
        if not sample:
            sample.append(env)
        if got >= n:
            if not done.done():
                done.set_result(None)
        elif state["sent"] - got <= window - batch:
            wake.set()

    peer.on_untracked_response = on_response
    try:
        with _Timed(peer) as tm:
            for chunk in frames:
                k = min(batch, n - state["sent"])
                while state["sent"] + k - state["got"] > window:
                    wake.clear()
                    waiter = loop.create_task(wake.wait())
                    try:
                        await peer.wait(waiter, cfg.timeout, "ping window")
                    finally:
                        waiter.cancel()
                peer.write(chunk)
                state["sent"] += k
                await peer.drain()
            await peer.wait(done, cfg.timeout, f"ping ({state['got']}/{n} replies)")
            tm.stop()
    finally:
        peer.on_untracked_response = None
    if state["errors"]:
        raise BenchError(
            f"{state['errors']} of {n} pings answered with an error, "
            f"e.g. {bytes(sample[0].error)[:120]!r}"
        )
    echoed = msgspec.json.decode(sample[0].result) if sample and sample[0].result else None
    if echoed != {"data": data}:
        raise BenchError(f"bridge/ping did not echo: {_short(echoed)}")
    return {
        "rate": n / tm.wall,
        "server_cpu_us": tm.server_ns / n / 1000.0,
        "client_cpu_frac": tm.client / tm.wall,
        "server_cpu_frac": tm.server_ns / 1e9 / tm.wall,
    }


async def bench_ping_small_window(peer: Peer, cfg: Config) -> dict[str, Any]:
    """(1b) the same pings with only `cfg.small_window` in flight."""
    return await bench_ping(peer, cfg, cfg.small_window)


async def bench_big(peer: Peer, cfg: Config) -> dict[str, Any]:
    """(5) one `bridge/ping` of `cfg.big_bytes` round trip, write to reply (median of
    `cfg.big_samples`)."""
    data = "b" * (cfg.big_bytes - 64)
    walls: list[float] = []
    server_ns = 0
    for _ in range(cfg.big_samples):
        msg_id = peer.alloc_ids(1)
        frame = peer.encode_frame(
            _ENCODER.encode(
                {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "method": BridgeProtocol.PING,
                    "params": {"data": data},
                }
            )
        )
        fut: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()
        peer._pending[msg_id] = fut
        with _Timed(peer) as tm:
            peer.write(frame)
            await peer.drain()
            env = await peer.wait(fut, cfg.timeout, "10 MiB ping")
            tm.stop()
        if _has_error(env):
            raise BenchError(f"large ping answered with an error: {bytes(env.error)[:120]!r}")
        if env.result is None or len(env.result) < len(data):
            raise BenchError("large ping did not echo its data")
        walls.append(tm.wall)
        server_ns += tm.server_ns
    return {
        "rate": 1.0 / statistics.median(walls),
        "ms": statistics.median(walls) * 1000.0,
        "server_cpu_us": server_ns / cfg.big_samples / 1000.0,
        "client_cpu_frac": 0.0,
        "server_cpu_frac": 0.0,
    }


async def memory_events(target: Target, cfg: Config) -> dict[str, Any]:
    """(2m) the events driver on a fresh process with `target.memory_args` (the journal
    off), and that process's RSS growth over the stream."""
    assert target.events is not None and target.memory_args is not None
    args = list(target.memory_args)
    if target.is_subject and "--memory-history-mb" in args:
        args[args.index("--memory-history-mb") + 1] = str(cfg.memory_history_mb)
    mem = Target(
        target.name + ":memory:",
        [*target.argv, *args],
        framing=target.framing,
        cwd=target.cwd,
        env=dict(target.env),
    )
    peer, _ = await start_peer(mem, cfg)
    try:
        await asyncio.sleep(cfg.settle)
        before = peer.rss_kb()
        res = await target.events(peer, cfg)
        await asyncio.sleep(cfg.settle)
        res["rss_growth_mb"] = (peer.rss_kb() - before) / 1024.0
    finally:
        await peer.close()
    return res


async def stream_driver(peer: Peer, cfg: Config) -> dict[str, Any]:
    """(2) for the baselines: bench/stream {count, size} -> count notifications, then {count}."""
    count = 0

    def on_event(_env: Envelope) -> None:
        nonlocal count
        count += 1

    peer.on_notification["bench/event"] = on_event
    try:
        with _Timed(peer) as tm:
            result = await peer.request(
                "bench/stream", {"count": cfg.events, "size": cfg.event_size}, timeout=cfg.timeout
            )
            tm.stop()
    finally:
        peer.on_notification.pop("bench/event", None)
    if count != cfg.events or not isinstance(result, dict) or result.get("count") != cfg.events:
        raise BenchError(f"bench/stream: got {count} notifications, result {_short(result)}")
    return {
        "rate": count / tm.wall,
        "server_cpu_us": tm.server_ns / count / 1000.0,
        "client_cpu_frac": tm.client / tm.wall,
        "server_cpu_frac": tm.server_ns / 1e9 / tm.wall,
    }


async def bridge_events_driver(peer: Peer, cfg: Config) -> dict[str, Any]:
    """(2) for the bridge: a scripted session streams `cfg.events` text deltas in one run.

    Rate = events received after the run/start reply / (terminal event - run/start reply).
    """
    proto = BridgeProtocol
    rejected: list[str] = []
    for shape, script in enumerate(proto.stream_scripts(cfg.events, proto.STREAM_TEXT)):
        try:
            created = await peer.request(
                proto.SESSION_CREATE, proto.session_create_params(script), timeout=cfg.timeout
            )
            used_shape = shape
            break
        except RpcError as exc:
            rejected.append(str(exc))
    else:
        raise BenchError("every stream script was rejected: " + " / ".join(rejected))
    sid = proto.session_id(created)
    dec = msgspec.json.Decoder(_EventParams)
    loop = asyncio.get_running_loop()
    terminal: asyncio.Future[float] = loop.create_future()
    # While the clock runs the client does per event what it does per floor notification
    # (frame, decode the envelope, one cheap step): it keeps the params, and looks at them
    # only from the event the script should end with on (its deltas plus
    # `STREAM_EXTRA_EVENTS`), decoding each from there until one is terminal. Every event
    # is checked after the clock stops: session, gapless sequence, the number of deltas,
    # and that the run ended completed.
    kept: list[msgspec.Raw] = []
    keep = kept.append
    expected = cfg.events + proto.STREAM_EXTRA_EVENTS

    def on_event(env: Envelope) -> None:
        raw = env.params
        keep(raw)
        if len(kept) >= expected and not terminal.done():
            try:
                ev = dec.decode(raw)
            except msgspec.MsgspecError:
                terminal.set_result(time.perf_counter())  # the check below says why
                return
            if ev.payload is not None and ev.payload.type in proto.TERMINAL:
                terminal.set_result(time.perf_counter())

    peer.on_notification[proto.EVENT] = on_event
    try:
        with _Timed(peer) as tm:
            t_send = time.perf_counter()
            started = await peer.request(
                proto.RUN_START, proto.run_start_params(sid), timeout=cfg.timeout
            )
            t_reply = time.perf_counter()
            before_reply = len(kept)
            t_end = await peer.wait(
                terminal, cfg.timeout, f"run (got {len(kept)} events, no terminal event)"
            )
            tm.stop()
            received = len(kept)
    finally:
        peer.on_notification.pop(proto.EVENT, None)
    st = _check_stream(kept[:received], dec, sid, proto)
    if st["kind"] is None or proto.TERMINAL[st["kind"]] != "completed":
        raise BenchError(f"run ended with {st['kind']} after {received} events")
    if st["deltas"] != cfg.events:
        raise BenchError(
            f"expected {cfg.events} text.delta events, got {st['deltas']} (other: {st['types']})"
        )
    after = received - before_reply
    if t_end > t_reply and after > 0:
        rate = after / (t_end - t_reply)
    else:  # everything arrived before the reply: fall back to timing from the send
        rate = received / (t_end - t_send)
    return {
        "rate": rate,
        "rate_from_send": received / (t_end - t_send),
        "events": received,
        "events_before_reply": before_reply,
        "sequence_gaps": st["seq_errors"],
        "run_id": proto.run_id(started),
        "script_shape": used_shape,  # index into BridgeProtocol.stream_scripts()
        "server_cpu_us": tm.server_ns / max(1, received) / 1000.0,
        "client_cpu_frac": tm.client / tm.wall,
        "server_cpu_frac": tm.server_ns / 1e9 / tm.wall,
    }


def _check_stream(
    kept: list[msgspec.Raw],
    dec: msgspec.json.Decoder[_EventParams],
    sid: str,
    proto: type[BridgeProtocol],
) -> dict[str, Any]:
    """Decode the kept `event` params up to this session's first terminal event: count
    the deltas and other types, the sequence gaps, and the terminal kind (None if there
    is none).

    Raises BenchError for params not as expected."""
    st: dict[str, Any] = {"deltas": 0, "seq_errors": 0, "types": {}, "kind": None}
    last_seq: int | None = None
    types: dict[str, int] = st["types"]
    for raw in kept:
        try:
            ev = dec.decode(raw)
        except msgspec.MsgspecError as exc:
            raise BenchError(f"`{proto.EVENT}` params not as expected: {exc}") from None
        if ev.sessionId is not None and ev.sessionId != sid:
            continue
        seq = ev.sequence
        if seq is not None:
            if last_seq is not None and seq != last_seq + 1:
                st["seq_errors"] += 1
            last_seq = seq
        kind = ev.payload.type if ev.payload is not None else ""
        if kind == "text.delta":
            st["deltas"] += 1
        else:
            types[kind] = types.get(kind, 0) + 1
            if kind in proto.TERMINAL:
                st["kind"] = kind
                break  # what came after the run's end (in the same read) is not its
    return st


async def bridge_sessions_driver(target: Target, cfg: Config) -> dict[str, Any]:
    """(4) a fresh bridge: RSS after initialize, then after creating `cfg.sessions` sessions.

    It runs in a scratch state directory of its own, removed afterwards: the sessions it
    leaves in a journal would otherwise make every later start-up of the target open
    (and check) a journal of tens of thousands of sessions."""
    proto = BridgeProtocol
    state_dir = tempfile.mkdtemp(prefix="bench-sessions-")
    try:
        return await _sessions_in(
            dataclasses.replace(target, env={**target.env, "AGENT_BRIDGE_STATE_DIR": state_dir}),
            cfg,
            proto,
        )
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


async def _sessions_in(target: Target, cfg: Config, proto: type[BridgeProtocol]) -> dict[str, Any]:
    peer, startup_ms = await start_peer(target, cfg)
    try:
        await asyncio.sleep(cfg.settle)
        before = peer.rss_kb()
        params = proto.session_create_params(proto.IDLE_SCRIPT)
        in_flight = 64
        ids: list[str] = []
        for lo in range(0, cfg.sessions, in_flight):
            futs = [
                peer.send_request(proto.SESSION_CREATE, params)
                for _ in range(min(in_flight, cfg.sessions - lo))
            ]
            await peer.drain()
            for fut in futs:
                env = await peer.wait(fut, cfg.timeout, "session/create")
                if _has_error(env):
                    raise RpcError(proto.SESSION_CREATE, msgspec.json.decode(env.error))
                ids.append(proto.session_id(msgspec.json.decode(env.result)))
        if len(set(ids)) != cfg.sessions:
            raise BenchError(
                f"session/create returned {len(set(ids))} distinct ids for {cfg.sessions} sessions"
            )
        await asyncio.sleep(max(cfg.settle, 0.5))
        after = peer.rss_kb()
    finally:
        await peer.close()
    return {
        "startup_ms": startup_ms,
        "rss_before_kb": before,
        "rss_after_kb": after,
        "per_session_kb": (after - before) / cfg.sessions,
    }


# =====================================================================================
# Running
# =====================================================================================
def _note_error(target: Target, metric: str, exc: BaseException) -> None:
    msg = str(exc) or type(exc).__name__
    target.errors[metric] = msg


async def probe(target: Target, cfg: Config) -> None:
    """Warm-up spawn (fills __pycache__); a target that cannot initialize is unavailable."""
    try:
        peer, _ = await start_peer(target, cfg)
    except BenchError as exc:
        target.available = False
        target.reason = str(exc)
        return
    except Exception as exc:  # never let a broken target take the harness down
        target.available = False
        target.reason = f"{type(exc).__name__}: {exc}"
        return
    await peer.close()


async def measure_once(target: Target, cfg: Config) -> None:
    # (3) + (4 idle) + (1) + (2) on one process
    try:
        peer, startup_ms = await start_peer(target, cfg)
    except Exception as exc:
        _note_error(target, "startup", exc)
        return
    target.add("startup_ms", startup_ms)
    try:
        await asyncio.sleep(cfg.settle)
        target.add("idle_rss_mb", peer.rss_kb() / 1024.0)
        for metric, run in (
            ("ping", bench_ping),
            ("ping64", bench_ping_small_window),
            ("events", target.events),
            ("big", bench_big),
        ):
            if run is None:
                continue
            try:
                res = await run(peer, cfg)
            except Exception as exc:
                _note_error(target, metric, exc)
                if peer.gone.done():
                    break
                continue
            target.add(f"{metric}_rate", res["rate"])
            target.add(f"{metric}_server_cpu_us", res["server_cpu_us"])
            if "ms" in res:
                target.add(f"{metric}_ms", res["ms"])
            target.extra.setdefault(metric, []).append(res)
    finally:
        await peer.close()

    # (2m) the journal off, in a fresh process
    if target.memory_args is not None and target.events is not None:
        try:
            res = await memory_events(target, cfg)
            target.add("mem_events_rate", res["rate"])
            target.add("mem_events_server_cpu_us", res["server_cpu_us"])
            target.add("mem_rss_growth_mb", res["rss_growth_mb"])
            target.extra.setdefault("mem_events", []).append(res)
        except Exception as exc:
            _note_error(target, "mem_events", exc)

    # (2b) server-bound streams: a client that only counts lines (bench/stream_bound.py),
    # newline framing only (the floor-nl and the subjects in newline framing)
    if target.framing == "newline" and target.events is not None and cfg.bound_events:
        await server_bound(target, cfg)

    # (4) per idle session, in a fresh process.  Its state directory is new, so its
    # start-up creates a journal (fsyncs a steady start does not pay, and the other
    # framing's target has no such sample): a row of its own, not a (3) sample.
    extra_starts = cfg.startup_samples - 1
    if target.sessions is not None:
        try:
            res = await target.sessions(target, cfg)
            target.add("first_startup_ms", res["startup_ms"])
            target.add("session_rss_kb", res["per_session_kb"])
            target.extra.setdefault("sessions", []).append(res)
        except Exception as exc:
            _note_error(target, "sessions", exc)
    # (3) more start-up samples
    for _ in range(max(0, extra_starts)):
        try:
            peer, startup_ms = await start_peer(target, cfg)
            target.add("startup_ms", startup_ms)
            await peer.close()
        except Exception as exc:
            _note_error(target, "startup", exc)


async def server_bound(target: Target, cfg: Config) -> None:
    """(2b)/(2bm): the target's event stream read by bench/stream_bound.py's client, which
    only counts lines, so the rate is the server's own; the floor streams its
    notifications, a bridge its events with the journal on and on ``:memory:``."""
    import stream_bound

    env = {k: v for k, v in target.env.items() if k == "PYTHONPATH"}
    runs: list[tuple[str, Callable[[], tuple[float, float]]]]
    if target.name.startswith("floor"):
        runs = [("bound", lambda: stream_bound.floor(cfg.bound_events))]
    else:
        runs = [
            ("bound", lambda: stream_bound.bridge_journal(cfg.bound_events, env)),
            ("mem_bound", lambda: stream_bound.bridge(cfg.bound_events, ":memory:", env)),
        ]
    for metric, run in runs:
        try:
            rate, cpu_us = await asyncio.to_thread(run)
        except Exception as exc:
            _note_error(target, metric, exc)
            continue
        target.add(f"{metric}_rate", rate)
        target.add(f"{metric}_server_cpu_us", cpu_us)


async def run_all(targets: list[Target], cfg: Config, log: Callable[[str], None]) -> None:
    for t in targets:
        await probe(t, cfg)
        if not t.available:
            log(f"{t.name}: not available ({t.reason})")
    live = [t for t in targets if t.available]
    for rep in range(cfg.reps):
        shift = rep % len(live) if live else 0
        order = live[shift:] + live[:shift]
        log(f"repetition {rep + 1}/{cfg.reps}: " + ", ".join(t.name for t in order))
        for t in order:
            await measure_once(t, cfg)


# =====================================================================================
# Report
# =====================================================================================
@dataclass
class Row:
    key: str
    label: str
    unit: str  # "rate" | "ms" | "mb" | "kb" | "us"
    check: str = ""
    #: the baselines' metric this row is compared with (default: the same key)
    base_key: str | None = None


ROWS = [
    Row(
        "ping_rate",
        "(1) pipelined bridge/ping, all written at once, req/s",
        "rate",
        ">= 0.75x floor",
    ),
    Row("ping_server_cpu_us", "    server CPU per ping, us", "us"),
    Row("ping64_rate", "(1b) pipelined bridge/ping, 64 in flight, req/s", "rate", ">= 2.5x stock"),
    Row("ping64_server_cpu_us", "    server CPU per ping, us", "us"),
    Row("events_rate", "(2) events streamed, journal on, /s", "rate", ">= 0.5x floor, >= 1x stock"),
    Row("events_server_cpu_us", "    server CPU per event, us", "us"),
    Row(
        "mem_events_rate",
        "(2m) events streamed, --state-dir :memory:, /s",
        "rate",
        ">= 0.7x floor",
        base_key="events_rate",
    ),
    Row(
        "mem_events_server_cpu_us",
        "    server CPU per event, us",
        "us",
        base_key="events_server_cpu_us",
    ),
    Row(
        "bound_rate",
        "(2b) events, server-bound (client counts lines), journal on, /s",
        "rate",
        ">= 0.7x floor-nl",
    ),
    Row("bound_server_cpu_us", "    server CPU per event, us", "us"),
    Row(
        "mem_bound_rate",
        "(2bm) the same, --state-dir :memory:, /s",
        "rate",
        ">= 0.9x floor-nl",
        base_key="bound_rate",
    ),
    Row(
        "mem_bound_server_cpu_us",
        "    server CPU per event, us",
        "us",
        base_key="bound_server_cpu_us",
    ),
    Row(
        "mem_rss_growth_mb",
        "    RSS growth over the :memory: stream, MB",
        "mb",
        "<= budget + 16 MB",
    ),
    Row("big_ms", "(5) one 10 MiB request round trip, ms", "ms", "<= 1.0x floor"),
    Row("big_server_cpu_us", "    server CPU per 10 MiB round trip, us", "us"),
    Row("startup_ms", "(3) spawn -> initialize reply, ms", "ms", "<= 1.0x floor"),
    Row(
        "first_startup_ms",
        "    the same, first start (creates the journal), ms",
        "ms",
        base_key="startup_ms",
    ),
    Row("idle_rss_mb", "(4) idle RSS after initialize, MB", "mb", "<= 40 MB"),
    Row("session_rss_kb", "    RSS per idle session, KB", "kb", "<= 5 KB"),
]


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "rate":
        if value >= 1e6:
            return f"{value / 1e6:.2f}M"
        if value >= 1e3:
            return f"{value / 1e3:.1f}k"
        return f"{value:.0f}"
    if unit == "us":
        return f"{value:.2f}"
    return f"{value:.1f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def compute_checks(subject: Target, by_name: dict[str, Target]) -> dict[str, dict[str, Any]]:
    """The targets of issue 17, each as a ratio to its baseline in this run."""
    stock = by_name.get("stock-pylsp")
    floor = by_name.get("floor-nl" if subject.framing == "newline" else "floor")
    m = subject.median
    checks: dict[str, dict[str, Any]] = {}

    def base(t: Target | None, key: str) -> float | None:
        return t.median(key) if t is not None and t.available else None

    def ratio_check(
        key: str, to: Target | None, base_key: str, ok: Callable[[float], bool], name: str
    ) -> None:
        r = _ratio(m(key), base(to, base_key))
        checks[key] = {
            "pass": None if r is None else ok(r),
            "detail": f"{r:.2f}x {name}" if r is not None else "no data",
        }

    ratio_check("ping_rate", floor, "ping_rate", lambda r: r >= 0.75, "floor")
    ratio_check("ping64_rate", stock, "ping64_rate", lambda r: r >= 2.5, "stock")
    ratio_check("mem_events_rate", floor, "events_rate", lambda r: r >= 0.7, "floor")
    if subject.framing == "newline":
        ratio_check("bound_rate", floor, "bound_rate", lambda r: r >= 0.7, "floor-nl")
        ratio_check("mem_bound_rate", floor, "bound_rate", lambda r: r >= 0.9, "floor-nl")
    ratio_check("big_ms", floor, "big_ms", lambda r: r <= 1.0, "floor")
    ratio_check("startup_ms", floor, "startup_ms", lambda r: r <= 1.0, "floor")
    r_floor = _ratio(m("events_rate"), base(floor, "events_rate"))
    r_stock = _ratio(m("events_rate"), base(stock, "events_rate"))
    checks["events_rate"] = {
        "pass": None if r_floor is None or r_stock is None else r_floor >= 0.5 and r_stock >= 1.0,
        "detail": f"{r_floor:.2f}x floor, {r_stock:.2f}x stock"
        if r_floor is not None and r_stock is not None
        else "no data",
    }
    for key, limit, unit in (
        ("idle_rss_mb", 40.0, "MB"),
        ("session_rss_kb", 5.0, "KB"),
        ("mem_rss_growth_mb", 8.0 + 16.0, "MB"),
    ):
        v = m(key)
        checks[key] = {
            "pass": None if v is None else v <= limit,
            "detail": f"{v:.1f} {unit}" if v is not None else "no data",
        }
    return checks


def render(targets: list[Target], cfg: Config) -> tuple[str, dict[str, Any]]:
    by_name = {t.name: t for t in targets}
    live = [t for t in targets if t.available]
    subjects = [t for t in live if t.is_subject]
    stock = by_name.get("stock-pylsp")
    cols = [t.name for t in live]
    ratio_cols: list[tuple[str, Target, Target | None]] = []
    for s in subjects:
        floor = by_name.get("floor-nl" if s.framing == "newline" else "floor")
        ratio_cols.append((f"{s.name}/stock", s, stock if stock and stock.available else None))
        ratio_cols.append(
            (
                f"{s.name}/{floor.name if floor else 'floor'}",
                s,
                floor if floor and floor.available else None,
            )
        )
    for s in subjects:
        before = by_name.get(s.before or "")
        if before is not None and before.available:
            ratio_cols.append((f"{s.name}/before", s, before))
    checks = {s.name: compute_checks(s, by_name) for s in subjects}

    header = (
        ["metric (median)"]
        + cols
        + [c[0] for c in ratio_cols]
        + (["target", *(f"{t.name}" for t in subjects)] if subjects else [])
    )
    table: list[list[str]] = []
    for row in ROWS:
        line = [row.label] + [_fmt(t.median(row.key), row.unit) for t in live]
        for _, s, base in ratio_cols:
            key = (
                row.key
                if base is not None and base.name.startswith(BEFORE)
                else (row.base_key or row.key)
            )
            r = _ratio(s.median(row.key), base.median(key) if base else None)
            line.append(f"{r:.2f}x" if r is not None else "-")
        if subjects:
            line.append(row.check)
            for subject in subjects:
                c = checks[subject.name].get(row.key)
                line.append(
                    ""
                    if c is None
                    else ("PASS" if c["pass"] else "FAIL" if c["pass"] is False else "n/a")
                )
        table.append(line)
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]

    def fmt_line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    out = [fmt_line(header), fmt_line(["-" * w for w in widths])] + [fmt_line(r) for r in table]
    notes: list[str] = []
    for t in targets:
        if not t.available:
            notes.append(f"{t.name}: not available ({t.reason})")
        for metric, msg in t.errors.items():
            notes.append(f"{t.name}: {metric} failed: {msg}")
        n_samples = {k: len(v) for k, v in t.samples.items()}
        if t.available and n_samples:
            lo, hi = min(n_samples.values()), max(n_samples.values())
            if lo < cfg.reps:
                notes.append(f"{t.name}: only {lo}..{hi} samples per metric")
        for metric in ("ping", "ping64", "events"):
            runs = t.extra.get(metric, [])
            if not runs:
                continue
            client = statistics.median(r["client_cpu_frac"] for r in runs)
            server = statistics.median(r["server_cpu_frac"] for r in runs)
            if client > 0.9 and client > server:
                notes.append(
                    f"{t.name}: {metric} may be client-bound (CPU busy: client {client:.0%}, "
                    f"server {server:.0%} of wall)"
                )
        for r in t.extra.get("events", []):
            if r.get("sequence_gaps"):
                notes.append(f"{t.name}: events arrived with {r['sequence_gaps']} sequence gaps")
                break
    text = "\n".join(out + (["", *notes] if notes else []))

    report = {
        "meta": _meta(),
        "config": cfg.__dict__,
        "targets": {
            t.name: {
                "argv": t.argv,
                "framing": t.framing,
                "available": t.available,
                "reason": t.reason or None,
                "median": {k: t.median(k) for k in t.samples},
                "samples": t.samples,
                "details": t.extra,
                "errors": t.errors,
            }
            for t in targets
        },
        "ratios": {
            name: {
                row.key: _ratio(
                    s.median(row.key),
                    base.median(
                        row.key if base.name.startswith(BEFORE) else (row.base_key or row.key)
                    )
                    if base
                    else None,
                )
                for row in ROWS
            }
            for name, s, base in ratio_cols
        },
        "checks": checks,
    }
    return text, report


def _meta() -> dict[str, Any]:
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": load,
        "msgspec": msgspec.__version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="2 repetitions, 2 start-up samples each")
    ap.add_argument("--reps", type=int, help="interleaved repetitions (default 5)")
    ap.add_argument(
        "--startup-samples", type=int, help="start-up samples per repetition (default 3)"
    )
    ap.add_argument(
        "--pings", type=int, default=Config.pings, help="requests in (1) (default %(default)s)"
    )
    ap.add_argument(
        "--window",
        type=int,
        default=Config.window,
        help="max requests in flight (default %(default)s)",
    )
    ap.add_argument(
        "--batch", type=int, default=Config.batch, help="requests per write (default %(default)s)"
    )
    ap.add_argument(
        "--events", type=int, default=Config.events, help="events in (2) (default %(default)s)"
    )
    ap.add_argument(
        "--bound-events",
        type=int,
        default=Config.bound_events,
        help="events in the server-bound streams (2b) (default %(default)s; 0: skip them)",
    )
    ap.add_argument(
        "--event-size",
        type=int,
        default=Config.event_size,
        help="baseline payload bytes (default %(default)s)",
    )
    ap.add_argument(
        "--sessions",
        type=int,
        default=Config.sessions,
        help="sessions in (4) (default %(default)s)",
    )
    ap.add_argument(
        "--targets",
        help="comma-separated subset of: "
        + ", ".join([*(t.name for t in build_targets()), f"{BEFORE} (with --baseline-bridge)"]),
    )
    ap.add_argument("--bridge-framing", choices=sorted(FRAMERS), default="content-length")
    ap.add_argument(
        "--bridge-argv",
        metavar="ARGS",
        help="run the bridge as these arguments (split like a shell would, never run by one); "
        "default: '<this python> -m agent_bridge serve'",
    )
    ap.add_argument(
        "--baseline-bridge",
        metavar="DIR",
        help="also measure the old tree in DIR (where the package was the top-level "
        f"`bridge`) as target {BEFORE!r}: '<this python> -m bridge serve' with cwd and "
        "PYTHONPATH set to DIR; adds a bridge/before ratio column",
    )
    ap.add_argument(
        "--journal-writer",
        metavar="W[,W]",
        help="measure the bridge once per journal writer named (thread, process, auto) in "
        "the same interleaved repetitions, as bridge+W (default: the bridge's own default)",
    )
    ap.add_argument("--json", metavar="OUT", help="also write all samples and medians as JSON")
    args = ap.parse_args(argv)

    cfg = Config(
        pings=args.pings,
        window=args.window,
        batch=args.batch,
        events=args.events,
        bound_events=args.bound_events,
        event_size=args.event_size,
        sessions=args.sessions,
    )
    if args.quick:
        cfg.reps, cfg.startup_samples = 2, 2
    if args.reps:
        cfg.reps = args.reps
    if args.startup_samples:
        cfg.startup_samples = args.startup_samples
    bridge_argv = shlex.split(args.bridge_argv) if args.bridge_argv else None
    cfg_checks = args.baseline_bridge and not (Path(args.baseline_bridge) / "bridge").is_dir()
    if cfg_checks:
        ap.error(f"--baseline-bridge {args.baseline_bridge}: no bridge/ folder there")
    writers = [w.strip() for w in (args.journal_writer or "").split(",") if w.strip()] or None
    if writers and set(writers) - {"auto", "thread", "process"}:
        ap.error(f"--journal-writer {args.journal_writer}: each one of auto, thread, process")
    targets = build_targets(args.bridge_framing, bridge_argv, args.baseline_bridge, writers)
    if args.targets:
        wanted = [w.strip() for w in args.targets.split(",") if w.strip()]
        unknown = set(wanted) - {t.name for t in targets}
        if unknown:
            hint = f" ({BEFORE} needs --baseline-bridge DIR)" if BEFORE in unknown else ""
            ap.error(f"unknown targets: {', '.join(sorted(unknown))}{hint}")
        targets = [t for t in targets if t.name in wanted]

    def log(msg: str) -> None:
        print(f"# {msg}", file=sys.stderr, flush=True)

    meta = _meta()
    log(
        f"python {meta['python']}, {meta['cpus']} CPUs, load {meta['loadavg'][0]:.2f}; "
        f"{cfg.reps} repetitions, {cfg.pings} pings ({cfg.window} in flight), {cfg.events} events, "
        f"{cfg.sessions} sessions"
    )
    asyncio.run(run_all(targets, cfg, log))
    text, report = render(targets, cfg)
    print(
        f"agent-bridge bench: medians of {cfg.reps} interleaved repetitions, "
        f"ratios within this run (python {meta['python']}, {meta['cpus']} CPUs, "
        f"load {os.getloadavg()[0]:.2f}; {len(os.sched_getaffinity(0))} CPUs allowed to this run)"
    )
    # The journal's writer each bridge used (--journal-writer; docs/journal.md, "The
    # writer's choice").
    for t in targets:
        if t.writer is not None:
            print(f"journal writer of {t.name}: {t.writer}")
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
