"""Sans-I/O JSON-RPC message layer: classify a frame body into typed messages.

The envelope is decoded with msgspec first; ``params``, ``result`` and ``error`` stay
raw JSON until the method (or, for responses, the ledger entry) says what type they
are.  Request ids are kept as the exact bytes the peer sent, so any valid id (``0``,
``""``, ``2**70``, ``"x"``) is echoed back unchanged.

:func:`parse_body` never raises for bad input (nesting deeper than the decoder's recursion
limit included: msgspec raises ``RecursionError`` there, and it is caught like any other
decoding failure): every defect becomes an
:class:`Invalid` message carrying the JSON-RPC code and the id to answer with (``None``
means ``null``).  Batches (JSON arrays) are returned as :class:`Batch`.

``require_jsonrpc=False`` accepts peers that omit the ``"jsonrpc"`` member (the Codex
app-server does); a present member must still say ``"2.0"``.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from agent_bridge.rpc.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_NOT_INITIALIZED,
    SERVER_OVERLOADED,
)

__all__ = [
    "LOGGED_PROSE_CHARS",
    "REASONS",
    "Batch",
    "Invalid",
    "Message",
    "Notification",
    "Request",
    "Response",
    "decode_envelope",
    "encode_error_response",
    "encode_notification",
    "encode_request",
    "encode_result_response",
    "loggable",
    "parse_body",
    "request_id_in",
    "response_id_in",
    "result_template",
]

_NO_RAW: Final = msgspec.Raw()
_encode = msgspec.json.encode

#: the most characters of a peer's text one log line shows
LOGGED_CHARS: Final = 120
#: the most characters of a peer's prose (an error message) one log line shows
LOGGED_PROSE_CHARS: Final = 2000


def loggable(value: object, limit: int = LOGGED_CHARS) -> str:
    """A value a peer sent (a method name, a client's name or version, an upstream error
    message) as a log line may show it: cut at ``limit`` characters, and quoted with
    escapes (``repr``) unless it is printable text, so a newline in it cannot start a
    forged log line and an escape sequence cannot reach a terminal that shows the log."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    return text if text.isprintable() else repr(text)


class _Envelope(msgspec.Struct):
    jsonrpc: str | None = None
    id: msgspec.Raw = _NO_RAW
    # UNSET, not None, for a missing method: ``"method": null`` must fail to decode (an
    # invalid request), not pass for a response.
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw = _NO_RAW
    result: msgspec.Raw = _NO_RAW
    error: msgspec.Raw = _NO_RAW


class ErrorObject(msgspec.Struct):
    """A JSON-RPC error object as received from a peer (decoded leniently)."""

    code: int
    message: str = ""
    data: Any = None


_envelope_decoder: Final = msgspec.json.Decoder(_Envelope)
#: Decode one frame body into its envelope, raising ``msgspec.DecodeError`` (or
#: ``RecursionError``) for anything that is not one well-formed object: the connection's
#: inline path reads the common request straight from it and gives everything else,
#: unchanged, to :func:`parse_body`.
decode_envelope: Final = _envelope_decoder.decode
_batch_decoder: Final = msgspec.json.Decoder(list[msgspec.Raw])
_any_decoder: Final = msgspec.json.Decoder()
_error_decoder: Final = msgspec.json.Decoder(ErrorObject)


class Request:
    """A request: answer it exactly once, echoing ``id`` (raw bytes) unchanged."""

    __slots__ = ("id", "method", "params")

    def __init__(self, id: bytes, method: str, params: bytes | None) -> None:
        self.id = id
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return f"Request({self.id!r}, {self.method!r})"


