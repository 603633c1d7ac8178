"""A test host: spawns ``python -m agent_bridge serve`` as a real child and talks to it over
real pipes, in either framing, recording every message both ways.

Every message sent or received is also checked against the published JSON Schema when
``tests/wire_validation.py`` and the generated schemas are present, so the end-to-end
tests double as proof that the schema describes reality.

Each bridge gets a fresh, empty journal in a temporary state directory (removed by
:meth:`BridgeProcess.stop`) unless the test chooses one (``AGENT_BRIDGE_STATE_DIR`` in
``env`` or ``--state-dir`` in ``args``): tests never write to the real home directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

ROOT = Path(__file__).resolve().parent.parent

Message = dict[str, Any]

#: the bridge's messages, decoded (msgspec: several times json.loads's speed, the same
#: Python values; a fleet test reads 300,000 of them)
_decode = msgspec.json.decode


def _validator() -> Any:
    try:
        from wire_validation import WireValidator
    except ImportError:
        return None
    try:
        return WireValidator()
    except (OSError, ValueError):
        return None


#: How many times its ``timeout`` :meth:`BridgeProcess.wait_for` waits in all for a
#: message while others keep arriving.
PROGRESS_CAP = 6


class BridgeProcess:
    """One bridge child and a minimal host on top of its pipes."""

    def __init__(
        self,
        framing: str = "content-length",
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        validate: bool = True,
        prefix: tuple[str, ...] = (),
    ) -> None:
        self.framing = framing
        self.args = args
        #: a command the bridge runs under (``unshare --net``: a network namespace of its
        #: own); it must exec the bridge in its own process (the pid stays the bridge's)
        self.prefix = prefix
        self.extra_env = env or {}
        self.proc: anyio.abc.Process | None = None
        self.sent: list[Message] = []
        self.received: list[Message] = []
        self._next_id = 1
        self._buf = bytearray()
        self._inbox_send: MemoryObjectSendStream[Message]
        self._inbox: MemoryObjectReceiveStream[Message]
        self._inbox_send, self._inbox = anyio.create_memory_object_stream[Message](100_000)
        self._pending: list[Message] = []
        self.validator = _validator() if validate else None
        self.stderr = bytearray()
        # Set when each reader has seen its pipe end: stop() waits for both so that the
        # asyncio pipe transports are closed before the test's event loop is (else a
        # child that exited before its last output was read leaves a transport that
        # warns when it is collected, in whichever later test that happens).
        self._readers_done = [anyio.Event(), anyio.Event()]
        #: The temporary state directory this host made for the bridge (``None`` when the
        #: test chose one).
        self.state_dir: str | None = None

    async def start(self, tg: anyio.abc.TaskGroup) -> BridgeProcess:
        """Spawn the bridge and start reading its output."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(ROOT),
            "HOME": os.environ.get("HOME", "/tmp"),
            # Never the developer's ~/.config/agent-bridge/config.toml (conftest sets "").
            "AGENT_BRIDGE_CONFIG": os.environ.get("AGENT_BRIDGE_CONFIG", ""),
            **self.extra_env,
        }
        if "AGENT_BRIDGE_STATE_DIR" not in self.extra_env and "--state-dir" not in self.args:
            self.state_dir = tempfile.mkdtemp(prefix="bridge-state-")
            env["AGENT_BRIDGE_STATE_DIR"] = self.state_dir
        self.proc = await anyio.open_process(
            [*self.prefix, sys.executable, "-m", "agent_bridge", "serve", *self.args],
            env=env,
            cwd=str(ROOT),
        )
        tg.start_soon(self._read)
        tg.start_soon(self._read_stderr)
        return self

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        try:
            async for chunk in self.proc.stderr:
                self.stderr += chunk
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self._readers_done[1].set()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        inbox_closed = False
        try:
            async for chunk in self.proc.stdout:
                self._buf += chunk
                for body in self._frames():
                    message = _decode(body)
                    self.received.append(message)
                    if self.validator is not None:
                        self.validator.check("recv", message)
                    if inbox_closed:
                        continue
                    try:
                        try:  # (no event-loop turn per message: 100,000s of events)
                            self._inbox_send.send_nowait(message)
                        except anyio.WouldBlock:
                            await self._inbox_send.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        # stop() closed the inbox: keep reading to EOF, or a full
                        # pipe buffer pauses the transport and EOF is never seen
                        inbox_closed = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self._readers_done[0].set()
            self._inbox_send.close()

    def _frames(self) -> list[bytes]:
        out: list[bytes] = []
        buf = self._buf
        while True:
            if self.framing == "newline":
                nl = buf.find(b"\n")
                if nl < 0:
                    return out
                out.append(bytes(buf[:nl]))
                del buf[: nl + 1]
                continue
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return out
            header = bytes(buf[:end]).decode("ascii")
            assert header.startswith("Content-Length: "), header
            length = int(header.split(":", 1)[1])
            if len(buf) < end + 4 + length:
                return out
            out.append(bytes(buf[end + 4 : end + 4 + length]))
            del buf[: end + 4 + length]

    def frame(self, body: bytes) -> bytes:
        """Frame ``body`` in this host's framing."""
        if self.framing == "newline":
            return body + b"\n"
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (for bad-input tests)."""
        assert self.proc is not None and self.proc.stdin is not None
        await self.proc.stdin.send(data)

    async def send(self, message: Message, *, check: bool = True) -> None:
        """Send one message (validated against the schema first, unless ``check`` is
        false: for tests that send invalid params on purpose)."""
        if self.validator is not None:
            if check:
                self.validator.check("send", message)
            else:
                try:
                    self.validator.check("send", message)
                except AssertionError:
                    self.validator.check("send", message, valid=False)
        self.sent.append(message)
        await self.send_raw(self.frame(json.dumps(message, ensure_ascii=False).encode()))

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def send_request(self, method: str, params: Any = None, *, check: bool = True) -> int:
        """Send a request; return its id."""
        id = self._next_id
        self._next_id += 1
        message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message, check=check)
        return id

    async def next_message(self, timeout: float = 10) -> Message:
        """Return the next message not yet consumed; raises :class:`TimeoutError` if none
        arrives within ``timeout`` seconds."""
        if self._pending:
            return self._pending.pop(0)
        with anyio.fail_after(timeout):
            return await self._inbox.receive()

    async def wait_for(self, predicate: Callable[[Message], bool], timeout: float = 10) -> Message:
        """Return the first message matching ``predicate``; others stay queued in order.

        ``timeout`` bounds the bridge's *silence*: raises :class:`TimeoutError` when no
        message at all arrives for ``timeout`` seconds, or when ``PROGRESS_CAP`` times
        ``timeout`` pass in all while other messages keep arriving.  A reply queued behind
        thousands of events (each checked against the schema by this host first) is
        waited for as long as the bridge keeps sending, so a loaded machine does not fail
        a test; a bridge that goes quiet, or never answers, still does."""
        for i, message in enumerate(self._pending):
            if predicate(message):
                return self._pending.pop(i)
        limit = anyio.current_time() + timeout * PROGRESS_CAP
        while True:
            left = limit - anyio.current_time()
            if left <= 0:
                raise TimeoutError(
                    f"no matching message within {timeout * PROGRESS_CAP:.0f} s "
                    f"({len(self._pending)} others arrived meanwhile)"
                )
            try:  # one already here is taken without an event-loop turn
                message = self._inbox.receive_nowait()
            except anyio.WouldBlock:
                with anyio.move_on_after(min(timeout, left)) as scope:
                    message = await self._inbox.receive()
                if scope.cancelled_caught:
                    raise TimeoutError(
                        f"the bridge sent nothing for {min(timeout, left):.1f} s"
                    ) from None
            if predicate(message):
                return message
            self._pending.append(message)

    async def response(self, id: int, timeout: float = 10) -> Message:
        """Return the response to request ``id``."""
        return await self.wait_for(
            lambda m: m.get("id") == id and "method" not in m, timeout=timeout
        )

    async def call(
        self, method: str, params: Any = None, timeout: float = 10, *, check: bool = True
    ) -> Message:
        """Send a request and return its whole response message."""
        return await self.response(await self.send_request(method, params, check=check), timeout)

    async def result(self, method: str, params: Any = None, timeout: float = 10) -> Any:
        """Send a request and return its result; fail the test on an error reply."""
        reply = await self.call(method, params, timeout)
        assert "result" in reply, f"{method} failed: {reply}"
        return reply["result"]

    async def initialize(self, approval: bool = True, question: bool = True) -> Any:
        """Run the ``initialize``/``initialized`` handshake."""
        result = await self.result(
            "initialize",
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "pytest"},
                "capabilities": {
                    "interactions": {
                        "approval": approval,
                        "question": question,
                        "questionSet": question,
                    }
                },
            },
        )
        await self.notify("initialized", {})
        return result

    async def event(self, type: str | None = None, timeout: float = 10, **match: Any) -> Message:
        """Return the next ``event`` notification's params whose payload type is
        ``type`` (and whose payload has the ``match`` items)."""

        def pred(m: Message) -> bool:
            if m.get("method") != "event":
                return False
            payload = m["params"]["payload"]
            if type is not None and payload["type"] != type:
                return False
            return all(payload.get(k) == v for k, v in match.items())

        message = await self.wait_for(pred, timeout)
        params: Message = message["params"]
        return params

    async def terminal(self, timeout: float = 10) -> Message:
        """Return the next terminal run event's params."""
        message = await self.wait_for(
            lambda m: (
                m.get("method") == "event"
                and m["params"]["payload"]["type"]
                in ("run.completed", "run.failed", "run.interrupted")
            ),
            timeout,
        )
        params: Message = message["params"]
        return params

    async def close_stdin(self) -> None:
        """Close the bridge's stdin (EOF)."""
        assert self.proc is not None and self.proc.stdin is not None
        await self.proc.stdin.aclose()

    async def wait_exit(self, timeout: float = 15) -> int:
        """Wait for the bridge to exit; return its code."""
        assert self.proc is not None
        with anyio.fail_after(timeout):
            return await self.proc.wait()

    async def stop(self) -> None:
        """Make sure the child is gone (EOF, then kill)."""
        self._inbox.close()
        if self.proc is None:
            return
        if self.proc.returncode is None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.close_stdin()
            with anyio.move_on_after(10):
                await self.proc.wait()
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        with anyio.move_on_after(5):  # the readers reach EOF once the child is gone
            for done in self._readers_done:
                await done.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                await stream.aclose()
        if self.state_dir is not None:
            shutil.rmtree(self.state_dir, ignore_errors=True)


