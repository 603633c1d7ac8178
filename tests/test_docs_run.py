"""The code blocks of README.md, docs/ and editors/acp/README.md run as written.

Every ``sh``, ``bash``, ``python``, ``ts`` and ``js`` block of those files is listed in
``BLOCKS`` by its file and first line, either with the test that runs it or with the
reason it is not run (a fragment, a global install, a login); a new block, or an edited
first line, fails ``test_every_block_is_run_or_says_why`` until it is listed. (The
protocol transcripts of docs/protocol.md are replayed by tests/test_protocol_doc.py, the
scripted examples of docs/scripted.md decoded by tests/test_scripted_doc.py, the README's
quick starts run on a fresh clone by tests/test_readme_quickstarts.py.)

Run here: the README's wire transcript against a real ``serve`` (ids shortened in the
doc are bound to the real ones; the bridge's request id is compared as written); the
pytest plugin example of docs/testing-hosts.md in a new project with no async settings;
the Node host example from the checkout with ``agent-bridge`` not on ``PATH`` (and
without a cassette: a usage line); the
record-and-replay lines with the scripted provider in place of Claude Code; the acpx
lines of editors/acp/README.md with the scripted provider in place of Claude Code; the
``agent-bridge acp`` command lines of docs/acp-agent.md and editors/acp/README.md with an
empty stdin, as the ACP registry launches an agent (each checks its options at start and
exits 0 at the end of its input); and the README's real-agent step (``exec --provider
claude-code``) with the pinned Claude Code CLI against the stand-in Messages API (e2e).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TESTING_HOSTS = ROOT / "docs" / "testing-hosts.md"
EDITORS_ACP = ROOT / "editors" / "acp" / "README.md"
RUN_LANGUAGES = ("sh", "bash", "python", "ts", "js")
CASSETTE = ROOT / "tests" / "conformance" / "recorded" / "claude_approval.json"

QUICKSTARTS = "run: tests/test_readme_quickstarts.py (a fresh clone)"
# (file, the first line of the block without its comment, at most 48 characters)
BLOCKS: dict[tuple[str, str], str] = {
    ("README.md", "bash scripts/setup.sh"): QUICKSTARTS,
    ("README.md", "agent-bridge demo"): QUICKSTARTS,
    ("README.md", "agent-bridge exec --provider scripted --format t"): QUICKSTARTS,
    ("README.md", "node docs/examples/node_host_test.mjs tests/conf"): QUICKSTARTS,
    ("README.md", 'project="$(mktemp -d)"'): QUICKSTARTS,
    ("README.md", "python -m pip install --quiet pytest"): QUICKSTARTS,
    (
        "README.md",
        "bash scripts/setup.sh --dev",
    ): "not run: the test command itself (.ci/run runs it)",
    ("README.md", "bash scripts/test.sh --fast"): "not run: the test command itself",
    (
        "docs/adapter-conformance.md",
        "import pytest",
    ): "not run: a template naming the reader's own adapter (my_adapter); "
    "tests/test_adapter_conformance.py runs the same subclassing against the scripted provider",
    (
        "README.md",
        "// VS Code extension (TypeScript), newline-delim",
    ): "not run: a fragment (onBytes, send); the whole host is docs/examples/node_host_test.mjs",
    (
        "docs/acp-agent.md",
        "agent-bridge acp",
    ): "run: test_the_acp_command_lines_start (the uvx line: scripts/release.py check)",
    (
        "docs/daemon.md",
        "agent-bridge connect",
    ): "not run: tests/test_daemon.py drives each of these",
    (
        "docs/daemon.md",
        "ssh -T devbox agent-bridge connect",
    ): "not run: needs a host devbox; tests/test_conformance.py runs connect through sshd",
    (
        "docs/hardening.md",
        ".venv/bin/python -m pytest tests/hardening -q",
    ): "not run: the hardening suite is part of the test suite",
    (
        "docs/providers/claude-code.md",
        "npm install -g @anthropic-ai/claude-code",
    ): "not run: a global install (scripts/install-provider-clis.sh installs the pinned CLI)",
    ("docs/providers/claude-code.md", "claude auth login"): "not run: needs an account",
    (
        "docs/providers/claude-code.md",
        "scripts/install-provider-clis.sh",
    ): "not run: scripts/test.sh runs it",
    (
        "docs/providers/claude-code.md",
        'env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "',
    ): "not run: a fragment of a driver (tests/test_claude_e2e.py is the whole)",
    (
        "docs/providers/claude-code.md",
        "from tests.standins.anthropic_server import Anth",
    ): "not run: a fragment (the stand-in's own tests use it)",
    (
        "docs/providers/codex.md",
        "npm install -g @openai/codex",
    ): "not run: a global install (scripts/install-provider-clis.sh installs the pinned CLI)",
    ("docs/providers/codex.md", "codex login"): "not run: needs an account",
    (
        "docs/providers/codex.md",
        "scripts/install-provider-clis.sh",
    ): "not run: scripts/test.sh runs it",
    (
        "docs/providers/codex.md",
        'argv = [codex, "app-server", "--strict-config",',
    ): "not run: a fragment of the adapter's invocation",
    (
        "docs/providers/codex.md",
        "from tests.standins.responses_server import Resp",
    ): "not run: a fragment (tests/test_responses_standin.py)",
    (
        "docs/testing-hosts.md",
        "agent-bridge exec [--provider ID] [--option K=V ",
    ): "not run: a synopsis",
    (
        "docs/testing-hosts.md",
        "agent-bridge exec --provider claude-code --appro",
    ): "run: test_record_and_replay_lines_run",
    (
        "docs/testing-hosts.md",
        "import pytest",
    ): "run: test_the_pytest_plugin_example_runs_in_a_new_project",
    (
        "docs/testing-hosts.md",
        "node docs/examples/node_host_test.mjs tests/conf",
    ): "run: test_the_node_host_example_runs_from_the_checkout",
    (
        "editors/acp/README.md",
        "agent-bridge acp --provider codex -o reasoningEf",
    ): "run: test_the_acp_command_lines_start",
    (
        "editors/acp/README.md",
        'acpx --agent "agent-bridge acp --provider claude',
    ): "run: test_the_acpx_lines_run",
}


def blocks(path: Path) -> list[tuple[str, str]]:
    """The (language, text) of each fenced block of ``path`` in RUN_LANGUAGES."""
    text = path.read_text("utf-8")
    found = re.findall(r"^```([a-z]*)[^\n]*\n(.*?)^```", text, re.M | re.S)
    return [(lang, body) for lang, body in found if lang in RUN_LANGUAGES]


def block_key(body: str) -> str:
    """How BLOCKS names a block: its first line without a trailing comment, spaces
    folded, at most 48 characters."""
    return " ".join(body.splitlines()[0].split("  #")[0].split())[:48]


def block(path: Path, first_line: str) -> str:
    """The block of ``path`` whose first line starts with ``first_line``."""
    for _lang, body in blocks(path):
        if body.splitlines()[0].startswith(first_line):
            return body
    raise AssertionError(f"no block starting {first_line!r} in {path}")


def _documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md")), EDITORS_ACP]


def test_every_block_is_run_or_says_why() -> None:
    seen = set()
    for path in _documents():
        rel = str(path.relative_to(ROOT))
        for _lang, body in blocks(path):
            key = (rel, block_key(body))
            seen.add(key)
            assert key in BLOCKS, (
                f"a new code block in {rel} ({key[1]!r}): run it in a test, or list it in "
                "tests/test_docs_run.py BLOCKS with the reason it is not run"
            )
    assert not set(BLOCKS) - seen, f"listed but gone: {sorted(set(BLOCKS) - seen)}"


def _env_without_bridge(**extra: str) -> dict[str, str]:
    """This environment with no agent-bridge on PATH and no venv of ours active."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    keep = [d for d in keep if not (Path(d) / "agent-bridge").exists()]
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTEST_ADDOPTS"}}
    env["PATH"] = os.pathsep.join(keep or ["/usr/bin", "/bin"])
    env.update(extra)
    return env