class Notification:
    """A notification: never answered."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: bytes | None) -> None:
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return f"Notification({self.method!r})"


class Response:
    """A response to one of our requests.

    Exactly one of ``result`` (raw JSON bytes) and ``error`` is set, unless
    ``malformed`` names what is wrong with it (both or neither present, a bad error
    object); a malformed response still fails the pending request it names.
    """

    __slots__ = ("error", "id", "malformed", "result")

    def __init__(
        self,
        id: bytes,
        result: bytes | None,
        error: ErrorObject | None,
        malformed: str | None = None,
    ) -> None:
        self.id = id
        self.result = result
        self.error = error
        self.malformed = malformed

    def __repr__(self) -> str:
        return f"Response({self.id!r})"


class Invalid:
    """Input that must be answered with an error (``id`` ``None`` means ``null``),
    or, when ``reply`` is false, only logged."""

    __slots__ = ("code", "id", "message", "reply")

    def __init__(self, code: int, message: str, id: bytes | None = None, reply: bool = True):
        self.code = code
        self.message = message
        self.id = id
        self.reply = reply

    def __repr__(self) -> str:
        return f"Invalid({self.code}, {self.message!r}, id={self.id!r})"


Message = Request | Notification | Response | Invalid


class Batch:
    """A JSON array of messages; replies to its requests go out as one array."""

    __slots__ = ("items",)

    def __init__(self, items: list[Message]) -> None:
        self.items = items


def _valid_id(raw: bytes) -> bool:
    """Return whether ``raw`` is a JSON string or an integer (no fraction, no exponent)."""
    first = raw[:1]
    if first == b'"':
        return True
    body = raw[1:] if first == b"-" else raw
    return body.isdigit() and body.isascii()


#: One token of a JSON text: a string, a structural character, or a run of anything else.
_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^"{}\[\]:,\s]+')


def response_id_in(head: bytes) -> bytes | None:
    """Return the ``id`` of the response whose frame begins with ``head`` (the start of a
    message too large to be read whole), or ``None`` when ``head`` does not show a
    response: the top-level object's ``id`` (a string or an integer) and a ``result`` or
    ``error`` member, and no ``method``, before ``head`` ends (an answer written ``id``
    first, as JSON-RPC libraries write one).  A scan of tokens, never a parse; never
    raises."""
    depth = 0
    expect_key = False
    found: bytes | None = None
    answer = False
    body = head.lstrip()
    tokens = _TOKEN.finditer(body)
    for match in tokens:
        token = match.group()
        if token in (b"{", b"["):
            if depth == 0 and token != b"{":
                return None
            depth += 1
            expect_key = token == b"{" and depth == 1
        elif token in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                break
        elif token == b",":
            expect_key = depth == 1
        elif depth == 1 and expect_key:
            expect_key = False
            if token == b'"method"':
                return None
            if token in (b'"result"', b'"error"'):
                answer = True
            elif token == b'"id"':
                colon = next(tokens, None)
                value = next(tokens, None)
                if colon is None or colon.group() != b":" or value is None:
                    return None
                raw = value.group()
                if value.end() >= len(body) or not _valid_id(raw):
                    return None
                try:
                    msgspec.json.decode(raw)
                except msgspec.DecodeError:
                    return None
                found = raw
        elif depth == 0:
            return None
    return found if answer else None


def request_id_in(head: bytes) -> bytes | None:
    """Return the ``id`` of the request whose frame begins with ``head`` (the start of a
    message too large to be read whole), as the exact bytes to answer with, or ``None``
    when ``head`` does not show one: the ``id`` member of the top-level object, a string or
    an integer, found before ``head`` ends (hosts write ``id`` before ``params``).  A scan
    of tokens, never a parse of the message; never raises."""
    depth = 0
    expect_key = False
    tokens = _TOKEN.finditer(head.lstrip())
    for match in tokens:
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
            expect_key = token == b"{" and depth == 1
        elif token in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                return None
        elif token == b",":
            expect_key = depth == 1
        elif depth == 1 and expect_key:
            expect_key = False
            if token != b'"id"':
                continue
            colon = next(tokens, None)
            value = next(tokens, None)
            if colon is None or colon.group() != b":" or value is None:
                return None
            raw = value.group()
            if value.end() >= len(head.lstrip()) or not _valid_id(raw):
                return None  # cut by the end of ``head``, or not an id
            try:
                msgspec.json.decode(raw)
            except msgspec.DecodeError:
                return None
            return raw
        elif depth == 0:
            return None
    return None


def _params(raw: msgspec.Raw) -> bytes | Invalid | None:
    if not raw:
        return None
    data = bytes(raw)
    first = data[:1]
    if first in (b"{", b"["):
        return data
    if data == b"null":
        return None
    return Invalid(INVALID_PARAMS, "params must be an object or an array")


def _classify(env: _Envelope, require_jsonrpc: bool) -> Message:
    raw_id = bytes(env.id) if env.id else None
    if raw_id is not None and not _valid_id(raw_id):
        if raw_id == b"null" and env.method is msgspec.UNSET:
            # An error response to something the peer could not parse.
            return _response(raw_id, env)
        return Invalid(INVALID_REQUEST, "id must be a string or an integer")
    if env.jsonrpc != "2.0" and (require_jsonrpc or env.jsonrpc is not None):
        return Invalid(INVALID_REQUEST, 'jsonrpc must be "2.0"', raw_id)
    method = env.method
    if isinstance(method, str):
        params = _params(env.params)
        if raw_id is None:
            if isinstance(params, Invalid):
                return Invalid(params.code, params.message, None, reply=False)
            return Notification(method, params)
        if isinstance(params, Invalid):
            params.id = raw_id
            return params
        if method.startswith("rpc."):
            return Invalid(METHOD_NOT_FOUND, "method not found", raw_id)
        return Request(raw_id, method, params)
    if raw_id is None:
        return Invalid(INVALID_REQUEST, "not a request, notification or response")
    return _response(raw_id, env)


def _response(raw_id: bytes, env: _Envelope) -> Response:
    has_result = bool(env.result)
    has_error = bool(env.error)
    if has_result and has_error:
        return Response(raw_id, None, None, "both result and error")
    if has_result:
        return Response(raw_id, bytes(env.result), None)
    if has_error:
        try:
            return Response(raw_id, None, _error_decoder.decode(env.error))
        except (msgspec.DecodeError, RecursionError):
            return Response(raw_id, None, None, "malformed error object")
    return Response(raw_id, None, None, "neither result nor error")


def _from_envelope(env: _Envelope, require_jsonrpc: bool) -> Message:
    # Fast path: a well-formed request with an integer or string id and object params.
    method = env.method
    if type(method) is str and env.jsonrpc == "2.0" and env.id:
        raw_id = bytes(env.id)
        if (raw_id[:1] == b'"' or raw_id.isdigit()) and not method.startswith("rpc."):
            params = env.params
            if not params:
                return Request(raw_id, method, None)
            data = bytes(params)
            if data[:1] == b"{":
                return Request(raw_id, method, data)
    return _classify(env, require_jsonrpc)


def _parse_object(body: bytes | msgspec.Raw, require_jsonrpc: bool) -> Message:
    try:
        env = _envelope_decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return _diagnose(body)
    return _from_envelope(env, require_jsonrpc)


#: A ``\\u`` escape of a UTF-16 surrogate: JSON's grammar allows one unpaired, text has none.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _json_but_not_unicode(body: bytes) -> bool:
    """Return whether ``body`` is JSON whose only defect is text that is not Unicode: an
    unpaired surrogate escape (``"\\ud800"``, what a host's string cut inside a pair
    becomes) or bytes that are not UTF-8.  The decoder refuses both as malformed; with
    each replaced by U+FFFD the body decodes."""
    fixed = _SURROGATE_ESCAPE.sub(rb"\\ufffd", body).decode("utf-8", "replace").encode()
    if fixed == body:
        return False
    try:
        _any_decoder.decode(fixed)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _diagnose(body: bytes | msgspec.Raw) -> Invalid:
    """Slow path for a body the typed decoder refused: parse error or invalid request.

    JSON the decoder cannot take (nested deeper than its recursion limit, or holding
    text that is not Unicode) is a request all the same: it is answered ``-32600``
    under its own id when the bytes show one (:func:`request_id_in`), so the host's
    request is not left waiting for ever; only bytes that are not JSON are ``-32700``."""
    try:
        value = _any_decoder.decode(body)
    except RecursionError:
        return Invalid(INVALID_REQUEST, "nested too deep", request_id_in(bytes(body)))
    except msgspec.DecodeError:
        data = bytes(body)
        if _json_but_not_unicode(data):
            return Invalid(
                INVALID_REQUEST,
                "text that is not Unicode (a lone surrogate, or bytes that are not UTF-8)",
                request_id_in(data),
            )
        return Invalid(PARSE_ERROR, "parse error")
    if isinstance(value, dict):
        raw_id = value.get("id")
        echo: bytes | None = None
        if (isinstance(raw_id, int) and not isinstance(raw_id, bool)) or isinstance(raw_id, str):
            echo = _encode(raw_id)
        if "method" in value and not isinstance(value["method"], str):
            return Invalid(INVALID_REQUEST, "method must be a string", echo)
        if "jsonrpc" in value and not isinstance(value["jsonrpc"], str):
            return Invalid(INVALID_REQUEST, 'jsonrpc must be "2.0"', echo)
        return Invalid(INVALID_REQUEST, "invalid request", echo)
    return Invalid(INVALID_REQUEST, "a message must be a JSON object")


def parse_body(body: bytes, *, require_jsonrpc: bool = True) -> Message | Batch:
    """Classify one frame body; never raises for bad input (see module docstring)."""
    try:
        return _from_envelope(_envelope_decoder.decode(body), require_jsonrpc)
    except (msgspec.DecodeError, RecursionError):
        pass  # not a single well-formed object: classify by its first byte below
    first = body[:1]
    if first.isspace():
        first = body.lstrip()[:1]
    if first == b"{":
        return _parse_object(body, require_jsonrpc)
    if first == b"[":
        try:
            items = _batch_decoder.decode(body)
        except (msgspec.DecodeError, RecursionError):
            return _diagnose(body)
        if not items:
            return Invalid(INVALID_REQUEST, "empty batch")
        out: list[Message] = []
        for item in items:
            if bytes(item).lstrip()[:1] == b"{":
                out.append(_parse_object(item, require_jsonrpc))
            else:
                out.append(Invalid(INVALID_REQUEST, "a message must be a JSON object"))
        return Batch(out)
    return _diagnose(body)


_ID_NULL: Final = b"null"


def _head(jsonrpc: bool) -> bytes:
    return b'{"jsonrpc":"2.0",' if jsonrpc else b"{"


def result_template(*, jsonrpc: bool = True) -> bytes:
    """Return the bytes template of a result response: ``template % (id, result)``."""
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}' if jsonrpc else b'{"id":%s,"result":%s}'


def encode_result_response(
    id: bytes, result: bytes | msgspec.Raw, *, jsonrpc: bool = True
) -> bytes:
    """Return a response body answering ``id`` with the already-encoded ``result``."""
    return result_template(jsonrpc=jsonrpc) % (id, result)


def encode_error_response(
    id: bytes | None, error: dict[str, Any], *, jsonrpc: bool = True
) -> bytes:
    """Return an error response body; ``id`` ``None`` is sent as ``null``.  An error
    without ``data`` is given ``{"reason": …}`` naming its kind (:data:`REASONS`): every
    error the project sends carries ``data`` (this is the one function they all pass)."""
    if "data" not in error or error["data"] is None:
        error = {**error, "data": {"reason": REASONS.get(error.get("code"), "error")}}
    return b'%s"id":%s,"error":%s}' % (
        _head(jsonrpc),
        _ID_NULL if id is None else id,
        _encode(error),
    )


#: ``data.reason`` of an error that has no other data, by JSON-RPC code.
REASONS: Final[dict[Any, str]] = {
    PARSE_ERROR: "parse_error",
    INVALID_REQUEST: "invalid_request",
    METHOD_NOT_FOUND: "method_not_found",
    INVALID_PARAMS: "invalid_params",
    INTERNAL_ERROR: "internal",
    REQUEST_CANCELLED: "cancelled",
    SERVER_OVERLOADED: "overloaded",
    SERVER_NOT_INITIALIZED: "not_initialized",
}


def encode_request(id: int, method: str, params: bytes | None, *, jsonrpc: bool = True) -> bytes:
    """Return a request body; ``params`` is already-encoded JSON or ``None`` to omit it."""
    if params is None:
        return b'%s"id":%d,"method":%s}' % (_head(jsonrpc), id, _encode(method))
    return b'%s"id":%d,"method":%s,"params":%s}' % (_head(jsonrpc), id, _encode(method), params)


def encode_notification(method: str, params: bytes | None, *, jsonrpc: bool = True) -> bytes:
    """Return a notification body; ``params`` is already-encoded JSON or ``None``."""
    if params is None:
        return b'%s"method":%s}' % (_head(jsonrpc), _encode(method))
    return b'%s"method":%s,"params":%s}' % (_head(jsonrpc), _encode(method), params)
