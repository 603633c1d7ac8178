"""Packaging: agent-bridge installs exactly one import package, ``agent_bridge``.

Why this exists: the wheel used to install three top-level import packages, ``bridge``,
``rpc`` and ``adapters``. Installed next to the PyPI packages of those names, pip merged or
overwrote the files of one with the other (``providers/list`` returned ``[]``, the demo
exited 1) and uninstalling the other package deleted ours. Now bridge/, rpc/ and adapters/
are built as ``agent_bridge``, ``agent_bridge.rpc`` and ``agent_bridge.adapters`` through
setuptools ``package-dir`` and an explicit ``packages`` list in pyproject.toml.

* ``test_packages_list_matches_tree`` (fast): that list names every package of the tree,
  so a new package cannot be forgotten.
* The rest are slow (a minute or two, marked ``e2e`` with a 600 s timeout): they build the
  sdist and, from it, the wheel once per module (``python -m build``), check both with
  ``twine check --strict`` and what they contain (``py.typed``, the LICENSE), run
  ``doctor``, ``demo`` and a scripted session from the wheel in a clean venv, install it
  into another venv after the PyPI packages ``adapters`` and ``rpc``, drive
  ``agent-bridge demo`` and ``agent-bridge serve`` over real pipes, then uninstall those
  two packages and check that ours still works. They need the package index; without
  it they are skipped with a loud reason, except in CI (``CI=true``), where that is a
  failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The folders of the repository and the import package each one is built as.
PACKAGE_DIRS = {
    "agent_bridge": "bridge",
    "agent_bridge.rpc": "rpc",
    "agent_bridge.adapters": "adapters",
}

# The PyPI packages whose top-level import names (``adapters``, ``rpc``) we used to clash
# with. Installed with --no-deps: the clash is between files in site-packages, their
# dependencies play no part (``adapters`` pulls in transformers, and ``rpc`` pins
# 2012-era releases that do not install on Python 3).
RIVALS = ("adapters", "rpc")


def slow(test: Callable[..., None]) -> Callable[..., None]:
    """A slow test (a wheel build, a venv, package installs: about a minute in all): marked
    e2e, the registered marker for end-to-end tests (``-m "not e2e"`` leaves it out), with
    a timeout above the suite's 120 s per test."""
    marked: Callable[..., None] = pytest.mark.e2e(pytest.mark.timeout(600)(test))
    return marked


PIP_TIMEOUT = 400.0  # one pip command (building the rpc sdist included)


# =====================================================================================
# (a) the packages list in pyproject.toml is the tree
# =====================================================================================
def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _skip_dir(name: str) -> bool:
    return name == "__pycache__" or name.startswith(".")


def _tree_packages(root: Path = ROOT) -> tuple[set[str], list[str]]:
    """Import names of every folder with an __init__.py under the three package folders,
    and the folders that hold Python files but no __init__.py (never packaged)."""
    packages: set[str] = set()
    orphans: list[str] = []
    for name, folder in PACKAGE_DIRS.items():
        base = root / folder
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not _skip_dir(d))
            rel = Path(dirpath).relative_to(base)
            if "__init__.py" in filenames:
                packages.add(".".join([name, *rel.parts]))
            elif any(f.endswith(".py") for f in filenames):
                orphans.append(str(Path(folder, rel)))
    return packages, orphans


def test_packages_list_matches_tree() -> None:
    config = _pyproject()["tool"]["setuptools"]
    assert config["package-dir"] == PACKAGE_DIRS
    listed = config["packages"]
    assert len(listed) == len(set(listed)), f"duplicates in packages: {sorted(listed)}"
    tree, orphans = _tree_packages()
    assert "agent_bridge" in tree and "agent_bridge.rpc" in tree
    missing, extra = sorted(tree - set(listed)), sorted(set(listed) - tree)
    assert not missing and not extra, (
        "[tool.setuptools] packages in pyproject.toml does not match the tree: "
        f"add {missing}, remove {extra} (then run scripts/setup.sh again)"
    )
    assert not orphans, f"folders with Python files but no __init__.py (not packaged): {orphans}"