def _bridge_env(tmp_path: Path) -> dict[str, str]:
    """This environment with the running interpreter's agent-bridge first on PATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["AGENT_BRIDGE_STATE_DIR"] = str(tmp_path / "state")
    return env


# =====================================================================================
# README: the wire transcript, replayed
# =====================================================================================
PLACEHOLDER = re.compile(r"\b(?:ses|run|evt|int)_[0-9][0-9_]*\b")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def _pattern(expected: str) -> tuple[re.Pattern[str], list[str]]:
    """A regex for one ``<`` line: ``…`` matches anything, a shortened id any id (its
    group captures it), a timestamp any time, the server's version any version."""
    names: list[str] = []
    out: list[str] = []
    pos = 0
    tokens = re.compile(
        rf"(?P<ph>{PLACEHOLDER.pattern})|(?P<ts>{TIMESTAMP.pattern})|(?P<el>…)"
        r'|(?P<ver>"serverInfo":\{"name":"agent-bridge","version":")[^"]+"'
    )
    for m in tokens.finditer(expected):
        out.append(re.escape(expected[pos : m.start()]))
        if m.group("ph"):
            names.append(m.group("ph"))
            out.append(rf"(?P<g{len(names)}>[A-Za-z]+_[A-Za-z0-9_]+)")
        elif m.group("ts"):
            out.append(r"[^\"]+")
        elif m.group("el"):
            out.append(".*?")
        else:
            out.append(re.escape(m.group("ver")) + r'[^"]+"')
        pos = m.end()
    out.append(re.escape(expected[pos:]))
    return re.compile("".join(out)), names


