"""The fast path of a connection's input: the frames of one read, served in order, the
common request answered straight from its envelope.

It exists because a cheap request (a well-formed request for a synchronous method, no
gate) is most of what a busy peer sends, and the general way (:mod:`agent_bridge.rpc.messages`'
per-message objects, then python-lsp-jsonrpc's ``Endpoint`` through
:class:`~agent_bridge.rpc.endpoint.EndpointGlue`) costs several times what answering it does.
:class:`FastPath` answers such a request as the general way would have: the checks of the
message layer and of the connection that can apply to it, then the method's wrapped
handler (:data:`~agent_bridge.rpc.endpoint.InlineEntry`; params its object-only decoder
does not take go the general way, which says what is wrong with them).  Its reply is framed as it is
made (one format of a framed template) and kept back, so the replies of one read are
queued as one chunk.  Everything else goes, as it came, to the connection's general way,
after the replies kept back so far (the output keeps the input's order); output a
handler queues itself goes after the replies before its request's.

The connection (:class:`~agent_bridge.rpc.connection.Connection`) owns the output; this object only
reads it and calls the :class:`Output` methods below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

import msgspec
from pylsp_jsonrpc.exceptions import JsonRpcException

from agent_bridge.rpc.endpoint import InlineEntry, log_internal_error
from agent_bridge.rpc.framing import FramingError, FramingKind, frame_encoder
from agent_bridge.rpc.messages import decode_envelope, encode_error_response, result_template

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import anyio

__all__ = ["FastPath", "Output"]

_NO_BODY: Final = b""  # a handler was called: a reply is due
_NO_ENVELOPE: Final = decode_envelope(b"{}")
_OBJECT_OR_ARRAY: Final = (b"{", b"[")


class Output(Protocol):
    """What the fast path needs of its connection's output."""

    #: the queued output chunks (read: a handler that queued output made it longer)
    _out: list[bytes]
    #: notification bodies not framed yet (read: whether there are any)
    _raw: list[bytes]
    #: whether the connection stopped serving input (``finish``)
    _finishing: bool
    #: the per-request gate (the fast path serves only while there is none)
    _gate: Callable[[str], None] | None

    def _frame_raw(self) -> None:
        """Frame the waiting notification bodies and queue them."""

    def _queue_replies(self, frames: list[bytes], at: int) -> None:
        """Queue ``frames`` as one chunk at position ``at`` of the output."""

    def _dispatch_frame(self, item: bytes | FramingError) -> None:
        """Serve ``item`` the general way."""


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
    """Serves the frames of one read for ``output`` (see the module docstring).

    ``inline`` maps method names to their wrapped synchronous handlers (``rpc.`` names
    are left out: the general way refuses them); ``inflight`` is the raw ids of the async
    requests being served (shared with the endpoint glue).  :meth:`set_framing` is called
    once the input's framing is known.
    """

    __slots__ = (
        "_extra",
        "_frame",
        "_inflight",
        "_inline",
        "_jsonrpc",
        "_name",
        "_output",
        "_template",
    )

    def __init__(
        self,
        name: str,
        output: Output,
        inline: Mapping[str, InlineEntry],
        inflight: Mapping[bytes, anyio.CancelScope],
        *,
        jsonrpc: bool,
        kind: FramingKind | None,
    ) -> None:
        self._name = name
        self._output = output
        #: keyed by ``object``: an envelope's method may be ``None``
        self._inline: dict[object, InlineEntry] = {
            m: e for m, e in inline.items() if not m.startswith("rpc.")
        }
        self._inflight = inflight
        self._jsonrpc = jsonrpc
        self._template, self._extra = _framed_result(kind, jsonrpc)
        self._frame = frame_encoder(kind or "content-length")

    def set_framing(self, kind: FramingKind) -> None:
        """Frame replies for the output framing ``kind`` from now on."""
        self._template, self._extra = _framed_result(kind, self._jsonrpc)
        self._frame = frame_encoder(kind)

    def serve(self, items: list[bytes | FramingError]) -> None:
        """Serve the frames of one read, in order (see the module docstring)."""
        conn = self._output
        inline = self._inline
        inflight = self._inflight
        template = self._template
        extra = self._extra  # -1: newline framing, no length to put in
        frame = self._frame
        jsonrpc = self._jsonrpc
        lenient = not jsonrpc
        decode_env = decode_envelope
        out = conn._out
        replies: list[bytes] = []
        if conn._raw:
            conn._frame_raw()
        mark = len(out)
        for item in items:
            if conn._finishing:
                break  # input after ``finish`` (e.g. after ``exit``) is not served
            try:
                body: bytes | None = None
                if type(item) is bytes and conn._gate is None:
                    try:
                        env = decode_env(item)
                    except (msgspec.DecodeError, RecursionError):
                        env = _NO_ENVELOPE  # no method: the slow way
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
                            entry, decode, call = spec
                            raw = env.params
                            try:
                                if decode is not None:
                                    try:
                                        params = decode(raw or b"{}")
                                    except (msgspec.DecodeError, RecursionError):
                                        pass  # the slow way says what is wrong
                                    else:
                                        body = _NO_BODY
                                        result = call(params)
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
                    if conn._raw or len(out) != mark:
                        # The handler queued output: the replies before it go first.
                        if replies:
                            conn._queue_replies(replies, mark)
                            replies = []
                        if conn._raw:
                            conn._frame_raw()
                        mark = len(out)
                    replies.append(body)
                    continue
                if replies:
                    conn._queue_replies(replies, mark)
                    replies = []
                conn._dispatch_frame(item)
                mark = len(out)
            except Exception:
                # A bug, never the peer's fault: log it and keep serving the stream.
                log_internal_error(f"{self._name} message")
        if replies:
            # At ``mark``: before what a handler that failed queued after them (if any).
            conn._queue_replies(replies, mark)
