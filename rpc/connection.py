"""A JSON-RPC connection over a pair of byte streams: the thin anyio layer.

It exists to wire the sans-I/O pieces to a pair of byte streams: the framer
(:mod:`agent_bridge.rpc.framing`, which also frames output), the message layer
(:mod:`agent_bridge.rpc.messages`), python-lsp-jsonrpc's ``Endpoint`` as the state
machine for incoming requests and notifications (fenced in by
:mod:`agent_bridge.rpc.endpoint`), and the request-ID ledger (:mod:`agent_bridge.rpc.ledger`)
for every request we send.

Why each piece is where it is:

* ``Endpoint`` is fed only envelopes that passed our validation, through
  :class:`~agent_bridge.rpc.endpoint.EndpointGlue`, which guards its known defects.
  ``$/cancelRequest`` is handled here (``Endpoint``'s own handler leaves a cancelled
  queued request without a reply).
* Responses to *our* requests bypass ``Endpoint``: its client side keys futures by its
  own id generator and keeps no result type or deadline, so the ledger owns them.
* Cheap handlers run inline in the reader loop; only ``async`` handlers get a task.
  The frames of one read are served by the input's fast path, one small object,
  :class:`~agent_bridge.rpc.fastpath.FastPath`: a well-formed request for a synchronous
  method is answered straight from its envelope, its reply framed as it is made;
  everything else takes the general way (:meth:`Connection._dispatch_frame`, the only
  way into ``Endpoint``).  A read's replies are queued as one chunk, which the reader
  writes itself when the writer is idle (one write per read, no wake-up of the writer
  task); the writer task flushes everything else with one write per batch.  The frame
  encoder is chosen once, when the input's framing is known.
* The output (its queue, high-water mark and writer task) is one object the connection
  owns, :class:`~agent_bridge.rpc.outbox.Outbox`.  Every notification is queued one way,
  :attr:`Connection.notify_encoded` (a batch of encoded bodies with a common head and
  tail, framed later in one call); :meth:`Connection.notify` encodes one and queues it
  that way.
* Where the general way's replies go (a batch's into one array) and the answers to
  input that is not a message (framing errors, invalid messages, one ``-32700`` a read)
  are one object too, :class:`~agent_bridge.rpc.replies.Replies`, with no I/O of its own.

Backpressure: when more than ``Limits.outbound_high_water`` bytes wait to be written,
the reader stops reading and :meth:`Connection.notify_flow` callers wait, so memory stays
bounded when the peer stops reading.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio
import anyio.abc
import msgspec

from agent_bridge.rpc.endpoint import (
    EndpointGlue,
    current_request_id,
)
from agent_bridge.rpc.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SERVER_OVERLOADED,
    ConnectionClosed,
    RpcError,
)
from agent_bridge.rpc.fastpath import FastPath
from agent_bridge.rpc.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    FramingError,
    FramingKind,
    make_framer,
)
from agent_bridge.rpc.ledger import Ledger, LedgerEntry
from agent_bridge.rpc.messages import (
    Batch,
    Message,
    Notification,
    Request,
    Response,
    encode_error_response,
    encode_notification,
    encode_request,
    loggable,
    parse_body,
    response_id_in,
    result_template,
)
from agent_bridge.rpc.outbox import Outbox
from agent_bridge.rpc.replies import BatchReplies, Replies

__all__ = [
    "ACP_CANCEL",
    "ByteReceiver",
    "ByteSender",
    "Connection",
    "Limits",
    "Method",
    "current_request_id",
]

log = logging.getLogger("agent_bridge.rpc")


CANCEL_METHOD: Final = "$/cancelRequest"
#: The Agent Client Protocol's request cancellation: ``$/cancel_request {requestId}``.
ACP_CANCEL: Final = ("$/cancel_request", "requestId")
_encode = msgspec.json.encode


class ByteReceiver(Protocol):
    """The receiving half of a byte stream (anyio's ``ByteReceiveStream`` fits)."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """Return the next chunk; raise ``anyio.EndOfStream`` at EOF."""
        ...


class ByteSender(Protocol):
    """The sending half of a byte stream (anyio's ``ByteSendStream`` fits)."""

    async def send(self, item: bytes) -> None:
        """Write all of ``item``; raise ``anyio.BrokenResourceError``/``OSError`` on failure."""
        ...


@dataclass(frozen=True, slots=True)
class Limits:
    """Connection limits; each is tested at N and N+1."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    #: Async requests being served at once; past it a retryable "overloaded" error.
    max_inflight_requests: int = 256
    #: Bytes waiting to be written before the reader and ``notify_flow`` wait.
    outbound_high_water: int = 4 * 1024 * 1024
    read_chunk_bytes: int = 256 * 1024
    #: the command-line option that sets ``max_message_bytes``, named in the error that
    #: answers a message over it (``None``: the peer cannot set it)
    max_message_option: str | None = None


@dataclass(frozen=True, slots=True)
class Method:
    """A handler for one method.

    ``params_type`` is the msgspec type ``params`` decode into (``None``: ignore params;
    missing or null params decode from ``{}``).  ``handler`` returns any
    msgspec-encodable result, or a coroutine when ``is_async``; it raises
    :class:`RpcError` to answer with an error.
    """

    handler: Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]
    params_type: Any = None
    is_async: bool = False
    #: whether ``$/cancelRequest`` cancels it while in progress (``False``: the
    #: cancellation is ignored and the result is sent)
    cancellable: bool = True


class _NotifyEncoded(Protocol):
    """The signature of :attr:`Connection.notify_encoded`."""

    def __call__(
        self,
        bodies: Sequence[bytes],
        head: bytes = b"",
        tail: bytes = b"",
        size: int | None = None,
    ) -> bool: ...


def _default_overloaded() -> RpcError:
    return RpcError(SERVER_OVERLOADED, "too many requests in flight", {"retryable": True})


class Connection:
    """One JSON-RPC peer.  Serve it with :meth:`run`; send with :meth:`request`,
    :meth:`notify` and :meth:`notify_flow`.

    ``framing`` is how input is framed (``auto`` detects it from the first bytes); output
    uses the same framing (``Content-Length`` until detection).  ``jsonrpc=False`` omits
    the ``"jsonrpc"`` member on output and does not require it on input.  ``gate`` is
    called with each request's method before dispatch and may raise :class:`RpcError`
    (e.g. "not initialized").  ``overloaded`` makes the error sent when more than
    ``Limits.max_inflight_requests`` async requests are in flight (``SERVER_OVERLOADED`` by
    default).  ``first_request_id`` is the id of the first request sent (then counting
    up, integers only).
    """

    def __init__(
        self,
        receive: ByteReceiver,
        send: ByteSender,
        *,
        methods: Mapping[str, Method] | None = None,
        notifications: Mapping[str, Method] | None = None,
        framing: FramingKind = "auto",
        jsonrpc: bool = True,
        limits: Limits = Limits(),
        gate: Callable[[str], None] | None = None,
        name: str = "peer",
        clock: Callable[[], float] = time.monotonic,
        overloaded: Callable[[], RpcError] | None = None,
        first_request_id: int = 1,
        cancel: tuple[str, str] = (CANCEL_METHOD, "id"),
        eof_grace: float = 0.0,
    ) -> None:
        self.name = name
        #: how long the peer's requests in flight at its EOF may still answer (0: they
        #: are cancelled at once); a peer that pipes its requests and closes its output
        #: still reads the replies
        self._eof_grace = eof_grace
        #: the notification that cancels a request either way and its member naming the
        #: request (LSP's and the bridge protocol's ``$/cancelRequest {id}``; ACP's
        #: :data:`ACP_CANCEL`)
        self._cancel_method, self._cancel_key = cancel
        self._overloaded = overloaded or _default_overloaded
        self._receive = receive
        self._framer = make_framer(framing, limits.max_message_bytes)
        #: Output framing: the input's, once detected (``Content-Length`` until then).
        self._out_kind: FramingKind | None = None if framing == "auto" else framing
        self._jsonrpc = jsonrpc
        self._limits = limits
        #: the output: its queue, high-water mark and writer
        self.outbox = Outbox(
            send,
            self._out_kind or "content-length",
            limits.outbound_high_water,
            name=name,
            on_failure=self._close,
        )
        #: Queue already-encoded notification bodies, each sent as ``head + body + tail``
        #: (the one way notifications are queued; the hot path for released event
        #: batches); return whether the output is now congested (see :meth:`drained`).
        #: Nothing is framed then: the bodies wait, in order, and all that waits is framed
        #: in one call when anything else is queued or the output is written.  It is
        #: :meth:`Outbox.notify_encoded <agent_bridge.rpc.outbox.Outbox.notify_encoded>`
        #: itself (no call in between on the hot path).
        self.notify_encoded: _NotifyEncoded = self.outbox.notify_encoded
        self._gate = gate
        self._clock = clock
        self._methods: dict[str, Method] = dict(methods or {})
        self._async_methods = frozenset(m for m, spec in self._methods.items() if spec.is_async)
        #: raw ids of the in-flight requests whose method is not cancellable
        self._pinned: set[bytes] = set()
        self._uncancellable = frozenset(
            m for m, spec in self._methods.items() if spec.is_async and not spec.cancellable
        )
        self._notifications: dict[str, Method] = dict(notifications or {})
        self.ledger = Ledger(first_request_id)
        self._waiters: dict[int, anyio.Event] = {}
        self._closed = False
        self._finish_timeout = 30.0
        self._tg: anyio.abc.TaskGroup | None = None
        self.closed_event = anyio.Event()
        #: where replies go (batches) and the answers to bad input
        self.replies = Replies(
            self.outbox.write,
            jsonrpc=jsonrpc,
            max_message_bytes=limits.max_message_bytes,
            max_message_option=limits.max_message_option,
            name=name,
        )
        self._glue = EndpointGlue(
            name,
            self._methods,
            self._notifications,
            reply=self._reply,
            result_format=result_template(jsonrpc=jsonrpc),
            jsonrpc=jsonrpc,
        )
        #: The raw ids of the async requests being served (the glue's, shared).
        self._inflight = self._glue.inflight
        #: The input's fast path: it serves the frames of each read, calling the wrapped
        #: synchronous handlers itself (``rpc.`` names are reserved: the general way
        #: refuses them) and handing everything else to :meth:`_dispatch_frame`.
        self.fast = FastPath(
            {m: entry for m, entry in self._glue.inline.items() if not m.startswith("rpc.")},
            self._inflight,
            self.outbox,
            self._dispatch_frame,
            jsonrpc=jsonrpc,
            kind=self._out_kind,
            name=name,
        )
        self.fast.gated = gate is not None

    # ----------------------------------------------------------------- output

    def _reply(self, id: bytes | None, body: bytes) -> None:
        if self._pinned and id is not None:
            self._pinned.discard(id)
        self.replies.reply(id, body)

    def notify(self, method: str, params: Any = None) -> bool:
        """Queue a notification without waiting (``params`` is encodable, or
        ``msgspec.Raw``); return whether the output is now congested (see :meth:`drained`)."""
        return self.notify_encoded(
            [
                encode_notification(
                    method, None if params is None else _encode(params), jsonrpc=self._jsonrpc
                )
            ]
        )

    def after_reply(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once the asynchronous handler that calls this has returned: its
        reply is queued first (a handler's reply is queued as it returns, before any task
        it started runs), so what ``fn`` queues follows it.  Nothing is called once the
        connection has stopped serving."""
        tg = self._tg
        if tg is None or self._closed:
            return

        async def call() -> None:
            if not self._closed:
                fn()

        tg.start_soon(call)

    async def notify_flow(self, method: str, params: Any = None) -> None:
        """Queue a notification, then wait while the output buffer is over its high water."""
        if self.notify(method, params) and not self._closed:
            await self.drained()

    @property
    def congested(self) -> bool:
        """Whether more than the high-water mark of output is waiting to be written."""
        return self.outbox.congested

    async def drained(self) -> None:
        """Wait until the output buffer is at or below half its high water (or closed)."""
        await self.outbox.drained()

    # ----------------------------------------------------------------- input

    def _handle(self, message: Message, batch: BatchReplies | None) -> None:
        if isinstance(message, Request):
            self._on_request(message, batch)
        elif isinstance(message, Notification):
            self._on_notification(message)
        elif isinstance(message, Response):
            self._on_response(message)
        elif message.reply:
            self.replies.invalid(message, batch)
        else:
            log.warning("%s: dropped message: %s", self.name, message.message)

    def _on_request(self, request: Request, batch: BatchReplies | None) -> None:
        key = request.id
        error: RpcError | None = None
        if key in self._inflight:
            error = RpcError(INVALID_REQUEST, "a request with this id is still pending")
        else:
            gate = self._gate
            if gate is not None:
                try:
                    gate(request.method)
                except RpcError as exc:
                    error = exc
            if (
                error is None
                and len(self._inflight) >= self._limits.max_inflight_requests
                and request.method in self._async_methods
            ):
                error = self._overloaded()
        if error is not None:
            self.replies.answer(
                encode_error_response(key, error.to_wire(), jsonrpc=self._jsonrpc), batch
            )
            return
        if batch is not None:
            self.replies.expect(key, batch)
        glue = self._glue
        inline = glue.inline.get(request.method)
        if inline is not None:
            glue.answer_inline(key, inline[0], request.params)
            return
        if request.method in self._uncancellable:
            self._pinned.add(key)
        glue.current_id = key
        glue.consume_request(
            {"jsonrpc": "2.0", "id": key, "method": request.method, "params": request.params}
        )

    def _on_notification(self, note: Notification) -> None:
        if note.method == self._cancel_method:
            self._on_cancel(note.params)
            return
        if note.method not in self._notifications:
            if not note.method.startswith("$/"):
                log.info("%s: ignored unknown notification %s", self.name, loggable(note.method))
            return
        self._glue.consume_notification(
            {"jsonrpc": "2.0", "method": note.method, "params": note.params}
        )

    def _on_cancel(self, params: bytes | None) -> None:
        if params is None:
            return
        try:
            value = msgspec.json.decode(params)
        except (msgspec.DecodeError, RecursionError):
            return
        if not isinstance(value, dict) or self._cancel_key not in value:
            return
        raw = value[self._cancel_key]
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            return
        key = _encode(raw)
        scope = self._inflight.get(key)
        if scope is None:
            return
        if key in self._pinned:
            log.info("%s: ignored %s for an uncancellable request", self.name, self._cancel_method)
            return
        scope.cancel()

    def _on_response(self, response: Response) -> None:
        if response.malformed is not None:
            entry = self.ledger.settle_error(
                response.id,
                RpcError(INTERNAL_ERROR, "malformed response", {"reason": response.malformed}),
            )
        elif response.error is not None:
            err = response.error
            entry = self.ledger.settle_error(response.id, RpcError(err.code, err.message, err.data))
        else:
            assert response.result is not None
            entry = self.ledger.settle_result(response.id, response.result)
        if entry is None:
            log.warning("%s: dropped response to unknown id %r", self.name, response.id[:40])

    def _oversized_response(self, error: FramingError) -> bool:
        """Settle the request a response over the message limit answers, when its start
        shows one (``response_id_in``): the request fails at once, where it waited for an
        answer that had come and been skipped (for ever, without a timeout).  A response
        is never answered; whether the start showed one."""
        raw_id = response_id_in(error.body)
        if raw_id is None:
            return False
        self.replies.framing_errors += 1
        log.warning("%s: framing error: a response %s", self.name, error.detail)
        failure = RpcError(
            INTERNAL_ERROR,
            "the response exceeds the message limit",
            {"reason": "too_large", "limit": self._limits.max_message_bytes},
        )
        if self.ledger.settle_error(raw_id, failure) is None:
            log.warning("%s: dropped response to unknown id %r", self.name, raw_id[:40])
        return True

    def _on_batch(self, batch: Batch) -> None:
        replies = self.replies.batch(batch)
        for item in batch.items:
            self._handle(item, replies)

    def feed(self, data: bytes) -> None:
        """Process bytes read from the peer (exposed for tests and in-process use)."""
        self.replies.reads += 1
        items = self._framer.feed(data)
        if self._out_kind is None and self._framer.kind != "auto":
            self._out_kind = self._framer.kind
            self.outbox.set_framing(self._out_kind)
            self.fast.set_framing(self._out_kind)
        if items:
            self.fast.serve(items)

    def set_gate(self, gate: Callable[[str], None] | None) -> None:
        """Replace the per-request gate (``None``: no gate, the fast path)."""
        self._gate = gate
        self.fast.gated = gate is not None

    def _dispatch_frame(self, item: bytes | FramingError) -> None:
        if type(item) is not bytes:
            assert isinstance(item, FramingError)
            if item.reason == "too_large" and self._oversized_response(item):
                return
            self.replies.framing_error(item, self._closed)
            return
        message = parse_body(item, require_jsonrpc=self._jsonrpc)
        kind = type(message)
        if kind is Request:
            self._on_request(message, None)  # type: ignore[arg-type]
        elif kind is Batch:
            self._on_batch(message)  # type: ignore[arg-type]
        else:
            self._handle(message, None)  # type: ignore[arg-type]

    def _on_read(self, data: bytes) -> bool:
        """Serve one read: its replies are written at once (see :meth:`Outbox.flush_now
        <agent_bridge.rpc.outbox.Outbox.flush_now>`); return whether to read on."""
        outbox = self.outbox
        outbox.holding = True
        try:
            self.feed(data)
        finally:
            outbox.holding = False
        outbox.flush_now()
        return not (self._closed or self.fast.stopped or outbox.congested)

    async def _reader(self) -> None:
        receive = self._receive
        chunk = self._limits.read_chunk_bytes
        outbox = self.outbox
        on_read = self._on_read
        # A stream that can call the reader back per chunk (agent_bridge.rpc.stdio's) saves a task
        # wake-up per read; any other is read in a loop.
        pump: Callable[[Callable[[bytes], bool], int], Awaitable[None]] | None = getattr(
            receive, "pump", None
        )
        while not self._closed and not self.fast.stopped:
            if outbox.congested:
                await outbox.drained()
                continue
            try:
                if pump is not None:
                    await pump(on_read, chunk)
                else:
                    on_read(await receive.receive(chunk))
            except (
                anyio.EndOfStream,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
                OSError,
            ):
                break
        if self.fast.stopped:
            return
        for item in self._framer.eof():
            self._dispatch_frame(item)

    # ----------------------------------------------------------------- requests

    def open_request(
        self, method: str, params: Any, *, result_type: Any = Any, timeout: float | None = None
    ) -> LedgerEntry[Any]:
        """Record and send a request; return its ledger entry (await it with :meth:`wait`)."""
        deadline = None if timeout is None else self._clock() + timeout
        event = anyio.Event()
        entry: LedgerEntry[Any] = self.ledger.open(
            method, result_type, deadline=deadline, on_settle=lambda _e: event.set()
        )
        self._waiters[entry.id] = event
        if self._closed:
            self.ledger.fail_all(f"{self.name} connection is closed")
        else:
            self.outbox.write(
                encode_request(
                    entry.id,
                    method,
                    None if params is None else _encode(params),
                    jsonrpc=self._jsonrpc,
                )
            )
        return entry

    async def wait(self, entry: LedgerEntry[Any]) -> Any:
        """Wait for ``entry`` to settle; return its result or raise its :class:`RpcError`."""
        event = self._waiters.get(entry.id)
        try:
            if event is not None and not entry.settled:
                if entry.deadline is None:
                    await event.wait()
                else:
                    with anyio.move_on_after(max(0.0, entry.deadline - self._clock())):
                        await event.wait()
                    if not entry.settled:
                        self.ledger.expire(max(self._clock(), entry.deadline))
        finally:
            self._waiters.pop(entry.id, None)
        return entry.outcome()

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        result_type: Any = Any,
        timeout: float | None = None,
    ) -> Any:
        """Send a request and wait for its result (decoded as ``result_type``).

        Raises the peer's error as :class:`RpcError`, :class:`ConnectionClosed` when the
        peer goes away first, :class:`RequestTimedOut` at the deadline.  When the caller
        is cancelled the entry is settled as cancelled and ``$/cancelRequest`` is sent.
        """
        entry = self.open_request(method, params, result_type=result_type, timeout=timeout)
        try:
            return await self.wait(entry)
        except anyio.get_cancelled_exc_class():
            self.cancel_request(entry)
            raise

    def cancel_request(self, entry: LedgerEntry[Any], *, notify_peer: bool = True) -> bool:
        """Settle a pending request as cancelled; tell the peer unless told not to.

        Returns whether the entry was still pending (and so is now cancelled).
        """
        if self.ledger.cancel(entry.id) is None:
            return False
        if notify_peer and not self._closed:
            self.notify(self._cancel_method, {self._cancel_key: entry.id})
        return True

    # ----------------------------------------------------------------- lifecycle

    @property
    def closed(self) -> bool:
        """Whether the connection has stopped (EOF, write failure or :meth:`close`)."""
        return self._closed

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.ledger.fail_all(f"{self.name} connection closed")
        for scope in list(self._inflight.values()):
            scope.cancel()
        self.outbox.close()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
        self.closed_event.set()

    def close(self) -> None:
        """Stop serving: fail pending requests, cancel handlers, stop reading and writing."""
        self._close()

    def finish(self, timeout: float = 30.0) -> None:
        """Stop reading, let the requests in flight answer (bounded by ``timeout``), write
        every reply produced, then close (what ``exit`` does: a ``shutdown`` written
        together with it still gets its reply)."""
        self.fast.stopped = True
        self._finish_timeout = timeout

    async def _finish_inflight(self, timeout: float | None = None) -> None:
        with anyio.move_on_after(self._finish_timeout if timeout is None else timeout):
            while self._inflight and not self._closed:
                await anyio.sleep(0.005)

    async def flush(self, timeout: float = 5.0) -> None:
        """Wait (bounded) until everything queued so far has been written."""
        await self.outbox.flush(timeout)

    async def run(self) -> None:
        """Serve until the peer's EOF, a write failure or :meth:`close`.

        On EOF, every pending request of ours is failed (the peer can no longer answer),
        the peer's requests in flight get ``eof_grace`` seconds to answer, queued output
        is flushed (bounded), then every handler still in flight is cancelled.  Returns
        normally in every case.
        """
        try:
            async with anyio.create_task_group() as tg:
                self._tg = self._glue.task_group = tg
                tg.start_soon(self.outbox.run)
                await self._reader()
                if self.fast.stopped:
                    await self._finish_inflight()
                elif self._eof_grace > 0 and self._inflight:
                    self.ledger.fail_all(f"{self.name} closed its output")
                    await self._finish_inflight(self._eof_grace)
                await self.flush()
                self._close()
        finally:
            self._closed = True
            self.outbox.closed = True
            self.ledger.fail_all(f"{self.name} connection closed")
            self.closed_event.set()


__all__ += ["ConnectionClosed"]
