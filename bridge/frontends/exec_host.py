"""``exec``'s host: one run's events written to stdout, its interactions answered by policy.

The runtime :class:`~agent_bridge.runtime.Subscriber` of ``agent-bridge exec``
(:mod:`agent_bridge.commands.exec`): :class:`ExecHost` writes each event the runtime
publishes (NDJSON, exactly the envelope a host would receive, or readable text through
:class:`Output`) and answers the run's interactions as ``--approve`` says: ``deny``,
``once``, or ``ask`` on the terminal (:func:`ask_on_terminal`, in a daemon thread so an
unanswered prompt never keeps the process alive).  It records the run's terminal event,
from which the command takes its exit status.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable
from typing import IO, Any, Final, Literal

import anyio
import msgspec

from agent_bridge.devnull import point_at_devnull
from agent_bridge.errors import BridgeError
from agent_bridge.runtime import Interaction, Released
from agent_bridge.wire.events import (
    EventPayload,
    RunCompleted,
    RunFailed,
    RunInterrupted,
)
from agent_bridge.wire.interactions import (
    Answer,
    ApprovalAnswer,
    ApprovalRequest,
    QuestionAnswer,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)

__all__ = ["ExecHost", "Output", "Policy", "ask_on_terminal", "terminal_asker"]

Policy = Literal["once", "deny", "ask"]

_TERMINAL: Final = (RunCompleted, RunFailed, RunInterrupted)
_to_builtins: Final = msgspec.to_builtins


class Output:
    """Writes events as NDJSON or as readable text to the protocol's stdout.

    A released batch of events is one write (:meth:`envelopes`, :meth:`texts`), and
    the flush is left for the event loop's next turn (:meth:`flush_soon`): the batches
    released in one turn share a flush, and what a run says is on stdout as soon as the
    loop has run what was ready (nothing waits for a buffer to fill or for the run to end).

    A stdout that can no longer be written (its reader went away: ``exec ... | head``)
    is not an error to report: :attr:`closed` becomes true, nothing more is written,
    ``on_gone`` is called, and the descriptor is pointed at ``/dev/null`` so what the
    buffer still holds is dropped quietly at exit.  Its owner stops the run
    (:class:`ExecHost`)."""

    def __init__(self, out: IO[bytes], fmt: Literal["ndjson", "text"]) -> None:
        self._out = out
        self._fmt = fmt
        self._mid_line = False
        self._flush_due = False
        self.closed = False
        #: called once stdout turns out to be gone (also when a deferred flush finds it)
        self.on_gone: Callable[[], None] | None = None

    def event(self, body: bytes, payload: EventPayload) -> None:
        """Write one event and flush: its envelope as the runtime encoded it
        (``ndjson``), or ``payload`` (the object that was encoded, never decoded again)
        in words."""
        if self._fmt == "ndjson":
            self.envelopes([body])
        else:
            self.texts([payload])
        self.flush()

    @property
    def ndjson(self) -> bool:
        """Whether events are written as their envelopes (``ndjson``), not as text."""
        return self._fmt == "ndjson"

    def envelopes(self, bodies: list[bytes]) -> None:
        """Write the envelopes ``bodies`` as the runtime encoded them, one a line, with one
        write for them all (``ndjson``; ``bodies`` is consumed); see :meth:`flush_soon`."""
        if self.closed:
            return
        bodies.append(b"")  # the last line's newline, from the same join
        self._write(b"\n".join(bodies))

    def texts(self, payloads: list[EventPayload]) -> None:
        """Write ``payloads`` (the objects the runtime encoded) in words, with one write
        for them all (``text``); see :meth:`flush_soon`."""
        if self.closed:
            return
        text = "".join([self._text(_to_builtins(payload)) for payload in payloads])
        if text:
            self._write(text.encode("utf-8", "replace"))

    def _write(self, data: bytes) -> None:
        try:
            self._out.write(data)
        except OSError:
            self._gone()

    def flush_soon(self) -> None:
        """Flush once the running event loop has run what is ready now (at once outside
        one); one flush however many batches are written before it."""
        if self._flush_due or self.closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._flush_due = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Flush what was written."""
        self._flush_due = False
        if self.closed:
            return
        try:
            self._out.flush()
        except OSError:
            self._gone()

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._mid_line:
                self._out.write(b"\n")
            self._out.flush()
        except OSError:
            self._gone()

    def _gone(self) -> None:
        if self.closed:
            return
        self.closed = True
        point_at_devnull(self._out.fileno())
        if self.on_gone is not None:
            self.on_gone()

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
            error = p["error"]
            details = "; ".join(f"{k}: {v}" for k, v in (error.get("details") or {}).items())
            said = f" ({details})" if details else ""
            return self._line(f"failed: {error['code']}: {error['message']}{said}")
        if kind == "run.interrupted":
            return self._line(f"interrupted ({p['reason']})")
        if kind == "run.started":
            return ""
        if kind == "usage":
            return self._line(f"usage: {_usage(p)}")
        if kind == "diagnostic":
            return self._line(f"{p['level']} {p['code']}: {p['message']}")
        if kind == "plan.updated":
            steps = "; ".join(f"[{s['status']}] {s['text']}" for s in p["steps"])
            return self._line(f"plan: {steps}")
        if kind == "limits.updated":
            return self._line("limits: " + "; ".join(_meter(m) for m in p["meters"]))
        if kind == "commands.updated":
            names = [f"/{c['name']}" for c in p["commands"]]
            shown = ", ".join(names[:8]) + (f", … ({len(names)})" if len(names) > 8 else "")
            return self._line(f"commands: {shown or 'none'}")
        if kind == "settings.updated":
            named = [f"{k} {p[k]}" for k in ("model", "mode") if p.get(k) is not None]
            return self._line(f"settings: {', '.join(named) or 'none named'}")
        if kind == "session.closed":
            return self._line(f"session closed ({p['reason']})")
        if kind == "session.resumed":
            return self._line("session resumed")
        if kind == "session.imported":
            return self._line(
                f"imported {p['records']} records of {p['provider']} session {p['sessionRef']}"
            )
        # a later version's event: shown as it is
        return self._line(json.dumps(p, ensure_ascii=False))


