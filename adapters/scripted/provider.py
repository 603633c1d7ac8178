"""The scripted provider: its descriptor and creating or resuming a session.

Options (declared in the descriptor): session ``script`` (inline JSON, see
:mod:`agent_bridge.wire.script`, or a string: the path of a JSON file, such
as one written by ``agent-bridge record``) or ``scriptFile`` (a path to a JSON file);
run ``script`` overrides the session's for one run.  Its recovery record carries the
script and how many runs it had, so ``session/resume`` works across bridge processes,
and, while a run waits on an interaction, where it waits, so a bridge that resumes the
session continues that run there (``recovery.resumeTurn``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from agent_bridge.errors import BridgeError
from agent_bridge.spi import AgentProvider, NativeContinuation, ProviderSession, SessionContext
from agent_bridge.wire.native import NativeSessionsReadResult
from agent_bridge.wire.providers import (
    ApprovalCapability,
    Capabilities,
    ImageInputCapability,
    InputCapabilities,
    InteractionCapabilities,
    NativeSessionsCapability,
    OptionDescriptor,
    ProviderDescriptor,
    QuestionCapability,
    RecoveryCapability,
    RunCapabilities,
)

__all__ = ["VERSION", "ScriptedProvider"]

VERSION: Final = "1.0.0"

OPTIONS: Final = (
    OptionDescriptor(
        name="script",
        scope="session",
        type="json",
        description="The script every run follows (see docs/scripted.md).",
    ),
    OptionDescriptor(
        name="scriptFile",
        scope="session",
        type="string",
        description="Path to a JSON file holding the script.",
    ),
    OptionDescriptor(
        name="script",
        scope="run",
        type="json",
        description="A script for this run only.",
    ),
)


#: every kind of input block; images of the common types up to 10 MiB (its ``received``
#: step replies with what arrived)
INPUT: Final = InputCapabilities(
    kinds=("text", "image", "file", "resource", "command"),
    image=ImageInputCapability(
        mime_types=("image/png", "image/jpeg", "image/gif", "image/webp"),
        max_bytes=10 * 1024 * 1024,
    ),
)


class ScriptedProvider(AgentProvider):
    """The built-in deterministic provider (id ``scripted``)."""

    id = "scripted"
    #: built on the first describe(): it never changes, and every session keeps it
    _descriptor: ProviderDescriptor | None = None

    def describe(self) -> ProviderDescriptor:
        """The descriptor (one object, shared by every session of this provider)."""
        if self._descriptor is None:
            self._descriptor = self._build_descriptor()
        return self._descriptor

    def _build_descriptor(self) -> ProviderDescriptor:
        return ProviderDescriptor(
            id=self.id,
            display_name="Scripted (built-in)",
            version=VERSION,
            maturity="verified",
            capabilities=Capabilities(
                run=RunCapabilities(interrupt="cooperative", steer=True, max_concurrent_runs=1),
                interactions=InteractionCapabilities(
                    approval=ApprovalCapability(supported=True, modes=("once", "session")),
                    question=QuestionCapability(supported=True, question_set=True),
                ),
                recovery=RecoveryCapability(resume=True, resume_turn=True),
                native_sessions=NativeSessionsCapability(
                    list="unsupported", read="exact", continue_="supported"
                ),
                input=INPUT,
            ),
            options=OPTIONS,
        )

    def check_options(self, options: Mapping[str, Any]) -> None:
        """A script that does not load (a missing file, not JSON, a bad step) raises
        ``invalid_option`` saying which."""
        from agent_bridge.adapters.scripted.script import load_script

        load_script(options)

    async def read_native_session(
        self, session_ref: str, cursor: str | None, limit: int, start: Literal["start", "end"]
    ) -> NativeSessionsReadResult:
        """The records a reference carries inline (:mod:`agent_bridge.adapters.scripted.
        native`: the scripted provider keeps no store)."""
        from agent_bridge.adapters.scripted.native import read_page

        return read_page(session_ref, cursor, limit, start)

    async def native_continuation(self, session_ref: str) -> NativeContinuation:
        """A scripted session whose earlier inputs are the reference's prompts."""
        from agent_bridge.adapters.scripted.native import inputs

        return NativeContinuation({"script": {}, "history": inputs(session_ref)})

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        from agent_bridge.adapters.scripted.script import load_script
        from agent_bridge.adapters.scripted.session import ScriptedSession

        return ScriptedSession(ctx, load_script(ctx.options), 0)

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        """The session the record ``opaque`` describes: its script, how many runs it had
        (``runs``; a record of an earlier version lists their inputs as ``history``) and
        the run it may continue (``turn``).  Raises ``recovery_invalid``."""
        import msgspec

        from agent_bridge.adapters.scripted.script import load_script
        from agent_bridge.adapters.scripted.session import ScriptedSession
        from agent_bridge.wire.script import decode_script

        if not isinstance(opaque, dict):
            raise BridgeError("recovery_invalid")
        runs = opaque.get("runs")
        history = opaque.get("history")
        if isinstance(history, list) and runs is None:
            runs = len(history)
        turn = opaque.get("turn")
        if not isinstance(runs, int) or isinstance(runs, bool) or runs < 0:
            raise BridgeError("recovery_invalid")
        if turn is not None and not isinstance(turn, dict):
            raise BridgeError("recovery_invalid")
        try:
            script = decode_script(opaque.get("script") or {})
        except msgspec.ValidationError:
            raise BridgeError("recovery_invalid") from None
        return ScriptedSession(ctx, load_script(ctx.options) or script, runs, turn)
