"""Thread CPU per message of `Connection`'s own paths: this tree and others.

Prints figures; not a test.  In one child process per tree and case, a `Connection` is
served (``run``) over an in-memory stream whose sender takes every write at once
(``send_nowait``), so nothing but the connection's own code is timed:

* ``ping``   reads of K pipelined requests for a synchronous method (the reader's way:
             framer, the inline reply path, one queued chunk per read, the reader's
             own write);
* ``events`` batches of K encoded event bodies queued with ``notify_encoded`` and
             written by the writer task (the way the bridge publishes events).

The CPU is the event loop thread's (``time.thread_time``), so waiting for a CPU on a
loaded machine is not counted.  Trees are interleaved, the order rotated each
repetition; quote the ratios.

    git worktree add --detach /tmp/base <commit>
    .venv/bin/python bench/connection_cpu.py . /tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from publish import _link_tree  # noqa: E402 - the harness's link tree, not a copy

CASES = ("ping", "events")


def _child(case: str, messages: int, per: int) -> float:
    """Return the µs of this thread's CPU per message of ``case``."""
    import anyio

    from agent_bridge.rpc.connection import Connection, Method

    reads = messages // per
    ping = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{}}\n' % i for i in range(per)
    )
    body = b'{"seq":1,"kind":"text.delta","data":{"text":"hello world"}}'
    bodies = [body] * per
    done = anyio.Event()

    class Stream:
        left = reads if case == "ping" else 0

        async def receive(self, max_bytes: int = 65536) -> bytes:
            if self.left:
                self.left -= 1
                return ping
            await done.wait()
            raise anyio.EndOfStream

        def send_nowait(self, data: bytes) -> int:
            return len(data)

        async def send(self, data: bytes) -> None:
            return None

    async def main() -> float:
        stream = Stream()
        conn = Connection(
            stream,
            stream,
            methods={"ping": Method(lambda _p: {})},
            framing="newline",
        )
        start = time.thread_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.run)
            if case == "events":
                for _ in range(reads):
                    if conn.notify_encoded(bodies, b'{"method":"event","params":', b"}"):
                        await conn.drained()
                    await anyio.lowlevel.checkpoint()
            else:
                while stream.left:
                    await anyio.sleep(0.001)
            await conn.flush()
            done.set()
        return (time.thread_time() - start) / (reads * per) * 1e6

    return anyio.run(main)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", help="checkouts to compare (default: this one)")
    ap.add_argument("--messages", type=int, default=400_000)
    ap.add_argument("--per", type=int, default=32, help="messages per read or batch")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.messages, args.per)))
        return
    trees = [str(Path(t).resolve()) for t in args.trees or [str(HERE.parent)]]
    roots = {tree: str(_link_tree(Path(tree))) for tree in trees}
    argv = [sys.executable, __file__, "--messages", str(args.messages), "--per", str(args.per)]
    got: dict[tuple[str, str], list[float]] = {(t, c): [] for t in trees for c in CASES}
    for rep in range(args.reps):
        order = trees[rep % len(trees) :] + trees[: rep % len(trees)]
        print(f"# repetition {rep + 1}/{args.reps}", file=sys.stderr, flush=True)
        for case in CASES:
            for tree in order:
                out = subprocess.run(
                    [*argv, "--child", case],
                    env={**os.environ, "PYTHONPATH": roots[tree]},
                    cwd=tempfile.gettempdir(),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                got[tree, case].append(json.loads(out.stdout))
    print(f"thread CPU per message, µs (median of {args.reps}; ratio to the first tree)")
    print(f"{'case':7} {'tree':40} {'µs/msg':>8} {'ratio':>6}")
    for case in CASES:
        base = statistics.median(got[trees[0], case])
        for tree in trees:
            med = statistics.median(got[tree, case])
            print(f"{case:7} {tree[-40:]:40} {med:8.3f} {med / base:5.3f}x")


if __name__ == "__main__":
    main()
