"""``agent-bridge daemon`` and ``agent-bridge connect``: one shared runtime per user on a
Unix socket (:mod:`agent_bridge.daemon`), and the relay a host attaches through.

The daemon's imports stay off every other command's start path: they are loaded when one
of these commands runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any

from agent_bridge.commands import boot
from agent_bridge.commands.options import (
    JOURNAL_FLAGS,
    LOGGING_FLAGS,
    add_options,
    non_negative,
)

__all__ = ["add_parsers", "connect_command", "run"]


def add_parsers(sub: Any) -> None:
    """Add ``daemon`` and ``connect`` to the subcommand parsers ``sub``."""
    daemon = sub.add_parser(
        "daemon",
        help="serve one shared runtime on a Unix socket (see docs/daemon.md)",
        description="Serve one runtime per user and state directory on a Unix domain socket; "
        "hosts attach with `agent-bridge connect` (locally, or as `ssh HOST agent-bridge "
        "connect`).  Example: agent-bridge daemon --idle-timeout 0",
    )
    add_options(daemon, JOURNAL_FLAGS)  # the journal's options are serve's
    daemon.add_argument(
        "--idle-timeout",
        type=non_negative,
        default=600.0,
        metavar="SECONDS",
        help="exit after this long with no host and no active run; 0: never (default: 600)",
    )
    add_options(daemon, ("--interrupt-grace",))
    # serve's logging options, with a daemon's default level
    add_options(daemon, LOGGING_FLAGS, defaults={"--log-level": "INFO"})
    action = daemon.add_mutually_exclusive_group()
    action.add_argument(
        "--stop", action="store_true", help="stop the daemon of this state directory"
    )
    action.add_argument(
        "--status",
        action="store_true",
        help="print the daemon's socket and pid; exit 0 when one runs, 3 when none",
    )
    connect = sub.add_parser(
        "connect",
        help="relay stdin/stdout to the per-user daemon, starting it if none runs",
        description="Relay this process's stdin and stdout to the daemon's socket, byte for "
        "byte.  Example: ssh devbox agent-bridge connect",
    )
    connect.add_argument("--state-dir", metavar="DIR", help="the daemon's state directory")
    connect.add_argument(
        "--no-start", action="store_true", help="fail instead of starting a daemon"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``daemon`` or ``connect``; return the exit code."""
    if args.command == "connect":
        return connect_command(args.state_dir, autostart=not args.no_start)
    return _daemon(args)


def _paths(state_dir: str | None) -> Any:
    from agent_bridge.daemon.paths import PathError, daemon_paths

    try:
        return daemon_paths(state_dir)
    except PathError as exc:
        sys.stderr.write(f"agent-bridge: {exc}\n")
        return None


def connect_command(state_dir: str | None, *, autostart: bool) -> int:
    """Relay stdio to the daemon of ``state_dir``; return the exit code (1 with one line
    on stderr when it cannot be reached)."""
    import anyio

    from agent_bridge.daemon.paths import PathError
    from agent_bridge.daemon.relay import ConnectError, connect, relay

    paths = _paths(state_dir)
    if paths is None:
        return 1

    async def run() -> None:
        stream = await connect(paths, autostart=autostart)
        await relay(stream)

    try:
        anyio.run(run)
    except (ConnectError, PathError, OSError) as exc:
        sys.stderr.write(f"agent-bridge: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return boot.EXIT_INTERRUPTED
    return 0


def _daemon(args: argparse.Namespace) -> int:
    from agent_bridge.daemon.server import holder, main, read_pid

    paths = _paths(args.state_dir)
    if paths is None:
        return 1
    if args.status or args.stop:
        found = holder(paths)
        pid = None if found is None else found[0]
        if args.status:
            socket = (found[1] if found else None) or paths.socket
            print(f"socket {socket}: " + (f"pid {pid}" if pid else "no daemon"))
            return 0 if pid else 3
        if pid is None:
            sys.stderr.write(f"agent-bridge daemon: no daemon is running ({paths.socket})\n")
            return 0
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while read_pid(paths) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if read_pid(paths) is None:
            sys.stderr.write(f"agent-bridge daemon: stopped the daemon (pid {pid})\n")
            return 0
        sys.stderr.write(f"agent-bridge daemon: the daemon (pid {pid}) did not stop in 30 s\n")
        return 1
    if not boot.start_logging("daemon", args.log_level, args.log_file):
        return 2

    from agent_bridge.commands.options import history_settings
    from agent_bridge.journal import JournalError, open_history
    from agent_bridge.runtime import Runtime

    def runtime() -> Runtime:
        from agent_bridge.registry import ProviderRegistry

        history = open_history(paths.state_dir, **history_settings(args))
        registry = ProviderRegistry.default()
        boot.declare_member(history, registry)  # a fleet member: before serving anyone
        return boot.build_runtime(args, history, registry=registry, hold_unanswerable=True)

    try:
        return main(paths, runtime, idle_timeout=args.idle_timeout, frontend_options={})
    except JournalError as exc:
        sys.stderr.write(f"agent-bridge: {exc}\n")
        return 1
