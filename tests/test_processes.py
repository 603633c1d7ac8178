"""Tests for bridge.processes with real child processes (no mocks).

Covers bad-input-and-faults cases 29-32 and 34-38: stderr floods, blocked stdout,
SIGTERM-ignoring children with pipe-holding grandchildren, cancelled owners, missing
binaries, parent death, argv injection, environment leaks and redaction.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import pytest

from agent_bridge.processes import (
    CHILD_ENV_ALLOWLIST,
    PDEATHSIG_SUPPORTED,
    ChildProcess,
    ProcessSpec,
    SpawnError,
    build_child_env,
    redact,
    spawn,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


# --------------------------------------------------------------------------- helpers


def py_spec(code: str, *args: str, **kwargs: object) -> ProcessSpec:
    """A spec running ``python -c code args...`` with the allowlisted environment."""
    env = kwargs.pop("env", None) or build_child_env()
    return ProcessSpec(
        (PY, "-c", textwrap.dedent(code), *args),
        kwargs.pop("cwd", None),  # type: ignore[arg-type]
        env,  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )


@asynccontextmanager
async def running(spec: ProcessSpec) -> AsyncIterator[ChildProcess]:
    async with anyio.create_task_group() as tg:
        child = await spawn(spec, tg)
        try:
            yield child
        finally:
            await child.stop(eof_grace=0.5, term_grace=0.5)


async def read_until(
    stream: anyio.abc.ByteReceiveStream, needle: bytes, timeout: float = 5
) -> bytes:
    data = b""
    with anyio.fail_after(timeout):
        while needle not in data:
            data += await stream.receive()
    return data


async def read_all(stream: anyio.abc.ByteReceiveStream, timeout: float = 5) -> bytes:
    data = b""
    with anyio.fail_after(timeout):
        while True:
            try:
                data += await stream.receive()
            except anyio.EndOfStream:
                return data


def proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name, or None if no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return data[data.rindex(")") + 2 :].split()


def is_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] != "Z"


def live_group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = proc_stat(int(entry.name))
        if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


async def eventually(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await anyio.sleep(0.02)
    return predicate()


# --------------------------------------------------------------------------- spec


def test_str_argv_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        ProcessSpec("python -c 'print(1)'", None, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ProcessSpec(b"python", None, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ProcessSpec((PY, 1), None, {})  # type: ignore[arg-type]


@pytest.mark.parametrize("argv", [(), ("",), (PY, "a\0b"), ("x\0",)])
def test_bad_argv_is_a_value_error(argv: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        ProcessSpec(argv, None, {})


def test_spec_normalises_argv_and_freezes_env() -> None:
    env = {"PATH": "/bin"}
    spec = ProcessSpec([PY, "-V"], None, env)  # type: ignore[arg-type]
    assert spec.argv == (PY, "-V")
    assert spec.name == os.path.basename(PY)
    env["PATH"] = "/changed"
    assert spec.env["PATH"] == "/bin"
    with pytest.raises(ValueError):
        ProcessSpec((PY,), None, {"A": "x\0y"})
    with pytest.raises(ValueError):
        ProcessSpec((PY,), None, {"A=B": "x"})
    with pytest.raises(ValueError):
        ProcessSpec((PY,), None, {}, stderr_tail_bytes=-1)


# --------------------------------------------------------------------------- spawn errors


async def test_missing_executable_is_a_typed_error() -> None:
    async with anyio.create_task_group() as tg:
        for argv0 in ("agent-bridge-no-such-binary-7f3a", "/nonexistent/agent-bridge-cli"):
            with pytest.raises(SpawnError) as info:
                await spawn(ProcessSpec((argv0, "--version"), None, build_child_env()), tg)
            assert info.value.reason == "executable_not_found"
            assert info.value.executable == argv0


async def test_non_executable_file_is_permission_denied(tmp_path: Path) -> None:
    script = tmp_path / "provider"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    async with anyio.create_task_group() as tg:
        with pytest.raises(SpawnError) as info:
            await spawn(ProcessSpec((str(script),), None, build_child_env()), tg)
        assert info.value.reason == "permission_denied"
        env = build_child_env({"PATH": str(tmp_path)})
        with pytest.raises(SpawnError) as info:
            await spawn(ProcessSpec(("provider",), None, env), tg)
        assert info.value.reason == "permission_denied"


async def test_executable_is_looked_up_on_the_childs_path(tmp_path: Path) -> None:
    script = tmp_path / "fake-provider"
    script.write_text(f"#!{PY}\nimport sys\nprint('fake', sys.argv[1:])\n")
    script.chmod(0o755)
    env = build_child_env({"PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"})
    async with running(ProcessSpec(("fake-provider", "x"), None, env)) as child:
        assert await read_all(child.stdout) == b"fake ['x']\n"
        assert await child.wait() == 0


async def test_missing_working_directory_is_spawn_failed(tmp_path: Path) -> None:
    spec = py_spec("print(1)", cwd=str(tmp_path / "missing"))
    async with anyio.create_task_group() as tg:
        with pytest.raises(SpawnError) as info:
            await spawn(spec, tg)
        assert info.value.reason == "spawn_failed"


# --------------------------------------------------------------------------- I/O


async def test_echo_round_trip_and_clean_exit_on_eof() -> None:
    code = """
        import sys
        for line in sys.stdin.buffer:
            sys.stdout.buffer.write(b"echo:" + line)
            sys.stdout.buffer.flush()
    """
    async with running(py_spec(code)) as child:
        await child.stdin.send(b"hello\n")
        assert await read_until(child.stdout, b"\n") == b"echo:hello\n"
        await child.stdin.send("héllo wörld 🚀\n".encode())
        assert await read_until(child.stdout, b"\n") == "echo:héllo wörld 🚀\n".encode()
        await child.stdin.aclose()
        await child.stdin.aclose()  # idempotent
        with anyio.fail_after(5):
            assert await child.wait() == 0
        started = time.monotonic()
        assert await child.stop() == 0
        assert time.monotonic() - started < 2.0
        assert child.returncode == 0


async def test_argv_elements_reach_the_child_verbatim() -> None:
    hostile = [
        "; rm -rf ~",
        "$(id)",
        "`id`",
        "line one\nline two",
        "-rf",
        "--help",
        "'single' \"double\" \\back",
        "* ? [a-z] ~ $HOME | & > /dev/null",
        "ünïcødé ✓",
        "",
    ]
    async with running(
        py_spec("import json, sys; print(json.dumps(sys.argv[1:]))", *hostile)
    ) as child:
        assert json.loads(await read_all(child.stdout)) == hostile
        assert await child.wait() == 0


async def test_send_after_the_child_exited_is_broken_resource() -> None:
    async with running(py_spec("pass")) as child:
        with anyio.fail_after(5):
            assert await child.wait() == 0
        with pytest.raises(anyio.BrokenResourceError):
            for _ in range(50):
                await child.stdin.send(b"data nobody reads\n")
                await anyio.sleep(0.02)
    # The pipes were closed by stop(); closing again is fine, using them is an error.
    await child.stdout.aclose()
    await child.stdin.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await child.stdout.receive()
    with pytest.raises(anyio.ClosedResourceError):
        await child.stdin.send(b"x")


async def test_stderr_flood_does_not_deadlock_and_the_tail_is_capped() -> None:
    code = """
        import sys
        chunk = b"e" * 65536
        for _ in range(320):  # 20 MiB, stdout stays silent
            sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.write(b"\\nTAIL-END\\n")
        sys.stderr.buffer.flush()
    """
    limit = 4096
    started = time.monotonic()
    async with running(py_spec(code, stderr_tail_bytes=limit)) as child:
        with anyio.fail_after(10):
            assert await child.wait() == 0
        assert await child.stop() == 0
    assert time.monotonic() - started < 10
    assert child.stderr_bytes_received == 320 * 65536 + len(b"\nTAIL-END\n")
    raw = child.stderr_tail(redact=False)
    assert len(raw.encode()) == limit
    assert raw.endswith("e\nTAIL-END\n")
    # Redacted tails drop the partial first line of a truncated tail.
    assert child.stderr_tail() == "TAIL-END\n"


@pytest.mark.parametrize("extra", [0, 1])
async def test_stderr_tail_limit_at_n_and_n_plus_one(extra: int) -> None:
    limit = 1000
    code = f"import sys; sys.stderr.write('y' * {extra} + 'x' * {limit})"
    async with running(py_spec(code, stderr_tail_bytes=limit)) as child:
        with anyio.fail_after(5):
            await child.wait()
        await child.stop()
    assert child.stderr_bytes_received == limit + extra
    assert child.stderr_tail(redact=False) == "x" * limit
    # Truncated and without a newline: nothing safe to show once redaction is on.
    assert child.stderr_tail() == ("x" * limit if extra == 0 else "")


async def test_stderr_tail_is_redacted() -> None:
    code = """
        import sys
        sys.stderr.write("Error: 401 with key sk-ant-api03-abcdefghijKLMNOP_qrst\\n")
        sys.stderr.write("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig\\n")
    """
    async with running(py_spec(code)) as child:
        with anyio.fail_after(5):
            await child.wait()
        await child.stop()
    tail = child.stderr_tail()
    assert "sk-ant" not in tail
    assert "eyJ" not in tail
    assert "Error: 401 with key [REDACTED]" in tail
    assert "sk-ant-api03" in child.stderr_tail(redact=False)


# --------------------------------------------------------------------------- stop


@linux_only
async def test_stop_kills_group_when_term_is_ignored_and_grandchild_holds_pipes() -> None:
    grandchild = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('grandchild', os.getpid(), flush=True); time.sleep(60)"
    )
    code = f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen([sys.executable, "-c", {grandchild!r}])  # inherits our pipes
        print("child ready", flush=True)
        time.sleep(60)
    """
    async with anyio.create_task_group() as tg:
        child = await spawn(py_spec(code), tg)
        try:
            out = b""
            with anyio.fail_after(5):
                while b"child ready\n" not in out or not re.search(rb"grandchild \d+\n", out):
                    out += await child.stdout.receive()
            match = re.search(rb"grandchild (\d+)\n", out)
            assert match is not None
            gpid = int(match.group(1))
            assert is_alive(child.pid)
            assert is_alive(gpid)
            assert set(live_group_members(child.pgid)) == {child.pid, gpid}
            started = time.monotonic()
            code_ = await child.stop(eof_grace=0.5, term_grace=0.5, kill_grace=2.0)
            elapsed = time.monotonic() - started
        finally:
            await child.stop()
    assert code_ == -signal.SIGKILL
    assert 1.0 <= elapsed < 3.0
    assert live_group_members(child.pgid) == []
    assert proc_stat(child.pid) is None  # reaped: no zombie of ours
    assert not is_alive(gpid)  # dead; init reaps it (may briefly be a zombie of init's)
    with pytest.raises(ProcessLookupError):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            os.killpg(child.pgid, 0)
            await anyio.sleep(0.05)
    assert await child.stop() == -signal.SIGKILL  # idempotent


