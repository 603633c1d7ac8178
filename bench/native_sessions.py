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

The same two figures for Codex's rollout files (``adapters/codex/native.py``, from
``tests/data/codex/native_rollout_0.171.0.jsonl``: N2 across 100 day directories, each
file its first 9 records, the ``session_meta`` of ~22 KiB among them) and Gemini CLI's
chat files (``adapters/acp/gemini_native.py``, from
``tests/data/acp/gemini_chat_0.61.0.jsonl``: N2 across 100 project directories).

Usage:  .venv/bin/python bench/native_sessions.py [--sizes 1,100,500] [--sessions 10000]
            [--providers claude,codex,gemini]
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

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/claude/native_session_2.1.197.jsonl"
CODEX_DATA = ROOT / "tests/data/codex/native_rollout_0.171.0.jsonl"
GEMINI_DATA = ROOT / "tests/data/acp/gemini_chat_0.61.0.jsonl"


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


def write_session(path: Path, mib: int, data: Path = DATA) -> int:
    chunk = data.read_bytes() * 64
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
    parser.add_argument("--providers", default="claude,codex,gemini")
    args = parser.parse_args()
    chosen = args.providers.split(",")
    if "claude" in chosen:
        claude(args)
    if "codex" in chosen:
        codex(args)
    if "gemini" in chosen:
        gemini(args)


def claude(args: argparse.Namespace) -> None:
    print("== Claude Code (session files)")
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


def _n1(
    read_page: Callable[..., Any], path: Path, ref: str, data: Path, sizes: str, reps: int
) -> None:
    print("N1 one session file: newest page and first page (100 records)")
    print(
        f"{'size MiB':>9} {'end ms':>8} {'end peak KiB':>13} {'start ms':>9} {'start peak KiB':>15}"
    )
    for mib in (int(s) for s in sizes.split(",")):
        write_session(path, mib, data)
        end_s, end_peak = measure(functools.partial(read_page, ref, None, 100, "end"), reps)
        start_s, start_peak = measure(functools.partial(read_page, ref, None, 100, "start"), reps)
        print(
            f"{mib:>9} {end_s * 1e3:>8.2f} {end_peak / 1024:>13.0f} "
            f"{start_s * 1e3:>9.2f} {start_peak / 1024:>15.0f}"
        )
        path.unlink()


def _n2(
    list_page: Callable[..., Any], sessions: int, where: str, workspace: str, reps: int
) -> None:
    print(f"N2 listing {sessions} session files in 100 {where}")
    all_s, all_peak = measure(lambda: list_page(None, None, 100), reps)
    one_s, _ = measure(lambda: list_page(workspace, None, 100), reps)
    print(
        f"  first page of 100, newest first: {all_s * 1e3:.1f} ms (peak {all_peak / 1024:.0f} KiB)"
    )
    print(f"  filtered by one workspace (no match: every head read): {one_s * 1e3:.1f} ms")


def codex(args: argparse.Namespace) -> None:
    print("== Codex (rollout files)")
    scratch = Path(tempfile.mkdtemp(prefix="native-bench-codex-"))
    os.environ["CODEX_HOME"] = str(scratch)
    from agent_bridge.adapters.codex import native

    try:
        day = scratch / "sessions" / "2026" / "12" / "02"
        day.mkdir(parents=True)
        stem = f"rollout-2026-12-02T03-39-33-{uuid.uuid4()}"
        _n1(
            native.read_page,
            day / f"{stem}.jsonl",
            f"2026/12/02/{stem}",
            CODEX_DATA,
            args.sizes,
            args.reps,
        )
        body = b"".join(CODEX_DATA.read_bytes().splitlines(keepends=True)[:9])
        for i in range(args.sessions):
            directory = (
                scratch
                / "sessions"
                / "2026"
                / f"{1 + i % 100 // 28:02d}"
                / f"{1 + i % 100 % 28:02d}"
            )
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"rollout-2026-12-02T03-39-33-{uuid.uuid4()}.jsonl").write_bytes(body)
        _n2(native.list_page, args.sessions, "day directories", "/work/elsewhere", args.reps)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def gemini(args: argparse.Namespace) -> None:
    print("== Gemini CLI (chat files)")
    scratch = Path(tempfile.mkdtemp(prefix="native-bench-gemini-"))
    os.environ["GEMINI_CLI_HOME"] = str(scratch)
    from agent_bridge.adapters.acp import gemini_native as native

    try:
        chats = scratch / ".gemini" / "tmp" / "bench" / "chats"
        chats.mkdir(parents=True)
        _n1(
            native.read_page,
            chats / "session-2026-12-02T04-02-0000abcd.jsonl",
            "bench/session-2026-12-02T04-02-0000abcd",
            GEMINI_DATA,
            args.sizes,
            args.reps,
        )
        body = GEMINI_DATA.read_bytes()
        for i in range(args.sessions):
            project = scratch / ".gemini" / "tmp" / f"p{i % 100}"
            (project / "chats").mkdir(parents=True, exist_ok=True)
            (project / ".project_root").write_text(f"/work/p{i % 100}")
            (project / "chats" / f"session-2026-12-02T04-02-{i:08x}.jsonl").write_bytes(body)
        _n2(native.list_page, args.sessions, "project directories", "/work/elsewhere", args.reps)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
