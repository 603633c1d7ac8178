"""A stand-in for the OpenAI Responses API on 127.0.0.1, for driving the real
`codex` CLI offline.

Every `POST /v1/responses` is answered with the next scripted reply, streamed as
server-sent events the way the real API does::

    response.created
    response.output_item.added        (per output item)
    response.output_text.delta ...    (message items: one per delta)
    response.output_item.done         (per output item)
    response.completed                (with usage)

When the script runs dry the server falls back to a small rule set keyed on the
prompt (the same one the transcripts under tests/data/codex/ were captured with):
``TOOL:<cmd>`` asks for `exec_command` with ``{"cmd": <cmd>}``; ``FAIL:<message>``
answers HTTP 400 with that message (not retried by Codex); a prompt
containing ``SLOW`` streams ``word0 word1 ...`` with 0.5 s between deltas; a
request whose last input item is a ``function_call_output`` gets
``Tool finished. Output was: <output>``; anything else gets
``Hi! I am the stand-in model.``.

Every request to any path is recorded (method, path, headers minus secrets, JSON
body) so a test can assert on what the CLI asked.

In-process use (a background thread)::

    from standins.responses_server import ResponsesStandIn, reply, text, tool_call

    with ResponsesStandIn() as server:
        server.script(
            reply(tool_call("touch approved.txt")),
            reply(text("Done.", deltas=2)),
        )
        ... run `codex app-server -c model_providers.stub.base_url="<server.base_url>"` ...
        bodies = server.response_bodies()
        assert any(i.get("type") == "function_call_output" for i in bodies[-1]["input"])

As its own process::

    python tests/standins/responses_server.py --port 0 --port-file PATH \\
        [--script SCRIPT.json] [--log REQUESTS.jsonl]

prints ``PORT=<port>`` on stdout once listening; control it over HTTP: ``POST /_standin/script``
(a JSON list of replies, appended), ``GET /_standin/requests`` (what was recorded),
``POST /_standin/reset`` (clear script and records). Stop it with SIGTERM/SIGINT.

Script format (the same in Python and JSON)::

    {"items": [ITEM, ...], "usage": {"input_tokens": 12, "output_tokens": 7},
     "status": 200, "error": null, "hang": false}

with ITEM one of::

    {"type": "text", "text": "Hi there", "deltas": 3, "delay": 0.0}
    {"type": "text", "chunks": ["Hi", " there"], "delay": 0.5}
    {"type": "function_call", "name": "exec_command", "arguments": {"cmd": "ls"},
     "call_id": null, "delay": 0.0, "namespace": null}

(``namespace``: the tool's namespace, e.g. ``multi_agent_v1`` for Codex's
``spawn_agent``, sent as the item's ``namespace`` when given)

``status`` other than 200 answers with that HTTP status and an OpenAI-style error
body (``error`` is the message); ``"error"`` with status 200 streams
``response.failed`` instead of ``response.completed``; ``"hang": true`` stops
after ``response.created`` and holds the stream open until the client goes away
or the server stops.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import select
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "RecordedRequest",
    "ResponsesStandIn",
    "default_reply",
    "reply",
    "text",
    "tool_call",
]

STANDIN_MODEL = "stub-model"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "openai-api-key", "api-key"}
)
DEFAULT_USAGE = {"input_tokens": 12, "output_tokens": 7}
SLOW_DELAY = 0.5
SLOW_WORDS = 40

#: A private CODEX_HOME config.toml that keeps the real Codex CLI on loopback: provider
#: ``stub`` speaking the Responses API (the port is overridden per run with ``-c``), and
#: the feature and analytics switches that stop every other connection attempt.
CODEX_OFFLINE_CONFIG = """\
model = "stub-model"
model_provider = "stub"

[model_providers.stub]
name = "Stub (loopback stand-in)"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"

[features]
plugins = false
remote_plugin = false
apps = false

