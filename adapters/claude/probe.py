"""Discovery for ``providers/list`` with ``probe``: where the CLI is, which version, and
whether it is authenticated (``authenticated`` only when the CLI itself reports a
claude.ai login; a configured API key cannot be checked offline, so it is ``unknown``).

Every probe is an argv vector run by the kit's bounded probe runner
(:func:`agent_bridge.adapters.kit.probe.run_probe`) with :data:`PROBE_ENV`; nothing here
talks to the network but loopback (``tests/test_silent_probes.py`` checks it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Final

from agent_bridge.adapters.claude.launch import (
    NEXT_STEP,
    SEARCHED,
    child_env,
    discover_executable,
)
from agent_bridge.adapters.kit.probe import run_probe, throwaway_home
from agent_bridge.wire.providers import Availability

__all__ = [
    "AUTH_STATUS_MIN_VERSION",
    "PROBE_ENV",
    "parse_auth_status",
    "parse_version",
    "probe_cli",
]

PROBE_TIMEOUT: Final = 10.0
PROBE_OUTPUT_LIMIT: Final = 64 * 1024
#: ``claude auth status --json`` exists (and is offline) in the version this adapter was
#: verified against; an older CLI might take ``auth`` for a prompt, so it is not asked.
AUTH_STATUS_MIN_VERSION: Final = (2, 1, 197)

#: Set in the probe's environment on top of the session's (which already has
#: ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``): every ``claude`` command warms a
#: connection to the model API at start-up, so ``claude auth status`` looked up the API
#: host (issue 11, item 8).  Pointing the base URL at the discard port on loopback keeps
#: the probe silent and does not change what ``auth status`` reports, which is read from
#: the local configuration.
PROBE_ENV: Final[dict[str, str]] = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}

_VERSION_RE: Final = re.compile(r"\b(\d+)\.(\d+)\.(\d+)\b")


def parse_version(output: str) -> tuple[str, tuple[int, int, int]] | None:
    """``"2.1.197 (Claude Code)"`` → ``("2.1.197", (2, 1, 197))``."""
    match = _VERSION_RE.search(output)
    if match is None:
        return None
    parts = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return match.group(0), parts


def parse_auth_status(output: str) -> tuple[str, str | None, str | None]:
    """``(authentication, reason, next_step)`` from ``claude auth status --json``."""
    try:
        status = json.loads(output)
    except ValueError:
        return "unknown", "the CLI did not report its authentication status", None
    if not isinstance(status, dict) or not isinstance(status.get("loggedIn"), bool):
        return "unknown", "the CLI did not report its authentication status", None
    if not status["loggedIn"]:
        return (
            "unauthenticated",
            "the CLI has no credentials",
            "run `claude auth login`, or set ANTHROPIC_API_KEY for the bridge",
        )
    if status.get("authMethod") == "claude.ai":
        return "authenticated", None, None
    return (
        "unknown",
        "credentials are configured (an API key, a token or a cloud provider) but cannot be "
        "verified without a request to the API",
        None,
    )


async def probe_cli(environ: Mapping[str, str] | None = None) -> Availability:
    """Probe the machine for the CLI (see module docstring)."""
    env = os.environ if environ is None else environ
    found = discover_executable(None, env)
    if found.path is None:
        return Availability(
            status="unavailable",
            reason=f"the claude executable was not found (searched: {SEARCHED})",
            next_step=NEXT_STEP,
        )
    cli_env = child_env(env.get("CLAUDE_CONFIG_DIR") or None, env) | PROBE_ENV
    with throwaway_home({}, "agent-bridge-claude-") as scratch:
        output = await run_probe(
            [found.path, "--version"],
            env=cli_env | {"HOME": scratch, "CLAUDE_CONFIG_DIR": scratch},
            cwd=scratch,
            timeout=PROBE_TIMEOUT,
            max_output=PROBE_OUTPUT_LIMIT,
            name="claude --version",
        )
    parsed = parse_version(output or "")
    if parsed is None:
        return Availability(
            status="unavailable",
            executable=found.path,
            reason="the claude executable did not report a version",
            next_step=(
                "reinstall Claude Code, or point AGENT_BRIDGE_CLAUDE_PATH at a working binary"
            ),
        )
    version, parts = parsed
    if parts < AUTH_STATUS_MIN_VERSION:
        return Availability(
            status="available",
            executable=found.path,
            version=version,
            authentication="unknown",
            reason="this CLI version is too old to report its authentication status",
        )
    # `claude auth status` writes (a `.claude.json`, `backups/`): it runs on copies of the
    # files it reads, in a throwaway home (a check writes nothing).
    with throwaway_home(_auth_files(env), "agent-bridge-claude-") as scratch:
        home_env = cli_env | {
            "HOME": scratch,
            "CLAUDE_CONFIG_DIR": os.path.join(scratch, ".claude"),
        }
        output = await run_probe(
            [found.path, "auth", "status", "--json"],
            env=home_env,
            cwd=scratch,
            timeout=PROBE_TIMEOUT,
            max_output=PROBE_OUTPUT_LIMIT,
            name="claude auth status",
        )
    authentication, reason, next_step = parse_auth_status(output or "")
    return Availability(
        status="available",
        executable=found.path,
        version=version,
        authentication=authentication,  # type: ignore[arg-type]
        reason=reason,
        next_step=next_step,
    )


def _auth_files(env: Mapping[str, str]) -> dict[str, str | None]:
    """What ``claude auth status`` reads, by its place in the throwaway home (which is
    also its ``CLAUDE_CONFIG_DIR``): the global config (``$CLAUDE_CONFIG_DIR/.claude.json``,
    else ``~/.claude.json``), the credentials and the settings of the config directory."""
    configured = env.get("CLAUDE_CONFIG_DIR") or ""
    home = env.get("HOME") or os.path.expanduser("~")
    config_dir = configured or os.path.join(home, ".claude")
    global_config = os.path.join(configured or home, ".claude.json")
    return {
        ".claude/.claude.json": global_config,
        ".claude/.credentials.json": os.path.join(config_dir, ".credentials.json"),
        ".claude/settings.json": os.path.join(config_dir, "settings.json"),
    }
