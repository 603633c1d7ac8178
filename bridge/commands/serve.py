"""``agent-bridge serve``: speak the bridge protocol on stdin/stdout (what a host spawns).

The host waits for the reply to its ``initialize``, so this door is the fast one: its
command line is read without ``argparse`` when it can be
(:func:`~agent_bridge.commands.options.parse_serve`), the journal is opened (one that
cannot be opened stops the bridge before any reply), and a lone ``initialize`` is
answered by :mod:`~agent_bridge.frontends.first_reply` before logging, anyio, the runtime
and the providers are imported.  Then the bridge front-end is served until the host's EOF
or SIGTERM/SIGINT, which end it the same way: every session closed, exit 0.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from agent_bridge.commands import boot
from agent_bridge.commands.options import add_serve_options

if TYPE_CHECKING:
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream
    from agent_bridge.runtime import Runtime

__all__ = ["add_parsers", "run"]


def add_parsers(sub: Any) -> None:
    """Add ``serve`` to the subcommand parsers ``sub``."""
    serve = sub.add_parser(
        "serve",
        help="speak the protocol on stdin/stdout (what a host spawns)",
        description="Speak the agent-bridge protocol on stdin/stdout; logs go to stderr.",
        epilog="example: agent-bridge serve --log-level info --state-dir ~/.cache/ab",
    )
    add_serve_options(serve)


def run(args: Any) -> int:
    """Run ``serve`` with its parsed options ``args``; return the exit status."""
    if args.daemon == "auto":
        from agent_bridge.commands.daemon import connect_command

        return connect_command(args.state_dir, autostart=True)
    typed = os.isatty(0)
    if typed:
        sys.stderr.write(
            "agent-bridge serve: waiting for JSON-RPC on stdin (a host spawns this; "
            "try `agent-bridge demo` or `agent-bridge doctor`; Ctrl-C to stop)\n"
        )
        if args.framing == "auto":
            args.framing = "newline"  # a person types lines, not Content-Length headers
    protocol_fd = boot.guard_stdout()
    # Logging is configured after the first reply (nothing logs before it, and importing
    # it is milliseconds of the host's wait); a log file that cannot be opened still
    # stops the bridge before anything else.
    if not boot.log_file_usable("serve", args.log_file):
        return 2
    history = boot.open_journal("agent-bridge", args.state_dir, args)
    if history is None:
        return 1
    from agent_bridge.journal import Routable

    registry = None
    if isinstance(history, Routable):
        # a fleet member: what it serves is recorded before its first reply
        from agent_bridge.registry import ProviderRegistry

        registry = ProviderRegistry.default()
        boot.declare_member(history, registry)

    # The host waits for its initialize reply: answer it before loading the rest.
    from agent_bridge.frontends.first_reply import FirstInput, Stopped, answer_first, signalled

    first = FirstInput(b"", args.framing)
    if not os.isatty(0):
        from agent_bridge.rpc.pipes import widen_pipe

        widen_pipe(0)
        widen_pipe(protocol_fd)
        try:
            first = answer_first(
                0,
                protocol_fd,
                args.framing,
                durable=history.durable,
                max_message_bytes=args.max_message_bytes,
            )
        except Stopped:  # SIGTERM/SIGINT before any input: as at the host's EOF
            import anyio

            boot.start_logging("serve", args.log_level, args.log_file)
            anyio.run(history.aclose)
            return 0

    if not boot.start_logging("serve", args.log_level, args.log_file):
        import anyio

        anyio.run(history.aclose)
        return 2
    if first.handshake is not None:
        import logging

        logging.getLogger("agent_bridge.server").debug(
            "initialize answered before the rest of the bridge was loaded"
        )

    from agent_bridge.frontends.bridge_protocol import BridgeFrontend
    from agent_bridge.rpc.connection import Limits

    limits = Limits(
        max_message_bytes=args.max_message_bytes,
        max_inflight_requests=args.max_inflight,
        max_message_option="--max-message-bytes",
    )

    def frontend(runtime: Runtime, receive: FdReceiveStream, send: FdSendStream) -> BridgeFrontend:
        server = BridgeFrontend(runtime, receive, send, framing=first.framing, limits=limits)
        if typed:
            server.conn.replies.on_parse_error = _typed_hint
        if first.params is not None and first.handshake is not None:
            server.adopt(first.params, first.handshake)
        return server

    return boot.serve_stdio(
        args,
        history,
        protocol_fd,
        frontend,
        registry=registry,
        prefix=first.data,
        signalled_before=signalled,
    )


def _typed_hint() -> None:
    """On a terminal: the line just typed was not JSON (it was answered with -32700)."""
    sys.stderr.write(
        "agent-bridge serve: that line is not JSON-RPC. serve talks JSON-RPC 2.0, one "
        'message a line, e.g. {"jsonrpc":"2.0","id":1,"method":"initialize","params":'
        '{"protocolVersion":1,"clientInfo":{"name":"me"},"capabilities":{}}}; '
        "to see it in action run `agent-bridge demo --raw`; Ctrl-D ends\n"
    )