[analytics]
enabled = false
"""

Reply = dict[str, Any]
Responder = Callable[[dict[str, Any]], Reply]


# ---------------------------------------------------------------------------
# Script helpers


def text(
    content: str = "Hi! I am the stand-in model.",
    *,
    deltas: int | None = None,
    chunks: Iterable[str] | None = None,
    delay: float = 0.0,
) -> dict[str, Any]:
    """An assistant message item, streamed as `deltas` pieces (default: one per
    word) or as the explicit `chunks`, with `delay` seconds before each delta
    after the first."""
    item: dict[str, Any] = {"type": "text", "delay": delay}
    if chunks is not None:
        item["chunks"] = list(chunks)
    else:
        item["text"] = content
        if deltas is not None:
            item["deltas"] = deltas
    return item


def tool_call(
    cmd: str,
    *,
    name: str = "exec_command",
    call_id: str | None = None,
    arguments: dict[str, Any] | None = None,
    delay: float = 0.0,
) -> dict[str, Any]:
    """A `function_call` item; by default Codex's `exec_command` with {"cmd": cmd}."""
    return {
        "type": "function_call",
        "name": name,
        "arguments": arguments if arguments is not None else {"cmd": cmd},
        "call_id": call_id,
        "delay": delay,
    }


def reply(
    *items: dict[str, Any],
    usage: dict[str, int] | None = None,
    status: int = 200,
    error: str | None = None,
    hang: bool = False,
    headers: dict[str, str] | None = None,
    error_type: str | None = None,
    error_fields: dict[str, Any] | None = None,
) -> Reply:
    """One answer to one POST /v1/responses.

    ``headers`` are sent with the reply: with a ``status`` other than 200 with the error
    (e.g. ``retry-after``, ``x-codex-primary-reset-at``), with a stream before it (e.g.
    ``OpenAI-Model``, the model that answered); ``error_type`` is the error body's
    ``type`` (default ``server_error``) and ``error_fields`` are added to its ``error``
    object (e.g. ``resets_at``)."""
    out: Reply = {
        "items": list(items),
        "usage": dict(usage or DEFAULT_USAGE),
        "status": status,
        "error": error,
        "hang": hang,
    }
    if headers:
        out["headers"] = dict(headers)
    if error_type:
        out["error_type"] = error_type
    if error_fields:
        out["error_fields"] = dict(error_fields)
    return out


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    if isinstance(items, str):
        return [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": items}]}
        ]
    return [i for i in items or [] if isinstance(i, dict)]


def _item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = [c.get("text", "") for c in content or [] if isinstance(c, dict)]
    return "".join(p for p in parts if isinstance(p, str))


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message in a Responses request body."""
    for item in reversed(_input_items(body)):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            return _item_text(item)
    return ""


def default_reply(body: dict[str, Any]) -> Reply:
    """The rule set used when the script is empty (see the module docstring)."""
    items = _input_items(body)
    if items and items[-1].get("type") == "function_call_output":
        output = items[-1].get("output")
        if not isinstance(output, str):
            output = json.dumps(output)
        return reply(text(f"Tool finished. Output was: {output}"))
    prompt = last_user_text(body).strip()
    if prompt.startswith("TOOL:"):
        return reply(tool_call(prompt[len("TOOL:") :].strip()))
    if prompt.startswith("FAIL:"):
        return reply(status=400, error=prompt[len("FAIL:") :].strip() or "stand-in failure")
    if "SLOW" in prompt:
        words = [f"word{i}" if i == 0 else f" word{i}" for i in range(SLOW_WORDS)]
        return reply(text(chunks=words, delay=SLOW_DELAY))
    return reply(text("Hi! I am the stand-in model."))


# ---------------------------------------------------------------------------
# Recording


@dataclass(frozen=True)
class RecordedRequest:
    """One request the stand-in received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text, or None
    t: float
    reply_index: int | None = None  # which scripted reply answered it (None: rules/other)
    disconnected: bool = False  # the client went away mid-stream
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
            "t": self.t,
            "reply_index": self.reply_index,
            "disconnected": self.disconnected,
        }


# ---------------------------------------------------------------------------
# The server


class _Stopped(Exception):
    pass


class _ClientGone(Exception):
    pass


class _QuietServer(ThreadingHTTPServer):
    """Does not print tracebacks: a client that hangs up is normal (an
    interrupted turn); anything else is kept in `ResponsesStandIn.errors`."""

    standin: ResponsesStandIn

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, _ClientGone, _Stopped)):
            return
        self.standin._errors.append(repr(exc))


