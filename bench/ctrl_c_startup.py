"""Where a Ctrl-C in the first milliseconds of ``agent-bridge`` lands (issue 30, item 11).

Spawns the installed console script (``exec --provider scripted``) N times, sends SIGINT
to its process group after a delay spread over the first ``--window`` milliseconds, and
prints where each one landed, read from its stderr: the interpreter's own start-up
(``site``, "Fatal Python error: init_import_site"), the console-script wrapper that pip
writes (its ``import re``, or finding the package), a line of the package (a defect:
the package owns SIGINT from its first line), or nowhere visible (exit 130 or killed by
SIGINT, no traceback).  Figures, not a test:
``python bench/ctrl_c_startup.py [--runs N] [--window MS]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BRIDGE = str(Path(sys.executable).with_name("agent-bridge"))


def _where(err: bytes, code: int) -> str:
    if b"Traceback" not in err:
        return f"no traceback (exit {code})"
    if b"init_import_site" in err:
        return "traceback: the interpreter's start-up (site)"
    if b"/agent_bridge/" in err:
        return "traceback: a line of the package (a defect)"
    if b"import re" in err:
        return "traceback: the wrapper's `import re`"
    return "traceback: the wrapper finding the package (importlib)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=160)
    parser.add_argument("--window", type=float, default=40.0, help="milliseconds")
    args = parser.parse_args(argv)
    state = tempfile.mkdtemp(prefix="agent-bridge-ctrlc-")
    env = {**os.environ, "AGENT_BRIDGE_STATE_DIR": state}
    seen: dict[str, list[float]] = collections.defaultdict(list)
    for i in range(args.runs):
        delay = (i % 40) * args.window / 40 / 1000
        proc = subprocess.Popen(
            [BRIDGE, "exec", "--provider", "scripted", "hi"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        seen[_where(err, proc.returncode)].append(delay * 1000)
    print(
        f"{args.runs} SIGINTs over the first {args.window:.0f} ms (load {os.getloadavg()[0]:.1f}):"
    )
    for where, delays in sorted(seen.items()):
        print(f"  {where}: {len(delays)} (sent {min(delays):.1f}-{max(delays):.1f} ms in)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
