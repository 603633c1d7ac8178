"""The README's install and quick starts, run as written on a fresh clone.

The committed tree is cloned into a temporary directory (``git clone`` of this checkout:
in CI, the commit under test), the README's install block runs there (``scripts/setup.sh``
makes the clone's own .venv from the package index), then each block of the README's
"Quick starts" section runs in ``bash -eu`` with that venv activated, as a reader who
followed the install would type it: the demo, ``exec`` with the scripted provider, the
Node host, the TypeScript host (``tsc --strict`` from the package registry, in a new
project), the pytest plugin in a new project. Each block's output is checked for what
the README says it does. HOME and TMPDIR are the test's own, so the bridge's journal and
the new project stay inside it.

Slow (a venv and a package install, about a minute): marked e2e. Without the package index
it is skipped with a loud reason, except in CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def _sh_blocks(section: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)


def _loud(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " [CI=true: a failure]")
    pytest.skip("LOUD SKIP: " + reason)


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-eu", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def test_the_readme_quick_starts_run_on_a_fresh_clone(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        _loud("not a git checkout, or no git: cannot clone it")
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(tmp_path / "probe"),
         "msgspec"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if probe.returncode != 0:
        _loud("PACKAGE INDEX UNREACHABLE: scripts/setup.sh installs the dependencies from it")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTEST_ADDOPTS", "AGENT_BRIDGE_STATE_DIR"}
    }
    # the clone's bridge, never this checkout's: nothing of ours on PATH
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep)
        if d and not (Path(d) / "agent-bridge").exists()
    )  # fmt: skip
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHON=sys.executable)
    readme = (clone / "README.md").read_text("utf-8")

    (install,) = _sh_blocks(_section(readme, "Install"))
    done = _bash(install, clone, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    from agent_bridge import __version__

    assert done.stdout.strip().endswith(f"agent-bridge {__version__}"), done.stdout

    blocks = _sh_blocks(_section(readme, "Quick starts"))
    assert len(blocks) == 5, blocks
    ran = set()
    for body in blocks:
        first = body.splitlines()[0]
        if first.startswith("node ") and shutil.which("node") is None:
            _loud("node is not installed: the Node host quick start cannot run")
        if "npx tsc" in body:
            if shutil.which("npm") is None or shutil.which("node") is None:
                _loud("node and npm are not installed: the TypeScript host cannot run")
            reach = subprocess.run(
                ["npm", "view", "typescript@5", "version"],
                capture_output=True, text=True, timeout=120, env=env, check=False,
            )  # fmt: skip
            if reach.returncode != 0:
                _loud("NPM REGISTRY UNREACHABLE: the TypeScript host installs tsc from it")
        done = _bash(". .venv/bin/activate\n" + body, clone, env)
        out = done.stdout
        assert done.returncode == 0, (first, out[-3000:], done.stderr[-3000:])
        if first == "agent-bridge demo":
            assert "interaction.settled" in out and "run/interrupt" in out, out[-2000:]
            ran.add("demo")
        elif first.startswith("agent-bridge exec"):
            assert "You said: hello" in out, out
            events = [json.loads(x) for x in (clone / "events.ndjson").read_text().splitlines()]
            texts = [e["payload"].get("text") for e in events]
            assert "Hi!" in texts and events[-1]["payload"]["type"] == "run.completed"
            ran.add("exec")
        elif first.startswith("node "):
            assert "same events; bridge exit 0" in out, out
            ran.add("node")
        elif "npx tsc" in body:
            lines = out.splitlines()
            assert '2 text "Hello from a typed host"' in lines, out
            assert any(x.endswith(" completed (end_turn)") for x in lines), out
            assert lines[-1] == "typed host done; bridge exit 0", out
            ran.add("typescript")
        elif "pytest" in first:
            assert "1 passed" in out, out[-3000:]
            ran.add("pytest")
    assert ran == {"demo", "exec", "node", "typescript", "pytest"}
