"""``agent-bridge acp`` against the ACP Python SDK's example-style agent, in one run.

Prints (medians of ``--reps`` interleaved repetitions; ratios within this invocation):

* prompt-to-first-chunk latency: from writing ``session/prompt`` to reading the first
  ``agent_message_chunk`` (median of ``--prompts`` one-chunk prompts per repetition);
* chunks per second: one prompt streaming ``--chunks`` chunks, over the whole turn (from
  writing ``session/prompt`` to reading its reply, after every chunk).

Targets, each a child on stdin/stdout pipes driven by one cheap asyncio + msgspec client:

* ``bridge``: ``agent-bridge acp --provider scripted`` with its journal on, in a scratch
  state directory (the scripted provider echoes, or streams ``--chunks`` deltas);
* ``sdk-agent``: bench/baselines/acp_sdk_echo_agent.py, an agent on the ACP Python SDK
  (``agent-client-protocol``) shaped like the SDK's examples/echo_agent.py.

    .venv/bin/python bench/acp.py [--reps 3] [--prompts 20] [--chunks 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
BRIDGE = str(Path(sys.executable).with_name("agent-bridge"))
SDK_AGENT = ROOT / "bench" / "baselines" / "acp_sdk_echo_agent.py"

_decode = msgspec.json.decode
_encode = msgspec.json.encode


class Agent:
    """One ACP agent child and a minimal client of it."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.proc: asyncio.subprocess.Process | None = None
        self.next_id = 0

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=16 * 1024 * 1024,
        )

    async def send(self, method: str, params: Any) -> int:
        assert self.proc is not None and self.proc.stdin is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(_encode(message) + b"\n")
        await self.proc.stdin.drain()
        return self.next_id

    async def read(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.argv[0]}: closed its stdout")
        message: dict[str, Any] = _decode(line)
        return message

    async def call(self, method: str, params: Any) -> Any:
        request_id = await self.send(method, params)
        while True:
            message = await self.read()
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    async def prompt(self, session_id: str, text: str) -> tuple[float, float, int]:
        """Send a prompt; return (seconds to the first chunk, seconds to the reply,
        chunks)."""
        started = time.perf_counter()
        request_id = await self.send(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        first: float | None = None
        chunks = 0
        while True:
            message = await self.read()
            if message.get("method") == "session/update":
                if message["params"]["update"].get("sessionUpdate") == "agent_message_chunk":
                    chunks += 1
                    if first is None:
                        first = time.perf_counter()
            elif message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"session/prompt: {message['error']}")
                end = time.perf_counter()
                assert first is not None, "no chunk"
                return first - started, end - started, chunks

    async def stop(self) -> None:
        if self.proc is None:
            return
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def measure(argv: list[str], prompts: int, chunks: int, cwd: str) -> dict[str, float]:
    """The SDK agent's figures (one process: an echo session, then a stream session)."""
    agent = Agent(argv)
    await agent.start()
    try:
        await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        echo = (await agent.call("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]
        latencies = []
        for i in range(prompts + 2):
            latency, _, _ = await agent.prompt(echo, f"hello {i}")
            if i >= 2:  # warm-up
                latencies.append(latency)
        stream = (await agent.call("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]
        await agent.prompt(stream, "stream 10")  # warm-up
        _, span, got = await agent.prompt(stream, f"stream {chunks}")
        assert got == chunks, got
        return {"latency_ms": statistics.median(latencies) * 1000, "chunks_per_s": got / span}
    finally:
        await agent.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="acp-bench-"))
    try:
        script = scratch / "script.json"
        stream = {"type": "stream", "count": args.chunks, "text": "x"}
        script.write_text(json.dumps({"runs": [{"steps": [{"type": "echo", "prefix": ""}]}]}))
        stream_script = scratch / "stream.json"
        stream_script.write_text(json.dumps({"steps": [stream]}))

        def bridge_argv(rep: int) -> list[str]:
            return [
                BRIDGE, "acp", "--provider", "scripted",
                "--state-dir", str(scratch / f"state-{rep}"),
                "-o", f"script={script}",
            ]  # fmt: skip

        results: dict[str, list[dict[str, float]]] = {"bridge": [], "sdk-agent": []}
        for rep in range(args.reps):
            order = ["bridge", "sdk-agent"] if rep % 2 == 0 else ["sdk-agent", "bridge"]
            for name in order:
                if name == "bridge":
                    argv = bridge_argv(rep)
                    figures = asyncio.run(
                        _bridge(argv, args.prompts, args.chunks, str(scratch), stream_script)
                    )
                else:
                    argv = [sys.executable, str(SDK_AGENT)]
                    figures = asyncio.run(measure(argv, args.prompts, args.chunks, str(scratch)))
                results[name].append(figures)
                print(f"rep {rep + 1} {name}: {figures}", file=sys.stderr)
        table = {
            name: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            for name, runs in results.items()
        }
        b, s = table["bridge"], table["sdk-agent"]
        print(f"agent-bridge acp vs ACP Python SDK example-style agent "
              f"(medians of {args.reps} interleaved reps)")  # fmt: skip
        print(f"{'metric':<28}{'bridge':>12}{'sdk-agent':>12}{'bridge/sdk':>12}")
        print(f"{'first chunk latency (ms)':<28}{b['latency_ms']:>12.2f}{s['latency_ms']:>12.2f}"
              f"{b['latency_ms'] / s['latency_ms']:>12.2f}")  # fmt: skip
        print(f"{'chunks per second':<28}{b['chunks_per_s']:>12.0f}{s['chunks_per_s']:>12.0f}"
              f"{b['chunks_per_s'] / s['chunks_per_s']:>12.2f}")  # fmt: skip
        if args.json:
            Path(args.json).write_text(json.dumps({"medians": table, "runs": results}, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


async def _bridge(
    argv: list[str], prompts: int, chunks: int, cwd: str, stream_script: Path
) -> dict[str, float]:
    """The bridge's figures: latency with the echo script; throughput from a second
    bridge process on the same journal whose session script streams (a script is chosen
    per bridge process with ``-o script=``)."""
    agent = Agent(argv)
    await agent.start()
    try:
        await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        echo = (await agent.call("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]
        latencies = []
        for i in range(prompts + 2):
            seconds, _, _ = await agent.prompt(echo, f"hello {i}")
            if i >= 2:
                latencies.append(seconds)
    finally:
        await agent.stop()
    stream_argv = [*argv[:-1], f"script={stream_script}"]
    agent = Agent(stream_argv)
    await agent.start()
    try:
        await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = (await agent.call("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]
        await agent.prompt(session, "warm up")
        _, span, got = await agent.prompt(session, "stream")
        assert got == chunks, got
    finally:
        await agent.stop()
    return {"latency_ms": statistics.median(latencies) * 1000, "chunks_per_s": got / span}


if __name__ == "__main__":
    sys.exit(main())
