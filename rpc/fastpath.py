"""The fast path of a connection's input: the frames of one read served in order, the
common request answered straight from its envelope.

It exists so that the connection's hot loop is one small object with one job, apart from
the general way in (:meth:`Connection._dispatch_frame
<agent_bridge.rpc.connection.Connection._dispatch_frame>`, the only way into
``Endpoint``).  The common message is a well-formed request for a synchronous method;
:meth:`FastPath.serve` answers it as the general way would have answered it (the checks
of the message layer and of the connection's request path that can apply to it, then
the method's wrapped handler, an :data:`~agent_bridge.rpc.endpoint.InlineEntry`), off
``Endpoint`` and off the per-message objects of :mod:`agent_bridge.rpc.messages`, its reply
framed as it is made (one format of a framed template).  A read's replies are kept back
and queued in the :class:`~agent_bridge.rpc.outbox.Outbox` as one chunk; everything else
goes, as it came, to the general way, after the replies kept back so far, so that the
output keeps the input's order.

It does no I/O: it queues into the outbox (which the connection's reader or writer
writes) and calls the connection back for the general way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

import msgspec
from pylsp_jsonrpc.exceptions import JsonRpcException

from agent_bridge.rpc.endpoint import InlineEntry, log_internal_error
from agent_bridge.rpc.framing import FramingError, FramingKind
from agent_bridge.rpc.messages import decode_envelope, encode_error_response, result_template
from agent_bridge.rpc.outbox import Outbox

__all__ = ["FastPath"]

_NO_BODY: Final = b""  # a handler was called: a reply is due
_encode: Final = msgspec.json.encode
_NO_ENVELOPE: Final = decode_envelope(b"{}")
_OBJECT_OR_ARRAY: Final = (b"{", b"[")


def _framed_result(kind: FramingKind | None, jsonrpc: bool) -> tuple[bytes, int]:
    """Return the template of a framed result response for the output framing ``kind``
    and the length of its body less that of the id and result: ``(template, -1)``, to
    fill as ``template % (id, result)``, for newline framing; for ``Content-Length``
    ``(template, extra)``, to fill as ``template % (extra + len(id) + len(result), id,
    result)``."""
    body = result_template(jsonrpc=jsonrpc)
    if kind == "newline":
        return body + b"\n", -1
    return b"Content-Length: %d\r\n\r\n" + body, len(body % (b"", b""))


class FastPath:
    """Serves the frames of one read for one connection (see the module's docstring).

    ``entries`` are the synchronous handlers it may call itself, by method; ``inflight``
    the raw ids of the async requests being served (shared with the connection: a
    request reusing one goes the general way, which refuses it); ``slow`` serves one
    frame the general way; ``kind`` is the output framing (``None``: not known yet,
    ``Content-Length`` until it is); ``name`` names the connection in the log.  The
    connection sets :attr:`gated` while it has a per-request gate (everything goes the
    general way then) and :attr:`stopped` once it finishes (nothing more of the input is
    served).
    """

    __slots__ = (
        "_extra",
        "_inflight",
        "_jsonrpc",
        "_name",
        "_outbox",
        "_slow",
        "_template",
        "entries",
        "gated",
        "stopped",
    )

    def __init__(
        self,
        entries: Mapping[object, InlineEntry],
        inflight: Mapping[bytes, object],
        outbox: Outbox,
        slow: Callable[[bytes | FramingError], None],
        *,
        jsonrpc: bool,
        kind: FramingKind | None,
        name: str,
    ) -> None:
        #: the handlers answered here, by method (empty: everything goes the general way)
        self.entries: Mapping[object, InlineEntry] = entries
        self._inflight = inflight
        self._outbox = outbox
        self._slow = slow
        self._jsonrpc = jsonrpc
        self._name = name
        self._template, self._extra = _framed_result(kind, jsonrpc)
        #: whether requests pass a gate first (the general way's job)
        self.gated = False
        #: whether the connection has stopped serving its input
        self.stopped = False

    def set_framing(self, kind: FramingKind) -> None:
        """Frame replies as ``kind`` from now on (the input's framing, once detected)."""
        self._template, self._extra = _framed_result(kind, self._jsonrpc)

    def serve(self, items: list[bytes | FramingError]) -> None:
        """Serve the frames of one read, in order (see the module's docstring).

        Params that a method's object-only decoder does not take go the general way,
        which says what is wrong with them.  Output a handler queues itself goes after
        the replies before its request's.  A bug (never the peer's fault) is logged and
        the rest of the read is served; nothing is raised.
        """
        inline = self.entries
        inflight = self._inflight
        template = self._template
        extra = self._extra  # -1: newline framing, no length to put in
        outbox = self._outbox
        slow = self._slow
        frame = outbox.frame
        jsonrpc = self._jsonrpc
        lenient = not jsonrpc
        encode = _encode
        decode_env = decode_envelope
        out = outbox.out
        replies: list[bytes] = []
        if outbox.raw:
            outbox.frame_raw()
        mark = len(out)
        for item in items:
            if self.stopped:
                break  # input after ``finish`` (e.g. after ``exit``) is not served
            try:
                body: bytes | None = None
                if type(item) is bytes and not self.gated:
                    try:
                        env = decode_env(item)
                    except (msgspec.DecodeError, RecursionError):
                        env = _NO_ENVELOPE  # no method: the general way
                    spec = inline.get(env.method)
                    if (
                        spec is not None
                        and env.id
                        and (env.jsonrpc == "2.0" or (lenient and env.jsonrpc is None))
                    ):
                        key = bytes(env.id)
                        if (key.isdigit() or key[:1] == b'"') and not (
                            inflight and key in inflight
                        ):
                            entry, decode, handler, failed = spec
                            raw = env.params
                            try:
                                if decode is not None:
                                    try:
                                        params = decode(raw or b"{}")
                                    except (msgspec.DecodeError, RecursionError):
                                        pass  # the general way says what is wrong
                                    else:
                                        body = _NO_BODY
                                        try:
                                            result = encode(handler(params))
                                        except Exception as exc:
                                            raise failed(exc) from None
                                else:
                                    data = bytes(raw) if raw else None
                                    if data is None or data[:1] in _OBJECT_OR_ARRAY:
                                        body = _NO_BODY
                                        result = entry(data)
                            except JsonRpcException as exc:
                                body = frame(
                                    encode_error_response(key, exc.to_dict(), jsonrpc=jsonrpc)
                                )
                            else:
                                if body is not None:
                                    if extra < 0:
                                        body = template % (key, result)
                                    else:
                                        body = template % (
                                            extra + len(key) + len(result),
                                            key,
                                            result,
                                        )
                if body is not None:
                    if outbox.raw or len(out) != mark:
                        # The handler queued output: the replies before it go first.
                        if replies:
                            outbox.insert(b"".join(replies), mark)
                            replies = []
                        if outbox.raw:
                            outbox.frame_raw()
                        mark = len(out)
                    replies.append(body)
                    continue
                if replies:
                    outbox.insert(b"".join(replies), mark)
                    replies = []
                slow(item)
                mark = len(out)
            except Exception:
                # A bug, never the peer's fault: log it and keep serving the stream.
                log_internal_error(f"{self._name} message")
        if replies:
            # At ``mark``: before what a handler that failed queued after them (if any).
            outbox.insert(b"".join(replies), mark)
