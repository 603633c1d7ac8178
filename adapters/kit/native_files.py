"""A provider's own session files, read in a worker thread (``provider/sessions/*``).

Claude Code and Codex keep their sessions as files; each adapter has a ``native``
module whose blocking ``list_page`` and ``read_page`` read them.  The provider methods
that serve ``provider/sessions/list`` and ``provider/sessions/read`` only hand those
calls to a worker thread, so that part lives here once: :class:`NativeFilesInThread`,
a mixin that names the module (imported on first use, off the start path).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import ClassVar, Literal

import anyio

from agent_bridge.wire.native import NativeSessionsListResult, NativeSessionsReadResult

__all__ = ["NativeFilesInThread"]


class NativeFilesInThread:
    """``list_native_sessions`` and ``read_native_session`` by the blocking
    ``list_page(workspace, cursor, limit)`` and ``read_page(ref, cursor, limit, start)``
    of :attr:`native_module`, each run in a worker thread.

    Put it before :class:`~agent_bridge.spi.AgentProvider` in the bases.  The pages'
    errors (``invalid_params``, ``session_not_found``, ``history_unavailable``) are the
    module's, raised unchanged.
    """

    #: The dotted name of the module with ``list_page`` and ``read_page``.
    native_module: ClassVar[str]

    async def list_native_sessions(
        self, workspace: str | None, cursor: str | None, limit: int
    ) -> NativeSessionsListResult:
        """The provider's session files, newest first (the module's ``list_page``)."""
        list_page: Callable[[str | None, str | None, int], NativeSessionsListResult]
        list_page = importlib.import_module(self.native_module).list_page
        return await anyio.to_thread.run_sync(list_page, workspace, cursor, limit)

    async def read_native_session(
        self, session_ref: str, cursor: str | None, limit: int, start: Literal["start", "end"]
    ) -> NativeSessionsReadResult:
        """A page of one session file (the module's ``read_page``; opened read-only)."""
        read_page: Callable[
            [str, str | None, int, Literal["start", "end"]], NativeSessionsReadResult
        ]
        read_page = importlib.import_module(self.native_module).read_page
        return await anyio.to_thread.run_sync(read_page, session_ref, cursor, limit, start)
