"""Which ACP agents exist and how one is started: :class:`AgentSpec` (from the built-ins,
the bridge's configuration file or ``session/create`` options), executable discovery and
the child's environment.

An agent entry is data, not code: an id, a display name, an argv vector, extra
environment (``env`` values, ``passEnv`` names of the bridge's own variables) and hints
(what the adapter should know about the agent that its ``initialize`` does not say).

Where the executable comes from, first match wins: the session option ``executable``;
the environment variable named by the entry (``AGENT_BRIDGE_GEMINI_PATH`` for the built-in
``gemini``, ``AGENT_BRIDGE_ACP_<ID>_PATH`` for configured ones, the id upper-cased with
``-`` as ``_``); ``argv[0]`` as given (an absolute path) or looked up on ``PATH``.

The child's environment is the bridge's allowlist
(:func:`agent_bridge.processes.build_child_env`) plus the entry's ``passEnv`` and
``env``, then the session's ``passEnv`` and ``env`` options; then, for every variable not
set so, the quiet defaults of the known agents' profiles (telemetry off, no update
checks: :data:`~agent_bridge.adapters.acp.profiles.QUIET_ENV`).  Nothing else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from agent_bridge.adapters.acp.profiles import QUIET_ENV
from agent_bridge.config import Config
from agent_bridge.processes import build_child_env
from agent_bridge.wire.providers import Maturity

__all__ = [
    "BUILTIN_AGENTS",
    "GEMINI",
    "OPENCODE",
    "QWEN",
    "AgentSpec",
    "ConfigEntryError",
    "Hints",
    "agents_from_config",
    "child_env",
    "find_executable",
    "probe_home_files",
]

_ID: Final = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ConfigEntryError(ValueError):
    """An agent entry (in the configuration file or options) is malformed; the message
    names the field, never a value."""


@dataclass(frozen=True, slots=True)
class Hints:
    """What the adapter knows about an agent beyond its ``initialize``.

    ``resume``: whether a session can be continued in a *new* agent process (``None``:
    trust what the agent advertises; ``False``: it cannot, whatever it advertises — an
    upstream defect, named in ``resume_defect``).  ``auth_method``: the ``authenticate``
    method to call when the session's options name none.  ``restart_after_cancel``: the
    agent is not usable after a cancelled prompt (claude-agent-acp 0.23: the turns shift
    by one), so after an interrupted run the adapter starts a new agent process and
    continues the session there (``session/resume`` or ``session/load``) before the next
    run.  ``None`` for either: the agent's profile decides
    (:mod:`~agent_bridge.adapters.acp.profiles`), else what the agent advertises.

    ``settings_file``: the agent's user settings file, relative to its configuration home
    (the variable ``config_home_env`` when it is set, else ``HOME``).  A probe runs the
    agent in a throwaway home (nothing may be written under the user's), so it copies
    that file there -- the user's settings hold in the probe too -- with
    ``quiet_settings`` laid over it: what keeps the probe off the network whatever the
    user's file says (a probe only asks ``initialize``).
    """

    resume: bool | None = None
    resume_defect: str | None = None
    auth_method: str | None = None
    restart_after_cancel: bool | None = None
    settings_file: str | None = None
    config_home_env: str | None = None
    quiet_settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One configured ACP agent."""

    id: str
    display_name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    hints: Hints = Hints()
    maturity: Maturity = "experimental"
    executable_env: str | None = None
    install_hint: str | None = None
    #: The profile a built-in expects, used until the agent has answered ``initialize``.
    profile: str | None = None

    @property
    def env_var(self) -> str:
        """The variable that overrides the executable."""
        if self.executable_env:
            return self.executable_env
        return "AGENT_BRIDGE_ACP_" + re.sub(r"[^A-Z0-9]", "_", self.id.upper()) + "_PATH"


#: Gemini CLI (``gemini --acp``).  Its variables are passed through by name; its profile
#: declares its sessions not resumable (``session/load`` in a new process fails: the new
#: process rewrites the chat file's header before reading it).
GEMINI: Final = AgentSpec(
    id="gemini",
    display_name="Gemini CLI",
    argv=("gemini", "--acp"),
    pass_env=(
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GEMINI_CLI_HOME",
        "GEMINI_CLI_TRUST_WORKSPACE",
        "GEMINI_MODEL",
    ),
    hints=Hints(
        # Gemini CLI reads ~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini/...); with
        # usage statistics on (its default) even an initialize-only run posts to its
        # statistics service.  Its documented GEMINI_CLI_SYSTEM_SETTINGS_PATH did not
        # silence 0.61.0 (measured with tests/netns_dns.py); the user file does.
        settings_file=".gemini/settings.json",
        config_home_env="GEMINI_CLI_HOME",
        quiet_settings={
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
        },
    ),
    profile="gemini",
    # Proven end to end (tests/test_acp_e2e.py, in CI with the pinned version).
    maturity="verified",
    executable_env="AGENT_BRIDGE_GEMINI_PATH",
    install_hint="install the Gemini CLI (npm package @google/gemini-cli)",
)

#: OpenCode (``opencode acp``).  Its model provider comes from its own configuration
#: (``opencode.json``, or the file or JSON text ``OPENCODE_CONFIG`` /
#: ``OPENCODE_CONFIG_CONTENT`` name), its keys from the variables passed by name here.
OPENCODE: Final = AgentSpec(
    id="opencode",
    display_name="OpenCode",
    argv=("opencode", "acp"),
    pass_env=(
        "OPENCODE_CONFIG",
        "OPENCODE_CONFIG_CONTENT",
        "OPENCODE_CONFIG_DIR",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "GOOGLE_GENERATIVE_AI_API_KEY",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ),
    # Proven end to end (tests/test_acp_agents_e2e.py, in CI with the pinned version).
    maturity="verified",
    executable_env="AGENT_BRIDGE_OPENCODE_PATH",
    install_hint="install OpenCode (npm package opencode-ai)",
    profile="opencode",
)

#: Qwen Code (``qwen --acp``, a Gemini CLI fork).  The model API is chosen in
#: ``~/.qwen/settings.json`` (``security.auth.selectedType``: ``openai``, ``anthropic``,
#: ``gemini`` …) and reached through the variables passed by name here.
QWEN: Final = AgentSpec(
    id="qwen",
    display_name="Qwen Code",
    argv=("qwen", "--acp"),
    pass_env=(
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "QWEN_CODE_HOME",
    ),
    # Proven end to end (tests/test_acp_agents_e2e.py, in CI with the pinned version).
    maturity="verified",
    executable_env="AGENT_BRIDGE_QWEN_PATH",
    install_hint="install Qwen Code (npm package @qwen-code/qwen-code)",
    profile="qwen",
)

#: fast-agent (``fast-agent --no-update-check acp --shell``; PyPI ``fast-agent-acp``,
#: which installs ``fast-agent-mcp``: the ``fast-agent-acp`` executable of 0.10.48 is
#: broken, its wheel lacks the ``fast_agent_acp`` module).  ``--shell`` gives it its
#: local shell tool (asked for through ``session/request_permission``); the model and
#: its API come from ``fastagent.config.yaml`` or the variables passed by name here
#: (``ANTHROPIC__BASE_URL``: pydantic-settings' nested names).
FAST_AGENT: Final = AgentSpec(
    id="fast-agent",
    display_name="fast-agent",
    argv=("fast-agent", "--no-update-check", "acp", "--shell"),
    pass_env=(
        "ANTHROPIC_API_KEY",
        "ANTHROPIC__API_KEY",
        "ANTHROPIC__BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI__API_KEY",
        "OPENAI__BASE_URL",
        "GOOGLE_API_KEY",
        "DEFAULT_MODEL",
        "FAST_AGENT_HOME",
    ),
    # Proven end to end (tests/test_acp_agents_e2e.py, in CI with the pinned version).
    maturity="verified",
    executable_env="AGENT_BRIDGE_FAST_AGENT_PATH",
    install_hint="install fast-agent (PyPI package fast-agent-acp, Python >= 3.12)",
    profile="fast-agent",
)

#: Mistral Vibe (``vibe-acp``; PyPI ``mistral-vibe``, Python >= 3.12).  Its model
#: providers, models, telemetry and experiments come from ``~/.vibe/config.toml``
#: (``$VIBE_HOME/config.toml``); each provider names the variable holding its key
#: (``api_key_env_var``): the usual ones are passed by name here.
MISTRAL_VIBE: Final = AgentSpec(
    id="mistral-vibe",
    display_name="Mistral Vibe",
    argv=("vibe-acp",),
    pass_env=("VIBE_HOME", "MISTRAL_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"),
    # Proven end to end (tests/test_acp_agents_e2e.py, in CI with the pinned version).
    maturity="verified",
    executable_env="AGENT_BRIDGE_MISTRAL_VIBE_PATH",
    install_hint="install Mistral Vibe (PyPI package mistral-vibe, Python >= 3.12)",
    profile="mistral-vibe",
)

BUILTIN_AGENTS: Final = {
    spec.id: spec for spec in (GEMINI, OPENCODE, QWEN, FAST_AGENT, MISTRAL_VIBE)
}


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and "\0" not in v for v in value):
        raise ConfigEntryError(f"{what} must be a list of strings")
    return tuple(value)


