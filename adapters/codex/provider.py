"""The Codex provider: its descriptor, its options, and creating or resuming a session
(a resident ``codex app-server``, :mod:`agent_bridge.adapters.codex.session`).

The session module (and with it the JSON-RPC connection and msgspec) is imported only
when a session is created, so ``providers/list`` stays cheap.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.adapters.codex.launch import (
    EFFORTS,
    ENV_EXECUTABLE,
    INSTALL_HINT,
    Settings,
    child_env,
    find_executable,
)
from agent_bridge.adapters.kit.native_files import NativeFilesInThread
from agent_bridge.errors import BridgeError
from agent_bridge.spi import AgentProvider, NativeContinuation, ProviderSession, SessionContext
from agent_bridge.wire.events import LimitsUpdated
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
    from agent_bridge.adapters.codex.session import CodexSession

__all__ = ["ADAPTER_VERSION", "OPTIONS", "CodexProvider"]

#: The adapter's own version (recovery records carry it); the CLI's is in availability.
ADAPTER_VERSION: Final = "0.1.0"

_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A dotted TOML key: bare segments, or quoted ones; never starting with "-" (the entry
#: follows "-c" as its own argv element and must not look like a flag).
_CONFIG_KEY: Final = re.compile(
    r'(?:[A-Za-z0-9_][A-Za-z0-9_\-]*|"[^"\n]*")(?:\.(?:[A-Za-z0-9_\-]+|"[^"\n]*"))*'
)

OPTIONS: Final = (
    OptionDescriptor(
        name="executable",
        scope="session",
        type="string",
        description=(
            "The codex executable (a path, or a name looked up on PATH). Default: "
            f"{ENV_EXECUTABLE}, then codex on PATH, an npm install, the PyPI package."
        ),
    ),
    OptionDescriptor(
        name="codexHome",
        scope="session",
        type="string",
        description=(
            "A private CODEX_HOME directory (must exist) with its own config.toml and "
            "threads. Default: the bridge's CODEX_HOME, else Codex's ~/.codex."
        ),
    ),
    OptionDescriptor(
        name="model",
        scope="session",
        type="string",
        description="The model to use. Default: Codex's configuration.",
    ),
    OptionDescriptor(
        name="reasoningEffort",
        scope="session",
        type="enum",
        values=EFFORTS,
        description="Reasoning effort for every turn. Default: Codex's configuration.",
    ),
    OptionDescriptor(
        name="approvalPolicy",
        scope="session",
        type="enum",
        values=("untrusted", "on-request", "never"),
        description=(
            "When Codex asks before running a command: untrusted (almost always), "
            "on-request (when the model asks to leave the sandbox), never. "
            "Default: Codex's configuration."
        ),
    ),
    OptionDescriptor(
        name="sandbox",
        scope="session",
        type="enum",
        values=("read-only", "workspace-write", "danger-full-access"),
        description="What commands may touch. Default: Codex's configuration.",
    ),
    OptionDescriptor(
        name="config",
        scope="session",
        type="stringList",
        description=(
            "Configuration overrides, each key=value (the value is TOML), passed to "
            "codex as -c key=value."
        ),
    ),
    OptionDescriptor(
        name="strictConfig",
        scope="session",
        type="boolean",
        default=True,
        description=(
            "Pass --strict-config: a config.toml codex cannot read fails the session "
            "instead of codex silently falling back to its defaults (and their network "
            "endpoints). Unknown keys count as errors."
        ),
    ),
    OptionDescriptor(
        name="passEnv",
        scope="session",
        type="stringList",
        description=(
            "Names of further environment variables of the bridge to pass to codex "
            "(e.g. proxy settings). Key variables named in config.toml are passed anyway."
        ),
    ),
)


def _string_list(options: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = options.get(name)
    if value is None:
        return ()
    return tuple(value)


def _check_options(options: Mapping[str, Any]) -> None:
    for entry in _string_list(options, "config"):
        key, sep, _value = entry.partition("=")
        if not sep or not _CONFIG_KEY.fullmatch(key.strip()) or "\0" in entry:
            raise BridgeError("invalid_option", details={"option": "config"})
    for name in _string_list(options, "passEnv"):
        if not _ENV_NAME.fullmatch(name):
            raise BridgeError("invalid_option", details={"option": "passEnv"})


def _session_class() -> type[CodexSession]:
    from agent_bridge.adapters.codex.session import CodexSession

    return CodexSession


def _codex_home(value: Any, option: str = "codexHome") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\0" in value or not os.path.isdir(value):
        raise BridgeError("invalid_option", details={"option": option})
    return os.path.abspath(value)


#: Seconds between two reads of the rate limits without a session (``read_limits``).
LIMITS_READ_INTERVAL: Final = 30.0
#: Seconds ``read_limits`` stays quiet once Codex said the login has no limits to tell.
NOT_AVAILABLE_INTERVAL: Final = 600.0

#: What a run's input may hold: text, images (as ``localImage`` from a workspace file, or
#: an ``image`` data URL; the Responses API's types, at most 10 MiB here), file references
#: and embedded resources (given as text), commands (Codex's skills, as ``$name``
#: mentions; see ``protocol.user_input``).
INPUT: Final = InputCapabilities(
    kinds=("text", "image", "file", "resource", "command"),
    image=ImageInputCapability(
        mime_types=("image/png", "image/jpeg", "image/gif", "image/webp"),
        max_bytes=10 * 1024 * 1024,
    ),
)


class CodexProvider(NativeFilesInThread, AgentProvider):
    """OpenAI Codex through a resident ``codex app-server`` per session (id ``codex``)."""

    native_module = "agent_bridge.adapters.codex.native"

    id = "codex"

    def __init__(self) -> None:
        #: until when ``read_limits`` answers ``None`` without asking Codex (monotonic)
        self._limits_quiet_until = 0.0

    def describe(self) -> ProviderDescriptor:
        return ProviderDescriptor(
            id=self.id,
            display_name="OpenAI Codex",
            version=ADAPTER_VERSION,
            maturity="verified",
            capabilities=Capabilities(
                run=RunCapabilities(interrupt="cooperative", steer=True, max_concurrent_runs=1),
                interactions=InteractionCapabilities(
                    approval=ApprovalCapability(supported=True, modes=("once", "session")),
                    # Codex asks questions (item/tool/requestUserInput) only in its
                    # experimental Plan mode, which the adapter does not enable; such a
                    # request is still mapped if it comes.
                    question=QuestionCapability(supported=False),
                ),
                recovery=RecoveryCapability(resume=True, resume_turn=False),
                # its rollout files under CODEX_HOME (adapters/codex/native.py)
                native_sessions=NativeSessionsCapability(
                    list="supported", read="exact", continue_="supported"
                ),
                input=INPUT,
                # thread/fork {threadId, lastTurnId}
                fork=ForkCapability(at_end=True, at_event=True),
            ),
            options=OPTIONS,
        )

    async def read_limits(self) -> LimitsUpdated | None:
        """``account/rateLimits/read`` of a short-lived app-server on a copy of the user's
        login (:func:`~agent_bridge.adapters.codex.limits.read_rate_limits`), at most
        once in :data:`LIMITS_READ_INTERVAL` (``None`` meanwhile: the runtime answers with
        the figures it keeps), and, once Codex refused it for the login it found ('not
        available'), not again for :data:`NOT_AVAILABLE_INTERVAL`."""
        import time

        now = time.monotonic()
        if now < self._limits_quiet_until:
            return None
        self._limits_quiet_until = now + LIMITS_READ_INTERVAL
        found = find_executable(None)
        if found is None:
            return None
        from agent_bridge.adapters.codex.limits import NOT_AVAILABLE, read_rate_limits

        result = await read_rate_limits(found.path, child_env(codex_home=None))
        if result == NOT_AVAILABLE:
            self._limits_quiet_until = now + NOT_AVAILABLE_INTERVAL
            return None
        return None if isinstance(result, str) else result

    async def probe(self) -> Availability:
        from agent_bridge.adapters.codex.probe import probe_cli

        return await probe_cli()

    def _settings(self, ctx: SessionContext, record: Mapping[str, Any] | None = None) -> Settings:
        from agent_bridge.adapters.codex import mapping

        options = ctx.options
        _check_options(options)
        record = record or {}
        found = find_executable(options.get("executable"))
        if found is None:
            raise BridgeError(
                "provider_unavailable", details={"missing": "codex", "nextStep": INSTALL_HINT}
            )
        codex_home = _codex_home(options.get("codexHome"))
        if codex_home is None and record.get("codexHome") is not None:
            codex_home = _codex_home(record.get("codexHome"), "record.codexHome")
        config = _string_list(options, "config")
        cwd = ctx.workspace
        if cwd is None and isinstance(record.get("cwd"), str) and os.path.isdir(record["cwd"]):
            cwd = record["cwd"]
        return Settings(
            executable=found.path,
            cwd=cwd,
            env=child_env(
                codex_home=codex_home, overrides=config, pass_env=_string_list(options, "passEnv")
            ),
            codex_home=codex_home,
            config=config,
            strict_config=bool(options.get("strictConfig", True)),
            model=options.get("model") or record.get("model"),
            reasoning_effort=options.get("reasoningEffort") or record.get("reasoningEffort"),
            # a record written before these were bounded may hold anything
            approval_policy=options.get("approvalPolicy")
            or mapping.approval_policy_of(record.get("approvalPolicy")),
            sandbox=options.get("sandbox") or mapping.sandbox_mode(record.get("sandbox")),
            cli_version=record.get("cliVersion"),
        )

    async def fork_session(
        self, ctx: SessionContext, opaque: Any, position: Any, at_end: bool
    ) -> ProviderSession:
        """A new thread forked natively (``thread/fork``) from the thread ``position``
        names, through its turn ``position["turnId"]``, with the original's settings (its
        record ``opaque``).  No position (no turn ended before the fork point): a new
        thread."""
        from agent_bridge.adapters.codex import mapping

        del at_end
        record = opaque if isinstance(opaque, dict) else {}
        try:
            settings = self._settings(ctx, record)
        except BridgeError as exc:
            option = (exc.info.details or {}).get("option", "")
            if isinstance(option, str) and option.startswith("record."):
                raise BridgeError("recovery_invalid") from None
            raise
        session = _session_class()(ctx, settings)
        if position is None:
            await session.open(resume=False)
            return session
        if not isinstance(position, dict) or not mapping.thread_id_ok(position.get("threadId")):
            raise BridgeError("recovery_invalid")
        turn = position.get("turnId")
        await session.open(
            resume=False,
            fork=(position["threadId"], turn if isinstance(turn, str) else None),
        )
        return session

    async def native_continuation(self, session_ref: str) -> NativeContinuation:
        """``thread/resume`` of the rollout's thread in the directory its ``session_meta``
        records, with the CODEX_HOME the file was found in (the app-server reads the
        thread's history from there)."""
        import anyio

        from agent_bridge.adapters.codex.native import codex_home, continuation

        thread, cwd = await anyio.to_thread.run_sync(continuation, session_ref)
        if cwd is None:
            raise BridgeError(
                "history_unavailable",
                details={"reason": "the rollout records no working directory yet"},
            )
        opaque = {"threadId": thread, "cwd": cwd, "codexHome": codex_home()}
        return NativeContinuation(opaque, cwd)

    def native_ref(self, opaque: Any) -> str | None:
        """The rollout reference the record names (``rollout``: the session adds it once
        Codex has written the thread's file), when the record's store is the one
        ``provider/sessions/list`` reads (``CODEX_HOME``)."""
        from agent_bridge.adapters.codex.native import codex_home, is_ref

        if not isinstance(opaque, dict) or not is_ref(opaque.get("rollout")):
            return None
        home = opaque.get("codexHome")
        if home is not None and (
            not isinstance(home, str) or os.path.realpath(home) != os.path.realpath(codex_home())
        ):
            return None  # another store than the one provider/sessions/list reads
        rollout: str = opaque["rollout"]
        return rollout

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        session = _session_class()(ctx, self._settings(ctx))
        await session.open(resume=False)
        return session

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        from agent_bridge.adapters.codex import mapping

        # a record written before thread ids were bounded may hold anything
        if not isinstance(opaque, dict) or not mapping.thread_id_ok(opaque.get("threadId")):
            raise BridgeError("recovery_invalid")
        try:
            settings = self._settings(ctx, opaque)
        except BridgeError as exc:
            option = (exc.info.details or {}).get("option", "")
            if (
                exc.error_code == "invalid_option"
                and isinstance(option, str)
                and option.startswith("record.")
            ):
                raise BridgeError("recovery_invalid") from None
            raise
        settings.thread_id = opaque["threadId"]
        session = _session_class()(ctx, settings)
        await session.open(resume=True)
        return session
