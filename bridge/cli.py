"""The ``agent-bridge`` command line: ``serve``, ``demo``, ``schema``, ``doctor``,
``--version``; ``exec`` and ``record`` live in :mod:`agent_bridge.harness_cli`.

Only the standard library is imported at start-up; each subcommand imports what it needs,
so ``--version`` and argument errors stay instant and ``serve`` pays only for its own
imports.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from agent_bridge import __version__
from agent_bridge.serve_options import (
    JOURNAL_FLAGS,
    add_options,
    add_serve_options,
    history_settings,
    log_level,
    parse_serve,
    writable_file,
)

if TYPE_CHECKING:
    import argparse

__all__ = ["main"]


@functools.cache
def _parser_class() -> type[argparse.ArgumentParser]:
    """The parser class: one-line errors, ``agent-bridge serve: --max-inflight: must be
    …`` and status 2, with the subcommand's own usage hint, never a traceback."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")

    return _Parser


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` ``"serve"``, only that subcommand's (what
    a host spawns: the others import their modules to add their options)."""
    parser_class = _parser_class()
    parser = parser_class(
        prog="agent-bridge",
        description="Drive AI coding agents over one stdio JSON-RPC protocol.",
        epilog="Run `agent-bridge SUBCOMMAND --help` for a subcommand's options.",
    )
    parser.add_argument("--version", action="version", version=f"agent-bridge {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=parser_class)
    _add_serve(sub)
    if command == "serve":
        return parser
    _add_acp(sub)
    _add_demo(sub)
    _add_schema(sub)
    _add_doctor(sub)
    _add_harness_parsers(sub)
    from agent_bridge.daemon.commands import add_parsers

    add_parsers(sub)
    return parser


def _add_serve(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="speak the protocol on stdin/stdout (what a host spawns)",
        description="Speak the agent-bridge protocol on stdin/stdout; logs go to stderr.",
        epilog="example: agent-bridge serve --log-level info --state-dir ~/.cache/ab",
    )
    add_serve_options(serve)


def _add_acp(sub: Any) -> None:
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
    add_options(acp, JOURNAL_FLAGS)  # the journal's options are serve's
    acp.add_argument(
        "--log-file",
        type=writable_file,
        metavar="PATH",
        help="append logs to this file instead of stderr",
    )
    acp.add_argument(
        "--log-level",
        default="WARNING",
        type=log_level,
        metavar="LEVEL",
        help="debug, info, warning or error, any case (default: warning)",
    )
    add_options(acp, ("--interrupt-grace",))


def _add_demo(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="spawn the server and drive a scripted session",
        description="Spawn `agent-bridge serve` and drive one scripted session over its pipes.",
        epilog="example: agent-bridge demo --framing newline --raw",
    )
    demo.add_argument(
        "--framing",
        choices=("content-length", "newline"),
        default="content-length",
        help="framing the demo host uses (default: content-length)",
    )
    demo.add_argument("--raw", action="store_true", help="print the raw JSON-RPC exchanged")


def _add_schema(sub: Any) -> None:
    schema = sub.add_parser(
        "schema",
        help="write the published wire schemas",
        description="Write agent-bridge.schema.json, methods.json and agent-bridge.d.ts.",
        epilog="example: agent-bridge schema --out schemas --check",
    )
    schema.add_argument(
        "--out", default="schemas", metavar="DIR", help="directory to write (default: schemas)"
    )
    schema.add_argument("--check", action="store_true", help="fail if files differ instead")


def _add_doctor(sub: Any) -> None:
    doctor = sub.add_parser(
        "doctor",
        help="check providers, the state directory and the journal",
        description="Probe every provider (no network but loopback, bounded in time) and "
        "check the state directory and journal (read-only). Exit status 1 when no provider "
        "is usable.",
        epilog="example: agent-bridge doctor --provider claude-code --json",
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON object")
    doctor.add_argument("--provider", metavar="ID", help="check only this provider")
    doctor.add_argument(
        "--state-dir", metavar="DIR", help="the state directory to check (default: as serve)"
    )


def _add_harness_parsers(sub: Any) -> None:
    from agent_bridge import harness_cli

    harness_cli.add_parsers(sub)


def _configure_logging(level: str, log_file: str | None) -> None:
    import logging

    if log_file:
        from agent_bridge.private_files import open_private

        os.close(open_private(log_file))  # 0600 whatever the umask (it may quote a child)
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


def _serve_logging(args: Any) -> bool:
    """Configure ``serve``'s logging; return ``False`` (having said why) when its log
    file cannot be opened."""
    try:
        _configure_logging(args.log_level, args.log_file)
    except OSError as exc:
        sys.stderr.write(f"agent-bridge serve: --log-file: {exc.strerror or exc}\n")
        return False
    return True


def _serve(args: Any) -> int:
    """Run ``serve`` with its parsed options ``args``; return the exit status."""
    if args.daemon == "auto":
        from agent_bridge.daemon.commands import connect_command

        return connect_command(args.state_dir, autostart=True)
    # The protocol owns the real stdout; fd 1 and sys.stdout now point at stderr, so a
    # stray print (ours or a library's) can never corrupt a frame.
    if os.isatty(0):
        sys.stderr.write(
            "agent-bridge serve: waiting for JSON-RPC on stdin (a host spawns this; "
            "try `agent-bridge demo` or `agent-bridge doctor`; Ctrl-C to stop)\n"
        )
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # Logging is configured after the first reply (nothing logs before it, and importing
    # it is milliseconds of the host's wait); a log file that cannot be opened still
    # stops the bridge before anything else.
    if args.log_file is not None:
        try:
            from agent_bridge.private_files import open_private

            os.close(open_private(args.log_file))
        except OSError as exc:
            sys.stderr.write(f"agent-bridge serve: --log-file: {exc.strerror or exc}\n")
            return 2

    from agent_bridge.journal import JournalError, open_history

    try:
        history = open_history(args.state_dir, **history_settings(args))
    except JournalError as exc:
        sys.stderr.write(f"agent-bridge: {exc}\n")
        sys.stderr.flush()
        return 1

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

            _serve_logging(args)
            anyio.run(history.aclose)
            return 0

    import anyio

    if not _serve_logging(args):
        anyio.run(history.aclose)
        return 2
    if first.handshake is not None:
        import logging

        logging.getLogger("agent_bridge.server").debug(
            "initialize answered before the rest of the bridge was loaded"
        )

    from agent_bridge.frontends.bridge_protocol import BridgeFrontend
    from agent_bridge.frontends.stdio_owner import serve_owning
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.rpc.connection import Limits
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream
    from agent_bridge.runtime import Runtime

    async def run() -> None:
        receive = FdReceiveStream(0, prefix=first.data)
        send = FdSendStream(protocol_fd)
        runtime = Runtime(
            ProviderRegistry.default(),
            interrupt_grace=args.interrupt_grace,
            history=history,
            journal_fault_limit=args.journal_fault_limit,
        )
        server = BridgeFrontend(
            runtime,
            receive,
            send,
            framing=first.framing,
            limits=Limits(
                max_message_bytes=args.max_message_bytes,
                max_inflight_requests=args.max_inflight,
            ),
        )

        if first.params is not None and first.handshake is not None:
            server.adopt(first.params, first.handshake)

        # SIGTERM/SIGINT end the bridge like a host EOF: sessions are closed and
        # provider processes stopped through their escalation, then exit 0.
        await serve_owning(runtime, server, receive, send, signalled_before=signalled)

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        return 130
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from agent_bridge.doctor import run_doctor

    return run_doctor(as_json=args.json, provider=args.provider, state_dir=args.state_dir)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    # What a host spawns is read without argparse; anything else (or anything unusual)
    # goes through it.
    args: Any = parse_serve(argv)
    if args is None:
        parser = _parser(argv[0] if argv else None)
        args, extra = parser.parse_known_args(argv)
        if extra:
            # Named by the subcommand it was given to, not the top-level usage.
            where = f"agent-bridge {args.command}" if args.command else "agent-bridge"
            _parser_class()(prog=where).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "serve":
        return _serve(args)
    if args.command == "acp":
        from agent_bridge.frontends.acp.command import run_acp

        return run_acp(args, _configure_logging)
    if args.command in ("daemon", "connect"):
        from agent_bridge.daemon.commands import run_command

        return run_command(args)
    if args.command == "demo":
        from agent_bridge.demo import run_demo

        return run_demo(framing=args.framing, raw=args.raw)
    if args.command == "schema":
        from agent_bridge.schema import write_schemas

        return write_schemas(args.out, check=args.check)
    if args.command == "doctor":
        return _doctor(args)
    if args.command in ("exec", "record"):
        from agent_bridge import harness_cli

        return harness_cli.run(args)
    _parser().print_help()
    return 2
