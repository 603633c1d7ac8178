"""Small host clients for tests: spawn ``agent-bridge serve`` and speak the protocol.

:class:`BridgeClient` is synchronous (a reader thread), :class:`AsyncBridgeClient` is for
anyio or asyncio tests.  Both use newline framing, start the bridge with a state
directory of the test's own, and share the same few verbs: :meth:`request`,
:meth:`notify`, :meth:`initialize`, :meth:`create_session`, :meth:`run` (start a run,
answer its interactions, return its events up to the terminal one) and :meth:`close`.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import anyio
import anyio.abc

from agent_bridge.processes import ProcessSpec, WaitTimeout, open_bridge, popen_bridge

__all__ = [
    "AnswerFn",
    "AsyncBridgeClient",
    "BridgeClient",
    "BridgeRequestError",
    "answer_with",
    "serve_command",
    "serve_env",
]

Message = dict[str, Any]
#: Given an ``interaction/request``'s params, the answer to send (``None``: decline).
AnswerFn = Callable[[Message], "Message | None"]
_TERMINAL = ("run.completed", "run.failed", "run.interrupted")


class BridgeRequestError(Exception):
    """The bridge answered a request with an error; ``error`` is the JSON-RPC error."""

    def __init__(self, method: str, error: Message) -> None:
        super().__init__(f"{method}: {error.get('message')} ({error.get('data')})")
        self.error = error
        data = error.get("data")
        self.code: str | None = data.get("code") if isinstance(data, dict) else None


def serve_command(*args: str) -> list[str]:
    """The argv of a bridge child: this interpreter's ``-P -m agent_bridge serve`` (``-P``: a
    module in the working directory never shadows one the bridge imports)."""
    return [sys.executable, "-P", "-m", "agent_bridge", "serve", "--framing", "newline", *args]


def serve_env(state_dir: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: ours, the state directory, then ``env``."""
    return {**os.environ, "AGENT_BRIDGE_STATE_DIR": state_dir, **(env or {})}


def answer_with(
    approval: str = "allow", choices: Sequence[str] = (), answers: Sequence[Message] = ()
) -> AnswerFn:
    """An :data:`AnswerFn`: ``answers`` in order first (whole answer objects), then
    ``approval`` (``allow``/``deny``) for approvals and ``choices`` in order (or the
    first choice) for questions."""
    given = list(answers)
    picks = list(choices)

    def answer(params: Message) -> Message | None:
        if given:
            return given.pop(0)
        request = params["request"]
        if request["kind"] == "approval":
            return {"kind": "approval", "decision": approval}
        if request["kind"] == "question":
            if picks:
                return {"kind": "question", "choice": picks.pop(0)}
            if request.get("choices"):
                return {"kind": "question", "choice": request["choices"][0]["id"]}
            return {"kind": "question", "text": "yes"}
        return {"kind": "questionSet", "answers": {i["key"]: "yes" for i in request["items"]}}

    return answer


def _initialize_params(name: str) -> Message:
    return {
        "protocolVersion": 1,
        "clientInfo": {"name": name},
        "capabilities": {"interactions": {"approval": True, "question": True, "questionSet": True}},
    }


def _is_terminal(message: Message, run_id: str) -> bool:
    return (
        message.get("method") == "event"
        and message["params"].get("runId") == run_id
        and message["params"]["payload"]["type"] in _TERMINAL
    )