def _transcript() -> list[tuple[str, str]]:
    text = README.read_text("utf-8")
    found = re.search(r"## A short wire transcript.*?```\n(.*?)```", text, re.S)
    assert found, "README.md has no wire transcript"
    return [(line[0], line[2:]) for line in found.group(1).splitlines() if line[:2] in ("> ", "< ")]


class Lines:
    """A child's stdout, line by line, read by a thread."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.queue.put(line.rstrip("\n"))
        self.queue.put(None)

    def next(self, deadline: float) -> str:
        line = self.queue.get(timeout=max(0.01, deadline - time.monotonic()))
        assert line is not None, "the bridge closed stdout"
        return line


def test_the_readme_transcript_replays(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_bridge", "serve", "--framing", "newline",
         "--state-dir", str(tmp_path / "state")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdin is not None
    lines = Lines(proc)
    bound: dict[str, str] = {}
    unmatched: list[str] = []
    try:
        for direction, text in _transcript():
            if direction == ">":
                line = PLACEHOLDER.sub(lambda m: bound.get(m.group(0), m.group(0)), text)
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
                continue
            pattern, names = _pattern(text)
            deadline = time.monotonic() + 20
            while True:
                for candidate in unmatched:
                    found = pattern.fullmatch(candidate)
                    if found and all(
                        bound.get(n, found.group(f"g{i}")) == found.group(f"g{i}")
                        for i, n in enumerate(names, 1)
                    ):
                        unmatched.remove(candidate)
                        for i, name in enumerate(names, 1):
                            bound[name] = found.group(f"g{i}")
                        break
                else:
                    try:
                        unmatched.append(lines.next(deadline))
                    except queue.Empty:
                        raise AssertionError(
                            f"the bridge sent nothing like\n  {text}\nbut\n  "
                            + "\n  ".join(unmatched)
                        ) from None
                    continue
                break
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
        assert proc.stdout is not None
        proc.stdout.close()


def test_the_transcript_shows_the_bridge_request_id_the_bridge_uses() -> None:
    from agent_bridge.frontends.bridge_protocol import FIRST_REQUEST_ID

    shown = [
        json.loads(t.replace("{…}", "{}"))
        for d, t in _transcript()
        if d == "<" and "interaction/request" in t
    ]
    assert len(shown) == 1
    assert shown[0]["id"] == FIRST_REQUEST_ID
    answer = [json.loads(t) for d, t in _transcript() if d == ">" and '"result"' in t]
    assert [a["id"] for a in answer] == [FIRST_REQUEST_ID]


# =====================================================================================
# docs/testing-hosts.md
# =====================================================================================
def test_the_pytest_plugin_example_runs_in_a_new_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "cassettes").mkdir(parents=True)
    (project / "test_host.py").write_text(block(TESTING_HOSTS, "import pytest"))
    shutil.copy(CASSETTE, project / "cassettes" / "claude_fix.json")
    # no ini file, no conftest: a new project with only the plugin asked for
    done = subprocess.run(
        # pytest-asyncio (in this venv for our own tests) is switched off: a new project
        # has only what agent-bridge brings, anyio's plugin
        [sys.executable, "-m", "pytest", "-p", "agent_bridge.testing", "-p", "no:asyncio",
         "-p", "no:cacheprovider", "-q"],
        cwd=project, capture_output=True, text=True, timeout=180,
        env=_bridge_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout, done.stdout[-2000:]
    assert "skipped" not in done.stdout


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is not installed")
        pytest.skip("LOUD SKIP: node is not installed")
    return node


def test_the_node_host_example_runs_from_the_checkout(tmp_path: Path) -> None:
    if not (ROOT / ".venv" / "bin" / "agent-bridge").exists():
        pytest.skip("the checkout has no .venv (scripts/setup.sh makes it)")
    first = "node docs/examples/node_host_test.mjs tests/conformance/recorded/claude_approval.json"
    command, said = block(TESTING_HOSTS, first).splitlines()[:2]
    node = _node()
    argv = command.split()
    assert argv[0] == "node"
    done = subprocess.run(
        [node, *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=_env_without_bridge(TMPDIR=str(tmp_path)),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert said.startswith("# ") and done.stdout.strip() == said[2:]


def test_the_node_host_example_says_what_to_do_without_a_cassette(tmp_path: Path) -> None:
    node = _node()
    script = str(ROOT / "docs" / "examples" / "node_host_test.mjs")
    for args in ([], [str(tmp_path / "nope.json")]):
        done = subprocess.run(
            [node, script, *args], capture_output=True, text=True, timeout=60,
            env=_env_without_bridge(TMPDIR=str(tmp_path)),
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Usage: node node_host_test.mjs CASSETTE.json" in done.stderr, done.stderr
        assert "agent-bridge record" in done.stderr and "    at " not in done.stderr


def test_the_node_host_example_says_what_to_do_without_a_bridge(tmp_path: Path) -> None:
    node = _node()
    copy = tmp_path / "elsewhere" / "docs" / "examples" / "node_host_test.mjs"
    copy.parent.mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "examples" / "node_host_test.mjs", copy)
    done = subprocess.run(
        [node, str(copy), str(CASSETTE)], capture_output=True, text=True, timeout=60,
        env=_env_without_bridge(TMPDIR=str(tmp_path)),
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "agent-bridge was not found" in done.stderr
    assert "scripts/setup.sh" in done.stderr
    assert "ENOENT" not in done.stderr and "at " not in done.stderr.split("Next step")[0]


def test_record_and_replay_lines_run(tmp_path: Path) -> None:
    lines = block(
        TESTING_HOSTS,
        'agent-bridge exec --provider claude-code --approve once "add a test" '
        "2>err.txt >events.ndjson",
    )
    script = lines.replace("--provider claude-code", "--provider scripted")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True,
        text=True, timeout=120, env=_bridge_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    cassette = json.loads((tmp_path / "cassette.json").read_text())
    assert cassette["recorded"]["runs"][0]["input"] == "add a test"
    events = [json.loads(x) for x in (tmp_path / "events.ndjson").read_text().splitlines()]
    assert events[-1]["payload"]["type"] == "run.completed"


# =====================================================================================
# editors/acp/README.md: acpx
# =====================================================================================
ACP_CLIENTS = ROOT / ".tools" / "acp-clients"


@pytest.fixture
def acpx_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    yield home
    # acpx's queue sockets live under /tmp, named by a hash of HOME
    digest = hashlib.sha256(str(home).encode()).hexdigest()[:10]
    shutil.rmtree(Path("/tmp") / f"acpx-{digest}", ignore_errors=True)


def test_the_acpx_lines_run(tmp_path: Path, acpx_home: Path) -> None:
    node = ACP_CLIENTS / "node"
    cli = ACP_CLIENTS / "npm" / "node_modules" / "acpx" / "dist" / "cli.js"
    if not (node.exists() and cli.exists()):
        if os.environ.get("CI") == "true":
            pytest.fail("acpx is not installed (scripts/install-acp-clients.sh)")
        pytest.skip("LOUD SKIP: acpx is not installed (scripts/install-acp-clients.sh)")
    lines = block(EDITORS_ACP, 'acpx --agent "agent-bridge acp --provider claude-code" exec '
                  '"fix the tests"   # one turn, nothing kept').splitlines()  # fmt: skip
    agent = (
        f"{Path(sys.executable).parent / 'agent-bridge'} acp --provider scripted "
        f"--state-dir {tmp_path / 'state'}"
    )
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(acpx_home), "TMPDIR": str(tmp_path)}
    outputs = []
    for line in lines:
        argv = [a for a in re.findall(r'"[^"]*"|\S+', line.split("#")[0])]
        argv = [a.strip('"') for a in argv]
        assert argv[:3] == ["acpx", "--agent", "agent-bridge acp --provider claude-code"]
        done = subprocess.run(
            [str(node), str(cli), "--ttl", "1", "--agent", agent, *argv[3:]],
            cwd=work, env=env, capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
        outputs.append(done.stdout)
    assert "You said: fix the tests" in outputs[0]  # exec: one turn
    assert outputs[1].strip().startswith("ses_")  # sessions new
    assert "You said: fix the tests" in outputs[2]  # the prompt, in that session


# =====================================================================================
# docs/acp-agent.md and editors/acp/README.md: the acp command lines
# =====================================================================================
def test_the_acp_command_lines_start(tmp_path: Path) -> None:
    """Each ``agent-bridge acp`` line starts (its provider and options are checked at
    start: a misspelled option or value fails with exit 2) and ends at its input's end."""
    lines = [
        line.split("  #")[0].strip()
        for body in (block(ROOT / "docs" / "acp-agent.md", "agent-bridge acp "),
                     block(EDITORS_ACP, "agent-bridge acp --provider codex"))
        for line in body.splitlines()
    ]  # fmt: skip
    runnable = [line for line in lines if line.startswith("agent-bridge acp")]
    assert len(runnable) >= 4, lines
    (tmp_path / "demo.json").write_text('{"steps": [{"type": "echo"}]}')
    env = _env_without_bridge(HOME=str(tmp_path), AGENT_BRIDGE_STATE_DIR=str(tmp_path / "s"))
    for line in runnable:
        # the doc's fixed /tmp/ab is this test's own folder (a shared /tmp may hold a
        # journal another bridge version wrote)
        argv = [str(tmp_path / "ab") if a == "/tmp/ab" else a for a in line.split()]
        done = subprocess.run(
            [sys.executable, "-m", "agent_bridge", *argv[1:]], cwd=tmp_path, env=env,
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, (line, done.stderr[-2000:])
        assert done.stdout == "", line
    wrong = subprocess.run(
        [sys.executable, "-m", "agent_bridge", "acp", "--provider", "codex",
         "-o", "reasoningEffort=extreme"], cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 2 and "reasoningEffort" in wrong.stderr, wrong.stderr


# =====================================================================================
# README: the real agent's last step, against a stand-in model
# =====================================================================================
@pytest.mark.e2e
def test_the_real_agent_step_runs_against_a_stand_in(tmp_path: Path) -> None:
    """Step 6 of "A real agent, in six steps", as written, with the pinned Claude Code
    CLI talking to the stand-in Messages API on 127.0.0.1 instead of an account."""
    from provider_clis import require_cli
    from standins.anthropic_server import AnthropicStandIn, Text

    found = re.search(r"^6\. `(agent-bridge exec [^`]+)`", README.read_text("utf-8"), re.M)
    assert found, "README: no step 6 with an exec command"
    argv = shlex.split(found.group(1))
    claude = require_cli("claude")
    for name in ("home", "config", "work"):
        (tmp_path / name).mkdir()
    with AnthropicStandIn() as server:
        server.push(Text("It bridges editors and coding agents."))
        env = {
            **_bridge_env(tmp_path),
            "AGENT_BRIDGE_CLAUDE_PATH": claude,
            "HOME": str(tmp_path / "home"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        done = subprocess.run(
            argv, cwd=tmp_path / "work", env=env, capture_output=True, text=True,
            timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.startswith("It bridges editors and coding agents."), done.stdout
    assert "· completed (end_turn)" in done.stdout, done.stdout
