"""ACP agents as providers: one :class:`AcpProvider` per configured agent.

The providers are the built-ins ``gemini`` (``gemini --acp``), ``opencode`` (``opencode
acp``) and ``qwen`` (``qwen --acp``), the generic ``acp`` (any
agent, named per session by the ``command`` option), and one per ``[acp.agents.<id>]``
table of the bridge's configuration file (:func:`configured_providers`, see
``docs/providers/acp.md``).

The descriptor comes from the agent itself: what its ``initialize`` advertised (learned by
the probe, or by any session started) decides whether sessions can be resumed and which
``authMethod`` values exist; what its ``session/new`` offered (modes, model and thought
level config options) becomes the allowed values of the ``mode``, ``model`` and
``thoughtLevel`` options.  What the agent does not advertise is declared unsupported.
Until the agent has been asked, the declared options are free strings and resume is
whatever the entry's hints say (trusting the agent when they say nothing).

A known agent is recognised by its ``initialize`` answer and gets its profile
(:mod:`~agent_bridge.adapters.acp.profiles`): its resume correction, its workarounds
and its maturity (the profile's for a proven version, else ``experimental``), whichever
way it was configured.  The generic ``acp`` provider learns the agent per session: its
sessions apply the profile (:class:`~agent_bridge.adapters.acp.session.AcpSession`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Final, Literal

from agent_bridge.adapters.acp import protocol as p
from agent_bridge.adapters.acp.launch import (
    BUILTIN_AGENTS,
    AgentSpec,
    ConfigEntryError,
    Hints,
    agents_from_config,
    argv_for,
    child_env,
    find_executable,
    probe_home_files,
    spec_from_entry,
    with_session_overrides,
)
from agent_bridge.adapters.acp.profiles import (
    BY_KEY,
    Profile,
    effective_hints,
    maturity_for,
    profile_for,
)
from agent_bridge.config import Config, load_config
from agent_bridge.errors import BridgeError
from agent_bridge.spi import AgentProvider, NativeContinuation, ProviderSession, SessionContext
from agent_bridge.wire.native import NativeSessionsListResult, NativeSessionsReadResult
from agent_bridge.wire.providers import (
    NO_FORK,
    ApprovalCapability,
    Availability,
    Capabilities,
    ForkCapability,
    InteractionCapabilities,
    NativeSessionsCapability,
    OptionDescriptor,
    ProviderDescriptor,
    QuestionCapability,
    RecoveryCapability,
    RunCapabilities,
)

__all__ = [
    "ADAPTER_VERSION",
    "AcpProvider",
    "configured_providers",
    "fast_agent_provider",
    "generic_provider",
    "mistral_vibe_provider",
    "opencode_provider",
    "qwen_provider",
]

log = logging.getLogger("agent_bridge.acp")

ADAPTER_VERSION: Final = "0.1.0"
GENERIC_ID: Final = "acp"
#: Config option categories the adapter exposes as session options.
CONFIG_CATEGORIES: Final = {"model": "model", "thoughtLevel": "thought_level"}


def _option(name: str, type_: Any, description: str, **kw: Any) -> OptionDescriptor:
    return OptionDescriptor(name=name, scope="session", type=type_, description=description, **kw)


#: ACP's unstable session/fork: the whole session only
FORK_AT_END: Final = ForkCapability(at_end=True)


class AcpProvider(AgentProvider):
    """One ACP agent (id from its entry)."""

    def __init__(self, spec: AgentSpec, *, generic: bool = False) -> None:
        self.id = spec.id
        self.spec = spec
        self.generic = generic
        self.info: p.AgentInfo | None = None
        self.modes: tuple[str, ...] = ()
        self.config_values: dict[str, tuple[str, ...]] = {}

    # ------------------------------------------------------------------ learning

    def learned(self, info: p.AgentInfo) -> None:
        """Record what the agent advertised in ``initialize``."""
        if not self.generic:
            self.info = info

    def learned_session(self, result: Mapping[str, Any]) -> None:
        """Record the modes and config options a ``session/new`` (or load) offered."""
        if self.generic:
            return
        modes = p.mode_ids(result.get("modes"))
        if modes:
            self.modes = modes
        for option in p.config_options(result.get("configOptions")):
            for name, category in CONFIG_CATEGORIES.items():
                if option.get("category") == category and option.get("type") == "select":
                    values = p.select_values(option)
                    if values:
                        self.config_values[name] = values

    # ------------------------------------------------------------------ descriptor

    def _options(self) -> tuple[OptionDescriptor, ...]:
        info = self.info
        out: list[OptionDescriptor] = []
        if self.generic:
            out.append(
                _option(
                    "command",
                    "stringList",
                    "The agent's argv (required): executable, "
                    'then arguments, e.g. ["my-agent", "--acp"].',
                )
            )
        out += [
            _option(
                "executable",
                "string",
                "The agent's executable (a path, or a name looked up on PATH). Default: "
                + (
                    "the first item of the command option."
                    if self.generic
                    else f"{self.spec.env_var}, then {self.spec.argv[0]} on PATH."
                ),
            ),
            _option("args", "stringList", "Further arguments after the configured ones."),
            _option(
                "env",
                "json",
                "Further environment variables for the agent, as an object of strings.",
            ),
            _option(
                "passEnv",
                "stringList",
                "Names of further environment variables of the bridge to pass to the agent.",
            ),
            _option(
                "mcpServers",
                "json",
                "MCP servers for session/new, in ACP's shape (an "
                f"array of McpServer objects). {self._mcp_note()}",
            ),
            _option(
                "clientFs",
                "boolean",
                "Serve the agent's fs/read_text_file and "
                "fs/write_text_file, confined to the workspace.",
                default=False,
            ),
            _option(
                "clientTerminal",
                "boolean",
                "Serve the agent's terminal/* requests (commands run as argv in the workspace).",
                default=False,
            ),
        ]
        if info is not None and info.auth_methods:
            out.append(
                _option(
                    "authMethod",
                    "enum",
                    "Call authenticate with this method before the session starts.",
                    values=info.auth_methods,
                )
            )
        else:
            out.append(
                _option(
                    "authMethod",
                    "string",
                    "Call authenticate with this method "
                    "(one of the agent's authMethods) before the session starts.",
                )
            )
        if self.modes:
            out.append(_option("mode", "enum", "The session mode to switch to.", values=self.modes))
        else:
            out.append(
                _option("mode", "string", "The session mode to switch to (one the agent offers).")
            )
        for name, category in CONFIG_CATEGORIES.items():
            values = self.config_values.get(name)
            text = f"The agent's {category.replace('_', ' ')} config option."
            if values:
                out.append(_option(name, "enum", text, values=values))
            else:
                out.append(_option(name, "string", text))
        return tuple(out)

    def _mcp_note(self) -> str:
        """Which MCP transports the agent takes (stdio is every agent's baseline)."""
        info = self.info
        if info is None:
            return "Transports: stdio; http and sse if the agent advertises them."
        transports = ["stdio"] + [
            name for name, ok in (("http", info.mcp_http), ("sse", info.mcp_sse)) if ok
        ]
        return "Transports the agent takes: " + ", ".join(transports) + "."

    @property
    def profile(self) -> Profile | None:
        """The agent's profile: by its ``initialize`` answer once asked; else (not asked,
        or an answer no profile names) the one a built-in expects."""
        expected = BY_KEY.get(self.spec.profile) if self.spec.profile else None
        return profile_for(self.info) or expected

    @property
    def hints(self) -> Hints:
        """The entry's hints completed by the agent's profile."""
        return effective_hints(self.spec.hints, self.profile)

    def can_resume(self) -> bool:
        """Whether a session can be continued in a new agent process."""
        hint = self.hints.resume
        if hint is not None:
            return hint
        return True if self.info is None else self.info.can_resume

    def _reads_gemini_chats(self) -> bool:
        """Whether this is the Gemini CLI, whose chat files the adapter reads
        (:mod:`~agent_bridge.adapters.acp.gemini_native`): the pinned version advertises
        no ``session/list``, and its ``session/load`` fails in a new process, so a chat
        can be listed and read but not continued."""
        return self.spec.profile == "gemini"

    def _lists_natively(self) -> bool:
        """Whether the agent lists its own sessions through ACP's ``session/list``: as
        its ``initialize`` advertised once asked; until then trusted (a configured or
        built-in agent; the generic ``acp`` provider has no agent before a session)."""
        if self.generic or self._reads_gemini_chats():
            return False
        return True if self.info is None else self.info.session_list

    def _native_sessions(self) -> NativeSessionsCapability:
        if self._reads_gemini_chats():
            return NativeSessionsCapability(list="supported", read="exact", continue_="unsupported")
        if not self._lists_natively():
            return NativeSessionsCapability.unsupported()
        # ACP reads no history in pages (session/load replays it into a live session only)
        return NativeSessionsCapability(
            list="supported",
            read="unsupported",
            continue_="supported" if self.can_resume() else "unsupported",
        )

    def _agent(self) -> tuple[tuple[str, ...], dict[str, str]]:
        """The configured agent's argv and environment, for a short-lived process;
        raises ``provider_unavailable`` when its executable is missing."""
        found = find_executable(self.spec)
        if found is None:
            raise BridgeError(
                "provider_unavailable",
                details={
                    "missing": self.spec.argv[0][:200],
                    "nextStep": self.spec.install_hint
                    or f"install the agent, or point {self.spec.env_var} at it",
                },
            )
        return argv_for(self.spec, found), child_env(self.spec)

    def _learned_listing(self, info: p.AgentInfo) -> None:
        """What a listing's ``initialize`` said; ``unsupported`` when the agent turned out
        not to list its sessions."""
        self.learned(info)
        if not info.session_list:
            raise BridgeError("unsupported")

    async def list_native_sessions(
        self, workspace: str | None, cursor: str | None, limit: int
    ) -> NativeSessionsListResult:
        """The Gemini CLI's chat files, newest first (in a worker thread); an agent that
        advertises ``session/list``: a page of its list (:mod:`~agent_bridge.adapters.acp.
        native`, a short-lived agent process); other agents ``unsupported``."""
        if self._reads_gemini_chats():
            import anyio

            from agent_bridge.adapters.acp.gemini_native import list_page

            return await anyio.to_thread.run_sync(list_page, workspace, cursor, limit)
        if not self._lists_natively():
            raise BridgeError("unsupported")
        from agent_bridge.adapters.acp import native

        native.parse_cursor(cursor)  # a malformed cursor starts no agent
        argv, env = self._agent()
        listing = await native.list_page(argv, env, workspace, cursor, limit)
        self._learned_listing(listing.info)
        assert listing.page is not None
        return listing.page

    async def read_native_session(
        self, session_ref: str, cursor: str | None, limit: int, start: Literal["start", "end"]
    ) -> NativeSessionsReadResult:
        """A page of one Gemini CLI chat file (read-only, in a worker thread); other
        agents ``unsupported`` (ACP reads no history in pages)."""
        if not self._reads_gemini_chats():
            raise BridgeError("unsupported")
        import anyio

        from agent_bridge.adapters.acp.gemini_native import read_page

        return await anyio.to_thread.run_sync(read_page, session_ref, cursor, limit, start)

    async def native_continuation(self, session_ref: str) -> NativeContinuation:
        """The recovery record continuing the agent's session ``session_ref`` (its
        ``sessionId``), with the working directory the agent's list gives it.  Raises
        ``session_not_found`` when the list does not hold it, ``unsupported`` when the
        agent lists no sessions or cannot continue one, ``history_unavailable`` when the
        agent did not answer."""
        if not self._lists_natively() or not self.can_resume():
            raise BridgeError("unsupported")
        from agent_bridge.adapters.acp import native

        native.check_ref(session_ref)
        argv, env = self._agent()
        listing = await native.find_session(argv, env, session_ref)
        self._learned_listing(listing.info)
        if not self.can_resume():
            raise BridgeError("unsupported")
        found = listing.found
        if found is None:
            raise BridgeError("session_not_found")
        cwd = found.workspace if found.workspace and os.path.isdir(found.workspace) else None
        opaque: dict[str, Any] = {"agent": self.spec.id, "sessionId": session_ref, "native": True}
        if cwd is not None:
            opaque["cwd"] = cwd
        return NativeContinuation(opaque, workspace=cwd)

    def native_ref(self, opaque: Any) -> str | None:
        """The agent's ``sessionId`` of a recovery record, when the agent lists its
        sessions (that id is the reference its list gives)."""
        if not self._lists_natively() or not isinstance(opaque, dict):
            return None
        session_id = opaque.get("sessionId")
        return session_id if p.session_id_ok(session_id) else None

    def describe(self) -> ProviderDescriptor:
        return ProviderDescriptor(
            id=self.id,
            display_name=self.spec.display_name,
            version=ADAPTER_VERSION,
            maturity=maturity_for(self.info, self.spec.maturity),
            capabilities=Capabilities(
                run=RunCapabilities(interrupt="cooperative", steer=False, max_concurrent_runs=1),
                interactions=InteractionCapabilities(
                    approval=ApprovalCapability(supported=True, modes=("once", "session")),
                    question=QuestionCapability(supported=True, question_set=True),
                ),
                recovery=RecoveryCapability(resume=self.can_resume(), resume_turn=False),
                native_sessions=self._native_sessions(),
                input=p.input_capabilities(self.info),
                # ACP's unstable session/fork has no fork point: whole sessions only
                fork=FORK_AT_END if self.info is not None and self.info.session_fork else NO_FORK,
            ),
            options=self._options(),
        )

    async def probe(self) -> Availability:
        from agent_bridge.adapters.acp.probe import probe_initialize

        if self.generic:
            return Availability(
                status="unknown", reason="the agent is named per session (option command)"
            )
        found = find_executable(self.spec)
        if found is None:
            return Availability(
                status="unavailable",
                reason=f"the {self.spec.argv[0]} executable was not found",
                next_step=self.spec.install_hint
                or f"install the agent, or point {self.spec.env_var} at it",
            )
        hints = self.spec.hints
        info = await probe_initialize(
            argv_for(self.spec, found),
            child_env(self.spec),
            private_home="HOME" not in self.spec.env,
            home_files=probe_home_files(self.spec),
            home_envs=(hints.config_home_env,) if hints.config_home_env else (),
        )
        if info is None:
            return Availability(
                status="unavailable",
                executable=found,
                reason="the agent did not answer initialize",
                next_step=f"check the installation: run {self.spec.argv[0]} by hand",
            )
        self.learned(info)
        if info.protocol_version != p.PROTOCOL_VERSION:
            # every session would be refused provider_unavailable at its initialize
            return Availability(
                status="unavailable",
                executable=found,
                version=info.version,
                reason=f"the agent speaks another ACP protocol version than "
                f"{p.PROTOCOL_VERSION}, the one the bridge speaks",
                next_step="install a version of the agent that speaks ACP protocol version "
                f"{p.PROTOCOL_VERSION}",
            )
        profile = self.profile
        return Availability(
            status="available",
            executable=found,
            version=info.version,
            authentication="unknown",
            next_step=None
            if profile is None or profile.auth is None
            else "authenticates with " + profile.auth,
        )

    # ------------------------------------------------------------------ sessions

    def _settings(self, ctx: SessionContext, record: Mapping[str, Any] | None = None) -> Any:
        from agent_bridge.adapters.acp.session import Settings, default_cwd

        options = ctx.options
        spec = self.spec
        if self.generic:
            try:
                spec = spec_from_entry(GENERIC_ID, {"command": options.get("command")})
            except ConfigEntryError as exc:
                reason = (
                    str(exc)
                    if options.get("command")
                    else "the acp provider runs the agent the command option names: its argv, "
                    'e.g. ["my-agent", "--acp"]'
                )
                raise BridgeError(
                    "invalid_option", details={"option": "command", "reason": reason[:300]}
                ) from None
        try:
            spec = with_session_overrides(spec, options)
        except ConfigEntryError:
            raise BridgeError("invalid_option", details={"option": "command"}) from None
        found = find_executable(spec, options.get("executable"), variable=not self.generic)
        if found is None:
            raise BridgeError(
                "provider_unavailable",
                details={
                    "missing": spec.argv[0][:200],
                    "nextStep": spec.install_hint
                    or (
                        # the generic provider's argv is the session's: no variable of its own
                        "install the agent, or give its path as the first item of the "
                        "command option"
                        if self.generic
                        else f"install the agent, or point {spec.env_var} at it"
                    ),
                },
            )
        mcp = options.get("mcpServers")
        if mcp is not None and not isinstance(mcp, list):
            raise BridgeError("invalid_option", details={"option": "mcpServers"})
        cwd = ctx.workspace
        if cwd is None and record is not None and isinstance(record.get("cwd"), str):
            cwd = record["cwd"] if os.path.isdir(record["cwd"]) else None
        return Settings(
            spec=spec,
            executable=found,
            argv=argv_for(spec, found),
            cwd=default_cwd(cwd),
            env=child_env(spec),
            workspace=ctx.workspace,
            fs=bool(options.get("clientFs", False)),
            terminal=bool(options.get("clientTerminal", False)),
            auth_method=options.get("authMethod") or spec.hints.auth_method,
            mcp_servers=list(mcp or []),
            mode=options.get("mode"),
            config={k: options[k] for k in CONFIG_CATEGORIES if options.get(k) is not None},
        )

    async def create_session(self, ctx: SessionContext) -> ProviderSession:
        from agent_bridge.adapters.acp.session import AcpSession

        session = AcpSession(ctx, self._settings(ctx), self)
        await session.open(resume=False)
        return session

    async def resume_session(self, ctx: SessionContext, opaque: Any) -> ProviderSession:
        from agent_bridge.adapters.acp.session import AcpSession

        # a record written before session ids were bounded may hold anything
        if not isinstance(opaque, dict) or not p.session_id_ok(opaque.get("sessionId")):
            raise BridgeError("recovery_invalid")
        if not self.can_resume() or opaque.get("resumable") is False:
            raise BridgeError("unsupported", details={"reason": "resume_defect"})
        settings = self._settings(ctx, opaque)
        settings.acp_session_id = opaque["sessionId"]
        settings.replay_history = opaque.get("native") is True
        session = AcpSession(ctx, settings, self)
        await session.open(resume=True)
        return session

    async def fork_session(
        self, ctx: SessionContext, opaque: Any, position: Any, at_end: bool
    ) -> ProviderSession:
        """A new agent session from the agent's own ``session/fork`` (unstable in ACP) of
        the session in ``opaque``, in a new agent process.  Only the whole session can be
        forked (ACP names no fork point): anything else is ``unsupported``."""
        from agent_bridge.adapters.acp.session import AcpSession

        del position
        if not at_end:
            raise BridgeError("unsupported")
        # a record written before session ids were bounded may hold anything
        if not isinstance(opaque, dict) or not p.session_id_ok(opaque.get("sessionId")):
            raise BridgeError("recovery_invalid")
        settings = self._settings(ctx, opaque)
        settings.acp_session_id = opaque["sessionId"]
        session = AcpSession(ctx, settings, self)
        await session.open(resume=False, fork=True)
        return session


def builtin_provider(agent_id: str) -> AcpProvider:
    """The built-in agent ``agent_id``."""
    return AcpProvider(BUILTIN_AGENTS[agent_id])


def gemini_provider() -> AcpProvider:
    """The built-in ``gemini`` provider (registry factory)."""
    return builtin_provider("gemini")


def opencode_provider() -> AcpProvider:
    """The built-in ``opencode`` provider (registry factory)."""
    return builtin_provider("opencode")


def qwen_provider() -> AcpProvider:
    """The built-in ``qwen`` provider (registry factory)."""
    return builtin_provider("qwen")


def fast_agent_provider() -> AcpProvider:
    """The built-in ``fast-agent`` provider (registry factory)."""
    return builtin_provider("fast-agent")


def mistral_vibe_provider() -> AcpProvider:
    """The built-in ``mistral-vibe`` provider (registry factory)."""
    return builtin_provider("mistral-vibe")


def generic_provider() -> AcpProvider:
    """The ``acp`` provider: any agent, named by the ``command`` session option."""
    spec = AgentSpec(
        id=GENERIC_ID,
        display_name="ACP agent (command from options)",
        argv=("acp-agent",),
    )
    return AcpProvider(spec, generic=True)


def configured_providers(config: Config | None = None) -> list[AcpProvider]:
    """One provider per ``[acp.agents.<id>]`` entry of the configuration file."""
    config = load_config() if config is None else config
    return [AcpProvider(spec) for spec in agents_from_config(config, log)]
