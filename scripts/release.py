#!/usr/bin/env python3
"""Prepare (and, for a maintainer with credentials, publish) a release of agent-bridge.

    python3 scripts/release.py check [--dist DIR] [--work DIR]
        build the sdist and the wheel (the wheel from the sdist, as an index user gets it),
        check both (names, contents, ``twine check --strict``), install the wheel in a clean
        venv and run it (``--version``, ``demo``), then put the ACP registry entry
        (editors/acp/agent.json and icon.svg) through the checks the ACP registry runs on a
        submission: the entry's format, its versions, its icon, launching its ``uvx``
        distribution, and the ACP ``initialize`` handshake with the registry's
        authentication check. The ``uvx`` launch resolves the entry's own package spec
        (``agent-bridge==VERSION``) from the wheel just built, with no package index.
        Prints the staged registry submission and the publish command. Nothing needs
        credentials; tests/test_release.py runs this.
    python3 scripts/release.py entry [DIR]
        only the registry's static checks of an entry directory (default editors/acp).
    python3 scripts/release.py version X.Y.Z
        set the version: bridge/__init__.py is the one place it is written (pyproject.toml
        reads it from there); the registry entry, which must carry it literally, and the
        wheel's file name in the docs are rewritten to match.
    python3 scripts/release.py publish [--repository NAME]
        ``check`` on a clean git tree, then ``twine upload`` of exactly the checked files.
        twine takes the credentials (``~/.pypirc`` or ``TWINE_USERNAME``/``TWINE_PASSWORD``);
        never run in CI.

Exit status: 0 when every check passed, 1 when one failed (each failure is printed on its
own line, starting with ``FAIL``), 2 for a usage error. Standard library only: it runs
with any Python 3.11 (the build tools go into a throwaway venv under ``--work``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENTRY_DIR = ROOT / "editors" / "acp"
VERSION_FILE = ROOT / "bridge" / "__init__.py"
PROJECT = "agent-bridge"
DIST_NAME = "agent_bridge"
VERSION_RE = re.compile(r'^__version__ = "([^"]+)"$', re.M)
#: The documents that name the built wheel's file (``version`` rewrites them).
WHEEL_DOCS = ("README.md", "docs/acp-agent.md", "editors/acp/README.md")

# What the ACP registry accepts (its FORMAT.md and agent.schema.json).
ENTRY_MEMBERS = {
    "id",
    "name",
    "version",
    "description",
    "repository",
    "website",
    "authors",
    "license",
    "license_url",
    "icon",
    "distribution",
}
REQUIRED_MEMBERS = ("id", "name", "version", "description", "distribution")
DISTRIBUTIONS = {"binary", "npx", "uvx"}
PACKAGE_MEMBERS = {"package", "args", "env"}
ICON_SIZE = 16
ICON_PAINTS = {"currentcolor", "none", "inherit"}
LAUNCH_SECONDS = 10.0  # the registry's launch check: still running after this is a pass
HANDSHAKE_SECONDS = 60.0


class Failed(Exception):
    """A check failed; the message says which and why."""


def say(line: str) -> None:
    print(line, flush=True)


# =====================================================================================
# The version: one place
# =====================================================================================
def read_version() -> str:
    """The version written in bridge/__init__.py. Raises Failed when it is missing."""
    found = VERSION_RE.search(VERSION_FILE.read_text("utf-8"))
    if found is None:
        raise Failed(f"no __version__ line in {VERSION_FILE}")
    return found.group(1)


def set_version(new: str) -> None:
    """Write ``new`` into bridge/__init__.py and the registry entry."""
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", new):
        raise Failed(f"version {new!r} is not X.Y.Z")
    text = VERSION_FILE.read_text("utf-8")
    VERSION_FILE.write_text(VERSION_RE.sub(f'__version__ = "{new}"', text), "utf-8")
    path = ENTRY_DIR / "agent.json"
    entry = json.loads(path.read_text("utf-8"))
    entry["version"] = new
    uvx = entry.get("distribution", {}).get("uvx")
    if isinstance(uvx, dict):
        uvx["package"] = f"{PROJECT}=={new}"
    path.write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", "utf-8")
    changed = [VERSION_FILE, path]
    # the docs name the wheel a build makes, so its file name follows too
    wheel = re.compile(rf"{DIST_NAME}-[0-9]+\.[0-9]+\.[0-9]+-py3-none-any\.whl")
    for doc in WHEEL_DOCS:
        target = ROOT / doc
        if target.is_file():
            text = target.read_text("utf-8")
            updated = wheel.sub(f"{DIST_NAME}-{new}-py3-none-any.whl", text)
            if updated != text:
                target.write_text(updated, "utf-8")
                changed.append(target)
    say(f"version {new}: " + ", ".join(str(p.relative_to(ROOT)) for p in changed))


# =====================================================================================
# The registry's static checks of an entry directory
# =====================================================================================
def _is_uri(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[a-z][a-z0-9+.-]*://\S+", value) is not None


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _string_map(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def entry_errors(entry: Any, directory: str, version: str | None) -> list[str]:
    """What the registry would reject in ``entry`` submitted as ``directory/agent.json``:
    its members and their formats, the distributions, and the package pins against the
    entry's version (and against ``version``, this release's, when given)."""
    if not isinstance(entry, dict):
        return ["agent.json is not a JSON object"]
    errors: list[str] = []
    for name in REQUIRED_MEMBERS:
        if name not in entry:
            errors.append(f"missing required member {name!r}")
    if unknown := sorted(set(entry) - ENTRY_MEMBERS):
        errors.append(f"members the registry does not know: {unknown}")
    agent_id = entry.get("id")
    if "id" in entry:
        if not isinstance(agent_id, str) or not re.fullmatch(r"[a-z][a-z0-9-]*", agent_id):
            errors.append(f"id {agent_id!r}: a lowercase letter, then letters, digits, hyphens")
        elif agent_id != directory:
            errors.append(f"id {agent_id!r} must equal its directory's name ({directory!r})")
    for name in ("name", "description"):
        if name in entry and (not isinstance(entry[name], str) or not entry[name]):
            errors.append(f"{name} must be a non-empty string")
    entry_version = entry.get("version")
    if "version" in entry:
        parts = entry_version.split(".") if isinstance(entry_version, str) else []
        if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]):
            errors.append(f"version {entry_version!r} is not a semantic version (1.2.3)")
        elif version is not None and entry_version != version:
            errors.append(f"version {entry_version!r} is not this release's ({version!r})")
    for name in ("repository", "website", "license_url"):
        if name in entry and not _is_uri(entry[name]):
            errors.append(f"{name} must be a URI")
    if "authors" in entry and not _strings(entry["authors"]):
        errors.append("authors must be a list of strings")
    if "license" in entry and not isinstance(entry["license"], str):
        errors.append("license must be a string (an SPDX identifier or 'proprietary')")
    if "distribution" in entry:
        errors += _distribution_errors(entry["distribution"], entry_version)
    return errors


def _distribution_errors(dist: Any, entry_version: Any) -> list[str]:
    if not isinstance(dist, dict) or not dist:
        return ["distribution must be a non-empty object"]
    errors: list[str] = []
    if unknown := sorted(set(dist) - DISTRIBUTIONS):
        errors.append(f"unknown distribution types: {unknown}")
    for kind in ("npx", "uvx"):
        if kind not in dist:
            continue
        spec = dist[kind]
        if not isinstance(spec, dict):
            errors.append(f"distribution.{kind} must be an object")
            continue
        if extra := sorted(set(spec) - PACKAGE_MEMBERS):
            errors.append(f"distribution.{kind} has members the registry does not know: {extra}")
        package = spec.get("package")
        if not isinstance(package, str) or not package:
            errors.append(f"distribution.{kind}.package must be a non-empty string")
            continue
        if "args" in spec and not _strings(spec["args"]):
            errors.append(f"distribution.{kind}.args must be a list of strings")
        if "env" in spec and not _string_map(spec["env"]):
            errors.append(f"distribution.{kind}.env must map strings to strings")
        if "@latest" in package.lower():
            errors.append(f"distribution.{kind}.package {package!r}: pin a version, not latest")
        pinned = re.search(r"[=@]+([0-9][0-9.]*)", package)
        if pinned and pinned.group(1) != entry_version:
            errors.append(
                f"distribution.{kind}.package pins {pinned.group(1)}, "
                f"the entry's version is {entry_version}"
            )
    if "binary" in dist:
        errors.append("distribution.binary: this project ships no binaries")
    return errors


def icon_errors(path: Path) -> list[str]:
    """What the registry would reject in ``icon.svg``: not SVG, an HTML comment, not a
    16x16 square, or a colour other than ``currentColor`` (and at least one of those)."""
    if not path.is_file():
        return [f"{path.name} is missing (the registry requires an icon)"]
    text = path.read_text("utf-8")
    errors: list[str] = []
    if "<!--" in text:
        errors.append("icon has an HTML comment (it breaks the registry's MDX pages)")
    try:
        root = ET.fromstring(text)  # noqa: S314 (our own file, in our own tree)
    except ET.ParseError as exc:
        return [*errors, f"icon is not XML: {exc}"]
    if root.tag.rsplit("}", 1)[-1] != "svg":
        return [*errors, "icon's root element is not <svg>"]
    size = _icon_size(root)
    if size is None:
        errors.append("icon has neither width/height nor a viewBox")
    elif size != (ICON_SIZE, ICON_SIZE):
        errors.append(f"icon is {size[0]:g}x{size[1]:g}, not {ICON_SIZE}x{ICON_SIZE}")
    themed = False
    for element in root.iter():
        paints: list[str] = [v for k in ("fill", "stroke") if (v := element.get(k)) is not None]
        for declaration in (element.get("style") or "").split(";"):
            name, _, value = declaration.partition(":")
            if name.strip().lower() in ("fill", "stroke"):
                paints.append(value)
        if element.tag.rsplit("}", 1)[-1] == "style" and element.text:
            paints += re.findall(r"\b(?:fill|stroke)\s*:\s*([^;}\s]+)", element.text, re.I)
        for paint in paints:
            value = paint.strip().lower()
            if value == "currentcolor":
                themed = True
            elif value not in ICON_PAINTS:
                errors.append(f"icon paints with {paint.strip()!r}: use currentColor or none")
    if not themed:
        errors.append("icon never paints with currentColor (editors theme it)")
    return list(dict.fromkeys(errors))


def _icon_size(root: ET.Element) -> tuple[float, float] | None:
    width, height = root.get("width"), root.get("height")
    if width and height:
        try:
            return (
                float(re.sub(r"[a-z%]+$", "", width.strip(), flags=re.I)),
                float(re.sub(r"[a-z%]+$", "", height.strip(), flags=re.I)),
            )
        except ValueError:
            pass
    box = (root.get("viewBox") or "").split()
    if len(box) == 4:
        try:
            return float(box[2]), float(box[3])
        except ValueError:
            pass
    return None


def check_entry_dir(directory: Path, version: str | None) -> dict[str, Any]:
    """Run the static checks on ``directory`` (agent.json and icon.svg). Returns the
    entry; raises Failed listing every problem."""
    try:
        entry = json.loads((directory / "agent.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise Failed(f"{directory / 'agent.json'}: {exc}") from None
    # The registry requires the directory to be named after the id; editors/acp is not a
    # registry checkout, so its own name is not held against it there.
    name = directory.name if directory.resolve() != ENTRY_DIR else entry.get("id", "")
    errors = entry_errors(entry, str(name), version) + icon_errors(directory / "icon.svg")
    if errors:
        raise Failed("the ACP registry would reject the entry:\n  " + "\n  ".join(errors))
    return dict(entry)


# =====================================================================================
# Building and checking the distributions
# =====================================================================================
def run(
    argv: Sequence[str],
    what: str,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600.0,
) -> str:
    """Run ``argv``; returns its stdout. Raises Failed with the tail of its output."""
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Failed(f"{what}: {exc}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise Failed(f"{what} exited {proc.returncode}:\n{tail}")
    return proc.stdout


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without this interpreter's or venv's settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
        and not k.startswith("UV_")
    }
    env.update(extra or {})
    return env


def make_venv(where: Path, packages: Sequence[str] = ()) -> Path:
    """A fresh venv at ``where`` with ``packages`` installed; returns its bin directory."""
    run([sys.executable, "-m", "venv", str(where)], f"python -m venv {where.name}")
    bindir = where / "bin"
    if packages:
        run(
            [str(bindir / "python"), "-m", "pip", "install", "--quiet", *packages],
            f"pip install {' '.join(packages)}",
            env=clean_env(),
        )
    return bindir


def snapshot_source(dest: Path) -> Path:
    """The files git tracks (or, outside git, the packaged folders), so the build sees
    exactly what a clone has: nothing untracked, no stale build/."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
        files = [f for f in listed.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [
            str(p.relative_to(ROOT))
            for folder in ("bridge", "rpc", "adapters")
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ] + ["pyproject.toml", "README.md", "LICENSE"]
    for name in files:
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def build(tools: Path, work: Path, dist: Path, version: str) -> tuple[Path, Path]:
    """Build the sdist, then the wheel from it (``python -m build``). Returns both."""
    source = snapshot_source(work / "source")
    dist.mkdir(parents=True, exist_ok=True)
    for old in [*dist.glob(f"{DIST_NAME}-*.whl"), *dist.glob(f"{DIST_NAME}-*.tar.gz")]:
        old.unlink()
    run(
        [str(tools / "python"), "-m", "build", "--outdir", str(dist), str(source)],
        "python -m build",
        env=clean_env(),
    )
    wheel = dist / f"{DIST_NAME}-{version}-py3-none-any.whl"
    sdist = dist / f"{DIST_NAME}-{version}.tar.gz"
    built = sorted(p.name for p in dist.iterdir())
    if not wheel.is_file() or not sdist.is_file():
        raise Failed(f"expected {wheel.name} and {sdist.name} for version {version}, got {built}")
    return sdist, wheel


def check_artifacts(tools: Path, sdist: Path, wheel: Path, version: str) -> None:
    """The wheel holds the typed package and its licence at this version; the sdist holds
    what a wheel is built from; both pass ``twine check --strict``."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        info = f"{DIST_NAME}-{version}.dist-info"
        metadata = zf.read(f"{info}/METADATA").decode()
    needed = {
        "agent_bridge/__init__.py",
        "agent_bridge/py.typed",
        "agent_bridge/rpc/__init__.py",
        "agent_bridge/adapters/__init__.py",
        f"{info}/entry_points.txt",
    }
    if missing := sorted(needed - names):
        raise Failed(f"{wheel.name} lacks {missing}")
    if not any(n.startswith(f"{info}/licenses/") for n in names):
        raise Failed(f"{wheel.name} carries no licence file")
    if f"\nVersion: {version}\n" not in metadata:
        raise Failed(f"{wheel.name}: METADATA does not say Version: {version}")
    if stray := sorted(n for n in names if n.split("/")[0] in {"bridge", "rpc", "adapters"}):
        raise Failed(f"{wheel.name} installs top-level packages besides agent_bridge: {stray[:3]}")
    with tarfile.open(sdist) as tf:
        members = {m.name.split("/", 1)[-1] for m in tf.getmembers()}
    if missing := sorted(
        {"pyproject.toml", "README.md", "LICENSE", "bridge/__init__.py"} - members
    ):
        raise Failed(f"{sdist.name} lacks {missing}")
    run(
        [str(tools / "twine"), "check", "--strict", str(sdist), str(wheel)],
        "twine check --strict",
        env=clean_env(),
    )


def check_clean_install(work: Path, wheel: Path, version: str) -> None:
    """Install the wheel alone in a new venv and run it as a user would."""
    bindir = make_venv(work / "clean-venv", [str(wheel)])
    home = work / "clean-home"
    home.mkdir(exist_ok=True)
    env = clean_env({"HOME": str(home), "AGENT_BRIDGE_STATE_DIR": str(home / "state")})
    out = run([str(bindir / "agent-bridge"), "--version"], "agent-bridge --version", env=env)
    if out.strip() != f"agent-bridge {version}":
        raise Failed(f"agent-bridge --version printed {out.strip()!r}, not {version}")
    run([str(bindir / "agent-bridge"), "demo"], "agent-bridge demo", env=env, cwd=home)


# =====================================================================================
# The registry's launch and handshake checks, on the built wheel
# =====================================================================================
def uvx_command(tools: Path, wheelhouse: Path, cache: Path, entry: dict[str, Any]) -> list[str]:
    """The entry's ``uvx`` command, resolved from ``wheelhouse`` (the built wheel and its
    dependencies) with no package index: what an editor runs once the package is out."""
    uvx = entry["distribution"]["uvx"]
    return [
        str(tools / "uvx"),
        "--cache-dir",
        str(cache),
        "--no-index",
        "--find-links",
        str(wheelhouse),
        uvx["package"],
        *uvx.get("args", []),
    ]


def sandbox_env(home: Path, entry: dict[str, Any]) -> dict[str, str]:
    """A fresh HOME and only the variables the registry's checker passes through."""
    keep = ("PATH", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_CACHE_HOME", "CI")
    env = {k: os.environ[k] for k in keep if os.environ.get(k)}
    env.update({"HOME": str(home), "TERM": "dumb"})
    env.update(entry["distribution"]["uvx"].get("env", {}))
    return env


def launch_check(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    """The registry's launch check: started with an empty stdin, the agent either exits 0
    or is still running after ten seconds. Returns which; raises Failed otherwise."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=LAUNCH_SECONDS)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        return f"still running after {LAUNCH_SECONDS:g} s"
    if proc.returncode != 0:
        tail = "\n".join((out + err).strip().splitlines()[-10:])
        raise Failed(f"launch check: `{' '.join(command[-2:])}` exited {proc.returncode}:\n{tail}")
    if out.strip():
        raise Failed(f"launch check: wrote to stdout with no client: {out[:200]!r}")
    return "exited 0 at the end of its input"


def handshake_check(command: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """The registry's authentication check: ``initialize`` as its validator sends it, a
    reply that is a JSON-RPC result, nothing but JSON on stdout, and at least one
    ``authMethods`` entry of type ``agent`` (the default) or ``terminal``. Returns the
    methods' ids."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": 1,
                "clientInfo": {"name": "release-check", "version": "1.0.0"},
                "clientCapabilities": {
                    "terminal": True,
                    "fs": {"readTextFile": True, "writeTextFile": True},
                    "_meta": {"terminal_output": True, "terminal-auth": True},
                },
            },
        }
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], HANDSHAKE_SECONDS)
        line = proc.stdout.readline() if ready else ""
        if not line:
            raise Failed(f"handshake: no initialize reply (exit code {proc.poll()})")
        try:
            reply = json.loads(line)
        except ValueError:
            raise Failed(f"handshake: not JSON on stdout: {line[:200]!r}") from None
        if not isinstance(reply, dict) or reply.get("id") != 1 or "result" not in reply:
            raise Failed(f"handshake: initialize did not succeed: {line[:300]}")
        methods = reply["result"].get("authMethods") or []
        kinds = []
        for method in methods:
            kind = method.get("type")
            meta = method.get("_meta") if isinstance(method.get("_meta"), dict) else {}
            if not kind:
                kind = "terminal" if "terminal-auth" in meta else "agent"
            kinds.append(kind)
        if not any(k in ("agent", "terminal") for k in kinds):
            raise Failed(f"handshake: no authMethods of type agent or terminal ({kinds})")
        return [str(m.get("id")) for m in methods]
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def check_registry(
    tools: Path, work: Path, wheel: Path, version: str
) -> tuple[Path, dict[str, Any]]:
    """Stage the submission (``<work>/registry/<id>/``), run the static checks on it,
    then launch and handshake its ``uvx`` distribution against the built wheel."""
    entry = check_entry_dir(ENTRY_DIR, version)
    staged = work / "registry" / entry["id"]
    staged.mkdir(parents=True, exist_ok=True)
    for name in ("agent.json", "icon.svg"):
        shutil.copy2(ENTRY_DIR / name, staged / name)
    check_entry_dir(staged, version)
    uvx = entry["distribution"].get("uvx")
    if not isinstance(uvx, dict) or uvx["package"] != f"{PROJECT}=={version}":
        raise Failed(f"distribution.uvx.package must be {PROJECT}=={version}")
    # The wheel and its dependencies, so uvx resolves the entry's own spec offline.
    wheelhouse = work / "wheelhouse"
    wheelhouse.mkdir(exist_ok=True)
    shutil.copy2(wheel, wheelhouse / wheel.name)
    run(
        [
            str(tools / "python"),
            "-m",
            "pip",
            "download",
            "--quiet",
            "-d",
            str(wheelhouse),
            str(wheel),
        ],
        "pip download (the wheel's dependencies)",
        env=clean_env(),
    )
    sandbox = work / "sandbox"
    home = sandbox / "home"
    home.mkdir(parents=True, exist_ok=True)
    command = uvx_command(tools, wheelhouse, sandbox / "uv-cache", entry)
    env = sandbox_env(home, entry)
    launched = launch_check(command, sandbox, env)
    say(f"ok   launch: uvx {uvx['package']} {' '.join(uvx.get('args', []))}: {launched}")
    methods = handshake_check(command, sandbox, env)
    say(f"ok   handshake: initialize answered; authMethods {methods}")
    return staged, entry