# =====================================================================================
# Helpers for the slow tests
# =====================================================================================
def _run(
    argv: list[str], *, timeout: float = PIP_TIMEOUT, **kw: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw
    )


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, (
        f"{what} exited {proc.returncode}\n--- stdout\n{_tail(proc.stdout)}\n"
        f"--- stderr\n{_tail(proc.stderr)}"
    )


_PIP = ["-m", "pip", "--disable-pip-version-check", "--no-input"]


def _require_index(python: str, scratch: Path) -> None:
    """Skip (fail in CI) when pip cannot fetch from the package index."""
    probe = _run([python, *_PIP, "download", "--no-deps", "-d", str(scratch), RIVALS[0]])
    if probe.returncode == 0:
        return
    reason = (
        "PACKAGE INDEX UNREACHABLE: pip could not download the PyPI package "
        f"{RIVALS[0]!r}, so the wheel install tests cannot run "
        f"(pip said: {_tail(probe.stderr or probe.stdout, 3).replace(chr(10), ' | ')})"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " [CI=true: a failure]")
    pytest.skip(reason + " [set CI=true to make this a failure]")


def _source_snapshot(dest: Path) -> Path:
    """Copy what the build reads, so the build leaves nothing in the repository (and no
    stale build/lib from an earlier build can leak into the wheel)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
    for folder in PACKAGE_DIRS.values():
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "setup.cfg"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    return dest


@dataclass
class Built:
    wheel: Path
    sdist: Path
    source: Path  # the snapshot the sdist (and from it the wheel) was built from


@dataclass
class Venv:
    root: Path
    python: str
    script: str  # <venv>/bin/agent-bridge
    env: dict[str, str]
    cwd: Path  # outside the repository: its rpc/ and adapters/ folders must not be importable

    def run(
        self, argv: list[str], timeout: float = PIP_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        return _run(argv, timeout=timeout, env=self.env, cwd=self.cwd)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    tmp = tmp_path_factory.mktemp("packaging-build")
    _require_index(sys.executable, tmp / "probe")
    source = _source_snapshot(tmp / "src")
    dist = tmp / "dist"
    # As a release is built: `python -m build` (isolated, with the build-system's own
    # setuptools) makes the sdist, then the wheel from the sdist, so a file the sdist
    # leaves out breaks the wheel too.
    tools = tmp / "build-venv"
    _check(_run([sys.executable, "-m", "venv", str(tools)], timeout=120), "python -m venv")
    python = str(tools / ("Scripts" if os.name == "nt" else "bin") / "python")
    _check(_run([python, *_PIP, "install", "build>=1"]), "pip install build")
    proc = _run([python, "-m", "build", "--outdir", str(dist), "."], cwd=source)
    _check(proc, "python -m build")
    wheels = sorted(dist.glob("agent_bridge-*.whl"))
    sdists = sorted(dist.glob("agent_bridge-*.tar.gz"))
    assert len(wheels) == 1, f"expected one agent_bridge wheel, got {sorted(dist.iterdir())}"
    assert len(sdists) == 1, f"expected one agent_bridge sdist, got {sorted(dist.iterdir())}"
    return Built(wheels[0], sdists[0], source)


def _make_venv(tmp: Path) -> Venv:
    """A fresh venv under ``tmp`` with nothing installed yet."""
    root = tmp / "venv"
    _check(_run([sys.executable, "-m", "venv", str(root)], timeout=120), "python -m venv")
    bindir = root / ("Scripts" if os.name == "nt" else "bin")
    python = str(bindir / "python")
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "__PYVENV_LAUNCHER__"}
    }
    env["PATH"] = os.pathsep.join([str(bindir), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(root)
    env["PYTHONNOUSERSITE"] = "1"
    env["AGENT_BRIDGE_STATE_DIR"] = str(tmp / "state")  # never the user's
    cwd = tmp / "cwd"
    cwd.mkdir()
    return Venv(root, python, str(bindir / "agent-bridge"), env, cwd)


@pytest.fixture(scope="module")
def venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A venv with the rivals installed first, then our wheel."""
    v = _make_venv(tmp_path_factory.mktemp("packaging-venv"))
    # The rivals first, then our wheel (its dependencies come from the index).
    _check(v.run([v.python, *_PIP, "install", "--no-deps", *RIVALS]), f"pip install {RIVALS}")
    _check(v.run([v.python, *_PIP, "install", str(built.wheel)]), "pip install <our wheel>")
    return v


