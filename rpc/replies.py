"""Where a connection's replies go, and how input that is not a message is answered.

It exists so that :class:`~agent_bridge.rpc.connection.Connection` only reads, dispatches
and waits: the bookkeeping of replies is one small object with no I/O of its own.  It
hands framed-to-be bodies to ``write`` (the :class:`~agent_bridge.rpc.outbox.Outbox`'s).

* **Batches.**  The replies to the members of a batch are sent as one array, once every
  member that is due a reply has one (:meth:`Replies.batch`, :meth:`Replies.expect`,
  :meth:`Replies.reply`); every other reply is queued at once.
* **Bad input.**  Bytes the framer rejected (:meth:`Replies.framing_error`) and messages
  that are not valid (:meth:`Replies.invalid`) are answered with a classified error,
  with the request's id when the damaged bytes still name one.  A read's unparseable
  messages get one ``-32700`` reply (the first); the rest are counted in
  :attr:`Replies.parse_errors_unanswered` (newline garbage would otherwise cost one
  reply per line).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agent_bridge.rpc.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from agent_bridge.rpc.framing import FramingError
from agent_bridge.rpc.messages import (
    Batch,
    Invalid,
    Request,
    encode_error_response,
    parse_body,
    request_id_in,
)

__all__ = ["BatchReplies", "Replies"]

log = logging.getLogger("agent_bridge.rpc")


class BatchReplies:
    """The replies of one batch, gathered until ``expected`` of them are in."""

    __slots__ = ("bodies", "expected")

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.bodies: list[bytes] = []


class Replies:
    """The replies of one connection (see the module docstring).

    ``write`` queues one body; ``jsonrpc`` says whether replies carry ``"jsonrpc"`` (and
    whether a damaged request must have it to be answered by id); ``max_message_bytes``
    and ``max_message_option`` are named in the answer to a message over the limit.
    """

    __slots__ = (
        "_batch_of",
        "_jsonrpc",
        "_max_message_bytes",
        "_max_message_option",
        "_name",
        "_parse_error_read",
        "_write",
        "framing_errors",
        "on_parse_error",
        "parse_errors_unanswered",
        "reads",
    )

    def __init__(
        self,
        write: Callable[[bytes], None],
        *,
        jsonrpc: bool,
        max_message_bytes: int,
        max_message_option: str | None,
        name: str,
    ) -> None:
        self._write = write
        self._jsonrpc = jsonrpc
        self._max_message_bytes = max_message_bytes
        self._max_message_option = max_message_option
        self._name = name
        #: the batch each request of one awaits its reply in, by raw id
        self._batch_of: dict[bytes, BatchReplies] = {}
        #: input the framer rejected so far
        self.framing_errors = 0
        #: reads of the input so far (the connection counts them), and the one whose
        #: parse error was last answered
        self.reads = 0
        self._parse_error_read = -1
        self.parse_errors_unanswered = 0
        #: Called with nothing each time input that is not JSON is answered with a parse
        #: error (``serve`` on a terminal uses it to tell a person what to type).
        self.on_parse_error: Callable[[], None] | None = None

    # ----------------------------------------------------------------- replies

    def reply(self, id: bytes | None, body: bytes) -> None:
        """Queue ``body``, the reply to request ``id``: into its batch's array when it
        is a member of one (the array is queued once it is complete), else at once."""
        if self._batch_of and id is not None:
            batch = self._batch_of.pop(id, None)
            if batch is not None:
                self.add(batch, body)
                return
        self._write(body)

    def answer(self, body: bytes, batch: BatchReplies | None) -> None:
        """Queue ``body`` into ``batch`` (``None``: at once)."""
        if batch is not None:
            self.add(batch, body)
        else:
            self._write(body)

    def add(self, batch: BatchReplies, body: bytes) -> None:
        """Add ``body`` to ``batch``; queue the array once every reply is in."""
        batch.bodies.append(body)
        if len(batch.bodies) == batch.expected:
            self._write(b"[" + b",".join(batch.bodies) + b"]")

    @staticmethod
    def batch(batch: Batch) -> BatchReplies | None:
        """Return where the replies of ``batch``'s members gather (``None``: no member
        is due one: a batch of notifications is answered with nothing)."""
        expected = sum(
            1
            for item in batch.items
            if isinstance(item, Request) or (isinstance(item, Invalid) and item.reply)
        )
        return BatchReplies(expected) if expected else None

    def expect(self, id: bytes, batch: BatchReplies) -> None:
        """Let the reply to request ``id`` go into ``batch`` (see :meth:`reply`)."""
        self._batch_of[id] = batch

    # ----------------------------------------------------------------- bad input

    def _parse_error_unanswered(self) -> bool:
        """Whether to leave a parse error unanswered: one was answered in this read
        already (counted in :attr:`parse_errors_unanswered`)."""
        if self._parse_error_read != self.reads:
            self._parse_error_read = self.reads
            return False
        if not self.parse_errors_unanswered:
            log.warning(
                "%s: more unparseable input in one read: answered once per read", self._name
            )
        self.parse_errors_unanswered += 1
        return True

    def invalid(self, message: Invalid, batch: BatchReplies | None) -> None:
        """Answer ``message``, an invalid message due a reply, with its error (into
        ``batch`` when it is a member of one)."""
        if message.code == PARSE_ERROR:
            if batch is None and self._parse_error_unanswered():
                return
            if self.on_parse_error is not None:
                self.on_parse_error()
        error: dict[str, Any] = {"code": message.code, "message": message.message}
        if message.code == INVALID_PARAMS:
            error["data"] = {"path": "params"}
        self.answer(encode_error_response(message.id, error, jsonrpc=self._jsonrpc), batch)

    def framing_error(self, error: FramingError, closed: bool) -> None:
        """Count and answer input the framer rejected: with the request's id when the
        damaged bytes still name one (a lying length; the start of a message over the
        limit), else with id ``null`` (``-32600`` for a message over the limit, naming
        the limit and the option that sets it, ``-32700`` for bytes that are not a
        frame).  Nothing is answered at EOF (``truncated``: nobody is left to read it) or
        once the connection is ``closed``."""
        self.framing_errors += 1
        log.warning("%s: framing error: %s", self._name, error.detail)
        if error.reason == "truncated" or closed:
            return
        id: bytes | None = None
        code = INVALID_REQUEST if error.reason in ("too_large", "length_mismatch") else PARSE_ERROR
        if code == PARSE_ERROR and self._parse_error_unanswered():
            return
        data: dict[str, Any] = {"reason": error.reason}
        detail = error.detail
        if error.reason == "too_large":
            id = request_id_in(error.body)
            data["limit"] = self._max_message_bytes
            option = self._max_message_option
            if option:
                data["option"] = option
                detail += f" (raise it with {option})"
        elif error.body:
            message = parse_body(error.body, require_jsonrpc=self._jsonrpc)
            if isinstance(message, Request):
                id = message.id
        self._write(
            encode_error_response(
                id,
                {"code": code, "message": "Framing error: " + detail, "data": data},
                jsonrpc=self._jsonrpc,
            )
        )
