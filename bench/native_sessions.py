"""Claude Code's own sessions: what discovery and reading cost.  Prints figures.

Calls the adapter's file reading directly (``adapters/claude/native.py``, the code
``provider/sessions/list`` and ``provider/sessions/read`` run in a worker thread) on files
built in a scratch ``CLAUDE_CONFIG_DIR`` from the sanitized records the real CLI wrote
(``tests/data/claude/native_session_2.1.197.jsonl``), repeated:

  (N1) the newest page (``from: end``, 100 records) and a page from the start, of one
       session file of each ``--sizes`` MiB: median time over ``--reps`` and the peak of
       Python allocations (``tracemalloc``): flat in the file's size is the claim;
  (N2) listing ``--sessions`` session files (10 records each) across 100 project
       directories: the first page of 100, newest first, and the same filtered by one
       workspace.

Usage:  .venv/bin/python bench/native_sessions.py [--sizes 1,100,500] [--sessions 10000]
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "tests/data/claude/native_session_2.1.197.jsonl"


def measure(fn: Callable[[], Any], reps: int) -> tuple[float, int]:
    """Median seconds over ``reps`` calls, and the peak traced allocation of one call."""
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), peak


def write_session(path: Path, mib: int) -> int:
    chunk = DATA.read_bytes() * 64
    target = mib * 1024 * 1024
    written = 0
    with path.open("wb") as f:
        while written < target:
            f.write(chunk)
            written += len(chunk)
    return written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,100,500")
    parser.add_argument("--sessions", type=int, default=10000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="native-bench-"))
    os.environ["CLAUDE_CONFIG_DIR"] = str(scratch / "config")
    from agent_bridge.adapters.claude import native

    try:
        project = scratch / "config" / "projects" / "-bench"
        project.mkdir(parents=True)
        print("N1 one session file: newest page and first page (100 records)")
        print(
            f"{'size MiB':>9} {'end ms':>8} {'end peak KiB':>13} "
            f"{'start ms':>9} {'start peak KiB':>15}"
        )
        for mib in (int(s) for s in args.sizes.split(",")):
            sid = str(uuid.uuid4())
            path = project / f"{sid}.jsonl"
            write_session(path, mib)
            ref = f"-bench/{sid}"
            end_s, end_peak = measure(
                functools.partial(native.read_page, ref, None, 100, "end"), args.reps
            )
            start_s, start_peak = measure(
                functools.partial(native.read_page, ref, None, 100, "start"), args.reps
            )
            print(
                f"{mib:>9} {end_s * 1e3:>8.2f} {end_peak / 1024:>13.0f} "
                f"{start_s * 1e3:>9.2f} {start_peak / 1024:>15.0f}"
            )
            path.unlink()
        shutil.rmtree(project)
        lines = DATA.read_bytes().splitlines(keepends=True)
        body = b"".join(lines[:10])
        for i in range(args.sessions):
            directory = scratch / "config" / "projects" / f"-work-p{i % 100}"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"{uuid.uuid4()}.jsonl").write_bytes(body)
        print(f"N2 listing {args.sessions} session files in 100 project directories")
        all_s, all_peak = measure(lambda: native.list_page(None, None, 100), args.reps)
        # the records say cwd /workspace/project: the directory name matches, the cwd
        # does not, so every file of the directory is read (its head) and none is kept
        one_s, _ = measure(lambda: native.list_page("/work/p7", None, 100), args.reps)
        print(
            f"  first page of 100, newest first: {all_s * 1e3:.1f} ms "
            f"(peak {all_peak / 1024:.0f} KiB)"
        )
        print(
            f"  one workspace's directory (~{args.sessions // 100} files, heads read): "
            f"{one_s * 1e3:.1f} ms"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
