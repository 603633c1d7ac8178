"""The Claude Code provider: its descriptor, its options, and creating or resuming a
session (a resident ``claude`` child, :mod:`agent_bridge.adapters.claude.session`).

The session module (and with it the reader, the ledger and msgspec) is imported only
when a session is created, so ``providers/list`` stays cheap.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final

import anyio

from agent_bridge.adapters.claude.launch import (
    DEFAULT_STARTUP_TIMEOUT,
    PERMISSION_MODES,
    launch_config,
    valid_session_id,
)
from agent_bridge.adapters.kit.native_files import NativeFilesInThread
from agent_bridge.errors import BridgeError
from agent_bridge.spi import AgentProvider, NativeContinuation, ProviderSession, SessionContext
from agent_bridge.wire.providers import (
    ApprovalCapability,
    Availability,
    Capabilities,
    ForkCapability,
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

if TYPE_CHECKING:
    from agent_bridge.adapters.claude.session import ClaudeSession

__all__ = ["OPTIONS", "VERSION", "ClaudeCodeProvider"]

VERSION: Final = "1.0.0"

OPTIONS: Final[tuple[OptionDescriptor, ...]] = (
    OptionDescriptor(
        name="executable",
        scope="session",
        type="string",
        description=(
            "Absolute path of the claude CLI. Default: discovery (AGENT_BRIDGE_CLAUDE_PATH, "
            "then PATH, then the binary bundled with the claude-agent-sdk Python package)."
        ),
    ),
    OptionDescriptor(
        name="model",
        scope="session",
        type="string",
        description=(
            "--model: an alias (default, opus, sonnet, haiku) or a full model name. "
            "Default: the CLI's default."
        ),
    ),
    OptionDescriptor(
        name="permissionMode",
        scope="session",
        type="enum",
        description="--permission-mode: how tool use is approved.",
        values=PERMISSION_MODES,
        default="default",
    ),
    OptionDescriptor(
        name="allowedTools",
        scope="session",
        type="stringList",
        description=(
            '--allowed-tools: tools (or rules like "Bash(git log:*)") allowed without asking.'
        ),
    ),
    OptionDescriptor(
        name="disallowedTools",
        scope="session",
        type="stringList",
        description="--disallowed-tools: tools (or rules) the model may not use.",
    ),
    OptionDescriptor(
        name="appendSystemPrompt",
        scope="session",
        type="string",
        description="--append-system-prompt: text appended to the default system prompt.",
    ),
    OptionDescriptor(
        name="mcpConfig",
        scope="session",
        type="json",
        description=(
            '--mcp-config: an MCP configuration object ({"mcpServers": {...}}) or the path '
            "of a JSON file holding one."
        ),
    ),
    OptionDescriptor(
        name="configDir",
        scope="session",
        type="string",
        description=(
            "CLAUDE_CONFIG_DIR for the CLI (settings, credentials, transcripts). Default: "
            "the bridge's CLAUDE_CONFIG_DIR, else the CLI's own default (~/.claude)."
        ),
    ),
    OptionDescriptor(
        name="startupTimeoutSeconds",
        scope="session",
        type="integer",
        description="How long the CLI may take to answer the initialize handshake.",
        default=DEFAULT_STARTUP_TIMEOUT,
    ),
)


def _session_class() -> type[ClaudeSession]:
    from agent_bridge.adapters.claude.session import ClaudeSession

    return ClaudeSession


#: What a run's input may hold: text, images (the Messages API's types; at most 3.75 MiB,
#: so that the base64 the CLI sends stays within the API's 5 MB per image), file
#: references, embedded resources and commands (given as text; see ``mapping.user_content``).
INPUT: Final = InputCapabilities(
    kinds=("text", "image", "file", "resource", "command"),
    image=ImageInputCapability(
        mime_types=("image/png", "image/jpeg", "image/gif", "image/webp"),
        max_bytes=5 * 1024 * 1024 * 3 // 4,
    ),
)


class ClaudeCodeProvider(NativeFilesInThread, AgentProvider):
    """Claude Code through its CLI (``claude``)."""

    native_module = "agent_bridge.adapters.claude.native"

    id = "claude-code"

    def describe(self) -> ProviderDescriptor:
        return ProviderDescriptor(
            id=self.id,
            display_name="Claude Code",
            version=VERSION,
            maturity="verified",
            capabilities=Capabilities(
                run=RunCapabilities(interrupt="cooperative", steer=False, max_concurrent_runs=1),
                interactions=InteractionCapabilities(
                    approval=ApprovalCapability(supported=True, modes=("once", "session")),
                    question=QuestionCapability(supported=True, question_set=True),
                ),
                recovery=RecoveryCapability(resume=True, resume_turn=False),
                native_sessions=NativeSessionsCapability(
                    list="supported", read="exact", continue_="supported"
                ),
                input=INPUT,
                # --resume --fork-session, cut by --resume-session-at <assistant uuid>:
                # any main-thread assistant message, so an event inside a run too
                fork=ForkCapability(at_end=True, at_event=True, granularity="message"),
            ),
            options=OPTIONS,
        )

    async def probe(self) -> Availability:
        from agent_bridge.adapters.claude.probe import probe_cli

        return await probe_cli()

    async def native_continuation(self, session_ref: str) -> NativeContinuation:
        """``--resume <the CLI's session id>`` in the directory the session file records
        (the CLI keeps sessions per working directory), with the configuration directory
        the file was found in."""
        from agent_bridge.adapters.claude.native import continuation

        session_id, cwd = await anyio.to_thread.run_sync(continuation, session_ref)
        if cwd is None:
            raise BridgeError(
                "history_unavailable",
                details={"reason": "the session file records no usable working directory (yet)"},
            )
        opaque = {
            "v": 1,
            "sessionId": session_id,
            "cwd": cwd,
            "configDir": os.environ.get("CLAUDE_CONFIG_DIR") or None,
            "usage": None,
        }
        return NativeContinuation(opaque, cwd)

    def native_ref(self, opaque: Any) -> str | None:
        """``<the CLI's directory for the cwd>/<session id>``, once the CLI has named its
        session (the reference its session file is listed under)."""
        from agent_bridge.adapters.claude.native import ref_for

        if not isinstance(opaque, dict):
            return None
        session_id, cwd = opaque.get("sessionId"), opaque.get("cwd")
        if not isinstance(session_id, str) or not isinstance(cwd, str):
            return None
        return ref_for(cwd, session_id)

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        config = launch_config(ctx.options, ctx.workspace)
        session = _session_class()(ctx, config)
        await session.start()
        return session

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        if not isinstance(opaque, dict) or opaque.get("v") != 1:
            raise BridgeError("recovery_invalid")
        session_id = opaque.get("sessionId")
        cwd = opaque.get("cwd")
        config_dir = opaque.get("configDir")
        usage = opaque.get("usage")
        if (
            (session_id is not None and not valid_session_id(session_id))
            or not isinstance(cwd, str)
            or (config_dir is not None and not isinstance(config_dir, str))
            or (usage is not None and not isinstance(usage, dict))
        ):
            raise BridgeError("recovery_invalid")
        workspace = ctx.workspace
        if workspace is None:
            # The CLI keeps transcripts per working directory: resume where it ran.
            if not os.path.isdir(cwd):
                raise BridgeError("recovery_invalid")
            workspace = cwd
        config = launch_config(ctx.options, workspace, recorded_config_dir=config_dir)
        fork_of = opaque.get("forkOf")
        if session_id is None and isinstance(fork_of, dict):
            # a fork whose first turn never ended: fork again, where it was made
            fork = _fork_point(fork_of)
            session = _session_class()(ctx, config, usage=usage, fork_from=fork)
            await session.start()
            return session
        session = _session_class()(ctx, config, cli_session_id=session_id, usage=usage)
        await session.start(resume=session_id)
        return session

    async def fork_session(
        self, ctx: SessionContext, opaque: Any, position: Any, at_end: bool
    ) -> ProviderSession:
        """A new CLI conversation forked from the one ``position`` names, cut after its
        assistant message ``position["at"]`` (``--fork-session --resume-session-at``),
        in the original's working directory and configuration directory.  No position (no
        turn ended before the fork point): a new, empty conversation."""
        del at_end
        if not isinstance(opaque, dict):
            opaque = {}
        cwd = opaque.get("cwd")
        config_dir = opaque.get("configDir")
        workspace = ctx.workspace
        if workspace is None and isinstance(cwd, str) and os.path.isdir(cwd):
            workspace = cwd
        config = launch_config(
            ctx.options,
            workspace,
            recorded_config_dir=config_dir if isinstance(config_dir, str) else None,
        )
        if position is None:
            session = _session_class()(ctx, config)
        else:
            session = _session_class()(ctx, config, fork_from=_fork_point(position))
        await session.start()
        return session


def _fork_point(value: Any) -> tuple[str, str | None]:
    """``(session id, assistant uuid or None)`` of a stored fork point; raises
    ``recovery_invalid`` for anything else."""
    if not isinstance(value, dict):
        raise BridgeError("recovery_invalid")
    source, at = value.get("sessionId"), value.get("at")
    if not valid_session_id(source) or (at is not None and not valid_session_id(at)):
        raise BridgeError("recovery_invalid")
    return str(source), None if at is None else str(at)
