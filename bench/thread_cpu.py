"""Per-thread CPU per event of the bridge's server-bound stream: this tree and others.

Prints figures; not a test.  The bridge (``serve --framing newline``) streams N
``text.delta`` events of a scripted session to `bench/stream_bound.py`'s counting client,
once with ``--state-dir :memory:`` and once with its journal on (a scratch state
directory), and the CPU each of its threads used during the stream is read from
``/proc/<pid>/task/<tid>/schedstat`` (nanoseconds on the CPU, so the time a thread waited
for one is not counted, as wall time on a loaded machine would be).  ``loop`` is the
event loop's thread (the main thread), ``others`` all the rest (the journal's writer
thread), ``child`` the bridge's child processes (the journal's writer process, in mode
``process``: ``--process`` adds it, the journal on with ``--journal-writer process``;
trees from before that option cannot run it).  The trees are interleaved, the order
rotated each repetition; quote the ratios.

    .venv/bin/python bench/thread_cpu.py                       # this tree only
    git worktree add --detach /tmp/base <commit>
    .venv/bin/python bench/thread_cpu.py --events 200000 --reps 5 . /tmp/base

Each tree is run from a link tree of its own (`bench/publish.py`'s), so any checkout
after the rename to ``agent_bridge`` can be compared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from publish import _link_tree  # noqa: E402 - the harness's link tree, not a copy
from stream_bound import Child, P  # noqa: E402

MODES = ("memory", "journal")
KINDS = ("loop", "others", "child")


def _process_ns(pid: int) -> float:
    """Seconds on a CPU of every thread of ``pid``."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _threads(pid: int) -> dict[str, float]:
    """Return the seconds on a CPU of ``pid``'s main thread (``loop``), of its other
    threads (``others``) and of its live child processes (``child``)."""
    cpu = {"loop": 0.0, "others": 0.0, "child": 0.0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ns = int((task / "schedstat").read_text().split()[0])
            children = (task / "children").read_text().split()
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
        cpu["loop" if int(task.name) == pid else "others"] += ns / 1e9
        for kid in children:
            try:
                cpu["child"] += _process_ns(int(kid))
            except OSError:
                continue
    return cpu


def measure(
    events: int, state_dir: str, env: dict[str, str], extra: tuple[str, ...] = ()
) -> dict[str, float]:
    """Return the µs per event each kind of thread used while streaming ``events``."""
    argv = [sys.executable, "-m", "agent_bridge", "serve", "--framing", "newline", *extra]
    child = Child([*argv, "--state-dir", state_dir], env={**os.environ, **env})
    try:
        child.send({"id": 1, "method": P.INITIALIZE, "params": P.INITIALIZE_PARAMS})
        child.reply(1)
        child.send({"method": P.INITIALIZED, "params": P.INITIALIZED_PARAMS})
        script = P.stream_scripts(events, P.STREAM_TEXT)[0]
        child.send({"id": 2, "method": P.SESSION_CREATE, "params": P.session_create_params(script)})
        session = P.session_id(child.reply(2)["result"])
        before = _threads(child.proc.pid)
        child.send({"id": 3, "method": P.RUN_START, "params": P.run_start_params(session)})
        lines = child.count_until(b'"run.completed"')
        after = _threads(child.proc.pid)
        return {k: (after[k] - before[k]) / lines * 1e6 for k in before}
    finally:
        child.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", help="checkouts to compare (default: this one)")
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument(
        "--process",
        action="store_true",
        help="also the journal with --journal-writer process (mode 'process'; the journal "
        "mode then runs with --journal-writer thread)",
    )
    args = ap.parse_args()
    modes = (*MODES, "process") if args.process else MODES
    trees = [str(Path(t).resolve()) for t in args.trees or [str(HERE.parent)]]
    roots = {tree: str(_link_tree(Path(tree))) for tree in trees}
    got: dict[tuple[str, str], list[dict[str, float]]] = {
        (tree, mode): [] for tree in trees for mode in modes
    }
    for rep in range(args.reps):
        order = trees[rep % len(trees) :] + trees[: rep % len(trees)]
        print(f"# repetition {rep + 1}/{args.reps}", file=sys.stderr, flush=True)
        for mode in modes:
            for tree in order:
                env = {"PYTHONPATH": roots[tree]}
                if mode == "memory":
                    got[tree, mode].append(measure(args.events, ":memory:", env))
                    continue
                writer = ("--journal-writer", mode) if mode == "process" else ()
                if mode == "journal" and args.process:
                    writer = ("--journal-writer", "thread")
                state = tempfile.mkdtemp(prefix="bench-threads-")
                try:
                    got[tree, mode].append(measure(args.events, state, env, writer))
                finally:
                    shutil.rmtree(state, ignore_errors=True)
    print(
        f"CPU per event, µs (median of {args.reps}; ratio to the first tree), {args.events} events"
    )
    print(f"{'mode':8} {'thread':7} {'tree':40} {'µs/event':>9} {'ratio':>6}")
    for mode in modes:
        for kind in KINDS:
            base = statistics.median(x[kind] for x in got[trees[0], mode])
            for tree in trees:
                med = statistics.median(x[kind] for x in got[tree, mode])
                ratio = f"{med / base:5.2f}x" if base > 0.005 else "     -"
                print(f"{mode:8} {kind:7} {tree[-40:]:40} {med:9.2f} {ratio:>6}")


if __name__ == "__main__":
    main()