def _env_table(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigEntryError(f"{what} must be a table of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            raise ConfigEntryError(f"{what} has a bad variable name")
        if not isinstance(item, str) or "\0" in item:
            raise ConfigEntryError(f"{what}.{key} must be a string")
        out[key] = item
    return out


def _names(value: Any, what: str) -> tuple[str, ...]:
    names = _strings(value, what)
    if not all(_ENV_NAME.fullmatch(n) for n in names):
        raise ConfigEntryError(f"{what} has a bad variable name")
    return names


def spec_from_entry(agent_id: str, entry: Mapping[str, Any]) -> AgentSpec:
    """An agent entry (a table of the configuration file, or the ``agent`` option) →
    :class:`AgentSpec`.  Keys: ``command`` (argv, required), ``displayName``, ``env``,
    ``passEnv``, ``authMethod``, ``resume`` and ``restartAfterCancel`` (bools)."""
    if not _ID.fullmatch(agent_id):
        raise ConfigEntryError("the agent id must be lower-case letters, digits, '-', '_', '.'")
    argv = _strings(entry.get("command"), "command")
    if not argv or not argv[0]:
        raise ConfigEntryError("command must name the agent's executable")
    name = entry.get("displayName", agent_id)
    if not isinstance(name, str):
        raise ConfigEntryError("displayName must be a string")
    auth = entry.get("authMethod")
    if auth is not None and not isinstance(auth, str):
        raise ConfigEntryError("authMethod must be a string")
    resume = entry.get("resume")
    if resume is not None and not isinstance(resume, bool):
        raise ConfigEntryError("resume must be true or false")
    restart = entry.get("restartAfterCancel")
    if restart is not None and not isinstance(restart, bool):
        raise ConfigEntryError("restartAfterCancel must be true or false")
    return AgentSpec(
        id=agent_id,
        display_name=name[:200],
        argv=argv,
        env=_env_table(entry.get("env"), "env"),
        pass_env=_names(entry.get("passEnv"), "passEnv"),
        hints=Hints(resume=resume, auth_method=auth, restart_after_cancel=restart),
    )


def agents_from_config(config: Config, log: Any = None) -> list[AgentSpec]:
    """The agents of the ``[acp.agents.<id>]`` tables; a malformed entry is logged and
    skipped.  An entry whose id is a built-in's replaces it (its maturity becomes
    ``experimental``: it is no longer the tested configuration)."""
    agents = config.section("acp").get("agents")
    if not isinstance(agents, dict):
        return []
    out: list[AgentSpec] = []
    for agent_id, entry in agents.items():
        try:
            if not isinstance(entry, dict):
                raise ConfigEntryError("an agent entry must be a table")
            out.append(spec_from_entry(str(agent_id), entry))
        except ConfigEntryError as exc:
            if log is not None:
                log.warning("configuration: acp agent %r skipped: %s", str(agent_id)[:64], exc)
    return out


def with_session_overrides(spec: AgentSpec, options: Mapping[str, Any]) -> AgentSpec:
    """``spec`` with the session's ``args``, ``env`` and ``passEnv`` options applied."""
    args = _strings(options.get("args"), "args")
    env = {**spec.env, **_env_table(options.get("env"), "env")}
    pass_env = spec.pass_env + _names(options.get("passEnv"), "passEnv")
    return replace(spec, argv=spec.argv + args, env=env, pass_env=pass_env)


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_executable(
    spec: AgentSpec,
    option: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    variable: bool = True,
) -> str | None:
    """The agent's executable (see the module doc), or ``None``.  ``variable=False``: the
    spec's variable (:attr:`AgentSpec.env_var`) is not consulted (the generic provider's
    agent is the session's ``command``, which no variable of the bridge's overrides)."""
    env = os.environ if env is None else env
    path_var = env.get("PATH", os.defpath)
    for candidate in (option, env.get(spec.env_var) if variable else None):
        if candidate:
            if os.sep in candidate:
                return candidate if _executable(candidate) else None
            return shutil.which(candidate, path=path_var)
    argv0 = spec.argv[0]
    if os.sep in argv0:
        return argv0 if _executable(argv0) else None
    return shutil.which(argv0, path=path_var)


def child_env(spec: AgentSpec, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The complete environment of the agent's process (see the module doc)."""
    declared = {"NO_COLOR": "1", **spec.env}
    # what a configuration or host chose to pass may be a credential whatever its name
    env = build_child_env(
        declared,
        passthrough=sorted(set(spec.pass_env)),
        parent=parent,
        secret_names=(*spec.env, *spec.pass_env),
    )
    for name, value in QUIET_ENV.items():
        env.setdefault(name, value)
    return env


def argv_for(spec: AgentSpec, executable: str) -> tuple[str, ...]:
    """The argv vector with the discovered executable in front."""
    return (executable, *spec.argv[1:])


def string_list(options: Mapping[str, Any], name: str) -> Sequence[str]:
    """A ``stringList`` option (empty when absent)."""
    value = options.get(name)
    return tuple(value) if isinstance(value, list) else ()


def probe_home_files(spec: AgentSpec, environ: Mapping[str, str] | None = None) -> dict[str, bytes]:
    """The files a probe of ``spec`` puts in its throwaway home, by relative path: the
    user's settings file (read, never written) with the hints' ``quiet_settings`` laid
    over it, or nothing when the agent has no settings file.  A user file that is not a
    JSON object is replaced by the quiet settings alone."""
    hints = spec.hints
    if hints.settings_file is None:
        return {}
    env = os.environ if environ is None else environ
    home = (env.get(hints.config_home_env) if hints.config_home_env else None) or env.get(
        "HOME", ""
    )
    user: Any = {}
    if home:
        try:
            with open(os.path.join(home, hints.settings_file), "rb") as fh:
                user = json.loads(fh.read())
        except (OSError, ValueError):
            user = {}
    if not isinstance(user, dict):
        user = {}
    merged = _overlay(user, hints.quiet_settings)
    return {hints.settings_file: json.dumps(merged, indent=2).encode()}


def _overlay(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            out[key] = _overlay(below, value)
        else:
            out[key] = value
    return out
