"""``agent-bridge exec``: one run, its events on stdout, the exit code from how it ended.

It runs in-process on the :class:`~agent_bridge.runtime.Runtime` (no ``serve`` child):
one interpreter start instead of two, no JSON-RPC round trips, and the events printed are
exactly the envelopes the runtime publishes (what a host would receive in ``event``
notifications).  As in ``serve``, fd 1 is pointed at stderr before anything else runs, so
only events reach the real stdout, whatever a library prints.

The session is journaled like any other (``--state-dir``, else the default state
directory), so ``--session ID`` continues it later and ``agent-bridge record`` can turn
it into a script.  The run's interactions are answered by ``--approve``:

* ``deny`` (default): approvals are denied; questions are not answerable (the bridge
  cancels them);
* ``once``: approvals are allowed once; questions as with ``deny``;
* ``ask``: approvals and questions are asked on the terminal (``/dev/tty``); without a
  terminal they are denied (questions cancelled) and a warning goes to stderr.

SIGINT (or SIGTERM) interrupts the run cleanly; exec then prints the rest of its events
and exits 130.  A second SIGINT stops at once (the sessions are still closed).

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
===  ===========================================================================
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import IO, Any, Final, Literal

import anyio
import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.runtime import Interaction, Runtime
from agent_bridge.wire.interactions import (
    Answer,
    ApprovalAnswer,
    ApprovalRequest,
    QuestionAnswer,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)

__all__ = ["EXIT_CODES", "Policy", "exit_code_for", "parse_option", "run_exec"]

Policy = Literal["once", "deny", "ask"]

EXIT_COMPLETED: Final = 0
EXIT_FAILED: Final = 1
EXIT_INTERRUPTED: Final = 130

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

_TERMINAL: Final = ("run.completed", "run.failed", "run.interrupted")


def exit_code_for(code: str) -> int:
    """The exit code for an error ``code`` (see :data:`EXIT_CODES`)."""
    return EXIT_CODES.get(code, EXIT_FAILED)


def parse_option(text: str) -> tuple[str, Any]:
    """``k=v`` → ``(k, v)``: ``v`` as JSON when it parses (``true``, ``3``,
    ``{"a": 1}``, ``["x"]``), else the string itself.  Raises ``ValueError``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--option wants key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


# ---------------------------------------------------------------- output


class _Output:
    """Writes events as NDJSON or as readable text to the protocol's stdout."""

    def __init__(self, out: IO[bytes], fmt: Literal["ndjson", "text"]) -> None:
        self._out = out
        self._fmt = fmt
        self._mid_line = False

    def event(self, body: bytes, envelope: dict[str, Any]) -> None:
        if self._fmt == "ndjson":
            self._out.write(body + b"\n")
        else:
            self._out.write(self._text(envelope["payload"]).encode("utf-8", "replace"))
        self._out.flush()

    def close(self) -> None:
        try:
            if self._mid_line:
                self._out.write(b"\n")
            self._out.flush()
        except OSError:
            pass

    def _line(self, text: str) -> str:
        prefix = "\n" if self._mid_line else ""
        self._mid_line = False
        return f"{prefix}· {text}\n"

    def _text(self, p: dict[str, Any]) -> str:
        kind = p["type"]
        if kind == "text.delta":
            self._mid_line = not p["text"].endswith("\n")
            return str(p["text"])
        if kind == "thinking.delta":
            return self._line(f"thinking: {p['text']}")
        if kind == "tool.activity":
            detail = p.get("output") if p["status"] == "output" else p.get("input")
            extra = "" if detail is None else f" {json.dumps(detail, ensure_ascii=False)}"
            return self._line(f"tool {p['name']} {p['status']}{extra}")
        if kind == "interaction.requested":
            r = p["request"]
            return self._line(f"{r['kind']}: {r.get('title') or r.get('prompt') or ''}")
        if kind == "interaction.settled":
            answer = p.get("answer")
            said = "" if answer is None else f" {json.dumps(answer, ensure_ascii=False)}"
            return self._line(f"{p['status']}{said}")
        if kind == "run.completed":
            return self._line(f"completed ({p.get('stopReason') or 'no stop reason'})")
        if kind == "run.failed":
            return self._line(f"failed: {p['error']['code']}: {p['error']['message']}")
        if kind == "run.interrupted":
            return self._line(f"interrupted ({p['reason']})")
        if kind == "run.started":
            return ""
        return self._line(json.dumps(p, ensure_ascii=False))