@linux_only
async def test_stop_from_a_cancelled_task_still_reaps_the_child() -> None:
    code = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(60)
    """
    events: list[str] = []
    async with anyio.create_task_group() as outer:
        child = await spawn(py_spec(code), outer)
        await read_until(child.stdout, b"ready\n")

        async def owner() -> None:
            try:
                events.append(f"stopped {await child.stop(eof_grace=0.5, term_grace=0.5)}")
                await anyio.sleep(30)
            except anyio.get_cancelled_exc_class():
                events.append("cancelled")
                raise

        started = time.monotonic()
        async with anyio.create_task_group() as inner:
            inner.start_soon(owner)
            await anyio.sleep(0.2)
            inner.cancel_scope.cancel()
        elapsed = time.monotonic() - started
    assert events == [f"stopped {-signal.SIGKILL}", "cancelled"]
    assert 1.0 <= elapsed < 4.0
    assert child.returncode == -signal.SIGKILL
    assert proc_stat(child.pid) is None
    assert live_group_members(child.pgid) == []


@pytest.mark.parametrize("ignore_term", [False, True])
async def test_stop_finishes_in_budget_while_child_is_blocked_writing_stdout(
    ignore_term: bool,
) -> None:
    code = f"""
        import signal, sys
        if {ignore_term}:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        chunk = b"o" * 65536
        while True:
            sys.stdout.buffer.write(chunk)
    """
    async with anyio.create_task_group() as tg:
        child = await spawn(py_spec(code), tg)
        await read_until(child.stdout, b"o")  # running; then nobody reads stdout again
        await anyio.sleep(0.5)  # the pipe and our bounded buffer fill up; child blocks
        assert child.returncode is None
        started = time.monotonic()
        code_ = await child.stop(eof_grace=0.5, term_grace=0.5, kill_grace=2.0)
        elapsed = time.monotonic() - started
    assert code_ == (-signal.SIGKILL if ignore_term else -signal.SIGTERM)
    assert elapsed < (3.0 if ignore_term else 2.5)


async def test_concurrent_stops_return_the_same_status() -> None:
    results: list[int] = []
    async with anyio.create_task_group() as tg:
        child = await spawn(py_spec("import time; time.sleep(60)"), tg)

        async def stopper() -> None:
            results.append(await child.stop(eof_grace=0.2, term_grace=2.0))

        async with anyio.create_task_group() as stoppers:
            for _ in range(3):
                stoppers.start_soon(stopper)
    assert results == [-signal.SIGTERM] * 3
    assert await child.stop() == -signal.SIGTERM


@linux_only
async def test_spawn_in_a_cancelled_scope_leaves_no_process() -> None:
    marker = f"agent-bridge-spawn-cancel-{os.getpid()}-{time.monotonic_ns()}"

    def processes_with_marker() -> list[int]:
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            except OSError:
                continue
            if marker.encode() in cmdline and is_alive(int(entry.name)):
                pids.append(int(entry.name))
        return pids

    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await spawn(py_spec("import time; time.sleep(30)", marker), tg)
        assert scope.cancelled_caught
    assert processes_with_marker() == []


# --------------------------------------------------------------------------- environment


async def test_child_environment_is_allowlisted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO_API_KEY", "sk-parent-secret-000000")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_parenttoken")
    monkeypatch.setenv("MY_SECRET", "hunter2")
    monkeypatch.setenv("DB_PASSWORD", "hunter3")
    monkeypatch.setenv("UNRELATED_SETTING", "1")
    monkeypatch.setenv("NEEDED_BY_ADAPTER", "yes")
    monkeypatch.setenv("TERM", "xterm-256color")
    env = build_child_env({"DECLARED_API_KEY": "declared-value"}, passthrough=["NEEDED_BY_ADAPTER"])
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    async with running(py_spec(dump, env=env)) as child:
        child_env = json.loads(await read_all(child.stdout))
    for name in (
        "FOO_API_KEY",
        "GITHUB_TOKEN",
        "MY_SECRET",
        "DB_PASSWORD",
        "UNRELATED_SETTING",
        "TERM",
    ):
        assert name not in child_env
    assert child_env["DECLARED_API_KEY"] == "declared-value"
    assert child_env["NEEDED_BY_ADAPTER"] == "yes"
    assert child_env["PATH"] == os.environ["PATH"]
    allowed = CHILD_ENV_ALLOWLIST | {"DECLARED_API_KEY", "NEEDED_BY_ADAPTER"}
    assert set(child_env) - {"LC_CTYPE"} <= allowed  # Python may coerce LC_CTYPE itself

    # A secret reaches the child only when the adapter names it.
    env = build_child_env(passthrough=["GITHUB_TOKEN"])
    async with running(py_spec(dump, env=env)) as child:
        assert json.loads(await read_all(child.stdout))["GITHUB_TOKEN"] == "ghp_parenttoken"


def test_build_child_env_from_an_explicit_parent() -> None:
    parent = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "OPENAI_API_KEY": "sk-x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "SOME_TOKEN": "t",
        "SHELL": "/bin/zsh",
        "EXTRA": "e",
    }
    env = build_child_env(
        {"HOME": "/override", "X": "1"}, passthrough=("EXTRA", "ABSENT"), parent=parent
    )
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/override",
        "LANG": "C.UTF-8",
        "EXTRA": "e",
        "X": "1",
    }
    with pytest.raises(TypeError):
        build_child_env(passthrough="PATH", parent=parent)
    with pytest.raises(ValueError):
        build_child_env({"BAD=NAME": "1"}, parent=parent)


# --------------------------------------------------------------------------- parent death


@pytest.mark.skipif(not PDEATHSIG_SUPPORTED, reason="parent-death signal is Linux-only")
async def test_child_has_parent_death_signal_set() -> None:
    code = """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        sig = ctypes.c_int(0)
        assert libc.prctl(2, ctypes.byref(sig), 0, 0, 0) == 0  # PR_GET_PDEATHSIG
        print(sig.value)
    """
    async with running(py_spec(code)) as child:
        assert int(await read_all(child.stdout)) == signal.SIGKILL


FAKE_BRIDGE = """
import sys
import anyio
import agent_bridge.processes.spawning
from agent_bridge.processes import ProcessSpec, build_child_env, spawn

