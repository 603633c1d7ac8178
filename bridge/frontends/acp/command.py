"""``agent-bridge acp``: serve the ACP agent front-end on stdio (or ``--login``).

The provider of new sessions comes from ``--provider``, else ``provider`` in the
configuration file's ``[acp_agent]`` table, else ``claude-code``; its session options from
``[acp_agent.options]`` overlaid with each ``--option NAME=VALUE``.  stdout carries only
ACP messages: fd 1 and ``sys.stdout`` point at stderr while it serves.  At the client's
EOF (or SIGTERM / SIGINT) every session is closed and provider processes stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["DEFAULT_PROVIDER", "LOGIN_COMMANDS", "parse_options", "run_acp"]

DEFAULT_PROVIDER: Final = "claude-code"
#: Each provider's own login command (after its executable), for ``--login``.
LOGIN_COMMANDS: Final[Mapping[str, tuple[str, ...]]] = {
    "claude-code": ("auth", "login"),
    "codex": ("login",),
    "gemini": (),
}


def parse_options(items: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` items as options (a VALUE that parses as JSON is that JSON);
    raises ``ValueError`` naming an item without ``=``."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--option {item!r}: expected NAME=VALUE")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        out[name] = value
    return out


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


def run_acp(args: argparse.Namespace, configure_logging: Callable[[str, str | None], None]) -> int:
    """Run ``agent-bridge acp``; return the exit status."""
    try:
        provider_id, options = _settings(args)
    except ValueError as exc:
        sys.stderr.write(f"agent-bridge acp: {exc}\n")
        return 2
    from agent_bridge.errors import BridgeError
    from agent_bridge.registry import ProviderRegistry

    registry = ProviderRegistry.default()
    try:
        registry.get(provider_id)
    except BridgeError:
        known = ", ".join(p.id for p in registry.all())
        sys.stderr.write(f"agent-bridge acp: --provider {provider_id}: unknown (known: {known})\n")
        return 2
    if args.login:
        return _login(provider_id)

    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        configure_logging(args.log_level, args.log_file)
    except OSError as exc:
        sys.stderr.write(f"agent-bridge acp: --log-file: {exc.strerror or exc}\n")
        return 2

    from agent_bridge.journal import JournalError, open_history
    from agent_bridge.serve_options import history_settings

    try:
        history = open_history(args.state_dir, **history_settings(args))
    except JournalError as exc:
        sys.stderr.write(f"agent-bridge: {exc}\n")
        return 1
    return _serve(
        registry,
        history,
        provider_id,
        options,
        protocol_fd,
        args.interrupt_grace,
        args.journal_fault_limit,
    )


def _serve(
    registry: Any,
    history: Any,
    provider_id: str,
    options: dict[str, Any],
    protocol_fd: int,
    interrupt_grace: float,
    journal_fault_limit: float,
) -> int:

    import anyio

    from agent_bridge.frontends.acp.server import AcpFrontend
    from agent_bridge.frontends.stdio_owner import serve_owning
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream
    from agent_bridge.runtime import Runtime

    async def run() -> None:
        receive = FdReceiveStream(0)
        send = FdSendStream(protocol_fd)
        runtime = Runtime(
            registry,
            interrupt_grace=interrupt_grace,
            history=history,
            journal_fault_limit=journal_fault_limit,
        )
        server = AcpFrontend(runtime, receive, send, provider=provider_id, provider_options=options)

        # The client owns this runtime: at its EOF every session is closed, stopping
        # provider processes through their escalation.
        await serve_owning(runtime, server, receive, send)

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        return 130
    return 0
