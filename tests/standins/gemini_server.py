"""A stand-in for the Gemini API (``generativelanguage``), for driving the real ``gemini``
CLI offline (``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT``).

It binds 127.0.0.1 on a free port and records every request.  Two endpoints:

* ``POST /v1beta/models/<model>:generateContent`` — the CLI's side calls.  The first of
  every turn is its model router, which asks for JSON fitting a ``responseJsonSchema``
  (``generationConfig.responseJsonSchema`` or ``responseSchema``): the stand-in answers
  JSON built from that schema (enum → its first value, strings, numbers, booleans,
  nested objects and arrays), so the CLI does not retry with backoff.  Without a schema
  it answers a short text.
* ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` — the turn itself, as
  server-sent events of ``GenerateContentResponse`` chunks.  By the last user text:
  ``TOOL:<command>`` → a ``run_shell_command`` function call; a function response →
  ``Tool finished. Response: ...``; ``SLOW`` → ``word0 word1 ...`` slowly (until the
  client goes away); anything else → ``Hi! I am the stand-in model.`` in six chunks.

Anything else gets 404 and is recorded (a test asserts none came).  Stdlib only.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["GeminiStandIn", "RecordedRequest", "fit_schema"]

HELLO = ["Hi!", " I", " am", " the", " stand-in", " model."]
MODEL_VERSION = "gemini-stand-in"


def fit_schema(schema: Any, depth: int = 0) -> Any:
    """A value that fits the JSON ``schema`` (the subset the CLI's router uses)."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return fit_schema(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    kind = str(kind).lower() if kind is not None else ("object" if "properties" in schema else "")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: fit_schema(v, depth + 1) for k, v in props.items()}
    if kind == "array":
        items = schema.get("items")
        count = max(1, int(schema.get("minItems") or 0))
        return [fit_schema(items, depth + 1) for _ in range(count)] if items else []
    if kind == "string":
        return "stand-in"
    if kind in ("integer", "number"):
        # The router's complexity score is "from 1-100" without a minimum: 1 fits.
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return None


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: str
    body: Any
    kind: str  # "router", "side", "stream", "other"


def _texts(content: dict[str, Any]) -> list[str]:
    return [p["text"] for p in content.get("parts") or [] if isinstance(p.get("text"), str)]


def _last_user(body: dict[str, Any]) -> dict[str, Any]:
    for content in reversed(body.get("contents") or []):
        if content.get("role", "user") == "user":
            return dict(content)
    return {}


class GeminiStandIn:
    """The server; use as a context manager."""

    def __init__(self, *, slow_delay: float = 0.25, chunk_delay: float = 0.0) -> None:
        self.slow_delay = slow_delay
        self.chunk_delay = chunk_delay
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> GeminiStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def record(self, rec: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(rec)

    def of_kind(self, kind: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.kind == kind]

    # -- replies

    def refusal(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The 429 body a turn is refused with, by its last user text: ``QUOTA`` → a spent
        daily quota (``QuotaFailure`` with a per-day quota id, which the CLI does not
        retry); ``RATELIMIT`` → a per-minute limit with ``RetryInfo`` of one second (the
        CLI retries it); else ``None`` (answered normally)."""
        text = "\n".join(_texts(_last_user(body)))
        details: list[dict[str, Any]]
        if "QUOTA" in text:
            quota = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
            details = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaMetric": "generate_requests", "quotaId": quota}],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3600s"},
            ]
        elif "RATELIMIT" in text:
            quota = "GenerateRequestsPerMinutePerProjectPerModel"
            details = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaMetric": "generate_requests", "quotaId": quota}],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"},
            ]
        else:
            return None
        return {
            "error": {
                "code": 429,
                "message": "stand-in: quota exceeded",
                "status": "RESOURCE_EXHAUSTED",
                "details": details,
            }
        }

    def stream_parts(self, body: dict[str, Any]) -> list[tuple[dict[str, Any], float]]:
        """The parts of the streamed reply, each with the pause before it."""
        user = _last_user(body)
        responses = [
            p["functionResponse"]
            for p in user.get("parts") or []
            if isinstance(p.get("functionResponse"), dict)
        ]
        if responses:
            text = "Tool finished. Response: " + json.dumps(responses[-1], sort_keys=True)
            return [({"text": w}, self.chunk_delay) for w in _words(text)]
        text = "\n".join(_texts(user))
        if "TOOL:" in text:
            command = text.split("TOOL:", 1)[1].strip().splitlines()[0]
            call = {
                "functionCall": {
                    "name": "run_shell_command",
                    "args": {"command": command, "description": "(scripted)"},
                }
            }
            return [(call, 0.0)]
        if "SLOW" in text:
            return [
                ({"text": f"word{i}" if i == 0 else f" word{i}"}, self.slow_delay)
                for i in range(400)
            ]
        return [({"text": w}, self.chunk_delay) for w in HELLO]


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


def _chunk(part: dict[str, Any], *, last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
    chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL_VERSION}
    if last:
        candidate["finishReason"] = "STOP"
        chunk["usageMetadata"] = {
            "promptTokenCount": 12,
            "candidatesTokenCount": 7,
            "totalTokenCount": 19,
        }
    return chunk


def _handler(server: GeminiStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw) if raw else None
            except json.JSONDecodeError:
                return None

        def _json(self, status: int, value: Any) -> None:
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            server.record(RecordedRequest("GET", url.path, url.query, None, "other"))
            self._json(404, {"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}})

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            body = self._body() or {}
            if url.path.endswith(":generateContent"):
                config = body.get("generationConfig") or {}
                schema = config.get("responseJsonSchema") or config.get("responseSchema")
                kind = "router" if schema is not None else "side"
                server.record(RecordedRequest("POST", url.path, url.query, body, kind))
                text = json.dumps(fit_schema(schema)) if schema is not None else "ok"
                self._json(200, _chunk({"text": text}, last=True))
                return
            if url.path.endswith(":streamGenerateContent"):
                server.record(RecordedRequest("POST", url.path, url.query, body, "stream"))
                self._stream(body)
                return
            if url.path.endswith(":countTokens"):
                server.record(RecordedRequest("POST", url.path, url.query, body, "side"))
                self._json(200, {"totalTokens": 12})
                return
            server.record(RecordedRequest("POST", url.path, url.query, body, "other"))
            self._json(404, {"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}})

        def _stream(self, body: dict[str, Any]) -> None:
            refusal = server.refusal(body)
            if refusal is not None:
                self._json(429, refusal)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            parts = server.stream_parts(body)
            try:
                for index, (part, pause) in enumerate(parts):
                    if pause:
                        time.sleep(pause)
                    chunk = _chunk(part, last=index == len(parts) - 1)
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return

    return Handler
