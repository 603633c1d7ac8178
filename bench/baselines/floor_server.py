"""Baseline "floor": the least a Python stdio JSON-RPC server can do.

Hand-written asyncio protocols on the stdin/stdout pipes and msgspec Structs, no
framework, no task per request: cheap requests are answered inline and all replies
produced by one chunk of input go out in one write. Only ``bench/stream`` (which waits
on back-pressure) runs as a task. Framing is Content-Length by default, newline-delimited
JSON with ``--newline``.

Methods (same as stock_pylsp_server.py):
  initialize            -> {}
  initialized (notif.)  -> ignored
  bridge/ping {data}    -> {data}
  bench/stream {count, size}
                        -> ``count`` notifications ``bench/event {seq, data}`` with a
                           ``size``-character ``data`` string, then {count}
  shutdown              -> null
  anything else         -> error -32601

The process exits when stdin reaches EOF.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import msgspec

_HEADER = b"Content-Length: "


class Request(msgspec.Struct):
    method: str
    id: int | str | None = None
    params: msgspec.Raw = msgspec.Raw()


class PingParams(msgspec.Struct):
    data: Any = None


class PingResult(msgspec.Struct):
    data: Any


class StreamParams(msgspec.Struct):
    count: int = 0
    size: int = 200


class CountResult(msgspec.Struct):
    count: int


class Response(msgspec.Struct):
    jsonrpc: str
    id: int | str | None
    result: Any


class ErrorObject(msgspec.Struct):
    code: int
    message: str


class ErrorResponse(msgspec.Struct):
    jsonrpc: str
    id: int | str | None
    error: ErrorObject


class EventParams(msgspec.Struct):
    seq: int
    data: str


class Notification(msgspec.Struct):
    jsonrpc: str
    method: str
    params: Any


class Writer(asyncio.Protocol):
    """Write side of stdout with a drain() that honours the pipe's back-pressure."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()
        if not self.lost.done():
            self.lost.set_result(None)

    async def drain(self) -> None:
        if self._paused:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


class Server(asyncio.Protocol):
    def __init__(self, newline: bool, out: asyncio.WriteTransport, writer: Writer) -> None:
        self._newline = newline
        self._out = out
        self._writer = writer
        self._buf = b""
        self._dec = msgspec.json.Decoder(Request)
        self._ping_dec = msgspec.json.Decoder(PingParams)
        self._stream_dec = msgspec.json.Decoder(StreamParams)
        self._enc = msgspec.json.Encoder()
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = asyncio.get_running_loop().create_future()

    # -- framing -----------------------------------------------------------------
    def frame(self, msg: Any, out: bytearray) -> None:
        if self._newline:
            self._enc.encode_into(msg, out, -1)
            out += b"\n"
        else:
            body = self._enc.encode(msg)
            out += b"Content-Length: %d\r\n\r\n" % len(body)
            out += body

    def data_received(self, data: bytes) -> None:
        buf = self._buf + data if self._buf else data
        view = memoryview(buf)
        out = bytearray()
        pos = 0
        end = len(buf)
        handle = self._handle
        if self._newline:
            while True:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                if nl > pos:
                    handle(view[pos:nl], out)
                pos = nl + 1
        else:
            while True:
                hdr_end = buf.find(b"\r\n\r\n", pos)
                if hdr_end < 0:
                    break
                length = _content_length(buf, pos, hdr_end)
                start = hdr_end + 4
                stop = start + length
                if stop > end:
                    break
                handle(view[start:stop], out)
                pos = stop
        self._buf = buf[pos:] if pos < end else b""
        if out:
            self._out.write(out)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    # -- messages ----------------------------------------------------------------
    def _handle(self, body: memoryview, out: bytearray) -> None:
        try:
            req = self._dec.decode(body)
        except msgspec.DecodeError:
            self.frame(ErrorResponse("2.0", None, ErrorObject(-32700, "parse error")), out)
            return
        method = req.method
        if req.id is None:
            return  # notifications (initialized, exit, ...) are ignored
        if method == "bridge/ping":
            params = self._ping_dec.decode(req.params) if req.params else PingParams()
            self.frame(Response("2.0", req.id, PingResult(params.data)), out)
        elif method == "bench/stream":
            sp = self._stream_dec.decode(req.params) if req.params else StreamParams()
            task = asyncio.get_running_loop().create_task(self._stream(req.id, sp))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif method == "initialize":
            self.frame(Response("2.0", req.id, {}), out)
        elif method == "shutdown":
            self.frame(Response("2.0", req.id, None), out)
        else:
            self.frame(ErrorResponse("2.0", req.id, ErrorObject(-32601, "method not found")), out)

    async def _stream(self, req_id: int | str, sp: StreamParams) -> None:
        payload = "x" * sp.size
        out = bytearray()
        frame = self.frame
        for seq in range(sp.count):
            frame(Notification("2.0", "bench/event", EventParams(seq, payload)), out)
            if len(out) >= 65536:
                self._out.write(out)
                out = bytearray()
                await self._writer.drain()
        frame(Response("2.0", req_id, CountResult(sp.count)), out)
        self._out.write(out)

    async def finish(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _content_length(buf: bytes, start: int, stop: int) -> int:
    if buf.startswith(_HEADER, start):
        eol = buf.find(b"\r\n", start, stop)
        return int(buf[start + 16 : stop if eol < 0 else eol])
    for line in buf[start:stop].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise ValueError("missing Content-Length")


async def main(newline: bool) -> None:
    loop = asyncio.get_running_loop()
    out, writer = await loop.connect_write_pipe(Writer, sys.stdout)
    _, server = await loop.connect_read_pipe(lambda: Server(newline, out, writer), sys.stdin)
    await server.closed
    await server.finish()
    await writer.drain()
    out.close()  # flushes what is buffered, then reports connection_lost
    await writer.lost


if __name__ == "__main__":
    asyncio.run(main("--newline" in sys.argv[1:]))
