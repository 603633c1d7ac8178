"""Fake provider CLIs for the hardening tests, reached through the real adapters.

:class:`FakeCLI` writes an executable Python wrapper (no shell) that the bridge's
``claude-code`` or ``codex`` adapter starts as its CLI, through ``AGENT_BRIDGE_CLAUDE_PATH``
/ ``AGENT_BRIDGE_CODEX_PATH``.  Before it ``exec``s the stand-in
(``tests/standins/fake_claude.py`` / ``fake_codex.py``) with its script, the wrapper can

* append its whole environment (names and values) to ``env.jsonl`` -- what the provider
  process really received;
* start a grandchild that sleeps, inherits the provider's pipes and stays in its process
  group (the pair is recorded in ``pids.jsonl``), to check that nothing survives;
* run the stand-in as its own child and rewrite what it writes on stdout (``stdout=``):
  ``before`` (raw lines first), ``noise`` (raw lines before every line), ``crlf`` (CRLF
  line ends), ``oversized_after``/``oversized_bytes`` (one line of that many bytes after
  the first line containing that text) and ``tail`` (raw bytes after the stand-in's
  last line, e.g. a truncated record without its newline).

Every process it starts carries :attr:`FakeCLI.marker` in its argv so the tests can find
them in ``/proc`` whatever happens to the bridge.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STANDINS = ROOT / "tests" / "standins"

WRAPPER = """#!{python}
import json, os, subprocess, sys
CONFIG = json.loads({config!r})
argv = [sys.executable, CONFIG["fake"], *CONFIG["script_args"], *sys.argv[1:], CONFIG["marker"]]
if "--version" in sys.argv or sys.argv[1:2] == ["auth"]:
    os.execv(sys.executable, argv)
if CONFIG["env_dump"]:
    with open(CONFIG["env_dump"], "a") as fh:
        fh.write(json.dumps(dict(os.environ)) + "\\n")
grandchild = None
if CONFIG["grandchild"]:
    grandchild = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", CONFIG["marker"], "grandchild"]
    ).pid
with open(CONFIG["pids"], "a") as fh:
    fh.write(json.dumps({{"pid": os.getpid(), "grandchild": grandchild, "argv": sys.argv}}) + "\\n")
out = CONFIG["stdout"]
if not out:
    os.execv(sys.executable, argv)
# Filter mode: the fake's stdout goes through us, rewritten byte for byte.
w = sys.stdout.buffer.write
for line in out.get("before", []):
    w(line.encode("latin-1"))
fake = subprocess.Popen(argv, stdout=subprocess.PIPE)
oversized_after = out.get("oversized_after")
pending = b""
while True:
    chunk = os.read(fake.stdout.fileno(), 65536)
    if not chunk:
        break
    pending += chunk
    *lines, pending = pending.split(b"\\n")
    for line in lines:
        for noise in out.get("noise", []):
            w(noise.encode("latin-1"))
        w(line + (b"\\r\\n" if out.get("crlf") else b"\\n"))
        if oversized_after and oversized_after.encode() in line:
            oversized_after = None
            size = out["oversized_bytes"]
            w(b'{{"type":"' + b"x" * size + b'"}}\\n')
    sys.stdout.flush()
if pending:
    w(pending)
w(out.get("tail", "").encode("latin-1"))
sys.stdout.flush()
sys.exit(fake.wait())
"""


class FakeCLI:
    """One fake provider CLI (``kind`` ``claude`` or ``codex``) under ``tmp``."""

    def __init__(
        self,
        tmp: Path,
        kind: str,
        script: dict[str, Any] | None = None,
        *,
        dump_env: bool = False,
        grandchild: bool = False,
        stdout: dict[str, Any] | None = None,
    ) -> None:
        assert kind in ("claude", "codex")
        self.kind = kind
        self.dir = tmp / f"fake-{kind}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.workspace = self.dir / "work"
        self.workspace.mkdir(exist_ok=True)
        for name in ("home", "config", "tmp", "codex-home"):
            (self.dir / name).mkdir(exist_ok=True)
        self.marker = f"agent-bridge-hardening-{uuid.uuid4().hex}"
        self.script_path = self.dir / "script.json"
        self.record_path = self.dir / "record.jsonl"
        self.env_path = self.dir / "env.jsonl"
        self.pids_path = self.dir / "pids.jsonl"
        self.write_script(script or {})
        if kind == "claude":
            fake = STANDINS / "fake_claude.py"
            script_args = ["--fake-script", str(self.script_path)]
        else:
            fake = STANDINS / "fake_codex.py"
            script_args = ["--script", str(self.script_path)]
        self.executable = self.dir / kind
        config = {
            "fake": str(fake),
            "script_args": script_args,
            "marker": self.marker,
            "env_dump": str(self.env_path) if dump_env else "",
            "grandchild": grandchild,
            "pids": str(self.pids_path),
            "stdout": stdout or {},
        }
        self.executable.write_text(WRAPPER.format(python=sys.executable, config=json.dumps(config)))
        self.executable.chmod(0o755)

    def write_script(self, script: dict[str, Any]) -> None:
        key = "record" if self.kind == "claude" else "log"
        self.script_path.write_text(json.dumps({key: str(self.record_path), **script}))

    # ------------------------------------------------------------------ bridge side

    @property
    def provider(self) -> str:
        return "claude-code" if self.kind == "claude" else "codex"

    def env(self, **extra: str) -> dict[str, str]:
        """Environment for the bridge so that its adapter finds this fake."""
        env = {
            "HOME": str(self.dir / "home"),
            "TMPDIR": str(self.dir / "tmp"),
            "CLAUDE_CONFIG_DIR": str(self.dir / "config"),
            "CODEX_HOME": str(self.dir / "codex-home"),
        }
        var = "AGENT_BRIDGE_CLAUDE_PATH" if self.kind == "claude" else "AGENT_BRIDGE_CODEX_PATH"
        env[var] = str(self.executable)
        return {**env, **extra}

    def create_params(self, **options: Any) -> dict[str, Any]:
        opts: dict[str, Any] = dict(options)
        if self.kind == "claude":
            opts.setdefault("startupTimeoutSeconds", 10)
        return {"provider": self.provider, "workspace": str(self.workspace), "options": opts}

    # ------------------------------------------------------------------ records

    def _jsonl(self, path: Path) -> list[Any]:
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def envs(self) -> list[dict[str, str]]:
        """The environment of every provider process started so far."""
        return self._jsonl(self.env_path)

    def pids(self) -> list[dict[str, Any]]:
        return self._jsonl(self.pids_path)

    def records(self) -> list[Any]:
        return self._jsonl(self.record_path)


# --------------------------------------------------------------------------- /proc


def proc_state(pid: int) -> str | None:
    """The state letter of ``pid`` (``Z`` for a zombie), or ``None`` if it is gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return data[data.rindex(")") + 2 :].split()[0]


def alive(pid: int) -> bool:
    state = proc_state(pid)
    return state is not None and state != "Z"


def pids_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (children, grandchildren, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            data = (entry / "stat").read_text()
        except OSError:
            continue
        fields = data[data.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def wait_until(predicate: Any, timeout: float = 5.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


async def eventually(predicate: Any, timeout: float = 5.0, interval: float = 0.02) -> bool:
    """:func:`wait_until` for async tests: polls without blocking the event loop."""
    import anyio

    with anyio.move_on_after(timeout):
        while not predicate():
            await anyio.sleep(interval)
    return bool(predicate())


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` so far."""
    data = Path(f"/proc/{pid}/stat").read_text()
    fields = data[data.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