class ResponsesStandIn:
    """The stand-in server. Binds 127.0.0.1 on a free port (or `port`) in
    `start()`, serves from a daemon thread, stops in `stop()`. Thread-safe."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        port: int = 0,
        fallback: Responder | None = default_reply,
        log_path: str | Path | None = None,
        model: str = STANDIN_MODEL,
    ) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque(copy.deepcopy(list(replies)))
        self._replies_served = 0
        self._requests: list[RecordedRequest] = []
        self._changed = threading.Condition(self._lock)
        self._errors: list[str] = []
        self._fallback = fallback
        self._log_path = Path(log_path) if log_path else None
        self._stop = threading.Event()
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)
        self.model = model

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> ResponsesStandIn:
        handler = _make_handler(self)
        self._httpd = _QuietServer(("127.0.0.1", self._port), handler)
        self._httpd.standin = self
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"responses-standin:{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> ResponsesStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        """What goes into `model_providers.<id>.base_url` (ends in /v1)."""
        return f"http://127.0.0.1:{self._port}/v1"

    # -- scripting ---------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Append replies; each POST /v1/responses takes the next one."""
        with self._lock:
            self._script.extend(copy.deepcopy(list(replies)))

    def push(self, *entries: Reply | dict[str, Any]) -> None:
        """Like `script`, but a bare item (`text(...)`, `tool_call(...)`) stands
        for a reply holding just that item."""
        self.script(*(e if "items" in e else reply(e) for e in entries))

    def pending(self) -> int:
        """How many scripted replies have not been used yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._replies_served = 0

    # -- records -----------------------------------------------------------

    @property
    def errors(self) -> list[str]:
        """Exceptions raised while handling requests (a bad script item, a bug
        here); hung-up clients are not errors. A test may assert it is empty."""
        return list(self._errors)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def response_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/responses")]

    model_requests = response_requests

    def function_call_outputs(self) -> list[dict[str, Any]]:
        """The `function_call_output` input items of the latest request that has
        any (each request repeats the whole history, so the latest is enough)."""
        for body in reversed(self.response_bodies()):
            found = [i for i in _input_items(body) if i.get("type") == "function_call_output"]
            if found:
                return found
        return []

    def response_bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the POST /v1/responses requests, oldest first."""
        return [r.body for r in self.response_requests() if isinstance(r.body, dict)]

    def wait_for_requests(
        self, n: int, *, path_suffix: str = "/responses", timeout: float = 10
    ) -> list[RecordedRequest]:
        """Block until at least `n` requests whose path ends in `path_suffix`
        arrived; return them. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                got = [r for r in self._requests if r.path.split("?")[0].endswith(path_suffix)]
                if len(got) >= n:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{len(got)} of {n} requests to *{path_suffix} after {timeout}s"
                    )
                self._changed.wait(left)

    # -- internals used by the handler --------------------------------------

    def _record(self, rec: RecordedRequest) -> int:
        with self._changed:
            self._requests.append(rec)
            index = len(self._requests) - 1
            self._changed.notify_all()
        if self._log_path is not None:
            with self._lock, self._log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec.to_json()) + "\n")
        return index

    def _mark_disconnected(self, index: int) -> None:
        with self._changed:
            old = self._requests[index]
            self._requests[index] = RecordedRequest(
                old.method, old.path, old.headers, old.body, old.t, old.reply_index, True
            )
            self._changed.notify_all()

    def _next_reply(self, body: dict[str, Any]) -> tuple[Reply, int | None]:
        with self._lock:
            if self._script:
                index = self._replies_served
                self._replies_served += 1
                return self._script.popleft(), index
        if self._fallback is None:
            return reply(status=500, error="stand-in script exhausted"), None
        return self._fallback(body), None

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"


def _make_handler(server: ResponsesStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "responses-standin/1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # recorded instead

        # -- plumbing -------------------------------------------------------

        def _read_body(self) -> tuple[Any, bytes]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                raw = self._read_chunked()
            if not raw:
                return None, raw
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            if encoding not in ("", "identity"):
                return {"_undecoded": encoding, "_bytes": len(raw)}, raw
            try:
                return json.loads(raw), raw
            except ValueError:
                return raw.decode("utf-8", "replace"), raw

        def _read_chunked(self) -> bytes:
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()

        def _record(self, body: Any, reply_index: int | None = None) -> int:
            headers = {
                k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v)
                for k, v in self.headers.items()
            }
            return server._record(
                RecordedRequest(self.command, self.path, headers, body, time.time(), reply_index)
            )

        def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _chunk(self, data: bytes) -> None:
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, OSError) as e:
                raise _ClientGone from e

        def _pause(self, seconds: float) -> None:
            """Sleep up to `seconds`, returning early with _ClientGone when the
            client closes the connection (an interrupted turn) and with _Stopped
            when the server stops."""
            deadline = time.monotonic() + seconds
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                if server._stop.is_set():
                    raise _Stopped
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                if readable:
                    try:
                        peek = self.connection.recv(1, socket.MSG_PEEK)
                    except OSError as e:
                        raise _ClientGone from e
                    if not peek:
                        raise _ClientGone

        def _event(self, kind: str, payload: dict[str, Any]) -> None:
            payload = {"type": kind, **payload}
            self._chunk(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())

        # -- routes ---------------------------------------------------------

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/_standin/requests":
                self._send_json(200, [r.to_json() for r in server.requests])
                return
            self._record(None)
            if path.endswith("/models"):
                self._send_json(200, _models_body(server.model))
            elif path in ("/", "/health", "/healthz"):
                self._send_json(200, {"ok": True})
            else:
                self._send_json(404, _error_body(f"no route for GET {path}", "not_found"))

        def do_HEAD(self) -> None:
            self._record(None)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            body, _raw = self._read_body()
            if path == "/_standin/script":
                replies = body if isinstance(body, list) else (body or {}).get("replies", [])
                server.script(*replies)
                self._send_json(200, {"pending": server.pending()})
                return
            if path == "/_standin/reset":
                server.reset()
                self._send_json(200, {"ok": True})
                return
            if not path.endswith("/responses"):
                self._record(body)
                self._send_json(404, _error_body(f"no route for POST {path}", "not_found"))
                return
            the_reply, reply_index = server._next_reply(body if isinstance(body, dict) else {})
            index = self._record(body, reply_index)
            try:
                self._stream(the_reply, body if isinstance(body, dict) else {})
            except _ClientGone:
                server._mark_disconnected(index)
                self.close_connection = True
            except _Stopped:
                self.close_connection = True

        do_PUT = do_POST
        do_DELETE = do_GET

        # -- the SSE stream --------------------------------------------------

        def _stream(self, r: Reply, body: dict[str, Any]) -> None:
            status = int(r.get("status", 200))
            if status != 200:
                error = _error_body(
                    r.get("error") or "stand-in error", r.get("error_type") or "server_error"
                )
                error["error"].update(r.get("error_fields") or {})
                self._send_json(status, error, r.get("headers"))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in (r.get("headers") or {}).items():
                self.send_header(name, value)
            self.end_headers()

            response_id = server._next_id("resp")
            model = body.get("model") or server.model
            base = {
                "id": response_id,
                "object": "response",
                "created_at": int(time.time()),
                "model": model,
            }
            seq = itertools.count()
            self._event(
                "response.created",
                {
                    "sequence_number": next(seq),
                    "response": {**base, "status": "in_progress", "output": []},
                },
            )
            if r.get("hang"):
                while True:
                    self._pause(0.5)
                    self._chunk(b": keep-alive\n\n")
            outputs: list[dict[str, Any]] = []
            for index, spec in enumerate(r.get("items", [])):
                outputs.append(self._stream_item(index, spec, seq))
            if r.get("error"):
                self._event(
                    "response.failed",
                    {
                        "sequence_number": next(seq),
                        "response": {
                            **base,
                            "status": "failed",
                            "output": outputs,
                            "error": {"code": "server_error", "message": r["error"]},
                        },
                    },
                )
            else:
                self._event(
                    "response.completed",
                    {
                        "sequence_number": next(seq),
                        "response": {
                            **base,
                            "status": "completed",
                            "output": outputs,
                            "usage": _usage(r.get("usage") or DEFAULT_USAGE),
                        },
                    },
                )
            self._chunk(b"")  # last chunk: end of body

        def _stream_item(
            self, index: int, spec: dict[str, Any], seq: itertools.count[int]
        ) -> dict[str, Any]:
            kind = spec.get("type")
            delay = float(spec.get("delay") or 0.0)
            if kind == "function_call":
                args = spec.get("arguments", {})
                item = {
                    "type": "function_call",
                    "id": server._next_id("fc"),
                    "call_id": spec.get("call_id") or server._next_id("call"),
                    "name": spec.get("name", "exec_command"),
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                    "status": "completed",
                }
                if spec.get("namespace"):
                    item["namespace"] = spec["namespace"]
                self._pause(delay)
                self._event(
                    "response.output_item.added",
                    {
                        "sequence_number": next(seq),
                        "output_index": index,
                        "item": {**item, "arguments": "", "status": "in_progress"},
                    },
                )
                self._event(
                    "response.function_call_arguments.delta",
                    {
                        "sequence_number": next(seq),
                        "output_index": index,
                        "item_id": item["id"],
                        "delta": item["arguments"],
                    },
                )
                self._event(
                    "response.function_call_arguments.done",
                    {
                        "sequence_number": next(seq),
                        "output_index": index,
                        "item_id": item["id"],
                        "arguments": item["arguments"],
                    },
                )
                self._event(
                    "response.output_item.done",
                    {"sequence_number": next(seq), "output_index": index, "item": item},
                )
                return item
            if kind != "text":
                raise ValueError(f"unknown script item type {kind!r}")
            chunks = spec.get("chunks")
            if chunks is None:
                chunks = _split(spec.get("text", ""), spec.get("deltas"))
            full = "".join(chunks)
            item_id = server._next_id("msg")
            self._event(
                "response.output_item.added",
                {
                    "sequence_number": next(seq),
                    "output_index": index,
                    "item": {
                        "type": "message",
                        "id": item_id,
                        "role": "assistant",
                        "status": "in_progress",
                        "content": [],
                    },
                },
            )
            self._event(
                "response.content_part.added",
                {
                    "sequence_number": next(seq),
                    "output_index": index,
                    "item_id": item_id,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                },
            )
            for n, chunk in enumerate(chunks):
                if n:
                    self._pause(delay)
                self._event(
                    "response.output_text.delta",
                    {
                        "sequence_number": next(seq),
                        "output_index": index,
                        "item_id": item_id,
                        "content_index": 0,
                        "delta": chunk,
                    },
                )
            part = {"type": "output_text", "text": full, "annotations": []}
            self._event(
                "response.output_text.done",
                {
                    "sequence_number": next(seq),
                    "output_index": index,
                    "item_id": item_id,
                    "content_index": 0,
                    "text": full,
                },
            )
            self._event(
                "response.content_part.done",
                {
                    "sequence_number": next(seq),
                    "output_index": index,
                    "item_id": item_id,
                    "content_index": 0,
                    "part": part,
                },
            )
            item = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
            self._event(
                "response.output_item.done",
                {"sequence_number": next(seq), "output_index": index, "item": item},
            )
            return item

    return Handler


def _split(content: str, deltas: int | None) -> list[str]:
    """Split `content` into `deltas` pieces (default: one per word, the space
    kept in front of the word). Joining the pieces gives `content` back."""
    if not content:
        return [""]
    words: list[str] = []
    for n, word in enumerate(content.split(" ")):
        words.append(word if n == 0 else " " + word)
    if deltas is None or deltas >= len(words):
        if deltas is not None and deltas > len(words):
            size = max(1, -(-len(content) // deltas))
            return [content[i : i + size] for i in range(0, len(content), size)]
        return words
    deltas = max(1, deltas)
    per = -(-len(words) // deltas)
    return ["".join(words[i : i + per]) for i in range(0, len(words), per)]


def _usage(u: dict[str, int]) -> dict[str, Any]:
    inp = int(u.get("input_tokens", 12))
    out = int(u.get("output_tokens", 7))
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": int(u.get("cached_tokens", 0))},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": int(u.get("reasoning_tokens", 0))},
        "total_tokens": int(u.get("total_tokens", inp + out)),
    }


def _models_body(model: str) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": 0, "owned_by": "stand-in"}],
        "models": [],
    }


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


# ---------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Stand-in OpenAI Responses API on 127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 (default): a free port")
    ap.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    ap.add_argument(
        "--script", type=Path, help="JSON file: a list of replies (or {replies: [...]})"
    )
    ap.add_argument("--log", type=Path, help="append every request as a JSON line here")
    ap.add_argument("--no-fallback", action="store_true", help="HTTP 500 when the script is empty")
    args = ap.parse_args(argv)

    replies: list[Reply] = []
    if args.script:
        loaded = json.loads(args.script.read_text())
        replies = loaded if isinstance(loaded, list) else loaded.get("replies", [])
    server = ResponsesStandIn(
        replies,
        port=args.port,
        fallback=None if args.no_fallback else default_reply,
        log_path=args.log,
    )
    server.start()
    if args.port_file:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(server.port))
        tmp.replace(args.port_file)
    print(f"PORT={server.port}", flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    while not done.wait(0.2):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
