"""Replay recorded host↔bridge transcripts against a real ``python -m agent_bridge serve``.

A transcript is what a host sent and what the bridge answered, with volatile values
replaced by placeholders (see ``README.md`` in this directory for the format and the
ordering rules).  :func:`replay` spawns the bridge over real pipes, sends the host's
lines, and matches what the bridge sends against the recorded lines:

* ``"$session1"``, ``"$run2"``, ``"$interaction1"``, ``"$event7"`` match any string and
  bind to it on first use; every later use must be the same value, and two placeholders
  never bind the same value (so identity relations are checked); in host lines they are
  replaced by their bound value;
* ``"$timestamp"`` matches an RFC 3339 UTC timestamp;
* everything else must be equal (same JSON types);
* between two host lines the bridge's messages may arrive in any order, except that the
  ``event`` notifications of one session must arrive in the recorded order.

Every message of both directions is validated against ``schemas/`` with
:class:`wire_validation.WireValidator`.  Used by ``tests/test_conformance.py`` (the
``*.jsonl`` corpus), ``tests/test_protocol_doc.py`` (the examples in
``docs/protocol.md``) and ``record.py`` (which writes both).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

_TESTS = Path(__file__).resolve().parent.parent
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from transports import STDIO, Transport, start_daemon, stop_daemon  # noqa: E402
from wire_validation import WireValidator  # noqa: E402

__all__ = [
    "CORPUS_DIR",
    "DOC_PATH",
    "REPO_ROOT",
    "BridgeProcess",
    "Step",
    "Transcript",
    "handshake_messages",
    "load_corpus_file",
    "parse_doc_examples",
    "replay",
]

REPO_ROOT = _TESTS.parent
CORPUS_DIR = Path(__file__).resolve().parent
DOC_PATH = REPO_ROOT / "docs" / "protocol.md"

Framing = Literal["newline", "content-length"]

PLACEHOLDER = re.compile(r"^\$(session|run|interaction|event)([1-9][0-9]*)$")
TIMESTAMP = "$timestamp"
ANY = "$any"
TIMESTAMP_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$")
#: Members whose values are volatile ids, and the placeholder kind they get.
ID_KEYS = {
    "sessionId": "session",
    "runId": "run",
    "activeRunId": "run",
    "interactionId": "interaction",
    "eventId": "event",
}
#: Members whose values are timestamps.
TIME_KEYS = frozenset({"occurredAt", "createdAt", "updatedAt"})

GROUP_TIMEOUT = 10.0


# --------------------------------------------------------------------- transcripts


@dataclass
class Step:
    """One line of a transcript.

    ``send``: the host sends ``msg`` (``invalid``: on purpose not schema-valid) or ``raw``
    text; ``recv``: the bridge sends ``msg``; ``restart``: end this bridge process and start
    a fresh one (placeholders stay bound).
    """

    dir: Literal["send", "recv", "restart"]
    msg: Any = None
    raw: str | None = None
    invalid: bool = False


@dataclass
class Transcript:
    """A named exchange: bridge arguments and steps."""

    name: str
    steps: list[Step]
    args: tuple[str, ...] = ()
    description: str = ""
    source: str = ""
    handshake: tuple[str, ...] | None = field(default=None)


def handshake_messages(kinds: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``initialize`` request (id 0) and ``initialized`` notification every example
    with a hidden handshake starts with; ``kinds`` are the interaction kinds declared."""
    interactions = {kind: True for kind in kinds}
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": 1,
            "clientInfo": {"name": "example-host", "version": "1.0"},
            "capabilities": {"interactions": interactions},
        },
    }
    return initialize, {"jsonrpc": "2.0", "method": "initialized"}


