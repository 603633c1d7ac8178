"""Run test functions again inside a network namespace with only loopback and a DNS
logger, and check that they passed and looked no name up.

The silent-probe tests (``tests/test_silent_probes.py``) and the ACP agents' end-to-end
tests (``tests/test_acp_agents_e2e.py``) each have an outer test that re-runs some of the
file's tests under ``unshare --net --mount`` with ``tests/netns_dns.py`` (which brings
``lo`` up, points the resolver at 127.0.0.1 and logs every query).  The inner run sees
``AGENT_BRIDGE_IN_NETNS=1`` (:data:`INSIDE`), so the outer test skips itself there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CAN_NETNS", "INSIDE", "run_inside", "skip_unless_outer"]

HERE = Path(__file__).resolve().parent
#: whether this process is the inner run, inside the namespace
INSIDE = os.environ.get("AGENT_BRIDGE_IN_NETNS") == "1"
#: whether this machine can build the namespace (root, ``unshare`` and ``ip``)
CAN_NETNS = os.geteuid() == 0 and bool(shutil.which("unshare")) and bool(shutil.which("ip"))


def skip_unless_outer() -> None:
    """Skip the calling (outer) test inside the namespace, and loudly where no
    namespace can be built."""
    if INSIDE:
        pytest.skip("the outer test, not run inside the namespace")
    if not CAN_NETNS:
        pytest.skip("LOUD SKIP: needs root, unshare and ip to build a network namespace")


def run_inside(
    test_file: str,
    select: str,
    log: Path,
    env: dict[str, str],
    timeout: float,
    passed: str = " passed",
    no_skips: bool = False,
) -> None:
    """Run ``pytest -k select test_file`` inside the namespace with ``env`` (plus
    ``AGENT_BRIDGE_IN_NETNS=1``), the DNS log written to ``log``; assert it exited 0,
    its summary holds ``passed`` and no failure (nor skip, with ``no_skips``), and no
    name was looked up.  Returns nothing; raises ``AssertionError`` naming the output."""
    inner = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        select,
        test_file,
        "--rootdir",
        str(HERE.parent),
    ]
    done = subprocess.run(
        [
            "unshare",
            "--net",
            "--mount",
            sys.executable,
            str(HERE / "netns_dns.py"),
            "--log",
            str(log),
            "--",
            *inner,
        ],
        env={**env, "AGENT_BRIDGE_IN_NETNS": "1"},
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert log.exists(), done.stdout + done.stderr
    result: dict[str, Any] = json.loads(log.read_text())
    assert result["rc"] == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert passed in done.stdout and "failed" not in done.stdout, done.stdout[-4000:]
    if no_skips:
        assert "skipped" not in done.stdout, done.stdout[-4000:]
    assert result["queries"] == [], f"DNS lookups from inside the namespace: {result['queries']}"
