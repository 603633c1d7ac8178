"""``agent-bridge exec``: one run, its events on stdout, the exit code from how it ended.

It runs in-process on the :class:`~agent_bridge.runtime.Runtime` (no ``serve`` child):
one interpreter start instead of two, no JSON-RPC round trips, and the events printed are
exactly the envelopes the runtime publishes (what a host would receive in ``event``
notifications).  As in ``serve``, fd 1 is pointed at stderr before anything else runs, so
only events reach the real stdout, whatever a library prints.

The session is journaled like any other (``--state-dir``, else the default state
directory), so ``--session ID`` continues it later and ``agent-bridge record`` can turn
it into a script.  ``--session`` also takes a provider's own session reference (one the
journal does not know, not shaped like a bridge session id ``ses_…``): it is continued as
``provider/sessions/continue`` does it (bound to one bridge session, its earlier turns
imported; only the run's events are printed).  The run's interactions are answered by ``--approve``:

* ``deny`` (default): approvals are denied; questions are not answerable (the bridge
  cancels them);
* ``once``: approvals are allowed once; questions as with ``deny``;
* ``ask``: approvals and questions are asked on the terminal (``/dev/tty``); without a
  terminal they are denied (questions cancelled) and a warning goes to stderr.

SIGINT (or SIGTERM) interrupts the run cleanly; exec then prints the rest of its events
and exits 130.  A second SIGINT stops at once: the run is ended without the provider's
grace (the sessions are still closed).  When stdout's reader goes away (``exec ... |
head``) the run is stopped the same way and exec exits 141, saying nothing.

Exit codes (:data:`EXIT_CODES`, also in ``docs/testing-hosts.md``):

===  ===========================================================================
0    the run completed
1    the run failed: ``provider_failed`` or any code not listed below
2    usage: a bad argument or option (``invalid_option``, ``invalid_params``,
     ``provider_not_found``, ``workspace_invalid``, ``unsupported``)
3    the provider cannot be used here (``provider_unavailable``,
     ``provider_auth_required``)
4    the provider broke (``provider_crashed``, ``provider_contract``,
     ``bridge_crashed``, ``internal``)
5    transient, a retry may help (``provider_timeout``, ``provider_rate_limited``,
     ``overloaded``)
6    the session given by ``--session`` cannot be used (``session_not_found``,
     ``session_closed``, ``session_in_use``, ``recovery_invalid``,
     ``history_unavailable``, ``run_active``)
130  the run was interrupted (SIGINT, SIGTERM)
141  stdout was closed by its reader; the run was stopped
===  ===========================================================================
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Final, Literal

from agent_bridge.commands import boot
from agent_bridge.commands.options import add_options, parse_options

if TYPE_CHECKING:
    import argparse

    from agent_bridge.frontends.exec_host import ExecHost, Policy
    from agent_bridge.journal import History

__all__ = [
    "EXIT_CODES",
    "add_parsers",
    "exit_code_for",
    "not_utf8",
    "run",
    "run_exec",
]

EXIT_COMPLETED: Final = 0
EXIT_FAILED: Final = 1
EXIT_INTERRUPTED: Final = boot.EXIT_INTERRUPTED
#: stdout's reader went away (``exec ... | head``): the run was stopped; 128 + SIGPIPE,
#: what a process killed by the broken pipe reports
EXIT_STDOUT_CLOSED: Final = 141

#: Exit code per error class (codes not listed: 1).
EXIT_CODES: Final[dict[str, int]] = {
    "provider_failed": 1,
    "invalid_option": 2,
    "invalid_params": 2,
    "provider_not_found": 2,
    "workspace_invalid": 2,
    "unsupported": 2,
    "provider_unavailable": 3,
    "provider_auth_required": 3,
    "provider_crashed": 4,
    "provider_contract": 4,
    "bridge_crashed": 4,
    "internal": 4,
    "provider_timeout": 5,
    "provider_rate_limited": 5,
    "overloaded": 5,
    "session_not_found": 6,
    "session_closed": 6,
    "session_in_use": 6,
    "recovery_invalid": 6,
    "history_unavailable": 6,
    "run_active": 6,
}


def add_parsers(sub: Any) -> None:
    """Add ``exec`` to the subcommand parsers ``sub``."""
    exe = sub.add_parser(
        "exec",
        help="one run: events as NDJSON on stdout, the exit code from its end",
        description="Run PROMPT once on a fresh session (or --session ID) and print its "
        "events. Exit codes: 0 completed, 1 failed, 2 usage, 3 provider unavailable, "
        "4 provider broke, 5 transient (retry), 6 session unusable, 130 interrupted, "
        "141 stdout closed (docs/testing-hosts.md).",
        epilog="example: agent-bridge exec --provider scripted --format text hello",
    )
    exe.add_argument("prompt", metavar="PROMPT", help="the input text; '-' reads stdin")
    exe.add_argument(
        "--provider",
        help="provider id (default: $AGENT_BRIDGE_PROVIDER, else claude-code; with "
        "--session: the session's)",
    )
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
    exe.add_argument(
        "--session",
        metavar="ID",
        help="continue this journaled session, or else the provider's own session with this "
        "reference (provider/sessions/list's sessionRef; bound to one bridge session; "
        "write --session=REF: a Claude Code reference starts with '-')",
    )
    exe.add_argument(
        "--format",
        choices=("ndjson", "text"),
        default="ndjson",
        help="ndjson (default): each event envelope as one JSON object a line, as a host "
        "receives it; text: the reply's text and one readable line per other event",
    )
    exe.add_argument(
        "--workspace",
        metavar="DIR",
        help="the session's workspace (a relative DIR is taken from the current directory)",
    )
    exe.add_argument("--state-dir", metavar="DIR", help="the journal (as for serve)")
    add_options(exe, ("--interrupt-grace",))  # as serve has it (checked, with its help)


def run(args: argparse.Namespace) -> int:
    """Run the parsed ``exec`` command; return the exit code."""
    return run_exec(
        prompt=args.prompt,
        provider=args.provider,
        options=args.option,
        approve=args.approve,
        session_id=args.session,
        fmt=args.format,
        state_dir=args.state_dir,
        # the protocol takes absolute paths only; on a command line, `.` is where one is
        workspace=None if args.workspace is None else os.path.abspath(args.workspace),
        interrupt_grace=args.interrupt_grace,
    )


def exit_code_for(code: str) -> int:
    """The exit code for an error ``code`` (see :data:`EXIT_CODES`)."""
    return EXIT_CODES.get(code, EXIT_FAILED)


# ---------------------------------------------------------------- the run


async def _run(
    *,
    provider: str | None,
    options: dict[str, Any],
    policy: Policy,
    session_id: str | None,
    prompt: str,
    host: ExecHost,
    history: History,
    workspace: str | None,
    interrupt_grace: float,
) -> int:
    import contextlib
    import signal
    from types import SimpleNamespace

    import anyio

    from agent_bridge.errors import BridgeError
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.wire.methods import RunInput, RunStartParams

    registry = ProviderRegistry.default()
    interrupted = False
    # built the way every command builds it (commands/boot.py), with exec's options
    runtime_args = SimpleNamespace(interrupt_grace=interrupt_grace)
    async with boot.build_runtime(runtime_args, history, registry=registry) as runtime:

        async def on_signals(scope: anyio.CancelScope) -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    if interrupted or host.run_id is None:
                        interrupted = True
                        runtime.hurry()  # the second: at once, no grace
                        scope.cancel()
                        return
                    interrupted = True
                    try:
                        runtime.interrupt_run(host.run_id, "user")
                    except BridgeError:
                        scope.cancel()
                        return

        async with anyio.create_task_group() as tg:
            tg.start_soon(on_signals, tg.cancel_scope)
            try:
                if session_id is None:
                    provider_id = provider or os.environ.get("AGENT_BRIDGE_PROVIDER", "claude-code")
                    declared = registry.get(provider_id).describe().options
                    session_opts, run_opts = _split(declared, options)
                    info = await runtime.create_session(
                        provider_id,
                        workspace=workspace,
                        options=session_opts,
                        subscriber=host,
                    )
                elif (
                    stored := await runtime.history.load_session(session_id)
                ) is None and not session_id.startswith("ses_"):
                    # not a bridge session's id: a provider's own session reference
                    provider_id = provider or os.environ.get("AGENT_BRIDGE_PROVIDER", "claude-code")
                    declared = registry.get(provider_id).describe().options
                    session_opts, run_opts = _split(declared, options)
                    continued = await runtime.continue_native(
                        provider_id, session_id, workspace=workspace, options=session_opts
                    )
                    # the imported turns are history: only the run's events are printed
                    info = await runtime.reopen_session(
                        continued.session.session_id, subscriber=host
                    )
                else:
                    if stored is None:
                        raise BridgeError("session_not_found")
                    if provider is not None and provider != stored.provider_id:
                        raise BridgeError("invalid_params", details={"option": "provider"})
                    declared = registry.get(stored.provider_id).describe().options
                    session_opts, run_opts = _split(declared, options)
                    info = await runtime.reopen_session(
                        session_id,
                        workspace=workspace,
                        options=session_opts or None,
                        subscriber=host,
                    )
                sys.stderr.write(f"agent-bridge exec: session {info.session_id}\n")
                sys.stderr.flush()
                started = await runtime.start_run(
                    RunStartParams(info.session_id, RunInput(prompt), options=run_opts)
                )
                host.run_id = started.run_id
                await host.ended.wait()
                if host.stdout_closed and host.terminal is None:
                    # `exec ... | head`: nobody reads; stop the run now, quietly
                    runtime.hurry()
                    with contextlib.suppress(BridgeError):
                        runtime.interrupt_run(started.run_id, "stdout closed")
                    tg.cancel_scope.cancel()
                    return EXIT_STDOUT_CLOSED
            except BridgeError as exc:
                error = exc.info
                details: dict[str, Any] = dict(error.details or {})
                if error.code == "provider_not_found":
                    # as doctor and acp say it: the ids there are to choose from
                    details["known"] = [p.id for p in registry.all()]
                elif error.code == "session_not_found" and session_id is not None:
                    details["nextStep"] = (
                        "give the --state-dir that exec or serve used for this session "
                        "(--session reads the same default journal as they do)"
                    )
                elif details.get("field") == "sessionRef":
                    # --session neither in the journal nor a reference of the provider's
                    named = provider or os.environ.get("AGENT_BRIDGE_PROVIDER", "claude-code")
                    details["reason"] = (
                        f"{session_id!r} is no session of this journal, nor a session "
                        f"reference of {named}"
                    )
                    details["nextStep"] = (
                        "give a session id exec printed (ses_…) with the --state-dir it "
                        "used, or a sessionRef from provider/sessions/list"
                    )
                sys.stderr.write(boot.describe_error("exec", error.code, error.message, details))
                tg.cancel_scope.cancel()
                return exit_code_for(exc.error_code)
            tg.cancel_scope.cancel()
    terminal = host.terminal
    if terminal is None:
        return EXIT_INTERRUPTED
    from agent_bridge.wire.events import RunCompleted, RunInterrupted

    if isinstance(terminal, RunCompleted):
        return EXIT_COMPLETED
    if isinstance(terminal, RunInterrupted):
        return EXIT_INTERRUPTED
    return exit_code_for(terminal.error.code)


def _split(declared: Any, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Options for the session (declared for it) and for the run (declared for runs
    only); unknown names go to the session, which refuses them (``invalid_option``)."""
    session_names = {o.name for o in declared if o.scope == "session"}
    run_names = {o.name for o in declared if o.scope == "run"}
    session: dict[str, Any] = {}
    run: dict[str, Any] = {}
    for key, value in options.items():
        if key in run_names and key not in session_names:
            run[key] = value
        else:
            session[key] = value
    return session, run


