"""The ``agent-bridge`` command line: the table of its commands.

Each command is a module of :mod:`agent_bridge.commands` with ``add_parsers(sub)`` and
``run(args)``; :data:`COMMANDS` names them.  Only the standard library is imported at
start-up, and a command module imports what it runs only when it runs, so ``--version``
and argument errors stay instant and ``serve`` (read without ``argparse`` when it can be)
pays only for its own imports.
"""

from __future__ import annotations

import sys


def _leave_quietly(_signum: int, _frame: object) -> None:
    raise SystemExit(130)


def _quiet_ctrl_c_while_starting() -> None:
    """A Ctrl-C while the command is still importing (the first quarter second) exits
    130 without a traceback: until :func:`main` runs, SIGINT raises ``SystemExit``,
    which unwinds an import quietly.  Only when this process *is* the command (the
    ``agent-bridge`` script or ``python -m agent_bridge``), never in a program that
    imports the package."""
    entry = sys.modules.get("__main__")
    spec = getattr(entry, "__spec__", None)
    script = str(getattr(entry, "__file__", "") or "")
    if (spec is not None and spec.name.startswith("agent_bridge")) or script.endswith(
        "agent-bridge"
    ):
        # the C module: `signal` builds enums, and a Ctrl-C could land there
        import _signal  # type: ignore[import-not-found]

        _signal.signal(_signal.SIGINT, _leave_quietly)


_quiet_ctrl_c_while_starting()

import functools  # noqa: E402 - after the Ctrl-C guard, which must come first
import importlib  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import TYPE_CHECKING, Any, Final, NoReturn  # noqa: E402

from agent_bridge import __version__  # noqa: E402
from agent_bridge.commands.options import parse_serve  # noqa: E402

if TYPE_CHECKING:
    import argparse

__all__ = ["COMMANDS", "main"]

#: Each subcommand and the module of :mod:`agent_bridge.commands` that adds its parser
#: and runs it, in the order ``--help`` lists them.
COMMANDS: Final = {
    "serve": "serve",
    "acp": "acp",
    "demo": "demo",
    "schema": "schema",
    "doctor": "doctor",
    "exec": "exec",
    "record": "record",
    "daemon": "daemon",
    "connect": "daemon",
}


def _command(name: str) -> Any:
    """The module of :mod:`agent_bridge.commands` that serves the subcommand ``name``."""
    return importlib.import_module(f"agent_bridge.commands.{COMMANDS[name]}")


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
    """The command line's parser; with ``command`` ``"serve"``, only that subcommand's
    (what a host spawns)."""
    parser_class = _parser_class()
    parser = parser_class(
        prog="agent-bridge",
        description="Drive AI coding agents over one stdio JSON-RPC protocol.",
        epilog="Run `agent-bridge SUBCOMMAND --help` for a subcommand's options.",
    )
    parser.add_argument("--version", action="version", version=f"agent-bridge {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=parser_class)
    modules = ("serve",) if command == "serve" else dict.fromkeys(COMMANDS.values())
    for module in modules:
        importlib.import_module(f"agent_bridge.commands.{module}").add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code (130, quietly, for a Ctrl-C
    that arrives before a command has its own handling of it, e.g. while it imports)."""
    import signal

    try:
        if signal.getsignal(signal.SIGINT) is _leave_quietly:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return _main(argv)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        if _interrupted(exc):
            return 130
        if not _stdout_gone(exc):
            raise
        # `agent-bridge demo | head`: the reader went away; that ends the command, quietly
        # (128 + SIGPIPE, what a process the broken pipe killed reports)
        _drop_stdout()
        return 141


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C that Python wrapped: a ``KeyboardInterrupt`` raised
    while a class was being made (an import, e.g. anyio loading its backend) reaches us
    as the ``RuntimeError`` "Error calling __set_name__" it caused (Python 3.11)."""
    cause = exc.__cause__
    return isinstance(exc, RuntimeError) and isinstance(cause, KeyboardInterrupt)


def _stdout_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is a broken pipe (alone, or all an exception group holds)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_stdout_gone(e) for e in exc.exceptions)
    return isinstance(exc, BrokenPipeError)


def _drop_stdout() -> None:
    """Point stdout at ``/dev/null``, so what its buffer still holds is dropped at exit
    instead of failing again."""
    from agent_bridge.devnull import point_at_devnull

    point_at_devnull(sys.stdout.fileno())


def _refuse_a_subcommand_option_first(argv: Sequence[str]) -> None:
    """``agent-bridge --provider scripted exec hi`` (an option before the subcommand):
    say where it goes, instead of argparse's "invalid choice: 'scripted'"."""
    flag = argv[0].split("=", 1)[0] if argv else ""
    if not flag.startswith("-") or flag == "-h":
        return
    if flag.startswith("--") and any(o.startswith(flag) for o in ("--help", "--version")):
        return
    _parser_class()(prog="agent-bridge").error(
        f"{flag}: options go after the subcommand, as in `agent-bridge SUBCOMMAND {flag} …`"
    )


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # What a host spawns is read without argparse; anything else (or anything unusual)
    # goes through it.
    args: Any = parse_serve(argv)
    if args is None:
        _refuse_a_subcommand_option_first(argv)
        parser = _parser(argv[0] if argv else None)
        args, extra = parser.parse_known_args(argv)
        if extra:
            # Named by the subcommand it was given to, not the top-level usage.
            where = f"agent-bridge {args.command}" if args.command else "agent-bridge"
            _parser_class()(prog=where).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command in COMMANDS:
        return int(_command(args.command).run(args))
    _parser().print_help()
    return 2