# ---------------------------------------------------------------- answering


def _describe(request: Any) -> str:
    if isinstance(request, ApprovalRequest):
        lines = [f"approval: {request.title}"]
        if request.command:
            lines.append(f"  command: {request.command}")
        elif request.input is not None:
            lines.append(f"  input: {json.dumps(request.input, ensure_ascii=False)}")
        if request.cwd:
            lines.append(f"  cwd: {request.cwd}")
        return "\n".join(lines) + "\n"
    if isinstance(request, QuestionRequest):
        lines = [f"question: {request.prompt}"]
        lines += [f"  {c.id}) {c.label}" for c in request.choices]
        return "\n".join(lines) + "\n"
    return f"questions: {request.title}\n"


def ask_on_terminal(request: Any, tty: IO[str]) -> Answer | None:
    """Ask ``request`` on ``tty`` (blocking); ``None`` when the user gives up (EOF)."""
    tty.write(_describe(request))
    if isinstance(request, ApprovalRequest):
        modes = "/a(lways, this session)" if "session" in request.modes else ""
        while True:
            tty.write(f"allow? y(es)/n(o){modes} ")
            tty.flush()
            line = tty.readline()
            if not line:
                return None
            reply = line.strip().lower()
            if reply in ("y", "yes"):
                return ApprovalAnswer("allow", "once")
            if reply in ("n", "no", ""):
                return ApprovalAnswer("deny")
            if modes and reply in ("a", "always"):
                return ApprovalAnswer("allow", "session")
    if isinstance(request, QuestionRequest):
        ids = {c.id for c in request.choices}
        while True:
            tty.write("answer: ")
            tty.flush()
            line = tty.readline()
            if not line:
                return None
            reply = line.strip()
            if reply in ids:
                return QuestionAnswer(choice=reply)
            if request.allow_free_text or not ids:
                return QuestionAnswer(text=reply)
    if isinstance(request, QuestionSetRequest):
        answers: dict[str, str] = {}
        for item in request.items:
            tty.write(f"{item.key}: {item.prompt} ")
            tty.write("".join(f"[{c.id}) {c.label}] " for c in item.choices))
            tty.flush()
            line = tty.readline()
            if not line:
                return None
            answers[item.key] = line.strip()
        return QuestionSetAnswer(answers)
    return None


class _ExecHost:
    """The runtime subscriber of ``exec``: prints events, answers interactions."""

    def __init__(
        self,
        output: _Output,
        policy: Policy,
        ask: Callable[[Any], Answer | None],
    ) -> None:
        self._output = output
        self._policy = policy
        self._ask = ask
        self.run_id: str | None = None
        self.terminal: dict[str, Any] | None = None
        self.ended = anyio.Event()
        self._early: list[tuple[bytes, dict[str, Any]]] = []

    # Subscriber protocol

    def publish(self, envelope: bytes) -> bool:
        self._handle(envelope)
        return False

    def publish_many(self, envelopes: list[bytes]) -> bool:
        for envelope in envelopes:
            self._handle(envelope)
        return False

    @property
    def congested(self) -> bool:
        return False

    async def drained(self) -> None:
        return None

    def can_answer(self, kind: str) -> bool:
        return kind == "approval" or self._policy == "ask"

    async def ask(self, interaction: Interaction) -> None:
        answer: Answer | None
        if self._policy == "ask":
            answer = await _in_daemon_thread(self._ask, interaction.request)
        elif isinstance(interaction.request, ApprovalRequest):
            answer = ApprovalAnswer("allow" if self._policy == "once" else "deny")
        else:
            answer = None
        if answer is None:
            answer = ApprovalAnswer("deny") if interaction.kind == "approval" else None
        if answer is None:
            interaction.settle("cancelled")
            return
        try:
            interaction.respond(answer)
        except BridgeError as exc:  # settled meanwhile (an interrupt), or a bad answer
            if exc.error_code == "invalid_answer":
                sys.stderr.write("agent-bridge exec: that answer does not fit; cancelled\n")
                interaction.settle("cancelled")

    def close_output(self) -> None:
        """End the output (a last newline for text) and flush it."""
        self._output.close()

    # events

    def _handle(self, body: bytes) -> None:
        if self.terminal is not None:
            return  # one run: nothing after its end
        envelope: dict[str, Any] = msgspec.json.decode(body)
        self._output.event(body, envelope)
        payload = envelope["payload"]
        run_id = envelope.get("runId")
        if payload["type"] in _TERMINAL and run_id is not None and self.run_id in (None, run_id):
            self.terminal = envelope
            self.ended.set()


