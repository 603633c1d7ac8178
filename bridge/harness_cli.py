"""The command-line faces for test harnesses and scripts: ``exec`` and ``record``.

Kept apart from :mod:`agent_bridge.cli` (which only calls :func:`add_parsers` and
:func:`run`) so the two grow independently; like the rest of the command line, this
module imports only the standard library until a command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agent_bridge.serve_options import add_options

__all__ = ["COMMANDS", "add_parsers", "run"]

COMMANDS = ("exec", "record")


def add_parsers(sub: Any) -> None:
    """Add ``exec`` and ``record`` to the subparsers ``sub``."""
    exe = sub.add_parser(
        "exec",
        help="one run: events as NDJSON on stdout, the exit code from its end",
        description="Run PROMPT once on a fresh session (or --session ID) and print its "
        "events. Exit codes: 0 completed, 1 failed, 2 usage, 3 provider unavailable, "
        "4 provider broke, 5 transient (retry), 6 session unusable, 130 interrupted.",
    )
    exe.add_argument("prompt", metavar="PROMPT", help="the input text; '-' reads stdin")
    exe.add_argument("--provider", help="provider id (default: $AGENT_BRIDGE_PROVIDER, "
                     "else claude-code; with --session: the session's)")
    exe.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="K=V",
        help="a session or run option; V is parsed as JSON when it can be (repeatable)",
    )
    exe.add_argument(
        "--approve",
        choices=("once", "deny", "ask"),
        default="deny",
        help="answer approvals: allow once, deny (default), or ask on the terminal",
    )
    exe.add_argument("--session", metavar="ID", help="continue this journaled session")
    exe.add_argument("--format", choices=("ndjson", "text"), default="ndjson")
    exe.add_argument("--workspace", metavar="DIR", help="the session's workspace")
    exe.add_argument("--state-dir", metavar="DIR", help="the journal (as for serve)")
    add_options(exe, ("--interrupt-grace",))  # as serve has it (checked, with its help)

    rec = sub.add_parser(
        "record",
        help="turn a journaled session into a scripted-provider script",
    )
    rec.add_argument("session_id", metavar="SESSION_ID")
    rec.add_argument("--out", required=True, metavar="FILE", help="where to write ('-': stdout)")
    rec.add_argument("--state-dir", metavar="DIR", help="the journal (as for serve)")


def run(args: argparse.Namespace) -> int:
    """Run the parsed ``exec`` or ``record`` command; return the exit code."""
    if args.command == "exec":
        from agent_bridge.execute import run_exec

        return run_exec(
            prompt=args.prompt,
            provider=args.provider,
            options=args.option,
            approve=args.approve,
            session_id=args.session,
            fmt=args.format,
            state_dir=args.state_dir,
            workspace=args.workspace,
            interrupt_grace=args.interrupt_grace,
        )
    return _record(args)


def _record(args: argparse.Namespace) -> int:
    import json

    import anyio

    from agent_bridge.errors import BridgeError
    from agent_bridge.ids import Clock
    from agent_bridge.journal import JournalError, MemoryHistory, open_history
    from agent_bridge.recording import record_session

    try:
        history = open_history(args.state_dir)
    except JournalError as exc:
        sys.stderr.write(f"agent-bridge record: {exc}\n")
        return 1
    if isinstance(history, MemoryHistory):
        sys.stderr.write("agent-bridge record: a ':memory:' state directory keeps no sessions\n")
        return 2

    async def main() -> dict[str, Any]:
        try:
            return await record_session(history, args.session_id, Clock().now_iso())
        finally:
            await history.aclose()

    try:
        script = anyio.run(main)
    except BridgeError as exc:
        sys.stderr.write(f"agent-bridge record: {exc.error_code}: {exc.info.message}\n")
        return 6 if exc.error_code == "session_not_found" else 1
    text = json.dumps(script, ensure_ascii=False, indent=1) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0
