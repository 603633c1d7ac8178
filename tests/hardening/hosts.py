"""Test hosts for the hardening suite.

* :class:`RecordingBridge` -- the suite's usual bridge child (``tests/bridge_client.py``)
  that also keeps every raw byte it read from the bridge's stdout, so assertions can be
  made over exactly what a host received.
* :class:`RawHost` -- a host that reads only when told to (for backpressure: a host that
  stops reading), speaking newline-delimited JSON-RPC over the bridge's real pipes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from bridge_client import BridgeProcess

ROOT = Path(__file__).resolve().parents[2]


class RecordingBridge(BridgeProcess):
    """A :class:`BridgeProcess` that records the raw bytes of every frame it read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.raw = bytearray()

    def _frames(self) -> list[bytes]:
        before = bytes(self._buf)
        out = super()._frames()
        self.raw += before[: len(before) - len(self._buf)]
        return out

    def all_bytes(self) -> bytes:
        """Everything read from stdout: the frames, plus any unframed rest."""
        return bytes(self.raw) + bytes(self._buf)


@asynccontextmanager
async def recording_bridge(
    framing: str = "newline", *args: str, env: dict[str, str] | None = None, **init: Any
) -> AsyncIterator[RecordingBridge]:
    async with anyio.create_task_group() as tg:
        bridge = RecordingBridge(framing, args=args, env=env)
        await bridge.start(tg)
        try:
            await bridge.initialize(**init)
            yield bridge
        finally:
            with anyio.CancelScope(shield=True):
                await bridge.stop()
            tg.cancel_scope.cancel()


class RawHost:
    """A newline-framed host on a bridge child that reads only inside :meth:`read_until`."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._buf = bytearray()
        self._next = 0
        self.bytes_read = 0

    @classmethod
    @asynccontextmanager
    async def spawn(
        cls, *args: str, env: dict[str, str] | None = None, prelude: str = ""
    ) -> AsyncIterator[RawHost]:
        """Spawn ``agent-bridge serve --framing newline *args``; ``prelude`` is Python run
        in the bridge process first (to shorten a constant for a test, say)."""
        state_dir = tempfile.mkdtemp(prefix="bridge-state-")
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "AGENT_BRIDGE_STATE_DIR": state_dir,  # never the real home directory
            **(env or {}),
        }
        serve = ["serve", "--framing", "newline", *args]
        launcher = (
            [
                sys.executable,
                "-c",
                f"{prelude}\nfrom agent_bridge.cli import main\nraise SystemExit(main({serve!r}))",
            ]
            if prelude
            else [sys.executable, "-m", "agent_bridge", *serve]
        )
        process = await anyio.open_process(
            launcher,
            env=full_env,
            cwd=str(ROOT),
            stderr=None,
        )
        host = cls(process)
        try:
            yield host
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        assert process.stdin is not None
                        await process.stdin.aclose()
                    with anyio.move_on_after(10):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
                await process.aclose()
                shutil.rmtree(state_dir, ignore_errors=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def request(self, method: str, params: Any = None) -> str:
        self._next += 1
        id = f"h{self._next}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return id

    async def read_message(self) -> Any:
        """Read (blocking) until one whole line is there; return it decoded."""
        assert self.process.stdout is not None
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                return json.loads(line)
            chunk = await self.process.stdout.receive(1 << 20)
            self.bytes_read += len(chunk)
            self._buf += chunk

    async def read_until(self, predicate: Any, timeout: float = 20, on_message: Any = None) -> Any:
        with anyio.fail_after(timeout):
            while True:
                message = await self.read_message()
                if on_message is not None:
                    on_message(message)
                if predicate(message):
                    return message

    async def call(self, method: str, params: Any = None, timeout: float = 20) -> Any:
        id = await self.request(method, params)
        return await self.read_until(lambda m: isinstance(m, dict) and m.get("id") == id, timeout)

    async def initialize(self) -> None:
        reply = await self.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "hardening"},
                "capabilities": {"interactions": {"approval": True, "question": True}},
            },
        )
        assert "result" in reply, reply
        await self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
