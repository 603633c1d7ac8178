"""Continuing a provider's own session vs resuming a bridge session.  Prints figures.

In-process runtime on a SQLite journal in a scratch state directory, the scripted
provider (its references carry their records inline, so the provider itself costs next
to nothing and what is measured is the bridge's side), same run, for histories of
``--records`` records (half prompts, half replies):

  (C1) ``continue_native`` of a provider session not bound yet: bind (one journal
       transaction), resume, import the newest ``--import-limit`` records (default the
       bridge's, 10,000: a longer history is cut, walked back to from its newest page;
       events + raw records journaled), ``session.imported``, flushed; the ``imported``
       column says how many were;
  (C2) ``continue_native`` of the same reference again while its session is open: the
       binding lookup only;
  (C3) ``continue_native`` after the session was closed: lookup, claim, reopen (no import);
  (R)  ``reopen_session`` of the same closed bridge session (as many events; the plain
       ``session/resume {sessionId}``), for comparison.

Median over ``--reps`` (each C1 on a fresh reference).  Claude Code's continue adds the
CLI's own start with ``--resume`` (seconds, its cost, not the bridge's) and its reader's
page reads (see bench/native_sessions.py).

Usage:  .venv/bin/python bench/native_continue.py [--records 10,1000,10000] [--reps 5]
            [--import-limit N]
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agent_bridge.adapters.scripted import ScriptedProvider
from agent_bridge.journal.journal import Journal
from agent_bridge.registry import ProviderRegistry
from agent_bridge.runtime import Runtime


def reference(records: int, salt: int) -> str:
    out: list[dict[str, Any]] = []
    for i in range(records):
        if i % 2 == 0:
            out.append({"type": "run.started", "input": f"prompt {salt}.{i}"})
        else:
            out.append({"type": "text.delta", "text": f"reply {i} " + "x" * 80})
    return json.dumps(out, separators=(",", ":"))


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await fn()
    return time.perf_counter() - started


async def bench(sizes: list[int], reps: int, limit: int | None) -> None:
    state = tempfile.mkdtemp(prefix="bench-native-continue-")
    try:
        history = Journal.open(state)
        async with Runtime(ProviderRegistry([ScriptedProvider()]), history=history) as runtime:
            print(
                f"{'records':>8} {'imported':>9} {'C1 continue new':>16} {'C2 bound, open':>15} "
                f"{'C3 bound, closed':>17} {'R resume by id':>15}"
            )
            for size in sizes:
                c1: list[float] = []
                c2: list[float] = []
                c3: list[float] = []
                r: list[float] = []
                for rep in range(reps):
                    ref = reference(size, rep + 1000 * size)
                    result: list[Any] = []

                    async def first(ref: str = ref, result: list[Any] = result) -> None:
                        result.append(
                            await runtime.continue_native("scripted", ref, import_limit=limit)
                        )

                    c1.append(await timed(first))
                    session_id = result[0].session.session_id
                    c2.append(
                        await timed(functools.partial(runtime.continue_native, "scripted", ref))
                    )
                    await runtime.close_session(session_id)
                    c3.append(
                        await timed(functools.partial(runtime.continue_native, "scripted", ref))
                    )
                    await runtime.close_session(session_id)
                    r.append(await timed(functools.partial(runtime.reopen_session, session_id)))
                    await runtime.close_session(session_id)
                ms = [statistics.median(x) * 1000 for x in (c1, c2, c3, r)]
                print(
                    f"{size:>8} {result[0].imported:>9} {ms[0]:>13.2f} ms {ms[1]:>12.2f} ms "
                    f"{ms[2]:>14.2f} ms "
                    f"{ms[3]:>12.2f} ms"
                )
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", default="10,1000,10000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--import-limit", type=int, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.records.split(",")]
    anyio.run(bench, sizes, args.reps, args.import_limit)


if __name__ == "__main__":
    main()
