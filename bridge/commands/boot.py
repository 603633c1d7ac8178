"""What every door of the command line does once, in one place.

A command that runs a runtime (``serve``, ``acp``, ``exec``, ``daemon``) does the same
things in the same order, each a function here: guard the protocol's stdout
(:func:`guard_stdout`), configure logging (:func:`start_logging`), open the journal
(:func:`open_journal`), build the runtime (:func:`build_runtime`) and serve a front-end
on stdio until its client's EOF or a signal (:func:`serve_stdio`).  Each says what went
wrong in one line on stderr, named by the command, and returns a value the command turns
into its exit status; none raises for bad input.

Only the standard library is imported here; each function imports what it runs (the
journal, the runtime, anyio) when it is called, so ``serve`` can answer its first reply
before loading them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_bridge.frontends.stdio_owner import ServedFrontend
    from agent_bridge.journal import History
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream
    from agent_bridge.runtime import Runtime

__all__ = [
    "EXIT_INTERRUPTED",
    "build_runtime",
    "configure_logging",
    "declare_member",
    "describe_error",
    "guard_stdout",
    "log_file_usable",
    "open_journal",
    "serve_stdio",
    "start_logging",
]

#: The exit status after Ctrl-C (128 + SIGINT), as a shell reports it.
EXIT_INTERRUPTED = 130


def describe_error(command: str, code: str, message: str, details: Any = None) -> str:
    """The lines a person reads for a classified error: ``agent-bridge COMMAND: code:
    message``, then each of its ``details`` on a line of its own (``reason: …``,
    ``missing: …``, ``next step: …``), never a dict. Ends with a newline."""
    lines = [f"agent-bridge {command}: {code}: {message}"]
    for key, value in (details or {}).items():
        label = "".join(f" {c.lower()}" if c.isupper() else c for c in key)
        shown = ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        lines.append(f"  {label}: {shown}")
    return "\n".join(lines) + "\n"


def guard_stdout() -> int:
    """Keep the real stdout for the protocol and return its new descriptor; fd 1 and
    ``sys.stdout`` now point at stderr, so a stray print (ours or a library's) can never
    corrupt a frame."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def configure_logging(level: str, log_file: str | None) -> None:
    """Send the root logger's records at ``level`` and above to ``log_file`` (appended;
    created 0600 whatever the umask, since a record may quote a child) or stderr.  Raises
    ``OSError`` when the file cannot be opened."""
    import logging

    if log_file:
        from agent_bridge.private_files import open_private

        os.close(open_private(log_file))
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


def start_logging(command: str, level: str, log_file: str | None) -> bool:
    """:func:`configure_logging`; ``False`` (having said why, named by ``command``) when
    the log file cannot be opened."""
    try:
        configure_logging(level, log_file)
    except OSError as exc:
        sys.stderr.write(f"agent-bridge {command}: --log-file: {exc.strerror or exc}\n")
        return False
    return True


def log_file_usable(command: str, log_file: str | None) -> bool:
    """Whether ``log_file`` (if any) can be opened for appending, creating it (0600),
    without configuring logging (``serve`` configures it after its first reply); ``False``
    having said why."""
    if log_file is None:
        return True
    try:
        from agent_bridge.private_files import open_private

        os.close(open_private(log_file))
    except OSError as exc:
        sys.stderr.write(f"agent-bridge {command}: --log-file: {exc.strerror or exc}\n")
        return False
    return True


def open_journal(prefix: str, state_dir: str | None, args: Any = None) -> History | None:
    """The history of ``state_dir`` with the journal options parsed into ``args`` (the
    journal's defaults when ``None``), or ``None`` having written ``prefix: reason`` on
    stderr when it cannot be opened."""
    from agent_bridge.commands.options import history_settings
    from agent_bridge.journal import JournalError, open_history

    try:
        return open_history(state_dir, **({} if args is None else history_settings(args)))
    except JournalError as exc:
        sys.stderr.write(f"{prefix}: {exc}\n")
        sys.stderr.flush()
        return None


def declare_member(history: History, registry: ProviderRegistry) -> None:
    """On a fleet's journal, record what this member serves before its first reply
    (``docs/fleet.md``, Placement): the providers of ``registry`` (imported here,
    blocking: ~0.1 s for the built-ins) or those of ``--node-providers`` it has, and
    its workspace roots; so a host told this member is up can have a session placed on
    it from any member at once.  Nothing for another history.  When the journal
    cannot take it now, the runtime tries again once it runs (logged)."""
    import logging

    from agent_bridge.errors import BridgeError
    from agent_bridge.journal import JournalError, Routable

    if not isinstance(history, Routable):
        return
    log = logging.getLogger("agent_bridge.runtime")
    if history.serves is None:
        registry.warm_now()
        ids = tuple(provider.id for provider in registry.all())
    else:
        known: list[str] = []
        for provider_id in history.serves:
            try:
                registry.get(provider_id)
            except BridgeError:
                log.warning(
                    "fleet: --node-providers names %r, which this bridge does not have",
                    provider_id,
                )
            else:
                known.append(provider_id)
        ids = tuple(known)
    try:
        history.declare_now(ids)
    except JournalError as exc:
        log.warning("fleet: cannot record what this member serves now (%s)", exc)


def build_runtime(
    args: Any,
    history: History,
    *,
    registry: ProviderRegistry | None = None,
    hold_unanswerable: bool = False,
) -> Runtime:
    """The runtime over ``history`` and ``registry`` (the default one), with the runtime
    options parsed into ``args`` (``--interrupt-grace``, and ``--journal-fault-limit``
    when the command has it)."""
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.runtime import Runtime

    extra: dict[str, Any] = {}
    if hasattr(args, "journal_fault_limit"):
        extra["journal_fault_limit"] = args.journal_fault_limit
    return Runtime(
        registry if registry is not None else ProviderRegistry.default(),
        interrupt_grace=args.interrupt_grace,
        history=history,
        hold_unanswerable=hold_unanswerable,
        **extra,
    )


def serve_stdio(
    args: Any,
    history: History,
    protocol_fd: int,
    frontend: Callable[[Runtime, FdReceiveStream, FdSendStream], ServedFrontend],
    *,
    registry: ProviderRegistry | None = None,
    prefix: bytes = b"",
    signalled_before: Callable[[], bool] = lambda: False,
) -> int:
    """Serve the front-end that ``frontend(runtime, receive, send)`` builds on stdin and
    ``protocol_fd`` (``prefix``: bytes already read from stdin) with a runtime over
    ``history`` until the client's EOF or SIGTERM/SIGINT, then close every session; return
    the exit status (0, or 130 after a KeyboardInterrupt).  The client owns the runtime
    (:func:`~agent_bridge.frontends.stdio_owner.serve_owning`)."""
    import anyio

    from agent_bridge.frontends.stdio_owner import serve_owning
    from agent_bridge.rpc.stdio import FdReceiveStream, FdSendStream

    async def run() -> None:
        receive = FdReceiveStream(0, prefix=prefix)
        send = FdSendStream(protocol_fd)
        runtime = build_runtime(args, history, registry=registry)
        server = frontend(runtime, receive, send)
        await serve_owning(runtime, server, receive, send, signalled_before=signalled_before)

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0
