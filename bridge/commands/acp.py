"""``agent-bridge acp``: serve the ACP agent front-end on stdio (or ``--login``).

The provider of new sessions comes from ``--provider``, else ``provider`` in the
configuration file's ``[acp_agent]`` table, else ``claude-code``; its session options from
``[acp_agent.options]`` overlaid with each ``--option NAME=VALUE``.  stdout carries only
ACP messages: fd 1 and ``sys.stdout`` point at stderr while it serves.  At the client's
EOF (or SIGTERM / SIGINT) every session is closed and provider processes stopped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.commands import boot
from agent_bridge.commands.options import JOURNAL_FLAGS, LOGGING_FLAGS, add_options, parse_options

if TYPE_CHECKING:
    from agent_bridge.frontends.acp.server import AcpFrontend
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream
    from agent_bridge.runtime import Runtime

__all__ = ["DEFAULT_PROVIDER", "LOGIN_COMMANDS", "add_parsers", "run"]

DEFAULT_PROVIDER: Final = "claude-code"
#: Each provider's own login command (after its executable), for ``--login``.
LOGIN_COMMANDS: Final[Mapping[str, tuple[str, ...]]] = {
    "claude-code": ("auth", "login"),
    "codex": ("login",),
    "gemini": (),
}


def add_parsers(sub: Any) -> None:
    """Add ``acp`` to the subcommand parsers ``sub``."""
    acp = sub.add_parser(
        "acp",
        help="be an Agent Client Protocol agent on stdin/stdout (what an ACP editor spawns)",
        description="Serve the Agent Client Protocol (newline-delimited JSON-RPC) on "
        "stdin/stdout as an agent, over the bridge's providers and journal; logs go to "
        "stderr. See docs/acp-agent.md.",
        epilog="example: agent-bridge acp --provider claude-code --option model=sonnet",
    )
    acp.add_argument(
        "--provider",
        metavar="ID",
        help="the provider new sessions use (default: [acp_agent] provider in the "
        "configuration file, else claude-code)",
    )
    acp.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a session option of the provider (repeatable; VALUE is JSON when it parses "
        "as JSON, else a string), e.g. -o model=sonnet -o permissionMode=plan",
    )
    acp.add_argument(
        "--login",
        action="store_true",
        help="run the provider's own login command in this terminal and exit (the ACP "
        "terminal authentication method)",
    )
    add_options(  # as serve's
        acp, (*JOURNAL_FLAGS, *LOGGING_FLAGS, "--interrupt-grace", "--max-message-bytes")
    )


def _settings(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    from agent_bridge.config import load_config

    section = load_config().section("acp_agent")
    provider = args.provider or section.get("provider") or DEFAULT_PROVIDER
    configured = section.get("options")
    options = dict(configured) if isinstance(configured, dict) else {}
    options.update(parse_options(args.option))
    return str(provider), options


def _login(provider_id: str) -> int:
    """Replace this process with the provider's login command; returns only on failure."""
    import anyio

    from agent_bridge.registry import ProviderRegistry

    provider = ProviderRegistry.default().get(provider_id)
    availability = anyio.run(provider.probe)
    command = LOGIN_COMMANDS.get(provider_id)
    if command is None or availability.executable is None:
        sys.stderr.write(
            f"agent-bridge acp --login: no login command known for {provider_id}"
            + (f" ({availability.next_step})" if availability.next_step else "")
            + "\n"
        )
        return 1
    argv = [availability.executable, *command]
    sys.stderr.write("agent-bridge acp --login: running " + " ".join(argv) + "\n")
    sys.stderr.flush()
    from agent_bridge.processes.spawning import exec_interactive

    try:
        exec_interactive(argv)  # the interactive login takes over this terminal
    except OSError as exc:
        sys.stderr.write(f"agent-bridge acp --login: {exc.strerror or exc}\n")
    return 1


def run(args: argparse.Namespace) -> int:
    """Run ``agent-bridge acp``; return the exit status."""
    try:
        provider_id, options = _settings(args)
    except ValueError as exc:
        sys.stderr.write(f"agent-bridge acp: {exc}\n")
        return 2
    from agent_bridge.errors import BridgeError
    from agent_bridge.options import check_session_options
    from agent_bridge.registry import ProviderRegistry

    registry = ProviderRegistry.default()
    try:
        provider = registry.get(provider_id)
    except BridgeError:
        known = ", ".join(p.id for p in registry.all())
        sys.stderr.write(f"agent-bridge acp: --provider {provider_id}: unknown (known: {known})\n")
        return 2
    if args.login:
        return _login(provider_id)
    # Options that cannot work fail here, not at the client's first session/new.
    try:
        check_session_options(provider, options)
    except BridgeError as exc:
        info = exc.info
        sys.stderr.write(boot.describe_error("acp", info.code, info.message, info.details))
        return 2
    if sys.stdin.isatty():
        sys.stderr.write(
            "agent-bridge acp: waiting for an ACP client on stdin: an ACP editor (Zed, "
            "JetBrains, Neovim, Emacs, acpx) spawns this, see editors/acp/README.md; "
            "Ctrl-C to stop\n"
        )

    protocol_fd = boot.guard_stdout()
    if not boot.start_logging("acp", args.log_level, args.log_file):
        return 2
    history = boot.open_journal("agent-bridge", args.state_dir, args)
    if history is None:
        return 1
    boot.declare_member(history, registry)  # a fleet member: before its first reply

    from agent_bridge.frontends.acp.server import AcpFrontend
    from agent_bridge.rpc.connection import Limits

    limits = Limits(
        max_message_bytes=args.max_message_bytes, max_message_option="--max-message-bytes"
    )

    def frontend(runtime: Runtime, receive: FdReceiveStream, send: FdSendStream) -> AcpFrontend:
        return AcpFrontend(
            runtime, receive, send, provider=provider_id, provider_options=options, limits=limits
        )

    # The client owns this runtime: at its EOF every session is closed, stopping
    # provider processes through their escalation.
    return boot.serve_stdio(args, history, protocol_fd, frontend, registry=registry)
