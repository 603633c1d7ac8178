"""The release is a prepared, tested step: ``scripts/release.py``.

* fast: the version is written in one place (bridge/__init__.py; pyproject.toml reads it,
  the registry entry carries it and must match); ``release.py version`` rewrites both;
  the registry's static checks accept editors/acp and name what they reject in a broken
  copy; the launch and handshake checks fail an agent that writes to stdout or answers
  ``initialize`` with no usable authMethods.
* slow (e2e, about two minutes; needs the package index, skipped without it except in CI):
  ``release.py check`` builds the sdist and the wheel, checks them with
  ``twine check --strict``, installs the wheel in a clean venv, stages the registry
  submission and launches and handshakes the entry's ``uvx`` command resolved from the
  built wheel. Publishing is the one step not run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "release.py"


def _release() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _script(*args: str, cwd: Path = ROOT, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(cwd / "scripts" / "release.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_the_docs_name_the_wheel_of_this_version() -> None:
    import re

    import agent_bridge

    for doc in ("README.md", "docs/acp-agent.md", "editors/acp/README.md"):
        named = set(
            re.findall(r"agent_bridge-([0-9.]+)-py3-none-any\.whl", (ROOT / doc).read_text())
        )
        assert named == {agent_bridge.__version__}, (doc, named)


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "agent_bridge.__version__"
    }
    import agent_bridge

    entry = json.loads((ROOT / "editors" / "acp" / "agent.json").read_text())
    assert entry["version"] == agent_bridge.__version__
    assert entry["distribution"]["uvx"]["package"] == f"agent-bridge=={agent_bridge.__version__}"


def test_release_version_rewrites_the_one_place_and_the_entry(tmp_path: Path) -> None:
    for name in (
        "scripts/release.py",
        "bridge/__init__.py",
        "editors/acp/agent.json",
        "README.md",
        "docs/acp-agent.md",
        "editors/acp/README.md",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    proc = _script("version", "7.8.9", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '__version__ = "7.8.9"' in (tmp_path / "bridge/__init__.py").read_text()
    entry = json.loads((tmp_path / "editors/acp/agent.json").read_text())
    assert entry["version"] == "7.8.9"
    assert entry["distribution"]["uvx"]["package"] == "agent-bridge==7.8.9"
    for doc in ("README.md", "docs/acp-agent.md", "editors/acp/README.md"):
        text = (tmp_path / doc).read_text()
        assert "agent_bridge-7.8.9-py3-none-any.whl" in text, doc
        assert "agent_bridge-0.1.0-py3-none-any.whl" not in text, doc
    bad = _script("version", "7.8", cwd=tmp_path)
    assert bad.returncode == 1 and "not X.Y.Z" in bad.stdout


def test_the_entry_passes_the_registry_static_checks() -> None:
    proc = _script("entry")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok")


def _broken_copy(tmp_path: Path, name: str) -> Path:
    staged = tmp_path / name
    shutil.copytree(ROOT / "editors" / "acp", staged)
    return staged


def test_the_registry_checks_name_what_they_reject(tmp_path: Path) -> None:
    staged = _broken_copy(tmp_path, "some-other-dir")
    entry = json.loads((staged / "agent.json").read_text())
    entry["distribution"]["uvx"]["package"] = "agent-bridge==9.9.9"
    entry["distribution"]["uvx"]["cwd"] = "/"
    entry["homepage"] = "x"
    (staged / "agent.json").write_text(json.dumps(entry))
    icon = (staged / "icon.svg").read_text().replace("currentColor", "#ff0000", 1)
    (staged / "icon.svg").write_text(icon.replace('width="16"', 'width="32"'))
    proc = _script("entry", str(staged))
    assert proc.returncode == 1
    out = proc.stdout
    assert out.startswith("FAIL the ACP registry would reject the entry")
    assert "must equal its directory's name ('some-other-dir')" in out
    assert "pins 9.9.9" in out
    assert "['cwd']" in out and "['homepage']" in out
    assert "'#ff0000'" in out
    assert "not 16x16" in out


def test_the_launch_and_handshake_checks_can_fail(tmp_path: Path) -> None:
    release = _release()
    chatty = [sys.executable, "-c", "print('hello')"]
    with pytest.raises(release.Failed, match="wrote to stdout"):
        release.launch_check(chatty, tmp_path, dict(os.environ))
    crashing = [sys.executable, "-c", "import sys; sys.exit(3)"]
    with pytest.raises(release.Failed, match="exited 3"):
        release.launch_check(crashing, tmp_path, dict(os.environ))
    no_auth = [
        sys.executable,
        "-c",
        "import json, sys; sys.stdin.readline(); "
        'print(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}))',
    ]
    with pytest.raises(release.Failed, match="no authMethods"):
        release.handshake_check(no_auth, tmp_path, dict(os.environ))


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_release_check_builds_checks_and_launches_the_entry(tmp_path: Path) -> None:
    probe = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-d",
            str(tmp_path / "probe"),
            "build",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if probe.returncode != 0:
        reason = "PACKAGE INDEX UNREACHABLE: release.py check needs build, twine and uv"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " [CI=true: a failure]")
        pytest.skip(reason)
    import agent_bridge

    version = agent_bridge.__version__
    dist = tmp_path / "dist"
    proc = _script("check", "--work", str(tmp_path / "work"), "--dist", str(dist), timeout=840)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    out = proc.stdout
    for step in (
        "ok   registry entry",
        f"ok   built agent_bridge-{version}.tar.gz and agent_bridge-{version}-py3-none-any.whl",
        "ok   contents and twine check --strict",
        "ok   the wheel alone in a new venv",
        f"ok   launch: uvx agent-bridge=={version} acp",
        "ok   handshake: initialize answered; authMethods ['provider-credentials'",
        "ready: publish with `python3 scripts/release.py publish`",
    ):
        assert step in out, f"{step!r} not in\n{out}"
    assert sorted(p.name for p in dist.iterdir()) == [
        f"agent_bridge-{version}-py3-none-any.whl",
        f"agent_bridge-{version}.tar.gz",
    ]
    staged = tmp_path / "work" / "registry" / "agent-bridge-py"
    assert sorted(p.name for p in staged.iterdir()) == ["agent.json", "icon.svg"]
    assert "published" not in out