def script_session(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Return ``session/create`` params for a scripted session with ``steps``."""
    return {"provider": "scripted", "options": {"script": {"steps": steps}}}


# ------------------------------------------------------------ a run, as a host drives it

#: the payload types that end a run
TERMINAL = ("run.completed", "run.failed", "run.interrupted")

#: answers an ``interaction/request`` from its params (``None``: leave it pending)
Answer = Callable[[Message], Any]


async def start(bridge: BridgeProcess, session_id: str, text: str) -> str:
    """``run/start`` with ``text``; return the run id."""
    result = await bridge.result("run/start", {"sessionId": session_id, "input": {"text": text}})
    run_id: str = result["runId"]
    return run_id


async def drive(
    bridge: BridgeProcess,
    run_id: str,
    answer: Answer | None = None,
    on_event: Callable[[Message], Any] | None = None,
    timeout: float = 20,
) -> list[Message]:
    """Collect the run's event payloads up to its terminal event, answering
    interaction/request with ``answer(params)`` (``None``: leave it pending) and awaiting
    ``on_event(payload)`` for each; raises :class:`TimeoutError` past ``timeout``."""
    payloads: list[Message] = []
    with anyio.fail_after(timeout):
        while True:
            message = await bridge.next_message(timeout)
            if message.get("method") == "interaction/request":
                reply = answer(message["params"]) if answer is not None else None
                if reply is not None:
                    await bridge.send({"jsonrpc": "2.0", "id": message["id"], "result": reply})
                continue
            if message.get("method") != "event" or message["params"].get("runId") != run_id:
                continue
            payload = message["params"]["payload"]
            payloads.append(payload)
            if on_event is not None:
                await on_event(payload)
            if payload["type"] in TERMINAL:
                return payloads


def text_of(payloads: list[Message]) -> str:
    """The run's text: its ``text.delta`` payloads joined."""
    return "".join(p["text"] for p in payloads if p["type"] == "text.delta")


def of_type(payloads: list[Message], kind: str) -> list[Message]:
    """The payloads of type ``kind``."""
    return [p for p in payloads if p["type"] == kind]


def codes(payloads: list[Message]) -> set[str]:
    """The codes of the ``diagnostic`` payloads."""
    return {p["code"] for p in payloads if p["type"] == "diagnostic"}


def allow(mode: str = "once") -> Answer:
    """An answer allowing every approval (``mode``: once, session, ...)."""
    return lambda _params: {"kind": "approval", "decision": "allow", "mode": mode}


def deny(_params: Message) -> Message:
    """The answer denying an approval."""
    return {"kind": "approval", "decision": "deny"}


async def read_native(
    bridge: BridgeProcess, provider: str, session_ref: str, limit: int
) -> list[Message]:
    """Every record of ``provider``'s own session ``session_ref``, read from the first
    through ``provider/sessions/read`` pages of ``limit``; each page must be exact."""
    records: list[Message] = []
    cursor: str | None = None
    while True:
        params: Message = {"provider": provider, "sessionRef": session_ref, "limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        page = await bridge.result("provider/sessions/read", params)
        assert page["coverage"] == "exact", page
        if not page["records"]:
            return records
        records.extend(page["records"])
        cursor = page["nextCursor"]