@pytest.fixture(scope="module")
def clean_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A venv with nothing but our wheel and its dependencies: a new user's install."""
    v = _make_venv(tmp_path_factory.mktemp("packaging-clean-venv"))
    _check(v.run([v.python, *_PIP, "install", str(built.wheel)]), "pip install <our wheel>")
    return v


_RECORD_CHECK = """
import base64, hashlib, importlib.metadata as m, json, sys
out = []
for f in m.distribution(sys.argv[1]).files or []:
    path = f.locate().resolve()
    state = "ok"
    if not path.exists():
        state = "missing"
    elif f.hash is not None:
        digest = hashlib.new(f.hash.mode, path.read_bytes()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != f.hash.value:
            state = "changed"
    out.append([str(path), state])
print(json.dumps(out))
"""


def _record(v: Venv, name: str) -> dict[str, str]:
    """Files of an installed distribution (absolute paths, from its RECORD), each with
    "ok", "missing" or "changed" (its content no longer matches the RECORD hash)."""
    proc = v.run([v.python, "-c", _RECORD_CHECK, name], timeout=60)
    _check(proc, f"reading the RECORD of {name}")
    return {path: state for path, state in json.loads(proc.stdout)}


def _assert_ours_intact(v: Venv, after: str) -> dict[str, str]:
    ours = _record(v, "agent-bridge")
    damaged = sorted((state, path) for path, state in ours.items() if state != "ok")
    assert not damaged, f"{after}, files of agent-bridge are {damaged[:5]}"
    return ours


def _demo(v: Venv) -> None:
    proc = v.run([v.script, "demo"], timeout=120)
    _check(proc, "agent-bridge demo")


# =====================================================================================
# A small blocking host: newline-delimited JSON-RPC over the child's pipes
# =====================================================================================
Message = dict[str, Any]


