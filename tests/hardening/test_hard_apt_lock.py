"""Issue 30, item 14: the project's scripts wait for apt's lock instead of failing at once.

`scripts/test.sh` (what CI runs) called a bare `apt-get update` and failed the whole run
when another apt process held a lock, while the other install scripts passed apt's own
`-o DPkg::Lock::Timeout`, which does not cover the package lists' lock either (apt 2.6:
`apt-get update` fails at once on `/var/lib/apt/lists/lock`). Rule: every apt use in the
scripts goes through one helper, `apt_get` in `scripts/lib/apt.sh`, which waits for any
apt or dpkg lock.

* `test_case_14_every_apt_get_in_the_scripts_goes_through_the_waiting_helper` reads every
  shell script of `scripts/` (failed on `scripts/test.sh` before the helper);
* `test_case_14_apt_get_waits_for_a_held_lists_lock` holds the real lists lock with
  `fcntl` (as apt itself does) in another process for 3 s and runs a lock-taking,
  network-free apt command (`clean`, with the cache redirected into a temporary
  directory so nothing real is deleted): bare `apt-get` fails at once, `apt_get` waits
  and succeeds. Root with apt-get only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
HELPER = SCRIPTS / "lib" / "apt.sh"
LISTS_LOCK = "/var/lib/apt/lists/lock"

#: `apt-get` as a command word (not `command -v apt-get`, a comment or a message)
_CALL = re.compile(r"(^|[;&|(]|\bthen|\bdo|\belse)\s*(\w+=\S+\s+)*apt-get\s")


def _apt_calls(text: str) -> list[str]:
    calls = []
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if _CALL.search(code):
            calls.append(line.strip())
    return calls


def test_case_14_every_apt_get_in_the_scripts_goes_through_the_waiting_helper() -> None:
    scripts = sorted(p for p in SCRIPTS.rglob("*.sh") if p != HELPER)
    assert scripts
    bare = {
        str(p.relative_to(ROOT)): calls for p in scripts if (calls := _apt_calls(p.read_text()))
    }
    assert bare == {}, f"call apt_get from scripts/lib/apt.sh instead: {bare}"
    for p in scripts:
        if "apt_get " in p.read_text():
            assert 'source "$ROOT/scripts/lib/apt.sh"' in p.read_text(), p
    # the checker itself finds a bare call
    assert _apt_calls("    apt-get update -qq >/dev/null")
    assert _apt_calls("  DEBIAN_FRONTEND=noninteractive apt-get install -y x")
    assert not _apt_calls("if command -v apt-get >/dev/null 2>&1; then")


_HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("apt-get") is None or not os.path.isdir("/var/lib/apt/lists"),
    reason="needs root and apt-get (the real apt lock)",
)
def test_case_14_apt_get_waits_for_a_held_lists_lock(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "archives" / "partial").mkdir(parents=True)
    args = ["-o", f"Dir::Cache={cache}", "-o", f"Dir::Cache::Archives={cache}/archives", "clean"]
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, LISTS_LOCK, "3"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        bare = subprocess.run(["apt-get", *args], capture_output=True, text=True, timeout=60)
        assert bare.returncode != 0 and "lock" in bare.stderr  # what test.sh used to do
        started = time.monotonic()
        waited = subprocess.run(
            ["bash", "-c", f'source "{HELPER}"; apt_get "$@"', "apt_get", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        elapsed = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert waited.returncode == 0, waited.stderr
    assert elapsed >= 1.5, elapsed  # it waited for the holder (3 s from its start)
    assert "waiting" in waited.stderr
