"""python-lsp-jsonrpc's ``Endpoint``, fenced in: everything :mod:`agent_bridge.rpc.connection` needs
to use it as the state machine for incoming requests and notifications.

Why this module exists: ``Endpoint`` has defects and habits the connection must guard
against, and the guards are many small pieces (a logger shim, wrapped handlers, a
consumer that re-encodes its replies, a future per async request).  Kept here, the
connection itself is only I/O, framing and the request ledger, and this is the one
module that imports ``pylsp_jsonrpc``.

The guards:

* ``Endpoint`` logs every message at debug level and every error reply with a traceback;
  its module logger is replaced by :class:`_Silent` (the connection logs in its own way).
* Handlers never let anything but a ``JsonRpcException`` reach it, so it never answers
  ``INVALID_PARAMS`` with a traceback; a bug becomes ``INTERNAL_ERROR`` with a
  correlation id that names the log entry.
* Results are handed to it pre-encoded (``msgspec.Raw``), so it never merges a result
  that contains ``result``/``error`` keys into the envelope; :meth:`EndpointGlue._consume`
  writes its replies with the connection's own result template.
* Cheap (synchronous) handlers are called by the connection itself (its inline path, or
  :meth:`EndpointGlue.answer_inline`), off ``Endpoint``: a call and one reply need none
  of its state, and its dispatch was a third of the cost of a cheap request.  ``Endpoint``
  keeps what needs its state machine: ``async`` handlers, which get a task in the
  connection's task group and answer through a ``concurrent.futures.Future`` (the only
  asynchronous result ``Endpoint`` accepts), settled by a cancelled task with exactly one
  ``REQUEST_CANCELLED`` reply; unknown methods (its ``-32601``); and notifications.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec
import pylsp_jsonrpc.endpoint as _pylsp_endpoint
from pylsp_jsonrpc.endpoint import Endpoint
from pylsp_jsonrpc.exceptions import JsonRpcException, JsonRpcRequestCancelled

from agent_bridge.rpc.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from agent_bridge.rpc.messages import encode_error_response

if TYPE_CHECKING:
    from agent_bridge.rpc.connection import Method

__all__ = ["EndpointGlue", "InlineEntry", "current_request_id", "log_internal_error"]

log = logging.getLogger("agent_bridge.rpc")


class _Silent:
    """Stands in for ``pylsp_jsonrpc.endpoint``'s module logger.  ``Endpoint`` logs every
    message at debug level and every error reply with a traceback; the connection logs in
    its own way, and three disabled-logger calls per request were a tenth of the cost of
    serving a cheap request."""

    def _drop(self, *args: object, **kwargs: object) -> None:
        return None

    debug = info = warning = error = exception = _drop


_pylsp_endpoint.log = _Silent()

_encode = msgspec.json.encode
_correlation = itertools.count(1)
_request_id: contextvars.ContextVar[bytes | None] = contextvars.ContextVar(
    "agent_bridge_rpc_request_id", default=None
)
_MISSING: Any = object()


def current_request_id() -> bytes | None:
    """Return the raw JSON id of the request an async handler is serving (``None``
    outside one).  Adapters use it where a peer refers back to its own request id later
    (the Codex app-server's ``serverRequest/resolved``)."""
    return _request_id.get()


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder_for(params_type: Any) -> msgspec.json.Decoder[Any] | None:
    """Return the (cached) decoder for ``params_type``, or ``None`` for ``None``."""
    if params_type is None:
        return None
    decoder = _decoders.get(params_type)
    if decoder is None:
        decoder = _decoders[params_type] = msgspec.json.Decoder(params_type)
    return decoder


def _invalid_params(exc: msgspec.DecodeError | RecursionError) -> JsonRpcException:
    """Return the INVALID_PARAMS error for a params decoding failure, naming the bad field."""
    if isinstance(exc, msgspec.ValidationError):
        text = str(exc).replace("`$", "`params")
        path = text.rsplit(" - at `", 1)[1].rstrip("`") if " - at `" in text else "params"
        return JsonRpcException(f"Invalid params: {text}", INVALID_PARAMS, {"path": path})
    return JsonRpcException("Invalid params", INVALID_PARAMS, {"path": "params"})


#: How the connection calls a synchronous handler: ``(entry, decode, handler, failed)``.
#: ``entry(raw)`` takes the raw params (``None`` when absent), returns the encoded result
#: and raises the ``JsonRpcException`` to answer with.  ``decode`` is the params decoder
#: when it accepts nothing but a JSON object (see :func:`_object_only`), so that params it
#: decodes are what ``entry`` would have made of them; else ``None``.  With ``decode``,
#: the fast path calls the method's own ``handler`` on the params and encodes the result
#: itself (no wrapper's frame per request); ``failed(exc)``, called while handling what
#: the handler or the encoding raised, returns the ``JsonRpcException`` to answer with
#: (logging an unexpected one), as ``entry`` answers.
InlineEntry = tuple[
    Callable[[bytes | None], bytes],
    Callable[[Any], Any] | None,
    Callable[[Any], Any],
    Callable[[Exception], JsonRpcException],
]


def _object_only(params_type: Any) -> bool:
    """Whether ``params_type`` decodes from JSON objects only: a ``msgspec.Struct`` that is
    not ``array_like``."""
    return (
        isinstance(params_type, type)
        and issubclass(params_type, msgspec.Struct)
        and not params_type.__struct_config__.array_like
    )


def _is_empty_array(raw: bytes) -> bool:
    """Whether ``raw`` is the JSON text of an empty array (``[]``, blanks allowed)."""
    return b"".join(raw.split()) == b"[]"


def _decode_with(decoder: msgspec.json.Decoder[Any], raw: bytes | None) -> Any:
    """Return ``raw`` params decoded by ``decoder``.  Missing params decode from ``{}``,
    and so do empty positional params (``[]``, what Neovim sends for an empty Lua table)
    when every member of the params type is optional; otherwise an array is refused with
    the decoder's own ``Expected `object`, got `array``` (raises ``msgspec.DecodeError``)."""
    if raw is None:
        return decoder.decode(b"{}")
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        if not _is_empty_array(raw):
            raise
        array_error = exc
    try:
        return decoder.decode(b"{}")
    except msgspec.ValidationError:
        # A required member: the array's own error ("Expected `object`, got `array`")
        # says what is wrong.
        raise array_error from None


def _decode_params(params_type: Any, raw: bytes | None) -> Any:
    """Return ``raw`` params decoded as ``params_type`` (see :func:`_decode_with`;
    ``None`` without a type); raises the INVALID_PARAMS ``JsonRpcException``."""
    decoder = _decoder_for(params_type)
    if decoder is None:
        return None
    try:
        return _decode_with(decoder, raw)
    except (msgspec.DecodeError, RecursionError) as exc:  # too deep for the decoder
        raise _invalid_params(exc) from None


def log_internal_error(where: str) -> str:
    """Log the exception being handled as a bug in ``where``; return the correlation id
    the log entry carries (never raises)."""
    cid = f"err-{next(_correlation)}"
    log.exception("handler for %s failed (correlation id %s)", where, cid)
    return cid


def _internal(where: str) -> JsonRpcException:
    """Log the exception being handled; return the INTERNAL_ERROR to answer it with."""
    cid = log_internal_error(where)
    return JsonRpcException("Internal error", INTERNAL_ERROR, {"correlationId": cid})


def _wire_exception(exc: RpcError) -> JsonRpcException:
    """Return ``exc`` as the exception type ``Endpoint`` answers with."""
    return JsonRpcException(exc.message, exc.code, exc.data)


class EndpointGlue:
    """The two ``Endpoint`` s of one connection (requests, notifications) and the
    wrapped handlers they call.

    The connection feeds validated envelopes to :attr:`consume_request` (after setting
    :attr:`current_id` to the request's raw id) and :attr:`consume_notification`;
    replies come back through ``reply(id, body)`` as encoded bodies.  :attr:`inflight`
    maps the raw id of every async request being served to the cancel scope of its task
    (the connection cancels it for ``$/cancelRequest`` and at close).  Async handlers
    start in :attr:`task_group`, which the connection sets while it runs.
    """

    def __init__(
        self,
        name: str,
        methods: Mapping[str, Method],
        notifications: Mapping[str, Method],
        *,
        reply: Callable[[bytes, bytes], None],
        result_format: bytes,
        jsonrpc: bool,
    ) -> None:
        self.name = name
        self.current_id: bytes = b""
        self.inflight: dict[bytes, anyio.CancelScope] = {}
        self.task_group: anyio.abc.TaskGroup | None = None
        self._reply = reply
        self._result_format = result_format
        self._jsonrpc = jsonrpc
        dispatch: dict[str, Callable[[Any], Any]] = {}
        #: the wrapped cheap (synchronous) handlers, which the connection calls itself
        #: (:meth:`answer_inline`): a call and a reply need none of ``Endpoint``'s state
        #: (see :data:`InlineEntry`)
        self.inline: dict[str, InlineEntry] = {}
        for method, spec in methods.items():
            if spec.is_async:
                dispatch[method] = self._async_entry(method, spec)
            else:
                self.inline[method] = entry = self._sync_entry(method, spec)
                dispatch[method] = entry[0]
        note_dispatch: dict[str, Callable[[Any], Any]] = {
            method: self._notification_entry(method, spec) for method, spec in notifications.items()
        }
        #: ``Endpoint.consume`` of each endpoint, bound once (the hot path calls them).
        self.consume_request: Callable[[dict[str, Any]], None] = Endpoint(
            dispatch, self._consume, max_workers=1
        ).consume
        self.consume_notification: Callable[[dict[str, Any]], None] = Endpoint(
            note_dispatch, self._consume, max_workers=1
        ).consume

    # ----------------------------------------------------------------- handlers

    def _sync_entry(self, method: str, spec: Method) -> InlineEntry:
        handler = spec.handler
        encode = _encode
        decoder = _decoder_for(spec.params_type)
        decode = None if decoder is None else decoder.decode

        def failed(exc: Exception) -> JsonRpcException:
            """The answer to what ``handler`` (or encoding its result) raised; call it
            while handling ``exc`` (an unexpected one is logged with its traceback)."""
            if isinstance(exc, RpcError):
                return _wire_exception(exc)
            return _internal(method)

        def call(params: Any) -> bytes:
            """Return the encoded result for decoded ``params``; raise the
            ``JsonRpcException`` to answer with."""
            try:
                return encode(handler(params))
            except Exception as exc:
                raise failed(exc) from None

        def entry(raw: bytes | None) -> bytes:
            """Return the encoded result for raw ``params``; raise the
            ``JsonRpcException`` to answer with."""
            if decode is None:
                return call(None)
            try:
                params = decode(b"{}" if raw is None else raw)
            except (msgspec.DecodeError, RecursionError):
                # Not the plain case: what _decode_with makes of it (``[]``, or the error
                # naming the bad field).
                try:
                    params = _decode_with(decoder, raw)  # type: ignore[arg-type]
                except (msgspec.DecodeError, RecursionError) as exc:
                    raise _invalid_params(exc) from None
            return call(params)

        return entry, (decode if _object_only(spec.params_type) else None), handler, failed

    def _async_entry(self, method: str, spec: Method) -> Callable[[Any], Any]:
        handler = spec.handler
        params_type = spec.params_type

        def entry(raw: bytes | None) -> concurrent.futures.Future[Any]:
            params = _decode_params(params_type, raw)
            key = self.current_id
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            scope = anyio.CancelScope()
            try:
                assert self.task_group is not None
                self.task_group.start_soon(
                    self._serve_async, method, handler, params, future, scope, key
                )
            except Exception:
                # Never let Endpoint answer for us: its generic error carries a traceback.
                raise _internal(method) from None
            self.inflight[key] = scope
            return future

        return entry

    async def _serve_async(
        self,
        method: str,
        handler: Callable[[Any], Awaitable[Any]],
        params: Any,
        future: concurrent.futures.Future[Any],
        scope: anyio.CancelScope,
        key: bytes,
    ) -> None:
        _request_id.set(key)  # this task's own context: visible to the handler only
        try:
            with scope:
                try:
                    if scope.cancel_called:  # cancelled before it started: never run it
                        return
                    result = await handler(params)
                    body = msgspec.Raw(_encode(result))
                except RpcError as exc:
                    future.set_exception(_wire_exception(exc))
                except Exception:
                    future.set_exception(_internal(method))
                else:
                    future.set_result(body)
        finally:
            self.inflight.pop(key, None)
            if not future.done():
                # Cancelled by $/cancelRequest (or shutdown): exactly one REQUEST_CANCELLED.
                future.set_exception(JsonRpcRequestCancelled())

    def _notification_entry(self, method: str, spec: Method) -> Callable[[Any], Any]:
        handler = spec.handler
        params_type = spec.params_type

        def entry(raw: bytes | None) -> None:
            try:
                params = _decode_params(params_type, raw)
            except JsonRpcException as exc:
                log.warning("%s: dropped notification %s: %s", self.name, method, exc.message)
                return
            if spec.is_async:
                assert self.task_group is not None
                self.task_group.start_soon(self._serve_notification, method, handler, params)
                return
            try:
                handler(params)
            except Exception:
                log_internal_error(method)

        return entry

    async def _serve_notification(
        self, method: str, handler: Callable[[Any], Awaitable[Any]], params: Any
    ) -> None:
        try:
            await handler(params)
        except Exception:
            log_internal_error(method)

    def answer_inline(
        self, id: bytes, entry: Callable[[bytes | None], bytes], params: bytes | None
    ) -> None:
        """Serve a cheap request without ``Endpoint``: call its wrapped handler (an entry
        of :attr:`inline`) and reply exactly as ``Endpoint`` would have (its result, or the
        error the wrapper raised)."""
        try:
            result = entry(params)
        except JsonRpcException as exc:
            body = encode_error_response(id, exc.to_dict(), jsonrpc=self._jsonrpc)
        else:
            body = self._result_format % (id, result)
        self._reply(id, body)

    # ----------------------------------------------------------------- output

    def _consume(self, message: dict[str, Any]) -> None:
        """Endpoint's consumer: turn its response dicts into bytes for ``reply``."""
        id = message.get("id")
        if not isinstance(id, bytes):  # Endpoint sends nothing else; be safe.
            return
        result = message.get("result", _MISSING)
        if result is not _MISSING:
            body = self._result_format % (id, result)
        else:
            body = encode_error_response(id, message["error"], jsonrpc=self._jsonrpc)
        self._reply(id, body)
