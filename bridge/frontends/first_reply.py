"""The first reply, before the rest of the bridge is loaded (``agent-bridge serve``).

A host spawns the bridge and waits for the reply to its ``initialize``; the runtime, the
providers and the anyio connection are needed only after it.  So ``serve`` opens its
history (a journal that cannot be opened still stops the bridge before any reply), then
reads the first input itself, and when that is exactly one framed ``initialize`` request
that the front-end would accept, answers it at once with the bytes the front-end would
have written (:mod:`~agent_bridge.frontends.handshake` decides for both), and only then
loads the rest; the front-end starts initialized
(:meth:`~agent_bridge.frontends.bridge_protocol.BridgeFrontend.adopt`).

Anything else is not answered here: more than one message or part of one, another
method, params the front-end would refuse, an unsupported protocol version, EOF.  The
bytes read are then handed to the connection unchanged (:attr:`FirstInput.data`), and it
answers them as it always does.

This module imports only the sans-I/O framing and message layer and the wire types (not
even :mod:`logging`: the caller configures it, and logs the early answer, afterwards).
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final

import msgspec

from agent_bridge.frontends.handshake import Handshake, agree
from agent_bridge.rpc.framing import FramingKind, encode_frame, make_framer
from agent_bridge.rpc.messages import Request, parse_body, result_template
from agent_bridge.wire.methods import InitializeParams

__all__ = ["FirstInput", "Stopped", "answer_first", "signalled"]

_decoder = msgspec.json.Decoder(InitializeParams)


class Stopped(Exception):
    """SIGTERM or SIGINT arrived while waiting for the first input: the bridge ends as
    it does at the host's EOF."""


class FirstInput:
    """What :func:`answer_first` read: :attr:`data`, the bytes not answered (the
    connection reads them first); :attr:`framing`, the framing to serve with (detected,
    for ``auto``, once answered); and the ``initialize`` answered (:attr:`params` and its
    :attr:`handshake`), or ``None``."""

    __slots__ = ("data", "framing", "handshake", "params")

    def __init__(
        self,
        data: bytes,
        framing: FramingKind,
        params: InitializeParams | None = None,
        handshake: Handshake | None = None,
    ) -> None:
        self.data = data
        self.framing = framing
        self.params = params
        self.handshake = handshake


_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
_held: list[int] = []


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise Stopped


def _hold(signum: int, _frame: FrameType | None) -> None:
    _held.append(signum)


@contextmanager
def _stoppable() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Stopped` inside; after it they are held (see
    :func:`signalled`) until the event loop installs its own handlers."""
    for sig in _SIGNALS:
        signal.signal(sig, _stop)
    try:
        yield
    finally:
        for sig in _SIGNALS:
            signal.signal(sig, _hold)


def signalled() -> bool:
    """Whether SIGTERM or SIGINT arrived after :func:`answer_first` returned and before
    the event loop's handlers replaced its own (the bridge then stops as if the signal
    had come later)."""
    return bool(_held)


def _read(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, 65536)
        except BlockingIOError:
            select.select([fd], [], [])


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd``; a host that is gone is left to the connection, which
    finds out on its own (EOF, or its first write)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])
        except OSError:
            return


def answer_first(
    fd_in: int,
    fd_out: int,
    framing: FramingKind,
    *,
    durable: bool,
    max_message_bytes: int,
) -> FirstInput:
    """Read ``fd_in`` until the first message (or EOF) and answer it on ``fd_out`` if it
    is an ``initialize`` the front-end would accept (``durable``: whether history is a
    journal); return what was read.  Raises :class:`Stopped` on SIGTERM or SIGINT while
    waiting; from its return on, those signals are held (:func:`signalled`)."""
    framer = make_framer(framing, max_message_bytes)
    chunks: list[bytes] = []  # joined once: a first message read in many chunks is linear
    with _stoppable():
        while True:
            chunk = _read(fd_in)
            if not chunk:
                return FirstInput(b"".join(chunks), framing)
            chunks.append(chunk)
            items = framer.feed(chunk)
            if items:
                break
    data = b"".join(chunks)
    unanswered = FirstInput(data, framing)
    kind = framer.kind
    body = items[0]
    if len(items) != 1 or not isinstance(body, bytes) or encode_frame(kind, body) != data:
        return unanswered
    message = parse_body(body)
    if not isinstance(message, Request) or message.method != "initialize":
        return unanswered
    try:
        params = _decoder.decode(b"{}" if message.params is None else message.params)
    except (msgspec.DecodeError, RecursionError):
        return unanswered
    handshake = agree(params, durable=durable)
    if handshake is None:
        return unanswered
    reply = result_template() % (message.id, msgspec.json.encode(handshake.result))
    _write_all(fd_out, encode_frame(kind, reply))
    return FirstInput(b"", kind, params, handshake)