def load_corpus_file(path: Path) -> Transcript:
    """Parse one ``*.jsonl`` corpus file."""
    steps: list[Step] = []
    args: tuple[str, ...] = ()
    description = ""
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path.name}:{number}: not JSON: {exc}") from None
        kind = item.get("dir")
        if kind == "meta":
            args = tuple(item.get("args", ()))
            description = item.get("description", "")
        elif kind == "send" and "raw" in item:
            steps.append(Step("send", raw=item["raw"]))
        elif kind in ("send", "recv"):
            steps.append(Step(kind, item["msg"], invalid=bool(item.get("invalid", False))))
        elif kind == "restart":
            steps.append(Step("restart"))
        elif kind == "comment":
            continue
        else:
            raise ValueError(f"{path.name}:{number}: unknown dir {kind!r}")
    return Transcript(path.stem, steps, args, description, source=str(path))


_FENCE = re.compile(r"^```jsonl\s+(.*)$")
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def parse_doc_examples(text: str, source: str = "docs/protocol.md") -> list[Transcript]:
    """Every fenced block ```` ```jsonl title="example: NAME" ... ```` of a document.

    Lines: ``> JSON`` host sends, ``>! JSON`` host sends on purpose invalid, ``>~ TEXT`` host
    sends raw text, ``< JSON`` bridge sends, ``! restart`` fresh bridge, ``#`` comment.
    Attributes: ``handshake="approval,question"`` prepends the standard (hidden)
    handshake declaring those interaction kinds (``handshake=""``: none);
    ``args="..."`` are ``serve`` arguments.
    """
    out: list[Transcript] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        i += 1
        if fence is None:
            continue
        attrs = dict(_ATTR.findall(fence.group(1)))
        title = attrs.get("title", "")
        if not title.startswith("example: "):
            continue
        name = title[len("example: ") :]
        start = i
        steps: list[Step] = []
        while i < len(lines) and not lines[i].startswith("```"):
            line = lines[i]
            where = f"{source}:{i + 1} (example {name})"
            i += 1
            if not line.strip() or line.startswith("#"):
                continue
            if line.strip() == "! restart":
                steps.append(Step("restart"))
                continue
            marker, _, body = line.partition(" ")
            try:
                if marker == ">~":
                    steps.append(Step("send", raw=body))
                elif marker in (">", ">!"):
                    steps.append(Step("send", json.loads(body), invalid=marker == ">!"))
                elif marker == "<":
                    steps.append(Step("recv", json.loads(body)))
                else:
                    raise ValueError(f"unknown line marker {marker!r}")
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        i += 1
        if not steps:
            raise ValueError(f"{source}:{start}: example {name} is empty")
        handshake: tuple[str, ...] | None = None
        if "handshake" in attrs:
            handshake = tuple(k for k in attrs["handshake"].split(",") if k)
            init, initialized = handshake_messages(handshake)
            steps = [
                Step("send", init),
                Step("recv", {"jsonrpc": "2.0", "id": 0, "result": ANY}),
                Step("send", initialized),
                *steps,
            ]
        args = tuple(shlex.split(attrs.get("args", "")))
        out.append(Transcript(name, steps, args, source=f"{source}:{start}", handshake=handshake))
    return out


# --------------------------------------------------------------------- the bridge


_EOF = object()


