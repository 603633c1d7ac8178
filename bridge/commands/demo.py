"""``agent-bridge demo``: spawn the server as a child and drive one scripted session.

It is a host like any other: it speaks the protocol over the child's stdin/stdout with
the project's own JSON-RPC engine, answers the approval the run asks for, interrupts the
run while it waits, closes the session and shuts the bridge down, printing the exchange
as it goes: a readable summary, or with ``--raw`` every JSON-RPC message exactly as it
crossed the pipes (``>`` host to bridge, ``<`` bridge to host, one JSON body a line, the
notation of docs/protocol.md's examples).  No credentials and no network are involved:
the provider is the built-in scripted one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Final

from agent_bridge.devnull import point_at_devnull

if TYPE_CHECKING:
    import argparse

    from agent_bridge.rpc.connection import ByteReceiver, ByteSender
    from agent_bridge.rpc.framing import FramingKind

__all__ = ["DEMO_SCRIPT", "add_parsers", "run", "run_demo"]


def add_parsers(sub: Any) -> None:
    """Add ``demo`` to the subcommand parsers ``sub``."""
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


def run(args: argparse.Namespace) -> int:
    """Run ``demo`` (see :func:`run_demo`)."""
    return run_demo(framing=args.framing, raw=args.raw)


DEMO_SCRIPT: Final[dict[str, Any]] = {
    "steps": [
        {"type": "thinking", "text": "The user wants a greeting file; I will need to write it."},
        {"type": "text", "text": "I'll create hello.txt with a greeting. ", "chunks": 4},
        {
            "type": "approval",
            "title": "Write hello.txt",
            "toolName": "Write",
            "input": {"path": "hello.txt", "content": "Hello from agent-bridge\n"},
            "modes": ["once", "session"],
            "onAllow": [
                {
                    "type": "tool",
                    "id": "tool_1",
                    "name": "Write",
                    "input": {"path": "hello.txt"},
                    "output": "wrote 24 bytes",
                },
                {"type": "text", "text": "Done. Now waiting for more work...", "chunks": 3},
            ],
            "onDeny": [{"type": "text", "text": "Understood, I won't write it."}],
        },
        {
            "type": "usage",
            "contextTokens": 1830,
            "maxTokens": 200000,
            "inputTokens": 1650,
            "outputTokens": 180,
            "costUsd": 0.0042,
        },
        {"type": "waitForInterrupt"},
    ]
}


def _drop_stdout() -> None:
    """Point stdout at ``/dev/null``: what its buffer holds is dropped at exit."""
    point_at_devnull(sys.stdout.fileno())


class _Printer:
    """Prints the exchange: a summary, or (``raw``) only the frames the taps see."""

    def __init__(self, raw: bool) -> None:
        self.raw = raw
        self._line_open = False
        #: the delta type the open line shows (text and thinking each get their own line)
        self._line_kind = ""
        #: stdout's reader went away (``demo | head``): nothing more is printed, the
        #: exchange ends as usual (its ``serve`` child closed) and the demo exits 141
        self.gone = False

    def _print(self, text: str, end: str = "\n") -> None:
        if self.gone:
            return
        try:
            print(text, end=end, flush=True)
        except OSError:
            self.gone = True
            _drop_stdout()

    def frame(self, arrow: str, body: bytes) -> None:
        """One raw message body (``raw`` only): ``> {...}`` or ``< {...}``."""
        self.out(f"{arrow} {body.decode('utf-8', 'replace')}")

    def _close_line(self) -> None:
        if self._line_open:
            self._print("")
            self._line_open = False

    def out(self, text: str) -> None:
        self._close_line()
        self._print(text)

    def note(self, text: str) -> None:
        """A summary line (not shown with ``raw``)."""
        if not self.raw:
            self.out(text)

    def request(self, method: str, params: Any) -> None:
        self.note(f"→ {method} {_brief(params)}")

    def reply(self, method: str, result: Any) -> None:
        self.note(f"← {method}: {_brief(result)}")

    def event(self, envelope: dict[str, Any]) -> None:
        payload = envelope["payload"]
        kind = payload["type"]
        if self.raw:
            return
        if kind in ("text.delta", "thinking.delta"):
            if self._line_open and self._line_kind != kind:
                self._close_line()
            if not self._line_open:
                label = "assistant" if kind == "text.delta" else "thinking"
                self._print(f"⇠ #{envelope['sequence']:<3} {label}: ", end="")
                self._line_open, self._line_kind = True, kind
            self._print(payload["text"], end="")
            return
        details = {k: v for k, v in payload.items() if k != "type"}
        self.out(f"⇠ #{envelope['sequence']:<3} {kind} {_brief(details)}")


class _TapReceive:
    """A receive stream that shows every frame it passes on (bridge → host)."""

    def __init__(self, inner: ByteReceiver, framing: FramingKind, printer: _Printer) -> None:
        from agent_bridge.rpc.framing import make_framer

        self._inner = inner
        self._framer = make_framer(framing, 1 << 30)
        self._printer = printer

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._inner.receive(max_bytes)
        for body in self._framer.feed(data):
            if isinstance(body, bytes):
                self._printer.frame("<", body)
        return data


class _TapSend:
    """A send stream that shows every frame it passes on (host → bridge)."""

    def __init__(self, inner: ByteSender, framing: FramingKind, printer: _Printer) -> None:
        from agent_bridge.rpc.framing import make_framer

        self._inner = inner
        self._framer = make_framer(framing, 1 << 30)
        self._printer = printer

    async def send(self, item: bytes) -> None:
        for body in self._framer.feed(item):
            if isinstance(body, bytes):
                self._printer.frame(">", body)
        await self._inner.send(item)


def _brief(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _demo(framing: str, printer: _Printer) -> int:
    import anyio

    import agent_bridge
    from agent_bridge.processes import ProcessSpec, build_child_env, spawn
    from agent_bridge.rpc.connection import Connection, Method

    env = build_child_env(passthrough=("PYTHONPATH",))
    # the folder that holds the agent_bridge package, so the child imports this one
    root = os.path.dirname(os.path.dirname(os.path.abspath(agent_bridge.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    spec = ProcessSpec(
        # The demo leaves no history behind in the user's state directory.
        argv=(
            sys.executable,
            "-P",  # never import from the working directory
            "-m",
            "agent_bridge",
            "serve",
            "--framing",
            framing,
            "--state-dir",
            ":memory:",
        ),
        cwd=None,
        env=env,
        name="agent-bridge",
    )
    events: list[dict[str, Any]] = []
    waiting = anyio.Event()
    finished = anyio.Event()

    def on_event(params: dict[str, Any]) -> None:
        events.append(params)
        printer.event(params)
        payload = params["payload"]
        if payload["type"] == "usage":  # the script's last step before it waits
            waiting.set()
        if payload["type"] in ("run.completed", "run.failed", "run.interrupted"):
            finished.set()

    async def on_interaction(params: dict[str, Any]) -> dict[str, Any]:
        printer.note(f"⇠ interaction/request {_brief(params['request'])}")
        answer = {"kind": "approval", "decision": "allow", "mode": "once"}
        printer.note(f"→ (reply) {_brief(answer)}")
        return answer

    async with anyio.create_task_group() as tg:
        child = await spawn(spec, tg)
        assert child.stdin is not None and child.stdout is not None
        receive: ByteReceiver = child.stdout
        send: ByteSender = child.stdin
        if printer.raw:
            kind: FramingKind = framing  # type: ignore[assignment]
            receive, send = _TapReceive(receive, kind, printer), _TapSend(send, kind, printer)
        conn = Connection(
            receive,
            send,
            methods={"interaction/request": Method(on_interaction, dict, is_async=True)},
            notifications={"event": Method(on_event, dict)},
            framing=framing,  # type: ignore[arg-type]
            name="bridge",
        )
        tg.start_soon(conn.run)

        async def call(method: str, params: Any) -> Any:
            printer.request(method, params)
            with anyio.fail_after(30):
                result = await conn.request(method, params)
            printer.reply(method, result)
            return result

        await call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "agent-bridge-demo"},
                "capabilities": {"interactions": {"approval": True, "question": True}},
            },
        )
        conn.notify("initialized", {})
        providers = await call("providers/list", {"probe": False})
        assert any(p["id"] == "scripted" for p in providers["providers"])
        created = await call(
            "session/create",
            {"provider": "scripted", "title": "demo", "options": {"script": DEMO_SCRIPT}},
        )
        session_id = created["session"]["sessionId"]
        started = await call(
            "run/start", {"sessionId": session_id, "input": {"text": "Create hello.txt"}}
        )
        with anyio.fail_after(30):
            await waiting.wait()
        await call("run/interrupt", {"runId": started["runId"], "reason": "user"})
        with anyio.fail_after(30):
            await finished.wait()
        await call("session/close", {"sessionId": session_id})
        await call("shutdown", {})
        conn.notify("exit", {})
        with anyio.fail_after(15):
            code = await child.wait()
        conn.close()
        await child.stop()
    kinds = [e["payload"]["type"] for e in events]
    ok = code == 0 and "interaction.settled" in kinds and kinds[-1] == "session.closed"
    ok = ok and "run.interrupted" in kinds
    printer.out(
        f"\n{len(events)} events, sequence 1..{events[-1]['sequence'] if events else 0}; "
        f"bridge exited with {code}. Demo {'succeeded' if ok else 'FAILED'}."
    )
    return 0 if ok else 1


def run_demo(*, framing: str = "content-length", raw: bool = False) -> int:
    """Run the demo; return 0 when the whole exchange went as expected, 1 otherwise."""
    import anyio

    printer = _Printer(raw)
    code = anyio.run(_demo, framing, printer)
    return 141 if printer.gone else code