class BridgeClient:
    """A synchronous host on a ``serve`` child (see the module docstring)."""

    def __init__(
        self,
        state_dir: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.proc = popen_bridge(
            ProcessSpec(tuple(serve_command(*args)), cwd, serve_env(state_dir, env), name="serve")
        )
        #: every message received, in order
        self.received: list[Message] = []
        self._inbox: queue.Queue[Message | None] = queue.Queue()
        self._held: list[Message] = []
        self._next_id = 1
        self._lock = threading.Lock()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                message = json.loads(line)
                self.received.append(message)
                self._inbox.put(message)
        self._inbox.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in self.proc.stderr:
            self.stderr += chunk

    def _exited(self) -> NoReturn:
        raise EOFError(f"the bridge exited: {self.stderr.decode(errors='replace')}")

    def send(self, message: Message) -> None:
        """Send one message."""
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def wait_for(self, predicate: Callable[[Message], bool], timeout: float = 30) -> Message:
        """The first message (held back or new) matching ``predicate``; others are kept."""
        for i, message in enumerate(self._held):
            if predicate(message):
                return self._held.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no matching message from the bridge")
            try:
                got = self._inbox.get(timeout=left)
            except queue.Empty:
                raise TimeoutError("no matching message from the bridge") from None
            if got is None:
                self._inbox.put(None)
                self._exited()
                continue
            if predicate(got):
                return got
            self._held.append(got)

    def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        """Send a request and return its result; raise :class:`BridgeRequestError`."""
        with self._lock:
            id, self._next_id = self._next_id, self._next_id + 1
        message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.wait_for(lambda m: m.get("id") == id and "method" not in m, timeout)
        if "error" in reply:
            raise BridgeRequestError(method, reply["error"])
        return reply["result"]

    def initialize(self, name: str = "agent-bridge-testing") -> Any:
        """The ``initialize``/``initialized`` handshake (the host answers every kind)."""
        result = self.request("initialize", _initialize_params(name))
        self.notify("initialized", {})
        return result

    def create_session(self, params: Message) -> str:
        """``session/create``; return the session id."""
        return str(self.request("session/create", params)["session"]["sessionId"])

    def run(
        self,
        session_id: str,
        text: str,
        answer: AnswerFn | None = None,
        *,
        interrupt_after: int | None = None,
        timeout: float = 30,
    ) -> list[Message]:
        """Start a run, answer its interactions with ``answer`` (default: allow, the
        first choice), interrupt it after ``interrupt_after`` events if given, and return
        the params of its ``event`` notifications up to and including the terminal one."""
        answer = answer or answer_with()
        run_id = str(
            self.request("run/start", {"sessionId": session_id, "input": {"text": text}})["runId"]
        )
        events: list[Message] = []
        deadline = time.monotonic() + timeout
        while True:
            message = self.wait_for(
                lambda m: (
                    (
                        m.get("method") == "interaction/request"
                        and m["params"].get("runId") == run_id
                    )
                    or (m.get("method") == "event" and m["params"].get("runId") == run_id)
                ),
                max(0.0, deadline - time.monotonic()),
            )
            if message["method"] == "interaction/request":
                reply = answer(message["params"])
                if reply is None:
                    self.send(
                        {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "error": {"code": -32800, "message": "declined"},
                        }
                    )
                else:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": reply})
                continue
            events.append(message["params"])
            if _is_terminal(message, run_id):
                return events
            if interrupt_after is not None and len(events) == interrupt_after:
                self.request("run/interrupt", {"runId": run_id})

    def close(self, timeout: float = 15) -> int:
        """Close stdin (the bridge closes its sessions and exits); return its status."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except WaitTimeout:
            self.proc.kill()
            return self.proc.wait()
        finally:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> BridgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncBridgeClient:
    """An asynchronous host on a ``serve`` child; ``async with AsyncBridgeClient(...)``
    starts it and, at the end, closes its stdin and waits for it (killed after 15 s)."""

    def __init__(
        self,
        state_dir: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self._argv = serve_command(*args)
        self._env = serve_env(state_dir, env)
        self._cwd = cwd
        self.proc: anyio.abc.Process | None = None
        self.received: list[Message] = []
        self.stderr = b""
        self._held: list[Message] = []
        self._next_id = 1
        self._tg: anyio.abc.TaskGroup | None = None
        self._send, self._inbox = anyio.create_memory_object_stream[Message](100_000)

    async def __aenter__(self) -> AsyncBridgeClient:
        self.proc = await open_bridge(
            ProcessSpec(tuple(self._argv), self._cwd, self._env, name="serve")
        )
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._read)
        self._tg.start_soon(self._read_stderr)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        try:
            await self.close()
        finally:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
            self._inbox.close()
            self._send.close()
            if self.proc is not None:
                for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                    if stream is not None:
                        await stream.aclose()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        buf = b""
        try:
            async for chunk in self.proc.stdout:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        message = json.loads(line)
                        self.received.append(message)
                        await self._send.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self._send.close()

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        try:
            async for chunk in self.proc.stderr:
                self.stderr += chunk
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def send(self, message: Message) -> None:
        """Send one message."""
        assert self.proc is not None and self.proc.stdin is not None
        await self.proc.stdin.send(json.dumps(message).encode() + b"\n")

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def wait_for(self, predicate: Callable[[Message], bool], timeout: float = 30) -> Message:
        """The first message (held back or new) matching ``predicate``; others are kept."""
        for i, message in enumerate(self._held):
            if predicate(message):
                return self._held.pop(i)
        with anyio.fail_after(timeout):
            while True:
                try:
                    message = await self._inbox.receive()
                except anyio.EndOfStream:
                    raise EOFError(
                        f"the bridge exited: {self.stderr.decode(errors='replace')}"
                    ) from None
                if predicate(message):
                    return message
                self._held.append(message)

    async def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        """Send a request and return its result; raise :class:`BridgeRequestError`."""
        id, self._next_id = self._next_id, self._next_id + 1
        message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        reply = await self.wait_for(lambda m: m.get("id") == id and "method" not in m, timeout)
        if "error" in reply:
            raise BridgeRequestError(method, reply["error"])
        return reply["result"]

    async def initialize(self, name: str = "agent-bridge-testing") -> Any:
        """The ``initialize``/``initialized`` handshake (the host answers every kind)."""
        result = await self.request("initialize", _initialize_params(name))
        await self.notify("initialized", {})
        return result

    async def create_session(self, params: Message) -> str:
        """``session/create``; return the session id."""
        result = await self.request("session/create", params)
        return str(result["session"]["sessionId"])

    async def run(
        self,
        session_id: str,
        text: str,
        answer: AnswerFn | None = None,
        *,
        interrupt_after: int | None = None,
        timeout: float = 30,
    ) -> list[Message]:
        """As :meth:`BridgeClient.run`."""
        answer = answer or answer_with()
        started = await self.request(
            "run/start", {"sessionId": session_id, "input": {"text": text}}
        )
        run_id = str(started["runId"])
        events: list[Message] = []
        with anyio.fail_after(timeout):
            while True:
                message = await self.wait_for(
                    lambda m: (
                        m.get("method") in ("interaction/request", "event")
                        and m["params"].get("runId") == run_id
                    ),
                    timeout,
                )
                if message["method"] == "interaction/request":
                    reply = answer(message["params"])
                    if reply is None:
                        await self.send(
                            {
                                "jsonrpc": "2.0",
                                "id": message["id"],
                                "error": {"code": -32800, "message": "declined"},
                            }
                        )
                    else:
                        await self.send({"jsonrpc": "2.0", "id": message["id"], "result": reply})
                    continue
                events.append(message["params"])
                if _is_terminal(message, run_id):
                    return events
                if interrupt_after is not None and len(events) == interrupt_after:
                    await self.request("run/interrupt", {"runId": run_id})

    async def close(self, timeout: float = 15) -> int:
        """Close stdin (the bridge closes its sessions and exits); return its status."""
        assert self.proc is not None
        if self.proc.returncode is None and self.proc.stdin is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.proc.stdin.aclose()
        with anyio.move_on_after(timeout):
            await self.proc.wait()
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        code = self.proc.returncode
        assert code is not None
        return code
