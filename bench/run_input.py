"""Run input benchmark: what an image costs as a run's input, and what it costs the journal.
Prints figures.

Two measurements over the bridge's real pipes (``python -m agent_bridge serve``, newline
framing, its journal on in a scratch state directory), the scripted provider answering
each run with one short text:

  (R1) a run whose input is one ``--image-mb`` MiB PNG (base64 ``data``), end to end:
       from writing ``run/start`` to reading ``run.completed`` (the bridge decodes,
       checks and hashes the image, journals it once and hands it to the provider), as a
       ratio to a run whose input is the same bytes as ``text`` (the same base64 string,
       so the same bytes cross the pipe), alternating for ``--reps`` repetitions; medians.
  (R2) journal growth for ``--runs`` runs that each send the same image: the journal
       file's size after a checkpoint, before and after, against ``runs x image size``
       (an image is stored once, by its SHA-256).

Usage:  .venv/bin/python bench/run_input.py [--image-mb 5] [--reps 5] [--runs 100]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PNG_HEAD = b"\x89PNG\r\n\x1a\n"


class Bridge:
    """A bridge child on newline-framed pipes, with a minimal client."""

    def __init__(self, state: str) -> None:
        self.state = state
        self.next_id = 0
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent_bridge",
            "serve",
            "--framing",
            "newline",
            "--state-dir",
            self.state,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=str(REPO),
            limit=64 * 1024 * 1024,
        )
        await self.call(
            "initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench-run-input"}}
        )
        await self.send({"jsonrpc": "2.0", "method": "initialized"})

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def read(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the bridge exited")
        message: dict[str, Any] = json.loads(line)
        return message

    async def call(self, method: str, params: Any) -> Any:
        self.next_id += 1
        ident = self.next_id
        await self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            message = await self.read()
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    async def run(self, session_id: str, input: dict[str, Any]) -> float:
        """Seconds from writing ``run/start`` to reading its ``run.completed``."""
        self.next_id += 1
        params = {"sessionId": session_id, "input": input}
        line = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": "run/start", "params": params}
        )
        assert self.proc is not None and self.proc.stdin is not None
        started = time.perf_counter()
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()
        while True:
            message = await self.read()
            if "error" in message:
                raise RuntimeError(f"run/start: {message['error']}")
            payload = message.get("params", {}).get("payload", {})
            if payload.get("type") in ("run.completed", "run.failed", "run.interrupted"):
                if payload["type"] != "run.completed":
                    raise RuntimeError(f"the run ended {payload}")
                return time.perf_counter() - started

    async def stop(self) -> None:
        if self.proc is None:
            return
        await self.call("shutdown", None)
        await self.send({"jsonrpc": "2.0", "method": "exit"})
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await asyncio.wait_for(self.proc.wait(), 30)


def journal_bytes(state: str) -> int:
    """The journal's size in bytes after a checkpoint (its WAL folded in)."""
    path = os.path.join(state, "journal.sqlite3")
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()
    return os.path.getsize(path)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    size = int(args.image_mb * 1024 * 1024)
    image = PNG_HEAD + os.urandom(size - len(PNG_HEAD))
    data = base64.b64encode(image).decode("ascii")
    as_image = {"content": [{"type": "image", "mimeType": "image/png", "data": data}]}
    as_text = {"text": data}
    script = {"steps": [{"type": "text", "text": "ok"}]}
    base = tempfile.mkdtemp(prefix="bench-run-input-")
    try:
        # R1: image vs the same bytes as text, alternating, in one bridge; each run in a
        # fresh session (the scripted provider's recovery record keeps every input's
        # text, which would make each text run dearer than the one before)
        bridge = Bridge(os.path.join(base, "r1"))
        await bridge.start()

        async def timed(input: dict[str, Any]) -> float:
            created = await bridge.call(
                "session/create", {"provider": "scripted", "options": {"script": script}}
            )
            return await bridge.run(created["session"]["sessionId"], input)

        await timed(as_text)  # warm up both paths
        await timed(as_image)
        image_s: list[float] = []
        text_s: list[float] = []
        for rep in range(args.reps):
            order: list[tuple[dict[str, Any], list[float]]] = [
                (as_image, image_s),
                (as_text, text_s),
            ]
            for input, out in order if rep % 2 == 0 else reversed(order):
                out.append(await timed(input))
        await bridge.stop()

        # R2: journal growth for N runs sending the same image
        state = os.path.join(base, "r2")
        bridge = Bridge(state)
        await bridge.start()
        created = await bridge.call(
            "session/create", {"provider": "scripted", "options": {"script": script}}
        )
        sid = created["session"]["sessionId"]
        await bridge.run(sid, {"text": "first"})
        before = journal_bytes(state)
        started = time.perf_counter()
        for _ in range(args.runs):
            await bridge.run(sid, as_image)
        elapsed = time.perf_counter() - started
        after = journal_bytes(state)
        await bridge.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    image_median = statistics.median(image_s)
    text_median = statistics.median(text_s)
    return {
        "image_bytes": size,
        "wire_bytes": len(data),
        "r1_image_run_ms": round(image_median * 1000, 1),
        "r1_same_bytes_as_text_ms": round(text_median * 1000, 1),
        "r1_ratio_image_to_text": round(image_median / text_median, 2),
        "r2_runs": args.runs,
        "r2_journal_growth_bytes": after - before,
        "r2_growth_per_run_bytes": round((after - before) / args.runs),
        "r2_if_stored_each_time_bytes": args.runs * size,
        "r2_seconds_per_run": round(elapsed / args.runs, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image-mb", type=float, default=5.0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    figures = asyncio.run(measure(args))
    for key, value in figures.items():
        print(f"{key:32} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