def not_utf8(text: str) -> str:
    """Return why ``text`` (from argv or stdin, decoded with ``surrogateescape``) is not
    UTF-8 — "is not UTF-8 (byte 0xe9 at offset 3)" — or ``""`` when it is.  A prompt that
    is not UTF-8 is refused before a session is opened: no provider takes such bytes, and
    the bridge does not guess an encoding (replacing them would change what was asked)."""
    raw = text.encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
    return ""


def run_exec(
    *,
    prompt: str,
    provider: str | None = None,
    options: list[str] | None = None,
    approve: Policy = "deny",
    session_id: str | None = None,
    fmt: Literal["ndjson", "text"] = "ndjson",
    state_dir: str | None = None,
    workspace: str | None = None,
    interrupt_grace: float = 5.0,
) -> int:
    """The ``exec`` command; returns the exit code (see the module docstring)."""
    # Only events on the real stdout: fd 1 and sys.stdout now point at stderr.
    out = os.fdopen(boot.guard_stdout(), "wb")
    try:
        parsed = parse_options(options or [])
    except ValueError as exc:
        sys.stderr.write(f"agent-bridge exec: {exc}\n")
        return 2
    if prompt == "-":
        prompt = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
        prompt = prompt.removesuffix("\n")  # echo and heredocs add one
    refusal = not_utf8(prompt)
    if refusal:
        sys.stderr.write(f"agent-bridge exec: the prompt {refusal}\n")
        return 2
    import anyio

    from agent_bridge.frontends.exec_host import ExecHost, Output, terminal_asker
    from agent_bridge.journal import JournalError

    history = boot.open_journal("agent-bridge exec", state_dir)
    if history is None:
        return 1
    host = ExecHost(Output(out, fmt), approve, terminal_asker())
    try:
        code = anyio.run(
            lambda: _run(
                provider=provider,
                options=parsed,
                policy=approve,
                session_id=session_id,
                prompt=prompt,
                host=host,
                history=history,
                workspace=workspace,
                interrupt_grace=interrupt_grace,
            )
        )
    except JournalError as exc:
        sys.stderr.write(f"agent-bridge exec: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        host.close_output()
    return int(code)
