#!/usr/bin/env python3
"""A transparent tap between the bridge and a real ACP agent: runs the agent, forwards
stdin and stdout line by line unchanged, and appends every message to a log as
``{"dir": "->"|"<-", "msg": ...}`` (``->``: what the bridge sent), the format of the
captured transcripts, so a test can validate both directions against ACP's schema.json.

    python tests/standins/acp_tap.py --log PATH -- AGENT [ARGS...]

The agent inherits stderr, the environment and the process group (the bridge stops the
group).  The tap ends when the agent's stdout ends, with the agent's exit status.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from typing import IO, Any


def main() -> int:
    args = sys.argv[1:]
    split = args.index("--")
    log_path = args[args.index("--log") + 1]
    argv = args[split + 1 :]
    lock = threading.Lock()

    def record(direction: str, line: bytes) -> None:
        try:
            msg: Any = json.loads(line)
        except ValueError:
            msg = {"unparsed": line.decode("utf-8", "replace")}
        with lock, open(log_path, "a") as fh:
            fh.write(json.dumps({"dir": direction, "msg": msg}) + "\n")

    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def pump(src: IO[bytes], dst: IO[bytes], direction: str, close: bool) -> None:
        for line in iter(src.readline, b""):
            if line.strip():
                record(direction, line)
            try:
                dst.write(line)
                dst.flush()
            except (BrokenPipeError, OSError):
                break
        if close:
            with contextlib.suppress(OSError):
                dst.close()

    threading.Thread(
        target=pump, args=(sys.stdin.buffer, child.stdin, "->", True), daemon=True
    ).start()
    pump(child.stdout, sys.stdout.buffer, "<-", False)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
