"""The client side of ACP that the bridge serves itself: ``fs/*`` and ``terminal/*``.

Both are off unless the session's options enable them (``clientFs``, ``clientTerminal``),
and then only the enabled ones are advertised in ``clientCapabilities`` and served; any
other callback is answered ``-32601`` by the connection.

* ``fs/read_text_file`` / ``fs/write_text_file`` are confined to the session's workspace
  on the resolved real path (:func:`agent_bridge.workspace.contained`: no ``..``, no
  sibling prefix, no symlink escape), need an absolute path as ACP prescribes, and are
  bounded in size (:data:`MAX_FILE_BYTES`).  Without a workspace nothing is readable.
* ``terminal/create`` runs ``command`` with ``args`` as an argv vector (never a shell)
  through the bridge's one spawn module, with the allowlisted environment plus the
  request's variables, in the workspace (or a ``cwd`` inside it).  Output (stdout; the
  spawn module keeps only a tail of stderr) is kept up to ``outputByteLimit`` bytes (at
  most :data:`MAX_OUTPUT_LIMIT`), dropping from the front at a character boundary as ACP
  asks.  Terminals end with the
  session.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.abc
import msgspec

from agent_bridge.adapters.acp.protocol import objs
from agent_bridge.errors import BridgeError
from agent_bridge.processes import ChildProcess, ProcessSpec, SpawnError, build_child_env, spawn
from agent_bridge.rpc.connection import Method
from agent_bridge.rpc.errors import INVALID_PARAMS, RpcError
from agent_bridge.workspace import contained

__all__ = ["MAX_FILE_BYTES", "Callbacks"]

#: The largest file ``fs/read_text_file`` returns or ``fs/write_text_file`` writes.
MAX_FILE_BYTES: Final = 8 * 1024 * 1024
#: Output kept per terminal when the agent names no ``outputByteLimit``.
DEFAULT_OUTPUT_LIMIT: Final = 1024 * 1024
#: The most output kept per terminal whatever ``outputByteLimit`` the agent names (the
#: size of a file ``fs/read_text_file`` returns at most): the output is held in the
#: bridge's memory and sent back whole in each ``terminal/output`` answer.
MAX_OUTPUT_LIMIT: Final = MAX_FILE_BYTES
MAX_TERMINALS: Final = 16
RESOURCE_NOT_FOUND: Final = -32002


def _refuse(message: str, code: int = INVALID_PARAMS) -> RpcError:
    return RpcError(code, message)


def _open_regular(path: str, flags: int) -> int:
    """A descriptor of the regular file at ``path``, opened without waiting: a named
    pipe (or a device) in the workspace is refused, where a plain ``open`` waited on the
    bridge's event loop for a peer that may never come."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise _refuse("file not found", RESOURCE_NOT_FOUND)
        if not stat.S_ISREG(mode):
            raise _refuse("not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


@dataclass(slots=True)
class _Terminal:
    child: ChildProcess
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)

    def add(self, data: bytes) -> None:
        self.output += data
        if len(self.output) > self.limit:
            cut = len(self.output) - self.limit
            # Drop whole UTF-8 characters: skip continuation bytes at the new start.
            while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:
                cut += 1
            del self.output[:cut]
            self.truncated = True

    def exit_status(self) -> dict[str, Any] | None:
        code = self.child.returncode
        if code is None:
            return None
        if code < 0:
            import signal

            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return {"exitCode": None, "signal": name}
        return {"exitCode": code, "signal": None}