async def _in_daemon_thread(fn: Callable[[Any], Answer | None], arg: Any) -> Answer | None:
    """Run blocking ``fn(arg)`` in a daemon thread (a prompt left unanswered at an
    interrupt must not keep the process alive)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Answer | None] = loop.create_future()

    def deliver(value: Answer | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> None:
        try:
            value = fn(arg)
        except BaseException as exc:
            if not loop.is_closed():
                loop.call_soon_threadsafe(deliver, None, exc)
            return
        if not loop.is_closed():
            loop.call_soon_threadsafe(deliver, value, None)

    threading.Thread(target=target, daemon=True, name="exec-ask").start()
    return await future


def _terminal_asker() -> Callable[[Any], Answer | None]:
    warned = False

    def ask(request: Any) -> Answer | None:
        nonlocal warned
        try:
            tty = open("/dev/tty", "r+", encoding="utf-8")  # noqa: SIM115
        except OSError:
            if not warned:
                sys.stderr.write("agent-bridge exec: --approve ask needs a terminal; denied\n")
                warned = True
            return None
        with tty:
            return ask_on_terminal(request, tty)

    return ask


# ---------------------------------------------------------------- the run


async def _run(
    *,
    provider: str | None,
    options: dict[str, Any],
    policy: Policy,
    session_id: str | None,
    prompt: str,
    host: _ExecHost,
    state_dir: str | None,
    workspace: str | None,
    interrupt_grace: float,
) -> int:
    from agent_bridge.journal import open_history
    from agent_bridge.registry import ProviderRegistry
    from agent_bridge.wire.methods import RunInput, RunStartParams

    registry = ProviderRegistry.default()
    history = open_history(state_dir)
    interrupted = False
    async with Runtime(registry, history=history, interrupt_grace=interrupt_grace) as runtime:

        async def on_signals(scope: anyio.CancelScope) -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    if interrupted or host.run_id is None:
                        interrupted = True
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
                    provider_id = provider or os.environ.get(
                        "AGENT_BRIDGE_PROVIDER", "claude-code"
                    )
                    declared = registry.get(provider_id).describe().options
                    session_opts, run_opts = _split(declared, options)
                    info = await runtime.create_session(
                        provider_id,
                        workspace=workspace,
                        options=session_opts,
                        subscriber=host,
                    )
                else:
                    stored = await runtime.history.load_session(session_id)
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
            except BridgeError as exc:
                said = "; ".join(f"{k}: {v}" for k, v in (exc.info.details or {}).items())
                said = f" ({said})" if said else ""
                sys.stderr.write(
                    f"agent-bridge exec: {exc.error_code}: {exc.info.message}{said}\n"
                )
                tg.cancel_scope.cancel()
                return exit_code_for(exc.error_code)
            tg.cancel_scope.cancel()
    terminal = host.terminal
    if terminal is None:
        return EXIT_INTERRUPTED
    payload = terminal["payload"]
    if payload["type"] == "run.completed":
        return EXIT_COMPLETED
    if payload["type"] == "run.interrupted":
        return EXIT_INTERRUPTED
    return exit_code_for(payload["error"]["code"])


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
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    out = os.fdopen(out_fd, "wb")
    try:
        parsed = dict(parse_option(o) for o in options or [])
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
    from agent_bridge.journal import JournalError

    host = _ExecHost(_Output(out, fmt), approve, _terminal_asker())
    try:
        code = anyio.run(
            lambda: _run(
                provider=provider,
                options=parsed,
                policy=approve,
                session_id=session_id,
                prompt=prompt,
                host=host,
                state_dir=state_dir,
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
