"""Spawn → ``initialize`` reply of ``agent-bridge serve``, this tree against another, in
one invocation: the start-up row of bench/run.py alone, with many more samples.

Prints figures; not a test.  Each sample spawns ``python -m agent_bridge serve`` (journal
on, in a scratch state directory per tree that later samples reuse, as a host's journal
is), writes one framed ``initialize`` and times the reply.  The trees alternate sample by
sample so that the load of a shared machine falls on both alike.  Quote the ratios.

    git worktree add --detach /tmp/base <commit>
    taskset -c 1 .venv/bin/python bench/startup.py --baseline /tmp/base --samples 40
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BODY = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
    b'"clientInfo":{"name":"bench"},"capabilities":{}}}'
)
FRAME = b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


def _link_tree(tree: Path) -> Path:
    """An import root where ``agent_bridge`` is ``tree``'s bridge/ with its rpc/ and
    adapters/ as subpackages (what the editable install builds)."""
    root = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    pkg = root / "agent_bridge"
    pkg.mkdir()
    for entry in (tree / "bridge").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for sub in ("rpc", "adapters"):
        if (tree / sub).is_dir():
            (pkg / sub).symlink_to(tree / sub)
    return root


def _cpu_ms(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used so far, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _sample(
    env: dict[str, str], state: str, memory: bool, extra: tuple[str, ...] = ()
) -> tuple[float, float]:
    """Milliseconds from spawn to the first byte of the reply, and the CPU time the
    bridge had used by then (steadier on a loaded machine; blind to waits on the disk);
    ``extra``: more arguments of ``serve``."""
    argv = [sys.executable, "-m", "agent_bridge", "serve", "--framing", "content-length"]
    argv += ["--state-dir", ":memory:"] if memory else ["--state-dir", state]
    argv += extra
    t0 = time.perf_counter()
    child = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(FRAME)
    child.stdin.flush()
    ready, _, _ = select.select([child.stdout], [], [], 30)
    elapsed = (time.perf_counter() - t0) * 1000
    cpu = _cpu_ms(child.pid)
    if not ready or not os.read(child.stdout.fileno(), 65536).startswith(b"Content-Length"):
        child.kill()
        raise SystemExit("no initialize reply")
    child.stdin.close()
    child.wait(30)
    return elapsed, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="another checkout (after the rename to agent_bridge)")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--memory", action="store_true", help="--state-dir :memory: (no journal)")
    ap.add_argument(
        "--journal-writer",
        metavar="W,W",
        help="instead of --baseline: this tree once per --journal-writer named (e.g. "
        "thread,process), alternating; the ratio is the second to the first",
    )
    args = ap.parse_args()
    base_env = dict(os.environ)
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)  # every tree keeps its .pyc files
    trees: dict[str, dict[str, str]] = {"this": base_env}
    scratch = [tempfile.mkdtemp(prefix="bench-startup-state-")]
    states = {"this": scratch[0]}
    if args.baseline:
        root = _link_tree(Path(args.baseline).resolve())
        scratch.append(str(root))
        trees["base"] = {**base_env, "PYTHONPATH": str(root)}
        states["base"] = tempfile.mkdtemp(prefix="bench-startup-state-")
        scratch.append(states["base"])
    extras: dict[str, tuple[str, ...]] = {}
    if args.journal_writer:
        first, second = (w.strip() for w in args.journal_writer.split(",")[:2])
        trees = {"base": base_env, "this": base_env}
        states["base"] = tempfile.mkdtemp(prefix="bench-startup-state-")
        scratch.append(states["base"])
        extras = {"base": ("--journal-writer", first), "this": ("--journal-writer", second)}
        print(f"base: --journal-writer {first}; this: --journal-writer {second}")
    samples: dict[str, list[float]] = {name: [] for name in trees}
    cpus: dict[str, list[float]] = {name: [] for name in trees}
    try:
        for name in trees:  # warm: .pyc files written, journals created
            _sample(trees[name], states[name], args.memory, extras.get(name, ()))
        for i in range(args.samples):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for name in order:
                wall, cpu = _sample(trees[name], states[name], args.memory, extras.get(name, ()))
                samples[name].append(wall)
                cpus[name].append(cpu)
    finally:
        for path in scratch:
            shutil.rmtree(path, True)
    what = ":memory:" if args.memory else "journal on"
    print(f"spawn -> initialize reply ({what}), {args.samples} alternating samples, ms")
    for name, values in samples.items():
        q = statistics.quantiles(values, n=4)
        print(
            f"{name:<5} median {statistics.median(values):7.1f}  min {min(values):7.1f}  "
            f"quartiles {q[0]:.1f}-{q[2]:.1f}"
        )
    if "base" in samples:
        mine, base = samples["this"], samples["base"]
        ratios = [a / b for a, b in zip(mine, base, strict=True)]
        print(
            f"this/base: median of paired ratios {statistics.median(ratios):.2f}x, "
            f"of medians {statistics.median(mine) / statistics.median(base):.2f}x, "
            f"of minima {min(mine) / min(base):.2f}x; CPU by the reply "
            f"{statistics.median(cpus['this']) / statistics.median(cpus['base']):.2f}x"
        )


if __name__ == "__main__":
    main()
