"""What the bridge knows about each ACP agent it has proven, as data: one
:class:`Profile` per agent.

An agent is recognised by what it says about itself in ``initialize``
(``agentInfo.name``), so the same agent gets the same profile however it was
configured: as a built-in provider, as an ``[acp.agents.<id>]`` entry of the
configuration file, or through the generic ``acp`` provider with a ``command``.  A
profile holds

* descriptor corrections: whether a session can really be continued in a new agent
  process (``resume``, with the upstream defect that says why not) — what the agent
  advertises is trusted otherwise;
* workarounds: ``restart_after_cancel`` (the agent is not usable after a cancelled
  prompt; the adapter continues the session in a new agent process);
* the environment that keeps the agent silent (``quiet_env``: telemetry off, no update
  checks).  The agent is only known once it has started, so every ACP agent gets the
  union of all profiles' quiet variables (each is read by its own agent only) plus
  ``DO_NOT_TRACK=1``; a value set by the entry, the session or ``passEnv`` wins;
* its maturity and the versions proven end to end here (``proven``): the profile's
  maturity holds for a proven version; any other version, and an agent no profile
  names, is ``experimental``.

What an entry of the configuration file says explicitly (``resume``,
``restartAfterCancel``) overrides the profile (:func:`effective_hints`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from agent_bridge.wire.providers import Maturity

if TYPE_CHECKING:
    from agent_bridge.adapters.acp.launch import Hints
    from agent_bridge.adapters.acp.protocol import AgentInfo

__all__ = [
    "PROFILES",
    "QUIET_ENV",
    "Profile",
    "effective_hints",
    "maturity_for",
    "profile_for",
]


@dataclass(frozen=True, slots=True)
class Profile:
    """One known ACP agent (see the module doc)."""

    key: str
    display_name: str
    #: ``agentInfo.name`` values the agent answers ``initialize`` with.
    names: tuple[str, ...]
    #: Versions proven end to end by this project's tests (pinned in
    #: scripts/install-provider-clis.sh).
    proven: tuple[str, ...] = ()
    maturity: Maturity = "experimental"
    #: ``False``: a session cannot be continued in a new process, whatever is advertised.
    resume: bool | None = None
    resume_defect: str | None = None
    restart_after_cancel: bool = False
    restart_defect: str | None = None
    quiet_env: Mapping[str, str] = field(default_factory=dict)
    #: How the agent authenticates (ACP cannot ask whether it is logged in): shown by
    #: ``doctor`` and the probe as the next step of an available agent.
    auth: str | None = None


PROFILES: Final[tuple[Profile, ...]] = (
    Profile(
        key="gemini",
        display_name="Gemini CLI",
        names=("gemini-cli",),
        proven=("0.61.0",),
        maturity="verified",
        resume=False,
        resume_defect=(
            "gemini-cli 0.61: session/load in a new process fails with "
            '"No previous sessions found for this project"'
        ),
        quiet_env={"GEMINI_TELEMETRY_ENABLED": "false"},
        auth="GEMINI_API_KEY, Vertex AI, or `gemini` login (authMethod option)",
    ),
    Profile(
        key="claude-acp",
        display_name="Claude Agent (claude-agent-acp)",
        names=(
            "@zed-industries/claude-agent-acp",
            "@agentclientprotocol/claude-agent-acp",
            "claude-agent-acp",
        ),
        proven=("0.23.1",),
        maturity="verified",
        restart_after_cancel=True,
        restart_defect=(
            "claude-agent-acp 0.23: after a cancel the turns shift by one "
            "(agentclientprotocol/claude-agent-acp#551)"
        ),
        quiet_env={
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
        },
        auth="ANTHROPIC_API_KEY (passEnv), or a Claude Code login",
    ),
    Profile(
        key="codex-acp",
        display_name="Codex (codex-acp)",
        names=("codex-acp",),
        proven=("0.16.0",),
        maturity="verified",
        auth="OPENAI_API_KEY / CODEX_API_KEY or ChatGPT login (authMethod option)",
    ),
    Profile(
        key="opencode",
        display_name="OpenCode",
        names=("OpenCode",),
        proven=("1.18.33",),
        maturity="verified",
        quiet_env={
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
        },
        auth="a key in its configuration or environment, or `opencode auth login`",
    ),
    Profile(
        key="qwen",
        display_name="Qwen Code",
        names=("qwen-code",),
        proven=("0.24.4",),
        maturity="verified",
        quiet_env={
            "QWEN_TELEMETRY_ENABLED": "false",
            "QWEN_USAGE_STATISTICS_ENABLED": "false",
        },
        auth="~/.qwen/settings.json selectedType plus its key (OPENAI_API_KEY …)",
    ),
    Profile(
        key="mistral-vibe",
        display_name="Mistral Vibe",
        names=("@mistralai/mistral-vibe",),
        proven=("3.0.2",),
        maturity="verified",
        auth="a provider in ~/.vibe/config.toml and the variable it names (MISTRAL_API_KEY)",
    ),
    Profile(
        key="fast-agent",
        display_name="fast-agent",
        names=("fast-agent-acp",),
        proven=("0.10.48",),
        maturity="verified",
        auth="keys in fastagent.secrets.yaml or the environment (ANTHROPIC_API_KEY, …)",
    ),
)

_BY_NAME: Final = MappingProxyType(
    {name.lower(): profile for profile in PROFILES for name in profile.names}
)
BY_KEY: Final = MappingProxyType({profile.key: profile for profile in PROFILES})


def _quiet() -> Mapping[str, str]:
    out = {"DO_NOT_TRACK": "1"}
    for profile in PROFILES:
        out.update(profile.quiet_env)
    return MappingProxyType(out)


#: What every ACP agent's environment gets unless set otherwise (see the module doc).
QUIET_ENV: Final = _quiet()


def profile_for(info: AgentInfo | None) -> Profile | None:
    """The profile of the agent that answered ``initialize`` with ``info``, or ``None``
    (not asked yet, or an agent no profile names)."""
    if info is None or info.name is None:
        return None
    return _BY_NAME.get(info.name.lower())


def effective_hints(hints: Hints, profile: Profile | None) -> Hints:
    """``hints`` (an entry's explicit choices) completed by ``profile``: a hint the entry
    left unset (``None``) takes the profile's value."""
    if profile is None:
        return hints
    resume, defect = hints.resume, hints.resume_defect
    if resume is None and profile.resume is not None:
        resume, defect = profile.resume, profile.resume_defect
    restart = hints.restart_after_cancel
    if restart is None:
        restart = profile.restart_after_cancel
    return replace(hints, resume=resume, resume_defect=defect, restart_after_cancel=restart)


def maturity_for(info: AgentInfo | None, fallback: Maturity) -> Maturity:
    """The maturity of the agent that answered ``info``: its profile's for a proven
    version, ``experimental`` for any other version or agent; ``fallback`` (the entry's
    own) until the agent has been asked."""
    if info is None:
        return fallback
    profile = profile_for(info)
    if profile is None or info.version not in profile.proven:
        return "experimental"
    return profile.maturity