class BridgeProcess:
    """``python -m agent_bridge serve`` on real pipes, read by a thread into a queue.

    ``state_dir`` is the bridge's state directory (its journal); without one the bridge
    runs with ``AGENT_BRIDGE_STATE_DIR`` as inherited.
    """

    def __init__(
        self,
        framing: Framing,
        args: tuple[str, ...] = (),
        state_dir: str | None = None,
        transport: Transport = STDIO,
    ) -> None:
        self.framing = framing
        self.transport = transport
        env = dict(os.environ)
        if state_dir is not None:
            env["AGENT_BRIDGE_STATE_DIR"] = state_dir
        self._daemon_env: dict[str, str] | None = None
        self._daemon: subprocess.Popen[bytes] | None = None
        if transport.name == "stdio":
            argv = [sys.executable, "-m", "agent_bridge", "serve", *args]
        else:
            # The same exchange through the per-user daemon: a daemon with the
            # transcript's arguments, reached through `agent-bridge connect` (over ssh
            # for the ssh transport).  Ended with the connection, like a serve process.
            assert state_dir is not None, "the daemon transports need a state directory"
            env["XDG_RUNTIME_DIR"] = os.path.join(state_dir, "xdg")
            os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
            self._daemon_env = env
            self._state_dir = state_dir
            self._daemon = start_daemon(env, state_dir, args)
            connect = [sys.executable, "-m", "agent_bridge", "connect", "--state-dir", state_dir]
            argv = connect if transport.ssh is None else transport.ssh.command(connect, env)
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.messages: queue.Queue[Any] = queue.Queue()
        self.stderr = bytearray()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        self._drain = threading.Thread(
            target=self._drain_stderr, args=(self.proc.stderr,), daemon=True
        )
        self._drain.start()

    def _frames(self, out: IO[bytes]) -> Iterator[bytes]:
        if self.framing == "newline":
            for line in out:
                if line.strip():
                    yield line
            return
        while True:
            length = None
            while True:
                header = out.readline()
                if not header:
                    return
                if header in (b"\r\n", b"\n"):
                    break
                name, _, value = header.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                raise ValueError("a frame without Content-Length")
            yield out.read(length)

    def _read(self, out: IO[bytes]) -> None:
        try:
            for body in self._frames(out):
                try:
                    self.messages.put(json.loads(body))
                except ValueError:
                    self.messages.put(
                        ValueError(f"bridge sent a frame that is not JSON: {body[:200]!r}")
                    )
        except Exception as exc:  # reported to the replayer
            self.messages.put(exc)
        finally:
            self.messages.put(_EOF)

    def _drain_stderr(self, err: IO[bytes]) -> None:
        for chunk in iter(lambda: err.read(4096), b""):
            self.stderr += chunk
            del self.stderr[:-65536]

    def send_bytes(self, body: bytes) -> None:
        """Write one message body, framed."""
        if self.framing == "newline":
            data = body + b"\n"
        else:
            data = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        """Write one JSON message, framed."""
        self.send_bytes(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode())

    def recv(self, deadline: float) -> Any:
        """The next message; ``None`` at EOF; raises :class:`TimeoutError` at ``deadline``."""
        try:
            item = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None
        if item is _EOF:
            self.messages.put(_EOF)
            return None
        if isinstance(item, Exception):
            raise AssertionError(str(item))
        return item

    def close_input(self) -> None:
        """Close the bridge's stdin (EOF)."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()

    def finish(self, timeout: float = 10.0) -> tuple[list[Any], int]:
        """Close stdin, collect what is still sent until EOF, wait for the exit code."""
        self.close_input()
        leftovers: list[Any] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.recv(deadline)
            except TimeoutError:
                self.kill()
                raise AssertionError("the bridge did not close its output after EOF") from None
            if message is None:
                break
            leftovers.append(message)
        try:
            code = self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("the bridge did not exit after EOF") from None
        self._stop_daemon()
        return leftovers, code

    def _stop_daemon(self) -> None:
        daemon, self._daemon = self._daemon, None
        if daemon is None or self._daemon_env is None:
            return
        stop_daemon(self._daemon_env, self._state_dir)
        try:
            daemon.wait(10)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(5)

    def kill(self) -> None:
        """Stop the process (this one only, and the daemon it reached) if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self._stop_daemon()
        for thread in (self._reader, self._drain):
            thread.join(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def stderr_tail(self) -> str:
        return bytes(self.stderr[-2000:]).decode("utf-8", "replace")


# --------------------------------------------------------------------- matching


class Bindings:
    """Placeholder → value, injective (two placeholders never bind one value)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.owners: dict[str, str] = {}

    def match(self, expected: Any, actual: Any, new: dict[str, str], path: str = "") -> str | None:
        """``None`` if ``actual`` matches ``expected`` (recording new bindings in ``new``),
        else a description of the first difference."""
        if isinstance(expected, str):
            if expected == ANY:
                return None
            if expected == TIMESTAMP:
                if isinstance(actual, str) and TIMESTAMP_RE.match(actual):
                    return None
                return f"{path or '<root>'}: expected a timestamp, got {actual!r}"
            if PLACEHOLDER.match(expected):
                if not isinstance(actual, str):
                    return f"{path}: expected a string for {expected}, got {actual!r}"
                bound = self.values.get(expected, new.get(expected))
                if bound is not None:
                    return (
                        None
                        if bound == actual
                        else f"{path}: {expected} is {bound!r}, got {actual!r}"
                    )
                owner = self.owners.get(actual) or next(
                    (k for k, v in new.items() if v == actual), None
                )
                if owner is not None:
                    return f"{path}: {actual!r} is already {owner}, not a new value for {expected}"
                new[expected] = actual
                return None
        if type(expected) is not type(actual):
            return f"{path or '<root>'}: expected {_show(expected)}, got {_show(actual)}"
        if isinstance(expected, dict):
            if expected.keys() != actual.keys():
                missing = sorted(expected.keys() - actual.keys())
                extra = sorted(actual.keys() - expected.keys())
                return f"{path or '<root>'}: members differ (missing {missing}, unexpected {extra})"
            for key, value in expected.items():
                problem = self.match(value, actual[key], new, f"{path}.{key}")
                if problem:
                    return problem
            return None
        if isinstance(expected, list):
            if len(expected) != len(actual):
                return f"{path or '<root>'}: expected {len(expected)} items, got {len(actual)}"
            for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
                problem = self.match(e, a, new, f"{path}[{index}]")
                if problem:
                    return problem
            return None
        return (
            None
            if expected == actual
            else f"{path or '<root>'}: expected {_show(expected)}, got {_show(actual)}"
        )

    def commit(self, new: dict[str, str]) -> None:
        for placeholder, value in new.items():
            self.values[placeholder] = value
            self.owners[value] = placeholder

    def substitute(self, value: Any) -> Any:
        """``value`` with every placeholder replaced by its bound value."""
        if isinstance(value, str) and PLACEHOLDER.match(value):
            if value not in self.values:
                raise AssertionError(f"the host line uses {value} before the bridge sent it")
            return self.values[value]
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        return value


def _show(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "…"


def _event_session(message: Any) -> Any:
    if isinstance(message, dict) and message.get("method") == "event":
        params = message.get("params")
        if isinstance(params, dict):
            return params.get("sessionId")
    return None


def _label(message: Any) -> str:
    if not isinstance(message, dict):
        return "batch"
    if "method" in message:
        if message["method"] == "event":
            payload = message.get("params", {}).get("payload", {})
            return f"event {payload.get('type')} #{message.get('params', {}).get('sequence')}"
        return f"{message['method']}" + (f" (id {message['id']})" if "id" in message else "")
    return f"response to id {message.get('id')}"


# --------------------------------------------------------------------- replay


class _Replay:
    def __init__(
        self,
        transcript: Transcript,
        framing: Framing,
        timeout: float,
        transport: Transport,
        listed_node: str | None = None,
    ) -> None:
        self.listed_node = listed_node
        self.transcript = transcript
        self.framing = framing
        self.transport = transport
        self.timeout = timeout
        self.bindings = Bindings()
        self.validator = WireValidator()
        # One journal per transcript, kept across its restarts (a restart is a new bridge
        # process on the same machine).
        self.state_dir = tempfile.mkdtemp(prefix="bridge-replay-")
        self.bridge = BridgeProcess(framing, transcript.args, self.state_dir, transport)
        self.log: list[str] = []

    def fail(self, problem: str) -> AssertionError:
        recent = "\n".join(self.log[-12:])
        return AssertionError(
            f"{self.transcript.name} ({self.framing}, {self.transcript.source}): {problem}\n"
            f"--- last exchanged lines:\n{recent}\n--- bridge stderr (tail):\n"
            f"{self.bridge.stderr_tail()}"
        )

    def receive(self, expected: list[Any]) -> None:
        remaining = list(expected)
        received: list[Any] = []
        deadline = time.monotonic() + self.timeout
        while remaining:
            try:
                actual = self.bridge.recv(deadline)
            except TimeoutError:
                raise self.fail(
                    f"timed out waiting for {len(remaining)} message(s):\n  "
                    + "\n  ".join(_show(m) for m in remaining)
                ) from None
            if actual is None:
                raise self.fail(
                    "the bridge closed its output while these were expected:\n  "
                    + "\n  ".join(_show(m) for m in remaining)
                )
            self.log.append("< " + _show(actual))
            received.append(actual)
            try:
                self.validator.check("bridge->host", actual)
            except AssertionError as exc:
                raise self.fail(f"schema: {exc}") from None
            if self.listed_node is not None:
                self._check_listed_node(actual)
            self._take(remaining, actual)

    def _check_listed_node(self, actual: Any) -> None:
        """Check and remove the ``node`` of each session a ``session/list`` answer holds."""
        result = actual.get("result") if isinstance(actual, dict) else None
        sessions = result.get("sessions") if isinstance(result, dict) else None
        if not isinstance(sessions, list):
            return
        for info in sessions:
            if (
                not isinstance(info, dict)
                or not {"sessionId", "providerId", "state"} <= info.keys()
            ):
                continue  # not a SessionInfo (a provider's own session, ACP's listing)
            node = info.pop("node", None)
            want = None if info.get("state") == "closed" else self.listed_node
            if node != want:
                raise self.fail(f"session/list: node {node!r} for {_show(info)}, not {want!r}")

    def _take(self, remaining: list[Any], actual: Any) -> None:
        problems: list[str] = []
        blocked: set[Any] = set()
        for index, candidate in enumerate(remaining):
            session = _event_session(candidate)
            if session is not None and session in blocked:
                continue  # an earlier event of this session is still expected
            new: dict[str, str] = {}
            problem = self.bindings.match(candidate, actual, new)
            if problem is None:
                self.bindings.commit(new)
                del remaining[index]
                return
            if _label(candidate).split(" #")[0] == _label(actual).split(" #")[0]:
                problems.append(f"vs expected {_label(candidate)}: {problem}")
            if session is not None:
                blocked.add(session)
        detail = "\n  ".join(problems) or "no expected message of that kind"
        raise self.fail(
            f"unexpected message {_show(actual)}\n  {detail}\n"
            "  still expected:\n    " + "\n    ".join(_show(m) for m in remaining)
        )

    def run(self) -> None:
        group: list[Any] = []
        try:
            for step in self.transcript.steps:
                if step.dir == "recv":
                    group.append(step.msg)
                    continue
                self.receive(group)
                group = []
                if step.dir == "restart":
                    self.end()
                    self.bridge = BridgeProcess(
                        self.framing, self.transcript.args, self.state_dir, self.transport
                    )
                    self.validator = WireValidator()
                elif step.raw is not None:
                    self.log.append(">~ " + step.raw)
                    self.bridge.send_bytes(step.raw.encode())
                else:
                    message = self.bindings.substitute(step.msg)
                    self.log.append((">! " if step.invalid else "> ") + _show(message))
                    try:
                        self.validator.check("host->bridge", message, valid=not step.invalid)
                    except AssertionError as exc:
                        raise self.fail(f"schema (host line): {exc}") from None
                    self.bridge.send(message)
            self.receive(group)
            self.end()
        finally:
            self.bridge.kill()
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def end(self) -> None:
        try:
            leftovers, code = self.bridge.finish()
        finally:
            self.bridge.kill()
        for message in leftovers:
            self.log.append("< " + _show(message))
        if leftovers:
            raise self.fail(
                "the bridge sent more than the transcript expects:\n  "
                + "\n  ".join(_show(m) for m in leftovers)
            )
        if code != 0:
            raise self.fail(f"the bridge exited with {code}")


def replay(
    transcript: Transcript,
    framing: Framing = "newline",
    *,
    timeout: float = GROUP_TIMEOUT,
    transport: Transport = STDIO,
    listed_node: str | None = None,
) -> None:
    """Replay ``transcript`` against a fresh bridge reached over ``transport``; raise
    AssertionError on a difference.  ``listed_node``: the bridge has a fleet journal
    and this node, so ``session/list`` names it for every session not closed (checked,
    then removed before matching: the corpus is recorded on one machine's journal)."""
    _Replay(transcript, framing, timeout, transport, listed_node).run()