class Host:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self._stderr = tempfile.TemporaryFile(prefix="packaging-stderr-")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )
        self._inbox: queue.Queue[Message | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="packaging-host", daemon=True)
        self._reader.start()
        self._next_id = 1
        self.received: list[Message] = []
        self._closed = False
        self._stderr_text = ""  # its tail, kept when the file is closed

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = {"_not_json": line[:200].decode("utf-8", "replace")}
            self._inbox.put(message)
        self._inbox.put(None)

    def stderr_tail(self) -> str:
        if self._stderr.closed:
            return self._stderr_text
        self._stderr.seek(0)
        return _tail(self._stderr.read().decode("utf-8", "replace"), 15)

    def _fail(self, why: str) -> AssertionError:
        return AssertionError(f"{why}\n--- bridge stderr\n{self.stderr_tail()}")

    def send(self, message: Message) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def _next(self, deadline: float, waiting_for: str) -> Message:
        """The next message from the bridge; requests from it are answered here."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._fail(f"no {waiting_for} in time")
            try:
                message = self._inbox.get(timeout=remaining)
            except queue.Empty:
                raise self._fail(f"no {waiting_for} in time") from None
            if message is None:
                self._inbox.put(None)  # stays closed for later reads
                raise self._fail(
                    f"the bridge closed stdout (exit code {self.proc.poll()}) "
                    f"while waiting for {waiting_for}"
                )
            if "_not_json" in message:
                raise self._fail(f"not JSON on stdout: {message['_not_json']!r}")
            self.received.append(message)
            if "method" in message and "id" in message:
                self._answer(message)
                continue
            return message

    def _answer(self, request: Message) -> None:
        params = request.get("params") or {}
        kind = (params.get("request") or {}).get("kind")
        if request["method"] == "interaction/request" and kind == "approval":
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": {"kind": "approval", "decision": "allow"},
                }
            )
        else:
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32601, "message": "not handled by this test host"},
                }
            )

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        msg_id = self._next_id
        self._next_id += 1
        message: Message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline, f"reply to {method}")
            if reply.get("id") == msg_id and "method" not in reply:
                if "error" in reply:
                    raise self._fail(f"{method} failed: {reply['error']}")
                return reply.get("result")

    def events(self) -> list[Message]:
        return [m["params"] for m in self.received if m.get("method") == "event"]

    def wait_event(self, predicate: Callable[[Message], bool], timeout: float = 30.0) -> Message:
        for params in self.events():
            if predicate(params):
                return params
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline, "the awaited event")
            if message.get("method") == "event" and predicate(message["params"]):
                return dict(message["params"])

    def close(self) -> int | None:
        """shutdown + exit, stdin EOF, then a kill if need be; returns the exit code of a
        bridge that exited by itself (None if it had to be killed)."""
        if self._closed:
            return self.proc.returncode
        self._closed = True
        code: int | None = None
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(AssertionError, OSError):
                    self.request("shutdown", timeout=10)
                    self.notify("exit")
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
            try:
                code = self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        finally:
            self._reader.join(timeout=10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self._stderr_text = self.stderr_tail()
            self._stderr.close()
        return code


@pytest.fixture
def serve(venv: Venv, tmp_path: Path) -> Iterator[Host]:
    state = tmp_path / "state"
    host = Host([venv.script, "serve", "--state-dir", str(state)], venv.env, venv.cwd)
    try:
        yield host
    finally:
        host.close()


# =====================================================================================
# (b) the wheel, and the wheel installed next to the rivals
# =====================================================================================
@slow
def test_wheel_has_one_top_level_package(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        dist_info = sorted(
            {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
        )
        assert len(dist_info) == 1, dist_info
        top = {n.split("/", 1)[0] for n in names} - set(dist_info)
        assert top == {"agent_bridge"}, f"the wheel installs more than agent_bridge: {sorted(top)}"
        top_level = zf.read(f"{dist_info[0]}/top_level.txt").decode().split()
        assert top_level == ["agent_bridge"]
        entry_points = zf.read(f"{dist_info[0]}/entry_points.txt").decode()
        assert "agent-bridge = agent_bridge.cli:main" in entry_points
    # every module of the tree is in the wheel at its mapped place, and nothing else
    expected = {"agent_bridge/py.typed"}
    for name, folder in PACKAGE_DIRS.items():
        base = built.source / folder
        prefix = name.replace(".", "/")
        for path in base.rglob("*.py"):
            expected.add(f"{prefix}/{path.relative_to(base).as_posix()}")
    modules = {n for n in names if not n.startswith(dist_info[0] + "/")}
    assert sorted(expected - modules) == [], "files missing from the wheel"
    assert sorted(n for n in modules - expected if n.endswith(".py")) == [], "unexpected modules"


@slow
def test_twine_check_passes_for_sdist_and_wheel(built: Built) -> None:
    """The metadata PyPI would show (README as the long description, the SPDX license,
    URLs, classifiers) renders and validates for both artifacts."""
    proc = _run(
        [sys.executable, "-m", "twine", "check", "--strict", str(built.sdist), str(built.wheel)],
        timeout=120,
    )
    _check(proc, "twine check --strict")
    assert proc.stdout.count("PASSED") == 2, proc.stdout


@slow
def test_wheel_is_typed_and_licensed(built: Built) -> None:
    """py.typed ships (a third-party provider type-checks against the SPI), and so does
    the LICENSE, under its SPDX expression."""
    with zipfile.ZipFile(built.wheel) as zf:
        names = zf.namelist()
        assert "agent_bridge/py.typed" in names
        dist_info = next(n.split("/", 1)[0] for n in names if ".dist-info/" in n)
        assert f"{dist_info}/licenses/LICENSE" in names, sorted(
            n for n in names if n.startswith(dist_info)
        )
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    import tarfile

    with tarfile.open(built.sdist) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    assert {"LICENSE", "README.md", "pyproject.toml", "bridge/py.typed"} <= members, sorted(
        m for m in members if "/" not in m
    )


def _usable(report: dict[str, Any], asked: str | None = None) -> bool:
    """Whether doctor's JSON report has a usable provider, by its documented rule: some
    provider is available, the scripted one counting only when asked for by name."""
    return any(
        p.get("status") == "available" and (p["id"] != "scripted" or asked == "scripted")
        for p in report["providers"]
    )


@slow
def test_clean_install_doctor(clean_venv: Venv) -> None:
    """`agent-bridge doctor` from the wheel: a report of every provider, exit 0 exactly
    when a real provider is usable (1 otherwise), 2 for an unknown provider."""
    proc = clean_venv.run([clean_venv.script, "doctor", "--json"], timeout=120)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    ids = {p["id"] for p in report["providers"]}
    assert {"scripted", "claude-code", "codex"} <= ids, ids
    assert report["stateDir"] == clean_venv.env["AGENT_BRIDGE_STATE_DIR"]
    assert proc.returncode == (0 if _usable(report) else 1), report
    for p in report["providers"]:
        if p["status"] == "unavailable":
            assert p.get("nextStep"), p  # says what to do
    scripted = clean_venv.run(
        [clean_venv.script, "doctor", "--json", "--provider", "scripted"], timeout=120
    )
    assert scripted.returncode == 0, scripted.stdout + scripted.stderr
    assert [p["id"] for p in json.loads(scripted.stdout)["providers"]] == ["scripted"]
    table = clean_venv.run([clean_venv.script, "doctor"], timeout=120)
    assert table.returncode == proc.returncode and "\x1b[" not in table.stdout  # piped: plain
    unknown = clean_venv.run([clean_venv.script, "doctor", "--provider", "nope"], timeout=60)
    assert unknown.returncode == 2 and "nope" in unknown.stderr


@slow
def test_clean_install_demo_and_scripted_session(clean_venv: Venv, tmp_path: Path) -> None:
    _assert_ours_intact(clean_venv, "in a clean venv")
    _demo(clean_venv)
    raw = clean_venv.run([clean_venv.script, "demo", "--raw"], timeout=120)
    _check(raw, "agent-bridge demo --raw")
    assert any(line.startswith('> {"jsonrpc"') for line in raw.stdout.splitlines())
    host = Host(
        [clean_venv.script, "serve", "--state-dir", str(tmp_path / "state")],
        clean_venv.env,
        clean_venv.cwd,
    )
    try:
        _scripted_session(host)
    finally:
        host.close()


@slow
def test_clean_install_serves_acp(clean_venv: Venv, tmp_path: Path) -> None:
    """``agent-bridge acp`` from the installed wheel (what ``uvx agent-bridge acp`` runs):
    an ACP client's initialize, session/new and a prompt over real pipes."""
    host = Host(
        [clean_venv.script, "acp", "--provider", "scripted", "--state-dir", str(tmp_path / "s")],
        clean_venv.env,
        clean_venv.cwd,
    )
    try:
        init = host.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["agentCapabilities"]["loadSession"] is True
        session = host.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        prompt = [{"type": "text", "text": "hi"}]
        params = {"sessionId": session["sessionId"], "prompt": prompt}
        reply = host.request("session/prompt", params)
        assert reply == {"stopReason": "end_turn"}
        updates = [
            m["params"]["update"] for m in host.received if m.get("method") == "session/update"
        ]
        assert updates[0] == {"sessionUpdate": "session_info_update", "title": "hi"}
        chunks = [
            u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
        ]
        assert chunks == ["You said: hi"]
    finally:
        host.close()


