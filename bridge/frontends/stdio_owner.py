"""Serving one front-end on stdio until its client's EOF or a signal (``serve``, ``acp``).

The client owns the runtime: when it goes away (EOF) or the process gets SIGTERM/SIGINT,
the connection is closed, every session is closed (stopping provider processes through
their escalation) and the streams are closed.  Both stdio commands run exactly this;
only how the front-end is built differs.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Protocol

import anyio

from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream
from agent_bridge.runtime import Runtime

__all__ = ["ServedFrontend", "serve_owning"]


class _Closable(Protocol):
    def close(self) -> None: ...


class ServedFrontend(Protocol):
    """What :func:`serve_owning` needs of a front-end: its connection and its loop."""

    @property
    def conn(self) -> _Closable: ...

    async def serve(self) -> None: ...


async def serve_owning(
    runtime: Runtime,
    server: ServedFrontend,
    receive: FdReceiveStream,
    send: FdSendStream,
    *,
    signalled_before: Callable[[], bool] = lambda: False,
) -> None:
    """Serve ``server`` over ``receive``/``send`` with ``runtime`` until the client's EOF
    or SIGTERM/SIGINT; return once every session is closed and both streams are.
    ``signalled_before`` says whether a signal arrived before the event loop's handler
    was installed (it is then handled at once).  Raises what the front-end raises."""

    async def stop_on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            if signalled_before():
                server.conn.close()
                return
            async for _ in signals:
                server.conn.close()
                return

    try:
        async with runtime, anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signal)
            await server.serve()
            tg.cancel_scope.cancel()
    finally:
        await receive.aclose()
        await send.aclose()
