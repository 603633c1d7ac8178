"""The ``agent-bridge`` command line: ``serve``, ``demo``, ``schema``, ``--version``.

Only the standard library is imported at start-up; each subcommand imports what it needs,
so ``--version`` and argument errors stay instant and ``serve`` pays only for its own
imports.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from agent_bridge import __version__

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-bridge",
        description="Drive AI coding agents over one stdio JSON-RPC protocol.",
    )
    parser.add_argument("--version", action="version", version=f"agent-bridge {__version__}")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="speak the protocol on stdin/stdout")
    serve.add_argument(
        "--framing",
        choices=("auto", "content-length", "newline"),
        default="auto",
        help="input framing (default: detected from the first bytes)",
    )
    serve.add_argument("--log-file", help="write logs here instead of stderr")
    serve.add_argument(
        "--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    )
    serve.add_argument("--max-message-bytes", type=int, default=16 * 1024 * 1024)
    serve.add_argument("--max-inflight", type=int, default=256)
    serve.add_argument("--interrupt-grace", type=float, default=5.0)
    serve.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where the session journal lives (default: $AGENT_BRIDGE_STATE_DIR, else the "
        "platform's state directory; ':memory:' keeps no journal)",
    )
    serve.add_argument(
        "--retain-days",
        type=_positive,
        metavar="DAYS",
        help="delete closed sessions idle for longer than this",
    )
    serve.add_argument(
        "--retain-mb",
        type=_positive,
        metavar="MB",
        help="delete the least recently active closed sessions while the journal holds more",
    )
    serve.add_argument(
        "--journal-sync",
        choices=("normal", "full"),
        default="normal",
        help="normal: commits survive a crash of the bridge; full: also of the machine",
    )

    serve.add_argument(
        "--daemon",
        choices=("off", "auto"),
        default="off",
        help="auto: relay to the per-user daemon (started if none runs) instead of serving "
        "in this process, as `agent-bridge connect` does (default: off)",
    )
    from agent_bridge.daemon.commands import add_parsers

    add_parsers(sub)

    demo = sub.add_parser("demo", help="spawn the server and drive a scripted session")
    demo.add_argument("--framing", choices=("content-length", "newline"), default="content-length")
    demo.add_argument("--raw", action="store_true", help="print the raw JSON exchanged")

    schema = sub.add_parser("schema", help="write the published wire schemas")
    schema.add_argument("--out", default="schemas", help="directory to write (default: schemas)")
    schema.add_argument("--check", action="store_true", help="fail if files differ instead")
    return parser


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def _configure_logging(level: str, log_file: str | None) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


def _serve(args: argparse.Namespace) -> int:
    if args.daemon == "auto":
        from agent_bridge.daemon.commands import connect_command

        return connect_command(args.state_dir, autostart=True)
    # The protocol owns the real stdout; fd 1 and sys.stdout now point at stderr, so a
    # stray print (ours or a library's) can never corrupt a frame.
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _configure_logging(args.log_level, args.log_file)

    import signal

    import anyio

    from agent_bridge.frontends.bridge_protocol import BridgeFrontend
    from agent_bridge.journal import JournalError, Retention, open_history
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.rpc.connection import Limits
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream
    from agent_bridge.runtime import Runtime

    retention = Retention(
        max_age_days=args.retain_days,
        max_bytes=None if args.retain_mb is None else int(args.retain_mb * 1024 * 1024),
    )
    try:
        history = open_history(args.state_dir, retention=retention, sync=args.journal_sync)
    except JournalError as exc:
        sys.stderr.write(f"agent-bridge: {exc}\n")
        sys.stderr.flush()
        return 1

    async def run() -> None:
        receive = FdReceiveStream(0)
        send = FdSendStream(protocol_fd)
        runtime = Runtime(
            ProviderRegistry.default(), interrupt_grace=args.interrupt_grace, history=history
        )
        server = BridgeFrontend(
            runtime,
            receive,
            send,
            framing=args.framing,
            limits=Limits(
                max_message_bytes=args.max_message_bytes,
                max_inflight_requests=args.max_inflight,
            ),
        )

        async def stop_on_signal() -> None:
            # SIGTERM/SIGINT end the bridge like a host EOF: sessions are closed and
            # provider processes stopped through their escalation, then exit 0.
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    server.conn.close()
                    return

        try:
            # One host owns this runtime: at its EOF (or a signal) every session is
            # closed, stopping provider processes through their escalation.
            async with runtime, anyio.create_task_group() as tg:
                tg.start_soon(stop_on_signal)
                await server.serve()
                tg.cancel_scope.cancel()
        finally:
            await receive.aclose()
            await send.aclose()

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command in ("daemon", "connect"):
        from agent_bridge.daemon.commands import run_command

        return run_command(args)
    if args.command == "demo":
        from agent_bridge.demo import run_demo

        return run_demo(framing=args.framing, raw=args.raw)
    if args.command == "schema":
        from agent_bridge.schema import write_schemas

        return write_schemas(args.out, check=args.check)
    _parser().print_help()
    return 2