@slow
def test_installed_next_to_adapters_and_rpc(venv: Venv) -> None:
    ours = _assert_ours_intact(venv, f"after installing it over {RIVALS}")
    init = next((f for f in ours if f.endswith("agent_bridge/__init__.py")), None)
    assert init is not None, "agent-bridge installed no agent_bridge/__init__.py"
    site = Path(init).parent.parent
    for rival in RIVALS:
        theirs = set(_record(venv, rival))
        assert str(site / rival / "__init__.py") in theirs, f"{rival} is not installed as expected"
        shared = sorted(theirs & set(ours))
        assert not shared, f"agent-bridge and {rival} share files: {shared[:5]}"
    in_site = {Path(f).relative_to(site).parts[0] for f in ours if Path(f).is_relative_to(site)}
    assert {t for t in in_site if not t.endswith(".dist-info")} == {"agent_bridge"}, in_site
    _demo(venv)


def _scripted_session(host: Host) -> None:
    """The brief's session: handshake, providers/list, one scripted run saying "hi"."""
    init = host.request(
        "initialize",
        {
            "protocolVersion": 1,
            "clientInfo": {"name": "t"},
            "capabilities": {"interactions": {"approval": True}},
        },
    )
    assert init["protocolVersion"] == 1
    host.notify("initialized", {})
    providers = host.request("providers/list", {})
    ids = {p["id"] for p in providers["providers"]}
    assert {"scripted", "claude-code", "codex"} <= ids, f"providers/list: {sorted(ids)}"
    created = host.request(
        "session/create",
        {
            "provider": "scripted",
            "options": {"script": {"steps": [{"type": "text", "text": "hi"}]}},
        },
    )
    session_id = created["session"]["sessionId"]
    started = host.request("run/start", {"sessionId": session_id, "input": {"text": "go"}})
    run_id = started["runId"]
    terminal = host.wait_event(
        lambda e: e["payload"]["type"] in ("run.completed", "run.failed", "run.interrupted")
    )
    assert terminal["payload"]["type"] == "run.completed", terminal
    assert terminal["runId"] == run_id
    text = "".join(
        e["payload"]["text"]
        for e in host.events()
        if e["sessionId"] == session_id and e["payload"]["type"] == "text.delta"
    )
    assert text == "hi"
    assert host.close() == 0, f"the bridge did not exit cleanly:\n{host.stderr_tail()}"


