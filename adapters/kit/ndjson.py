"""A bounded NDJSON reader over a child's stdout.

Providers that speak newline-delimited JSON without JSON-RPC (Claude Code's stream-json)
still need what the project's framer already does: split lines in any chunking, skip
blank lines, and refuse a line above a size limit without buffering it.
:func:`read_ndjson` feeds a byte stream through :class:`~agent_bridge.rpc.framing.NewlineFramer`
and hands every line (or the framer's ``too_large`` error) to the adapter, in order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import anyio.abc

from agent_bridge.rpc.framing import FramingError, NewlineFramer

__all__ = ["DEFAULT_CHUNK", "LineHandler", "read_ndjson"]

#: How much is asked of the stream per read.
DEFAULT_CHUNK: Final = 256 * 1024

_STREAM_ENDED: Final = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)

#: Receives one line (without its newline) or a :class:`FramingError` (``too_large``).
LineHandler = Callable[[bytes | FramingError], Awaitable[None]]


async def read_ndjson(
    stream: anyio.abc.ByteReceiveStream,
    handle: LineHandler,
    *,
    max_line: int,
    chunk: int = DEFAULT_CHUNK,
    deliver_unterminated: bool = False,
) -> None:
    """Read ``stream`` until it ends, awaiting ``handle`` for each non-blank line (a
    trailing ``\\r`` dropped) and for each line longer than ``max_line`` bytes (a
    ``too_large`` :class:`FramingError`; the line is skipped, never buffered whole).

    Returns at EOF or when the stream is closed or broken; never raises for the stream's
    end.  A last line without a newline (a child that died mid-write) is dropped unless
    ``deliver_unterminated``.  Exceptions from ``handle`` propagate.
    """
    framer = NewlineFramer(max_line)
    while True:
        try:
            data = await stream.receive(chunk)
        except _STREAM_ENDED:
            break
        for frame in framer.feed(data):
            await handle(frame)
    if deliver_unterminated:
        for frame in framer.eof():
            await handle(frame)
