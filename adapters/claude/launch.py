"""How the Claude Code adapter starts the CLI: executable discovery, the argv vector (from
the session options) and the environment.

Everything here is pure (no processes, no I/O beyond ``os.path`` checks), so it is tested
directly.  The one place that says which variables of the bridge's environment reach the
``claude`` child is :data:`PASSTHROUGH_ENV` / :data:`PASSTHROUGH_PREFIXES`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_bridge.errors import BridgeError
from agent_bridge.processes import build_child_env

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "ENV_EXECUTABLE",
    "PASSTHROUGH_ENV",
    "PASSTHROUGH_PREFIXES",
    "PERMISSION_MODES",
    "SILENT_ENV",
    "Discovery",
    "LaunchConfig",
    "build_argv",
    "child_env",
    "discover_executable",
    "launch_config",
    "valid_session_id",
]

#: The bridge-level override of where the CLI is (after the ``executable`` option).
ENV_EXECUTABLE: Final = "AGENT_BRIDGE_CLAUDE_PATH"

#: ``--permission-mode`` values of Claude Code 2.1.197 (``claude --help``).
PERMISSION_MODES: Final = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")

DEFAULT_STARTUP_TIMEOUT: Final = 30

#: Variables copied from the bridge's environment into the ``claude`` child (on top of
#: the bridge-wide allowlist of :mod:`agent_bridge.processes`), and why:
#:
#: * credentials and endpoint of the Anthropic API (``ANTHROPIC_API_KEY``,
#:   ``ANTHROPIC_AUTH_TOKEN``, ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_CUSTOM_HEADERS``) and
#:   the model defaults the CLI reads (``ANTHROPIC_MODEL`` …);
#: * Amazon Bedrock / Google Vertex set-ups (enabled by ``CLAUDE_CODE_USE_BEDROCK`` /
#:   ``CLAUDE_CODE_USE_VERTEX``, which the ``CLAUDE_CODE_`` prefix covers);
#: * where the CLI keeps its state (``CLAUDE_CONFIG_DIR``) and its documented tuning
#:   variables (``MAX_THINKING_TOKENS``, ``BASH_*_TIMEOUT_MS``, ``MCP_*TIMEOUT``,
#:   ``DISABLE_*``);
#: * corporate networks: proxies and extra CA certificates.
PASSTHROUGH_ENV: Final[tuple[str, ...]] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "AWS_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "CLOUD_ML_REGION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLAUDE_CONFIG_DIR",
    "MAX_THINKING_TOKENS",
    "BASH_DEFAULT_TIMEOUT_MS",
    "BASH_MAX_TIMEOUT_MS",
    "MCP_TIMEOUT",
    "MCP_TOOL_TIMEOUT",
    "DISABLE_AUTOUPDATER",
    "DISABLE_TELEMETRY",
    "DISABLE_ERROR_REPORTING",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
)
#: Every variable whose name starts with one of these is passed through as well
#: (``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``, ``CLAUDE_CODE_MAX_RETRIES``,
#: ``CLAUDE_CODE_USE_BEDROCK`` …).
PASSTHROUGH_PREFIXES: Final[tuple[str, ...]] = ("CLAUDE_CODE_",)

#: The flags every session runs with (bidirectional stream-json, permission prompts on
#: the control channel, token deltas).
BASE_FLAGS: Final[tuple[str, ...]] = (
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
    "--include-partial-messages",
)

_SESSION_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def valid_session_id(value: object) -> bool:
    """Whether ``value`` looks like a CLI session id (safe as one argv element)."""
    return isinstance(value, str) and _SESSION_ID_RE.fullmatch(value) is not None


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True, slots=True)
class Discovery:
    """Where the CLI was found (``path``), or why not (``missing`` details)."""

    path: str | None
    source: str
    details: dict[str, str]


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def bundled_executable() -> str | None:
    """The ``claude`` binary shipped inside the ``claude-agent-sdk`` wheel, if that package
    is installed (located without importing it)."""
    try:
        spec = importlib.util.find_spec("claude_agent_sdk")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = os.path.join(location, "_bundled", "claude")
        if _is_executable(candidate):
            return candidate
    return None


SEARCHED: Final = "executable option, AGENT_BRIDGE_CLAUDE_PATH, PATH, claude-agent-sdk bundle"
NEXT_STEP: Final = (
    "install Claude Code (npm install -g @anthropic-ai/claude-code) or set the "
    "executable option or AGENT_BRIDGE_CLAUDE_PATH to the claude binary"
)


def _explicit(location: str, source: str, named_by: str, name: str) -> Discovery:
    """The executable at ``location`` (``~`` expanded, made absolute), found through
    ``source``; when it is not an executable file, missing, with the detail ``named_by``
    (``option`` or ``variable``) saying which ``name`` pointed there."""
    path = os.path.abspath(os.path.expanduser(location))
    if _is_executable(path):
        return Discovery(path, source, {})
    return Discovery(
        None, source, {"missing": "claude executable", named_by: name, "nextStep": NEXT_STEP}
    )


def discover_executable(option: str | None, environ: Mapping[str, str] | None = None) -> Discovery:
    """Find the CLI: the ``executable`` option, ``AGENT_BRIDGE_CLAUDE_PATH``, ``PATH``, the
    ``claude-agent-sdk`` bundle.  An explicit location (option or variable) that is not an
    executable file is reported as missing; discovery does not fall back from it."""
    env = os.environ if environ is None else environ
    if option:
        return _explicit(option, "option", "option", "executable")
    override = env.get(ENV_EXECUTABLE)
    if override:
        return _explicit(override, "environment", "variable", ENV_EXECUTABLE)
    found = shutil.which("claude", path=env.get("PATH", os.defpath))
    if found is not None:
        return Discovery(os.path.abspath(found), "path", {})
    bundled = bundled_executable()
    if bundled is not None:
        return Discovery(bundled, "claude-agent-sdk", {})
    return Discovery(
        None,
        "discovery",
        {"missing": "claude executable", "searched": SEARCHED, "nextStep": NEXT_STEP},
    )


# --------------------------------------------------------------------------- launch


@dataclass(frozen=True, slots=True)
class LaunchConfig:
    """Everything needed to (re)start the CLI for one session, minus ``--resume``."""

    executable: str
    flags: tuple[str, ...]
    cwd: str
    config_dir: str | None
    startup_timeout: float
    permission_mode: str


def _mcp_flag(value: Any) -> str:
    if isinstance(value, str) and value:
        return os.path.abspath(os.path.expanduser(value))
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    raise BridgeError("invalid_option", details={"option": "mcpConfig", "scope": "session"})


_TOOL_FLAGS: Final = (
    ("allowedTools", "--allowed-tools"),
    ("disallowedTools", "--disallowed-tools"),
)


def option_flags(options: Mapping[str, Any]) -> tuple[str, ...]:
    """Map session options to CLI flags.

    Values are attached with ``=`` so that a value starting with ``-`` can never be read
    as another flag, and variadic flags (``--allowed-tools``, ``--mcp-config``) take
    exactly one element.
    """
    flags: list[str] = []
    model = options.get("model")
    if isinstance(model, str) and model:
        flags.append(f"--model={model}")
    mode = options.get("permissionMode")
    if isinstance(mode, str) and mode != "default":
        flags.append(f"--permission-mode={mode}")
    for name, flag in _TOOL_FLAGS:
        tools = options.get(name)
        if tools:
            if any("," in t or not t.strip() for t in tools):
                raise BridgeError("invalid_option", details={"option": name, "scope": "session"})
            flags.append(f"{flag}={','.join(t.strip() for t in tools)}")
    prompt = options.get("appendSystemPrompt")
    if isinstance(prompt, str) and prompt:
        flags.append(f"--append-system-prompt={prompt}")
    mcp = options.get("mcpConfig")
    if mcp is not None:
        flags.append(f"--mcp-config={_mcp_flag(mcp)}")
    return tuple(flags)


def launch_config(
    options: Mapping[str, Any],
    workspace: str | None,
    *,
    recorded_config_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> LaunchConfig:
    """Resolve the executable and the flags; raise ``provider_unavailable`` (naming what
    is missing in ``details``) or ``invalid_option``."""
    env = os.environ if environ is None else environ
    executable = options.get("executable")
    found = discover_executable(executable if isinstance(executable, str) else None, env)
    if found.path is None:
        raise BridgeError("provider_unavailable", details=found.details)
    config_dir = options.get("configDir")
    if isinstance(config_dir, str) and config_dir:
        if not os.path.isabs(os.path.expanduser(config_dir)):
            raise BridgeError("invalid_option", details={"option": "configDir", "scope": "session"})
        config_dir = os.path.expanduser(config_dir)
    else:
        config_dir = recorded_config_dir or env.get("CLAUDE_CONFIG_DIR") or None
    timeout = options.get("startupTimeoutSeconds", DEFAULT_STARTUP_TIMEOUT)
    if not isinstance(timeout, int) or timeout <= 0:
        raise BridgeError(
            "invalid_option", details={"option": "startupTimeoutSeconds", "scope": "session"}
        )
    return LaunchConfig(
        executable=found.path,
        flags=option_flags(options),
        cwd=workspace or os.getcwd(),
        config_dir=config_dir,
        startup_timeout=float(timeout),
        permission_mode=str(options.get("permissionMode") or "default"),
    )


def build_argv(
    config: LaunchConfig,
    resume: str | None = None,
    fork: tuple[str, str | None] | None = None,
) -> tuple[str, ...]:
    """The argv vector of one CLI process (never any prompt text): a new conversation,
    ``resume`` one, or ``fork`` one, ``(session id, assistant message uuid)``: a new
    conversation holding that one's messages up to and including that assistant message
    (``--fork-session``, ``--resume-session-at``; the whole of it without a uuid)."""
    argv: list[str] = [config.executable, *BASE_FLAGS, *config.flags]
    if resume is not None:
        if not valid_session_id(resume):
            raise BridgeError("recovery_invalid")
        argv.append(f"--resume={resume}")
    elif fork is not None:
        source, at = fork
        if not valid_session_id(source) or (at is not None and not valid_session_id(at)):
            raise BridgeError("recovery_invalid")
        argv += [f"--resume={source}", "--fork-session"]
        if at is not None:
            argv.append(f"--resume-session-at={at}")
    return tuple(argv)


def passthrough_names(environ: Mapping[str, str]) -> list[str]:
    """The names :func:`child_env` copies from ``environ``."""
    names = list(PASSTHROUGH_ENV)
    names.extend(
        sorted(n for n in environ if n.startswith(PASSTHROUGH_PREFIXES) and n not in names)
    )
    return names


#: Set in every ``claude`` child (probe and session) unless the bridge's own environment
#: sets it: with it the CLI sends no telemetry, error reports or update checks, and
#: ``claude auth status`` does not look up the model API host (issue 11, item 8: probes
#: are silent; a session talks only to its model endpoint).
SILENT_ENV: Final[dict[str, str]] = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def child_env(config_dir: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The complete environment of a ``claude`` child: the bridge allowlist, the declared
    passthrough, :data:`SILENT_ENV` (unless the bridge's environment overrides it) and
    ``CLAUDE_CONFIG_DIR`` when the session has one."""
    env = os.environ if environ is None else environ
    declared: dict[str, str] = {k: v for k, v in SILENT_ENV.items() if k not in env}
    if config_dir:
        declared["CLAUDE_CONFIG_DIR"] = config_dir
    return build_child_env(declared, passthrough=passthrough_names(env), parent=env)