@slow
def test_serve_scripted_session_next_to_adapters_and_rpc(serve: Host) -> None:
    _scripted_session(serve)


# The last two run in this order and change the shared venv: keep them last.
@slow
def test_uninstalling_adapters_and_rpc_keeps_ours(venv: Venv) -> None:
    _assert_ours_intact(venv, "before uninstalling anything")
    _check(venv.run([venv.python, *_PIP, "uninstall", "-y", *RIVALS]), "pip uninstall")
    _assert_ours_intact(venv, f"after uninstalling {RIVALS}")
    probe = venv.run(
        [
            venv.python,
            "-c",
            "import importlib.util as u, sys; "
            "sys.exit(0 if all(u.find_spec(n) is None for n in sys.argv[1:]) else 1)",
            *RIVALS,
        ],
        timeout=60,
    )
    assert probe.returncode == 0, f"{RIVALS} still importable after uninstalling them"
    _demo(venv)


@slow
def test_installing_adapters_and_rpc_after_ours_keeps_ours(venv: Venv, tmp_path: Path) -> None:
    # The other order: the rivals arrive after us (the test above removed them; when this
    # test runs alone they are there already and --force-reinstall writes them again).
    _check(
        venv.run([venv.python, *_PIP, "install", "--no-deps", "--force-reinstall", *RIVALS]),
        f"pip install {RIVALS} (after agent-bridge)",
    )
    _assert_ours_intact(venv, f"after installing {RIVALS} over it")
    _demo(venv)
    host = Host([venv.script, "serve", "--state-dir", str(tmp_path / "state")], venv.env, venv.cwd)
    try:
        _scripted_session(host)
    finally:
        host.close()