if sys.argv[1] == "without-pdeathsig":  # control: show the signal is what kills the child
    agent_bridge.processes.spawning._pdeathsig_preexec = lambda parent_pid: None
    agent_bridge.processes.spawning._reaper.enabled = False  # (the reaper would kill it too)

async def main() -> None:
    async with anyio.create_task_group() as tg:
        spec = ProcessSpec(
            (sys.executable, "-c", "import time; time.sleep(30)"), None, build_child_env()
        )
        child = await spawn(spec, tg)
        print(child.pid, flush=True)
        await anyio.sleep(60)

anyio.run(main)
"""


@pytest.mark.skipif(not PDEATHSIG_SUPPORTED, reason="parent-death signal is Linux-only")
@pytest.mark.parametrize("mode", ["with-pdeathsig", "without-pdeathsig"])
async def test_children_die_when_the_bridge_is_sigkilled(tmp_path: Path, mode: str) -> None:
    fake_bridge = tmp_path / "fake_bridge.py"
    fake_bridge.write_text(FAKE_BRIDGE)
    env = build_child_env({"PYTHONPATH": str(REPO_ROOT)})
    async with running(ProcessSpec((PY, str(fake_bridge), mode), None, env)) as bridge:
        provider_pid = int(await read_until(bridge.stdout, b"\n", timeout=10))
        try:
            assert is_alive(provider_pid)
            os.kill(bridge.pid, signal.SIGKILL)
            with anyio.fail_after(5):
                assert await bridge.wait() == -signal.SIGKILL
            if mode == "with-pdeathsig":
                assert await eventually(lambda: not is_alive(provider_pid), timeout=5)
            else:
                await anyio.sleep(1.0)
                assert is_alive(provider_pid)  # it would have leaked
        finally:
            if is_alive(provider_pid):
                os.kill(provider_pid, signal.SIGKILL)
        assert bridge.stderr_tail() == ""


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize(
    ("text", "secret", "expected"),
    [
        ("key sk-ant-abc123def456ghi789 rejected", "sk-ant", "key [REDACTED] rejected"),
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
            "eyJ",
            "Authorization: [REDACTED]",
        ),
        ("sent Bearer eyJhbGciOiJIUzI1NiJ9.x", "eyJ", "sent Bearer [REDACTED]"),
        (
            "curl -H 'x-api-key: abc' https://api",
            "abc",
            "curl -H 'x-api-key: [REDACTED]' https://api",
        ),
        ("x-api-key: abc", "abc", "x-api-key: [REDACTED]"),
        ("GET /v1?api_key=abc123&model=m", "abc123", "GET /v1?api_key=[REDACTED]&model=m"),
        (
            '{"apiKey": "s3cr3t value", "model": "m"}',
            "s3cr3t",
            '{"apiKey": "[REDACTED]", "model": "m"}',
        ),
        ("ANTHROPIC_API_KEY=sk-ant-zzzzzzzzzz", "zzzz", "ANTHROPIC_API_KEY=[REDACTED]"),
        ("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_", "GITHUB_TOKEN=[REDACTED]"),
        ("password: hunter2", "hunter2", "password: [REDACTED]"),
        ("https://user:pa55@example.com/x", "pa55", "https://[REDACTED]@example.com/x"),
        ("proxy-authorization: Basic dXNlcjpwYXNz", "dXNl", "proxy-authorization: [REDACTED]"),
    ],
)
def test_redact_removes_secrets(text: str, secret: str, expected: str) -> None:
    assert redact(text) == expected
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "input_tokens: 42, output_tokens: 7",
        "import sklearn; ask-me-anything",
        "Error: rate limited (429), retry in 3s",
        "",
    ],
)
def test_redact_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "unit",
    [
        "a_",
        "x-",
        "token",
        'token:"',
        "token: ",
        "eyJaaaa-",
        "x://a:",
        "sk-",
        "ghp_a",
        "bearer ",
        "AKIA",
    ],
)
def test_redact_is_linear_on_pathological_input(unit: str) -> None:
    text = unit * (200_000 // len(unit))
    started = time.monotonic()
    redact(text)
    assert time.monotonic() - started < 1.0
