"""What checking every message against ``schemas/`` costs the test host.  Prints figures.

The end-to-end tests validate every message a bridge sends them
(``tests/wire_validation.py``); a streaming test receives thousands of events, so the cost
of one check is what decides whether such a test keeps up with the bridge on a loaded
machine.  Measured here, not asserted in a test (a timed test fails on a busy machine for
no fault of the code):

  (V1) µs per ``event`` notification (a ``text.delta``), checked by a ``WireValidator``:
       with the payload discriminated by its ``type`` (what the tests use), and against
       the schema as published (``anyOf``/``oneOf`` over every payload type).  Target for
       the first: <= 500 µs, so that a 20,000-event stream is checked in under 10 s.
  (V2) ms per ``events/read`` page of 1,000 events (the response check), the same two ways.

Usage:  .venv/bin/python bench/validation.py [--events 5000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from wire_validation import WireValidator


def _envelope(sequence: int) -> dict[str, Any]:
    return {
        "eventId": f"evt_s_{sequence:x}",
        "sessionId": "ses_s",
        "runId": "run_r",
        "sequence": sequence,
        "occurredAt": "2026-01-01T00:00:00.000Z",
        "payload": {"type": "text.delta", "text": "chunk of a reply "},
    }


@contextmanager
def validator(fast: bool) -> Iterator[WireValidator]:
    """A validator; with ``fast`` false one that checks against the schema as published
    (the contract is shared per process: restored afterwards)."""
    found = WireValidator()
    kept = found.contract._fast_id
    if not fast:
        found.contract._fast_id = None
    try:
        yield found
    finally:
        found.contract._fast_id = kept


def per_event(events: int, fast: bool) -> float:
    """Return µs per event notification checked (the median of three passes)."""
    samples = []
    for _ in range(3):
        messages = [
            {"jsonrpc": "2.0", "method": "event", "params": _envelope(i)}
            for i in range(1, events + 1)
        ]
        with validator(fast) as v:
            started = time.perf_counter()
            for message in messages:
                v.check("recv", message)
            samples.append((time.perf_counter() - started) / events * 1e6)
    return statistics.median(samples)


def per_page(pages: int, fast: bool) -> float:
    """Return ms per events/read response of 1,000 events checked."""
    page = [_envelope(i) for i in range(1, 1001)]
    result = {"events": page, "hasMore": False, "lastSequence": 1000}
    with validator(fast) as v:
        started = time.perf_counter()
        for n in range(pages):
            request = {"sessionId": "ses_s", "after": 0}
            v.check(">", {"jsonrpc": "2.0", "id": n, "method": "events/read", "params": request})
            v.check("<", {"jsonrpc": "2.0", "id": n, "result": result})
        elapsed = time.perf_counter() - started
    return elapsed / pages * 1e3


def main(argv: list[str] | None = None) -> int:
    """Print the figures; return 0 (1 when V1 misses its target)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args(argv)
    figures = {
        "event_us_discriminated": per_event(args.events, True),
        "event_us_published": per_event(max(args.events // 5, 100), False),
        "page_ms_discriminated": per_page(3, True),
        "page_ms_published": per_page(1, False),
    }
    for name, value in figures.items():
        print(f"{name:<26} {value:10.1f}")
    ok = figures["event_us_discriminated"] <= 500
    print(f"(V1) target <= 500 µs: {'met' if ok else 'MISSED'}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