class Callbacks:
    """The fs and terminal callbacks of one session."""

    def __init__(
        self,
        *,
        workspace: str | None,
        session_id: Callable[[], str | None],
        task_group: anyio.abc.TaskGroup,
        log: logging.Logger,
    ) -> None:
        self._workspace = workspace
        self._session_id = session_id
        self._tg = task_group
        self._log = log
        self._terminals: dict[str, _Terminal] = {}
        self._next = 0

    # ------------------------------------------------------------------ helpers

    def _params(self, raw: msgspec.Raw) -> dict[str, Any]:
        try:
            params = msgspec.json.decode(bytes(raw))
        except msgspec.DecodeError:
            raise _refuse("params must be an object") from None
        if not isinstance(params, dict):
            raise _refuse("params must be an object")
        if params.get("sessionId") != self._session_id():
            raise _refuse("unknown sessionId")
        return params

    def _path(self, value: Any) -> str:
        if self._workspace is None:
            raise _refuse("the session has no workspace")
        if not isinstance(value, str) or not os.path.isabs(value):
            raise _refuse("path must be absolute")
        try:
            return contained(self._workspace, value)
        except BridgeError:
            raise _refuse("path is outside the workspace") from None

    # ------------------------------------------------------------------ fs

    def fs_methods(self) -> dict[str, Method]:
        return {
            "fs/read_text_file": Method(self._read, msgspec.Raw),
            "fs/write_text_file": Method(self._write, msgspec.Raw),
        }

    def _read(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = self._params(raw)
        path = self._path(params.get("path"))
        try:
            fd = _open_regular(path, os.O_RDONLY)
            with open(fd, encoding="utf-8", errors="replace") as fh:
                if os.fstat(fd).st_size > MAX_FILE_BYTES:
                    raise _refuse("file is too large")
                text = fh.read(MAX_FILE_BYTES + 1)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise _refuse("file not found", RESOURCE_NOT_FOUND) from None
        except OSError:
            raise _refuse("file cannot be read") from None
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(0, (line if isinstance(line, int) else 1) - 1)
            end = start + limit if isinstance(limit, int) and limit >= 0 else None
            text = "".join(lines[start:end])
        return {"content": text}

    def _write(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = self._params(raw)
        path = self._path(params.get("path"))
        content = params.get("content")
        if not isinstance(content, str):
            raise _refuse("content must be a string")
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise _refuse("content is too large")
        if not os.path.isdir(os.path.dirname(path)):
            raise _refuse("the directory does not exist", RESOURCE_NOT_FOUND)
        try:
            fd = _open_regular(path, os.O_WRONLY | os.O_CREAT)
            with open(fd, "wb") as fh:
                os.ftruncate(fd, 0)
                fh.write(data)
        except OSError:
            raise _refuse("file cannot be written") from None
        return {}

    # ------------------------------------------------------------------ terminal

    def terminal_methods(self) -> dict[str, Method]:
        return {
            "terminal/create": Method(self._create, msgspec.Raw, is_async=True),
            "terminal/output": Method(self._output, msgspec.Raw),
            "terminal/wait_for_exit": Method(self._wait, msgspec.Raw, is_async=True),
            "terminal/kill": Method(self._kill, msgspec.Raw, is_async=True),
            "terminal/release": Method(self._release, msgspec.Raw, is_async=True),
        }

    def _terminal(self, params: dict[str, Any]) -> _Terminal:
        terminal = self._terminals.get(str(params.get("terminalId")))
        if terminal is None:
            raise _refuse("unknown terminalId", RESOURCE_NOT_FOUND)
        return terminal

    async def _create(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = self._params(raw)
        if len(self._terminals) >= MAX_TERMINALS:
            raise _refuse("too many terminals")
        command, args = params.get("command"), params.get("args") or []
        if not isinstance(command, str) or not command:
            raise _refuse("command must be a string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise _refuse("args must be strings")
        if self._workspace is None:
            raise _refuse("the session has no workspace")
        cwd = self._workspace
        if params.get("cwd") is not None:
            cwd = self._path(params.get("cwd"))
        declared = {
            e["name"]: e["value"]
            for e in objs(params.get("env"))
            if isinstance(e.get("name"), str) and isinstance(e.get("value"), str)
        }
        limit = params.get("outputByteLimit")
        limit = (
            min(limit, MAX_OUTPUT_LIMIT)
            if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0
            else DEFAULT_OUTPUT_LIMIT
        )
        try:
            spec = ProcessSpec(
                (command, *args), cwd=cwd, env=build_child_env(declared), name="acp terminal"
            )
            child = await spawn(spec, self._tg)
        except (SpawnError, OSError, TypeError, ValueError) as exc:
            self._log.info("acp terminal/create failed: %s", type(exc).__name__)
            raise _refuse("the command cannot be started", RESOURCE_NOT_FOUND) from None
        self._next += 1
        terminal_id = f"term_{self._next}"
        terminal = _Terminal(child, limit)
        self._terminals[terminal_id] = terminal
        self._tg.start_soon(self._pump, terminal)
        return {"terminalId": terminal_id}

    async def _pump(self, terminal: _Terminal) -> None:
        try:
            with contextlib.suppress(Exception):
                await terminal.child.stdin.aclose()
            while True:
                try:
                    terminal.add(await terminal.child.stdout.receive(65536))
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
            await terminal.child.wait()
        finally:
            terminal.done.set()

    def _output(self, raw: msgspec.Raw) -> dict[str, Any]:
        terminal = self._terminal(self._params(raw))
        return {
            "output": terminal.output.decode("utf-8", errors="replace"),
            "truncated": terminal.truncated,
            "exitStatus": terminal.exit_status() if terminal.done.is_set() else None,
        }

    async def _wait(self, raw: msgspec.Raw) -> dict[str, Any]:
        terminal = self._terminal(self._params(raw))
        await terminal.done.wait()
        return terminal.exit_status() or {"exitCode": None, "signal": None}

    async def _kill(self, raw: msgspec.Raw) -> dict[str, Any]:
        terminal = self._terminal(self._params(raw))
        with contextlib.suppress(TimeoutError):
            await terminal.child.stop(eof_grace=0.0, term_grace=1.0, kill_grace=2.0)
        return {}

    async def _release(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = self._params(raw)
        terminal = self._terminal(params)
        self._terminals.pop(str(params.get("terminalId")), None)
        with contextlib.suppress(TimeoutError):
            await terminal.child.stop(eof_grace=0.0, term_grace=1.0, kill_grace=2.0)
        return {}

    async def close(self) -> None:
        """Stop every terminal (at the session's end)."""
        terminals, self._terminals = list(self._terminals.values()), {}
        for terminal in terminals:
            with contextlib.suppress(TimeoutError):
                await terminal.child.stop(eof_grace=0.0, term_grace=1.0, kill_grace=2.0)