def _meter(m: dict[str, Any]) -> str:
    """One limit meter as a short phrase: ``codex primary 100% exhausted, resets …``."""
    text = f"{m['pool']} {m['meter']}"
    if m.get("percent") is not None:
        text += f" {m['percent']:g}%"
    if m.get("status"):
        text += f" {m['status']}"
    if m.get("resetsAt"):
        text += f", resets {m['resetsAt']}"
    return text


def _usage(p: dict[str, Any]) -> str:
    """A usage payload in words: the run's tokens (and cost), then the context's fill."""
    parts: list[str] = []
    spent = p.get("cumulative") or {}
    for key, label in (
        ("inputTokens", "input tokens"),
        ("outputTokens", "output tokens"),
        ("cachedInputTokens", "cached input tokens"),
    ):
        if spent.get(key):
            parts.append(f"{spent[key]} {label}")
    if spent.get("costUsd") is not None:
        parts.append(f"${spent['costUsd']:.4f}")
    context = p.get("context")
    if context:
        most = context.get("maxTokens")
        of = f" of {most}" if most else ""
        parts.append(f"context {context['usedTokens']}{of} tokens")
    return ", ".join(parts) or "nothing reported"


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


class ExecHost:
    """The runtime subscriber of ``exec``: prints events, answers interactions."""

    def __init__(
        self,
        output: Output,
        policy: Policy,
        ask: Callable[[Any], Answer | None],
    ) -> None:
        self._output = output
        self._policy = policy
        self._ask = ask
        self.run_id: str | None = None
        #: the run's terminal payload, once it came
        self.terminal: RunCompleted | RunFailed | RunInterrupted | None = None
        self.ended = anyio.Event()
        output.on_gone = self.ended.set  # nobody reads: the command stops the run

    # Subscriber protocol

    def publish(self, events: Released) -> bool:
        """Print the events (from the bodies and payload objects the runtime gives: none
        decoded again; a batch with one write, flushed on the loop's next turn); never
        congested (stdout is written at once)."""
        try:
            decoded = events.events()  # the objects themselves for live events
        except msgspec.DecodeError:  # only replayed history is decoded; exec replays none
            sys.stderr.write("agent-bridge exec: an event could not be read\n")
            return False
        output = self._output
        lines: list[bytes] = []
        payloads: list[EventPayload] = []
        for body, (run_id, payload) in zip(events.bodies, decoded, strict=True):
            if self.terminal is not None:
                break  # one run: nothing after its end
            lines.append(body)
            payloads.append(payload)
            if (
                isinstance(payload, _TERMINAL)
                and run_id is not None
                and self.run_id in (None, run_id)
            ):
                self.terminal = payload
        if lines:
            if output.ndjson:
                output.envelopes(lines)
            else:
                output.texts(payloads)
            output.flush_soon()
        if output.closed or self.terminal is not None:
            self.ended.set()  # the run ended, or nobody reads: the command stops the run
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
            self._output.flush()  # what the run said so far, before the question
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

    @property
    def stdout_closed(self) -> bool:
        """Whether stdout's reader went away (then :attr:`ended` is set: stop the run)."""
        return self._output.closed


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


def terminal_asker() -> Callable[[Any], Answer | None]:
    """``ask``'s asker: each request asked on ``/dev/tty``; without a terminal, ``None``
    (denied, or a question cancelled) and one warning on stderr."""
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
