"""A stand-in for the Anthropic Messages API, for driving the real ``claude`` CLI offline.

It binds 127.0.0.1 on a free port, replays a script of model replies as Messages API
server-sent events, and records every request it receives so a test can assert on what
the CLI asked (for example that the follow-up request carries a ``tool_result``).

Use it in-process (it serves from a background thread)::

    from standins.anthropic_server import AnthropicStandIn, Text, ToolUse

    with AnthropicStandIn() as server:
        server.push(ToolUse("touch approved.txt"), Text("Done."))
        env["ANTHROPIC_BASE_URL"] = server.base_url
        ...  # run the CLI
        body = server.model_requests()[-1].body
        assert server.tool_results()  # the follow-up carried a tool_result

or as its own process (prints ``PORT=<n>`` on stdout once listening)::

    python tests/standins/anthropic_server.py --script script.json --record requests.jsonl

Which requests consume the script: only *turn* requests, ``POST /v1/messages`` whose
body offers tools (the agent loop). Side requests the CLI may make (a title or topic
request without tools, a ``max_tokens: 1`` quota probe) get a short canned reply and
are recorded with ``kind`` ``"side"``. When the script is empty, ``responder`` (if set)
is asked for a reply; otherwise a fixed text reply is sent. ``rules_responder`` gives
prompt-driven replies: ``TOOL:<command>`` -> a Bash tool call, ``SLOW`` -> a slow
stream, a tool result -> ``"Tool finished. Result: ..."``, anything else -> a greeting.

Stdlib only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

__all__ = [
    "AnthropicStandIn",
    "ApiError",
    "RecordedRequest",
    "Text",
    "ToolUse",
    "item_from_json",
    "last_user_text",
    "rules_responder",
]

SECRET_HEADERS = frozenset({"x-api-key", "authorization", "proxy-authorization", "cookie"})
DEFAULT_MODEL = "claude-stand-in"
FALLBACK_TEXT = "(stand-in: no scripted reply left)"


# --------------------------------------------------------------------------- script items


@dataclass
class Text:
    """A plain text reply (stop_reason ``end_turn``).

    ``chunks``: number of ``text_delta`` events (default: one per word).
    ``deltas``: the exact delta strings (overrides ``text``/``chunks``).
    ``delay``: seconds to sleep between deltas (makes a slow, interruptible stream).
    ``first_delay``: seconds to sleep before the first delta.
    """

    text: str = ""
    chunks: int | None = None
    delay: float = 0.0
    first_delay: float = 0.0
    deltas: list[str] | None = None
    stop_reason: str = "end_turn"

    def pieces(self) -> list[str]:
        if self.deltas is not None:
            return list(self.deltas)
        return split_text(self.text, self.chunks)


@dataclass
class ToolUse:
    """A ``tool_use`` reply (stop_reason ``tool_use``); by default of the ``Bash`` tool.

    ``text`` (optional) is streamed as a text block before the tool_use block.
    ``input`` overrides the tool input (default ``{"command": ..., "description": ...}``).
    ``stop_reason`` is the message's (``max_tokens``: a reply cut inside its tool call).
    """

    command: str = ""
    description: str = "scripted"
    name: str = "Bash"
    input: dict[str, Any] | None = None
    text: str | None = None
    tool_use_id: str | None = None
    json_chunks: int = 1
    stop_reason: str = "tool_use"

    def tool_input(self) -> dict[str, Any]:
        if self.input is not None:
            return dict(self.input)
        return {"command": self.command, "description": self.description}


@dataclass
class ApiError:
    """An HTTP error reply in the Messages API error shape.

    Beware: the CLI retries 5xx/429/529 with backoff (several seconds); a 400 is not
    retried.
    """

    status: int = 400
    type: str = "invalid_request_error"
    message: str = "stand-in scripted error"
    #: extra response headers, e.g. ``retry-after`` or ``anthropic-ratelimit-*-reset``
    headers: dict[str, str] = field(default_factory=dict)


ScriptItem = Text | ToolUse | ApiError
Responder = Callable[[dict[str, Any]], "ScriptItem | None"]


def item_from_json(obj: Any) -> ScriptItem:
    """Build a script item from JSON.

    Forms: ``"text"``; ``{"text": ..., "chunks"?, "delay"?, "first_delay"?, "deltas"?}``;
    ``{"tool_use": {"command": ..., "description"?, "name"?, "input"?, "text"?}}``;
    ``{"error": {"status"?, "type"?, "message"?}}``.
    """
    if isinstance(obj, str):
        return Text(obj)
    if not isinstance(obj, dict):
        raise TypeError(f"script item must be a string or object, got {obj!r}")
    if "tool_use" in obj:
        return ToolUse(**obj["tool_use"])
    if "error" in obj:
        return ApiError(**obj["error"])
    return Text(**obj)


def split_text(text: str, chunks: int | None) -> list[str]:
    """Split ``text`` into deltas on word boundaries (spaces kept at word starts)."""
    if not text:
        return []
    words: list[str] = []
    for i, w in enumerate(text.split(" ")):
        words.append(w if i == 0 else " " + w)
    if chunks is None or chunks >= len(words):
        if chunks is not None and chunks > len(words):
            # more chunks than words: split characters instead
            n = min(chunks, len(text))
            size = -(-len(text) // n)
            return [text[i : i + size] for i in range(0, len(text), size)]
        return words
    chunks = max(1, chunks)
    per = -(-len(words) // chunks)
    return ["".join(words[i : i + per]) for i in range(0, len(words), per)]


# --------------------------------------------------------------------------- helpers


def _is_prompt_text(text: str) -> bool:
    t = text.lstrip()
    return not (t.startswith("<system-reminder>") or t.startswith("[Request interrupted"))


def _last_turn_message(body: dict[str, Any]) -> dict[str, Any] | None:
    """The last user/assistant message (the CLI may append ``role: "system"`` messages)."""
    for msg in reversed(body.get("messages") or []):
        if isinstance(msg, dict) and msg.get("role") in ("user", "assistant"):
            return msg
    return None


def last_user_text(body: dict[str, Any]) -> str:
    """The last text the user typed in a Messages request body.

    Only the last user/assistant message counts (trailing ``role: "system"`` messages,
    which this CLI sends, are skipped), and only if it is a user one; system reminders and
    ``[Request interrupted ...]`` markers are skipped. ``""`` when there is none (for
    example when the last message only carries a ``tool_result``).
    """
    last = _last_turn_message(body)
    if last is None or last.get("role") != "user":
        return ""
    content = last.get("content")
    if isinstance(content, str):
        return content if _is_prompt_text(content) else ""
    texts = [
        b.get("text", "")
        for b in content or []
        if isinstance(b, dict) and b.get("type") == "text" and _is_prompt_text(b.get("text", ""))
    ]
    return texts[-1] if texts else ""


def last_tool_result(body: dict[str, Any]) -> dict[str, Any] | None:
    """The ``tool_result`` block of the last message, if that message is a user one."""
    last = _last_turn_message(body)
    if last is None or last.get("role") != "user":
        return None
    content = last.get("content")
    if not isinstance(content, list):
        return None
    for b in content:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            return b
    return None


def tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return ""


def rules_responder(
    greeting: str = "Hi! I am the stand-in model.",
    slow_words: int = 20,
    slow_delay: float = 0.5,
) -> Responder:
    """Prompt-driven replies (as in the reference transcript).

    Last user message only a tool result -> ``"Tool finished. Result: <text>"``;
    ``TOOL:<command>`` -> Bash tool call; ``SLOW`` -> ``slow_words`` words, ``slow_delay``
    apart; ``ECHO:<text>`` -> ``<text>``; anything else -> ``greeting``.
    """

    def respond(body: dict[str, Any]) -> ScriptItem:
        prompt = last_user_text(body).strip()
        tr = last_tool_result(body)
        if tr is not None and not prompt:
            return Text("Tool finished. Result: " + tool_result_text(tr))
        if prompt.startswith("TOOL:"):
            return ToolUse(prompt[len("TOOL:") :].strip())
        if prompt.startswith("SLOW"):
            return Text(" ".join(f"word{i}" for i in range(slow_words)), delay=slow_delay)
        if prompt.startswith("ECHO:"):
            return Text(prompt[len("ECHO:") :].strip())
        return Text(greeting)

    return respond


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


# --------------------------------------------------------------------------- recording


@dataclass
class RecordedRequest:
    """One request the stand-in received.

    ``kind``: ``"turn"`` (consumed a script item), ``"side"`` (canned reply),
    ``"count_tokens"``, ``"head"``, ``"models"``, ``"other"``.
    ``reply``: short description of what was sent back. ``aborted``: the client closed
    the connection before the reply was complete (e.g. after an interrupt).
    """

    seq: int
    time: float
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    kind: str = "other"
    reply: str = ""
    aborted: bool = False
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": self.headers,
            "body": self.body,
            "kind": self.kind,
            "reply": self.reply,
            "aborted": self.aborted,
        }


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    standin: AnthropicStandIn


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "anthropic-standin/1"
    sys_version = ""

    # http.server logs every request to stderr; route it to the stand-in's log instead.
    def log_message(self, format: str, *args: Any) -> None:
        self.server.standin.log.append(format % args)

    def _read_body(self) -> tuple[bytes, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return raw, None
        try:
            return raw, json.loads(raw)
        except ValueError:
            return raw, raw.decode("utf-8", "replace")

    def _record(self, body: Any) -> RecordedRequest:
        parts = urlsplit(self.path)
        headers = {
            k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v)
            for k, v in self.headers.items()
        }
        return self.server.standin._record(
            self.command, parts.path, parse_qs(parts.query), headers, body
        )

    def _send_json(
        self,
        status: int,
        obj: Any,
        rec: RecordedRequest | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if rec is not None:
            self.send_header("request-id", f"req_standin_{rec.seq}")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self) -> None:
        rec = self._record(None)
        rec.kind = "head"
        rec.reply = "200"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "0")
        self.end_headers()
        rec.done.set()

    def do_GET(self) -> None:
        rec = self._record(None)
        path = urlsplit(self.path).path.rstrip("/")
        if path == "":
            rec.kind, rec.reply = "other", "200"
            self._send_json(200, {"service": "anthropic-standin"}, rec)
        elif path == "/v1/models":
            rec.kind, rec.reply = "models", "200"
            model = self.server.standin.model or DEFAULT_MODEL
            self._send_json(
                200,
                {
                    "data": [
                        {
                            "type": "model",
                            "id": model,
                            "display_name": model,
                            "created_at": "2025-01-01T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": model,
                    "last_id": model,
                },
                rec,
            )
        else:
            self._not_found(rec)
        rec.done.set()

    def do_POST(self) -> None:
        _, body = self._read_body()
        rec = self._record(body)
        try:
            path = urlsplit(self.path).path.rstrip("/")
            if path == "/v1/messages/count_tokens":
                rec.kind = "count_tokens"
                n = max(1, len(json.dumps(body)) // 4) if body is not None else 1
                rec.reply = f"input_tokens={n}"
                self._send_json(200, {"input_tokens": n}, rec)
            elif path == "/v1/messages" and isinstance(body, dict):
                self._messages(rec, body)
            else:
                self._not_found(rec)
        finally:
            rec.done.set()

    def _not_found(self, rec: RecordedRequest) -> None:
        rec.kind = "other"
        rec.reply = "404"
        self.server.standin._log(f"unknown endpoint {rec.method} {rec.path}")
        self._send_json(
            404,
            {
                "type": "error",
                "error": {"type": "not_found_error", "message": f"stand-in: no {rec.path}"},
            },
            rec,
        )

    # -- /v1/messages

    def _messages(self, rec: RecordedRequest, body: dict[str, Any]) -> None:
        standin = self.server.standin
        is_turn = bool(body.get("tools")) and body.get("max_tokens", 2) > 1
        if is_turn:
            rec.kind = "turn"
            item = standin._next_item(body)
        else:
            rec.kind = "side"
            item = Text(standin.side_text)
        model = body.get("model") or standin.model or DEFAULT_MODEL
        if isinstance(item, ApiError):
            rec.reply = f"error {item.status}"
            self._send_json(
                item.status,
                {
                    "type": "error",
                    "error": {"type": item.type, "message": item.message},
                    "request_id": f"req_standin_{rec.seq}",
                },
                rec,
                item.headers,
            )
            return
        rec.reply = _describe(item)
        if not body.get("stream"):
            self._send_json(200, standin._full_message(item, model), rec)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", f"req_standin_{rec.seq}")
        self.end_headers()
        self.close_connection = True
        try:
            for chunk, pause in standin._events(item, model):
                if pause > 0 and standin._closing.wait(pause):
                    rec.aborted = True
                    return
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            with standin._changed:
                rec.aborted = True
                standin._changed.notify_all()  # wake wait_for() callers at once
            standin._log(f"request {rec.seq}: client went away mid-stream")


def _describe(item: ScriptItem) -> str:
    if isinstance(item, Text):
        return f"text {''.join(item.pieces())[:60]!r}"
    if isinstance(item, ToolUse):
        return f"tool_use {item.name} {json.dumps(item.tool_input())[:60]}"
    return f"error {item.status}"


class AnthropicStandIn:
    """The stand-in server. Start with ``start()`` or as a context manager.

    Attributes: ``port``, ``base_url`` (for ``ANTHROPIC_BASE_URL``), ``requests``
    (copies of everything recorded), ``responder`` (asked when the script is empty),
    ``side_text`` (reply to side requests), ``model`` (model name when the request has
    none), ``input_tokens`` (reported in ``message_start``), ``verbose`` (log to stderr).
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        responder: Responder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        verbose: bool = False,
        record_path: str | None = None,
    ) -> None:
        self._script: deque[ScriptItem] = deque(script)
        self.responder = responder
        self.side_text = "Stand-in"
        self.model: str | None = None
        self.input_tokens = 12
        self.verbose = verbose
        self.log: list[str] = []
        self._host = host
        self._want_port = port
        self._record_path = record_path
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._closing = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> AnthropicStandIn:
        httpd = _Server((self._host, self._want_port), _Handler)
        httpd.standin = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="anthropic-standin",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> AnthropicStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- script

    def push(self, *items: ScriptItem | str) -> None:
        """Append replies to the script (a ``str`` is a ``Text``)."""
        with self._lock:
            for it in items:
                self._script.append(Text(it) if isinstance(it, str) else it)

    def clear_script(self) -> None:
        with self._lock:
            self._script.clear()

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def _next_item(self, body: dict[str, Any]) -> ScriptItem:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            item = self.responder(body)
            if item is not None:
                return item
        return Text(FALLBACK_TEXT)

    # -- records

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def model_requests(self) -> list[RecordedRequest]:
        """The turn requests (``POST /v1/messages`` that consumed a script item)."""
        return [r for r in self.requests if r.kind == "turn"]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block in the last turn request's messages."""
        reqs = self.model_requests()
        if not reqs:
            return []
        out: list[Any] = []
        for msg in reqs[-1].body.get("messages") or []:
            content = msg.get("content")
            if isinstance(content, list):
                out.extend(
                    b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                )
        return out

    def wait_for(
        self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 10.0
    ) -> list[RecordedRequest]:
        """Block until ``predicate(requests)`` holds; return the requests. TimeoutError."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(list(self._requests)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"stand-in: condition not met in {timeout}s")
                self._changed.wait(left)
            return list(self._requests)

    def wait_for_turns(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        self.wait_for(lambda rs: sum(r.kind == "turn" for r in rs) >= n, timeout)
        return self.model_requests()

    def _record(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        body: Any,
    ) -> RecordedRequest:
        with self._changed:
            rec = RecordedRequest(
                seq=next(self._seq),
                time=time.time(),
                method=method,
                path=path,
                query=query,
                headers=headers,
                body=body,
            )
            self._requests.append(rec)
            self._changed.notify_all()
        self._log(f"{method} {path}{'?' + urlencode(query, doseq=True) if query else ''}")
        if self._record_path:
            # written after the reply is decided (kind/reply filled) by a watcher thread
            threading.Thread(target=self._append_record, args=(rec,), daemon=True).start()
        return rec

    def _append_record(self, rec: RecordedRequest) -> None:
        rec.done.wait(600)
        assert self._record_path is not None
        with self._lock, open(self._record_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec.to_json()) + "\n")

    def _log(self, line: str) -> None:
        self.log.append(line)
        if self.verbose:
            print(f"[anthropic-standin] {line}", file=sys.stderr, flush=True)

    # -- reply building

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_standin_{next(self._ids)}"

    def _usage(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        }

    def _full_message(self, item: Text | ToolUse, model: str) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if isinstance(item, Text):
            content.append({"type": "text", "text": "".join(item.pieces())})
            stop = item.stop_reason
        else:
            if item.text:
                content.append({"type": "text", "text": item.text})
            content.append(
                {
                    "type": "tool_use",
                    "id": item.tool_use_id or self._new_id("toolu"),
                    "name": item.name,
                    "input": item.tool_input(),
                }
            )
            stop = item.stop_reason
        usage = self._usage()
        usage["output_tokens"] = 7
        return {
            "id": self._new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def _events(self, item: Text | ToolUse, model: str) -> Iterator[tuple[bytes, float]]:
        """(sse bytes, seconds to wait before sending) pairs for one streamed reply."""
        msg_id = self._new_id("msg")
        yield (
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": self._usage(),
                    },
                },
            ),
            0.0,
        )
        index = 0
        n_out = 0
        texts: list[tuple[list[str], float, float]] = []
        if isinstance(item, Text):
            texts.append((item.pieces(), item.delay, item.first_delay))
        elif item.text:
            texts.append((split_text(item.text, None), 0.0, 0.0))
        for pieces, delay, first_delay in texts:
            yield (
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                0.0,
            )
            for i, piece in enumerate(pieces):
                n_out += 1
                yield (
                    _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    ),
                    (first_delay if i == 0 else delay),
                )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index}), 0.0
            index += 1
        stop_reason = item.stop_reason
        if isinstance(item, ToolUse):
            yield (
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {
                            "type": "tool_use",
                            "id": item.tool_use_id or self._new_id("toolu"),
                            "name": item.name,
                            "input": {},
                        },
                    },
                ),
                0.0,
            )
            raw = json.dumps(item.tool_input())
            per = -(-len(raw) // max(1, item.json_chunks))
            for i in range(0, len(raw), per):
                n_out += 1
                yield (
                    _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": raw[i : i + per]},
                        },
                    ),
                    0.0,
                )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index}), 0.0
        yield (
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": max(1, n_out)},
                },
            ),
            0.0,
        )
        yield _sse("message_stop", {"type": "message_stop"}), 0.0


# --------------------------------------------------------------------------- own process


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--script", help="JSON file: a list of script items (see item_from_json)")
    p.add_argument(
        "--rules", action="store_true", help="when the script is empty use rules_responder"
    )
    p.add_argument("--record", help="append every request as a JSON line to this file")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    script: list[ScriptItem] = []
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            script = [item_from_json(o) for o in json.load(f)]
    server = AnthropicStandIn(
        script,
        responder=rules_responder() if args.rules else None,
        port=args.port,
        verbose=args.verbose,
        record_path=args.record,
    ).start()
    print(f"PORT={server.port}", flush=True)
    try:
        # Serve until stdin closes or the process is signalled.
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
