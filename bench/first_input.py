"""How long ``serve``'s first read takes for a large first message (``answer_first``).

Prints figures; not a test.  In this process, on a pipe: a writer thread writes one
framed ``bridge/ping`` of ``--mb`` megabytes in ``--write``-byte writes (a host that
writes its first message in pieces), and :func:`answer_first` reads it until the framer
has the message; the median of ``--reps`` repetitions is printed.  The message is not an
``initialize``, so it is handed on unanswered: what is timed is the read loop.

    .venv/bin/python bench/first_input.py --mb 16 --write 4096 --reps 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time

from agent_bridge.frontends.first_reply import answer_first
from agent_bridge.rpc.framing import encode_frame


def once(frame: bytes, write: int) -> float:
    """Seconds from the first read to ``answer_first``'s return, ``frame`` arriving in
    ``write``-byte writes; raises ``AssertionError`` if the bytes read differ from it."""
    r, w = os.pipe()
    out_r, out_w = os.pipe()

    def writer() -> None:
        view = memoryview(frame)
        for i in range(0, len(view), write):
            os.write(w, view[i : i + write])
        os.close(w)

    thread = threading.Thread(target=writer)
    thread.start()
    started = time.perf_counter()
    got = answer_first(r, out_w, "newline", durable=True, max_message_bytes=len(frame) + 1)
    elapsed = time.perf_counter() - started
    thread.join()
    for fd in (r, out_r, out_w):
        os.close(fd)
    assert got.data == frame and got.params is None
    return elapsed


def main() -> None:
    """Parse the options, measure, print one line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=16.0, help="the message's size, MB")
    parser.add_argument("--write", type=int, default=4096, help="bytes a write")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    data = "a" * int(args.mb * 1_000_000)
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "bridge/ping", "params": {"data": data}}
    )
    frame = encode_frame("newline", body.encode())
    times = [once(frame, args.write) for _ in range(args.reps)]
    print(
        f"first message of {len(frame) / 1e6:.1f} MB in {args.write}-byte writes: "
        f"median {statistics.median(times) * 1000:.0f} ms "
        f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}; {args.reps} reps)"
    )


if __name__ == "__main__":
    main()
