"""Micro-benchmark: the cost of ``EventStream.publish`` / ``publish_many``, this tree
against another, in one invocation.

Prints figures; not a test.  Each measurement runs in a child process pinned to one CPU
(``os.sched_setaffinity``, what ``taskset -c`` does), the trees interleaved and the order
rotated each repetition, so that the load other processes put on this shared machine
falls on both alike; each loop is timed in the thread's own CPU time
(``time.thread_time``), so the time it waited for the CPU is not counted.  Quote the
ratios (this tree ÷ the other), not the microseconds.

    .venv/bin/python bench/publish.py                      # this tree only
    git worktree add --detach /tmp/base <commit>
    .venv/bin/python bench/publish.py --baseline /tmp/base --reps 7 --cpu 1

Cases (``:memory:`` history, so ``publish`` goes straight to the subscribers, and the
journal's path with a history that commits at once; the subscriber does nothing):

- ``one/0``: ``publish`` of one text delta, no subscriber;
- ``one/1``: the same with one subscriber;
- ``many16/1``: ``publish_many`` of 16 deltas, one subscriber (per event);
- ``held/1``: ``publish`` with a durable history (held, then released by the commit).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = ("one/0", "one/1", "many16/1", "held/1")


class _Sink:
    """A subscriber that takes everything and is never congested (any port shape)."""

    congested = False

    def publish(self, events: Any) -> bool:
        return False

    def publish_many(self, events: Any) -> bool:
        return False

    async def drained(self) -> None:
        return None

    def can_answer(self, kind: str) -> bool:
        return False


def _child(case: str, events: int) -> float:
    """Return the µs per event of ``case`` (best of 5 loops of ``events``)."""
    from agent_bridge.ids import Clock
    from agent_bridge.journal.base import SessionRecord
    from agent_bridge.journal.memory import MemoryHistory
    from agent_bridge.runtime.delivery import Delivery
    from agent_bridge.runtime.stream import EventStream
    from agent_bridge.wire.events import EventPayload, TextDelta

    class _Lagging(MemoryHistory):
        """Durable-looking: events are committed only by :func:`commit`."""

        durable = True

        def append(self, *args: Any) -> None:
            super().append(*args)
            self.committed -= 1

    name, subs = case.split("/")
    best = float("inf")
    for _ in range(5):
        history: Any = (_Lagging if name == "held" else MemoryHistory)(1 << 40)
        record = SessionRecord("ses_bench", "scripted", "1", None, None, "", "")
        history.add_session(record)
        delivery = Delivery(history)
        stream = EventStream(record.session_id, history, delivery, Clock())
        for _ in range(int(subs)):
            stream.subscribe(_Sink())  # type: ignore[arg-type]
        payload = TextDelta(text="x" * 100)
        batch: list[EventPayload] = [payload] * 16
        run = "run_1"
        publish, publish_many = stream.publish, stream.publish_many
        release = delivery.release
        if name == "many16":
            loops = events // 16
            t0 = time.thread_time()
            for _ in range(loops):
                publish_many(run, batch)
            dt = time.thread_time() - t0
            n = loops * 16
        elif name == "held":
            loops = events // 16
            t0 = time.thread_time()
            for _ in range(loops):
                for _ in range(16):
                    publish(run, payload)
                history.committed = history.appended
                release()
            dt = time.thread_time() - t0
            n = loops * 16
        else:
            t0 = time.thread_time()
            for _ in range(events):
                publish(run, payload)
            dt = time.thread_time() - t0
            n = events
        best = min(best, dt / n * 1e6)
    return best


def _link_tree(tree: Path) -> Path:
    """An import root where ``agent_bridge`` is ``tree``'s bridge/ with its rpc/ and
    adapters/ as subpackages (what the editable install builds)."""
    root = Path(tempfile.mkdtemp(prefix="bench-publish-"))
    pkg = root / "agent_bridge"
    pkg.mkdir()
    for entry in (tree / "bridge").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for sub in ("rpc", "adapters"):
        if (tree / sub).is_dir():
            (pkg / sub).symlink_to(tree / sub)
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="another checkout (after the rename to agent_bridge)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--events", type=int, default=40_000)
    ap.add_argument("--cpu", type=int, default=None, help="pin children to this CPU")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.cpu is not None:
            os.sched_setaffinity(0, {args.cpu})
        print(json.dumps(_child(args.child, args.events)))
        return
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    trees: dict[str, dict[str, str]] = {"this": {}}
    roots: list[Path] = []
    if args.baseline:
        root = _link_tree(Path(args.baseline).resolve())
        roots.append(root)
        trees["base"] = {"PYTHONPATH": str(root)}
    samples: dict[tuple[str, str], list[float]] = {}
    names = list(trees)
    try:
        for rep in range(args.reps):
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for case in CASES:
                for tree in order:
                    env = {**os.environ, **trees[tree]}
                    out = subprocess.run(
                        [
                            sys.executable,
                            __file__,
                            "--child",
                            case,
                            "--cpu",
                            str(cpu),
                            "--events",
                            str(args.events),
                        ],
                        env=env,
                        cwd=str(HERE),
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    samples.setdefault((tree, case), []).append(json.loads(out))
            print(f"rep {rep + 1}/{args.reps} done", file=sys.stderr)
    finally:
        for root in roots:
            shutil.rmtree(root, True)
    header = f"{'case':<10} {'this µs/event':>14}"
    if "base" in trees:
        header += f" {'base µs/event':>14} {'this/base':>10} {'of minima':>10}  (per-rep ratios)"
    print(header)
    for case in CASES:
        mine = samples[("this", case)]
        line = f"{case:<10} {statistics.median(mine):>14.3f}"
        if "base" in trees:
            base = samples[("base", case)]
            ratios = [a / b for a, b in zip(mine, base, strict=True)]
            line += f" {statistics.median(base):>14.3f} {statistics.median(ratios):>9.2f}x"
            line += f" {min(mine) / min(base):>9.2f}x"
            line += "  (" + " ".join(f"{r:.2f}" for r in ratios) + ")"
        print(line)
    print(
        f"children pinned to CPU {cpu}; {args.reps} interleaved repetitions; medians, the"
        " median of the per-repetition ratios, and the ratio of the fastest repetitions"
        " (the least disturbed by other load)"
    )


if __name__ == "__main__":
    main()