# =====================================================================================
# Commands
# =====================================================================================
def cmd_check(dist: Path, work: Path) -> tuple[Path, Path]:
    """Every check; returns the checked sdist and wheel."""
    version = read_version()
    say(f"agent-bridge {version}: preparing the release (work in {work})")
    check_entry_dir(ENTRY_DIR, version)
    say("ok   registry entry: editors/acp/agent.json and icon.svg pass the static checks")
    tools = make_venv(work / "tools", ["build>=1", "twine>=5", "uv"])
    sdist, wheel = build(tools, work, dist, version)
    say(f"ok   built {sdist.name} and {wheel.name} in {dist}")
    check_artifacts(tools, sdist, wheel, version)
    say("ok   contents and twine check --strict")
    check_clean_install(work, wheel, version)
    say("ok   the wheel alone in a new venv: --version and demo")
    staged, _entry = check_registry(tools, work, wheel, version)
    say(f"ok   registry submission staged in {staged}")
    say(
        f"ready: publish with `python3 scripts/release.py publish` (uploads {sdist.name} and "
        f"{wheel.name}), then submit {staged.name}/ to the ACP registry"
    )
    return sdist, wheel


def cmd_publish(dist: Path, work: Path, repository: str | None) -> None:
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    if dirty:
        raise Failed("the git tree has uncommitted changes: commit or stash them first")
    sdist, wheel = cmd_check(dist, work)
    argv = [str(work / "tools" / "bin" / "twine"), "upload", "--non-interactive"]
    if repository:
        argv += ["--repository", repository]
    proc = subprocess.run([*argv, str(sdist), str(wheel)], env=clean_env())
    if proc.returncode != 0:
        raise Failed(f"twine upload exited {proc.returncode}")
    say(f"published {sdist.name} and {wheel.name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/release.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("check", "build and check everything a release needs (no credentials)"),
        ("publish", "check, then upload with twine (needs credentials)"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the files go")
        p.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one)")
        if name == "publish":
            p.add_argument("--repository", help="a twine repository name from ~/.pypirc")
    entry = sub.add_parser("entry", help="only the registry's static checks of an entry")
    entry.add_argument("directory", nargs="?", type=Path, default=ENTRY_DIR)
    version = sub.add_parser("version", help="set the version (bridge/__init__.py, agent.json)")
    version.add_argument("new", metavar="X.Y.Z")
    args = parser.parse_args(argv)
    try:
        if args.command == "version":
            set_version(args.new)
        elif args.command == "entry":
            check_entry_dir(args.directory, None)
            say(f"ok   {args.directory}: the ACP registry's static checks pass")
        else:
            work = args.work or Path(tempfile.mkdtemp(prefix="agent-bridge-release-"))
            work.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            if args.command == "check":
                cmd_check(args.dist.resolve(), work.resolve())
            else:
                cmd_publish(args.dist.resolve(), work.resolve(), args.repository)
            say(f"done in {time.monotonic() - started:.0f} s")
    except Failed as exc:
        say(f"FAIL {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
