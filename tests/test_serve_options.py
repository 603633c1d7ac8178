"""``serve``'s command line read without argparse
(:func:`agent_bridge.commands.options.parse_serve`)
gives what argparse gives, or declines; and it imports no argparse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_bridge.cli import _parser
from agent_bridge.commands.options import (
    JOURNAL_FLAGS,
    SERVE_OPTIONS,
    history_settings,
    parse_serve,
)


def _argparse(argv: list[str]) -> dict[str, object] | None:
    """What argparse makes of ``argv``, or ``None`` when it refuses it."""
    try:
        args, extra = _parser("serve").parse_known_args(argv)
    except SystemExit:
        return None
    return None if extra else vars(args)


_VALUES = st.sampled_from(
    [
        "auto",
        "newline",
        "content-length",
        "full",
        "normal",
        "off",
        "auto",
        "debug",
        "INFO",
        "warn",
        "1024",
        "1023",
        "0",
        "1",
        "-1",
        "2.5",
        "3601",
        "x",
        "",
        ":memory:",
        "/tmp/x.log",
        "/nonexistent/x.log",
        "=",
        "-",
        "--stdio",
        "1e3",
        "nan",
    ]
)
_FLAGS = st.sampled_from([o.flag for o in SERVE_OPTIONS] + ["--fram", "--bogus", "-h", "--"])


@st.composite
def _argvs(draw: st.DrawFn) -> list[str]:
    argv = ["serve"]
    for _ in range(draw(st.integers(0, 5))):
        flag = draw(_FLAGS)
        form = draw(st.sampled_from(["separate", "equals", "bare"]))
        if form == "separate":
            argv += [flag, draw(_VALUES)]
        elif form == "equals":
            argv.append(f"{flag}={draw(_VALUES)}")
        else:
            argv.append(flag)
    return argv


@settings(max_examples=300, deadline=None)
@given(_argvs())
def test_what_it_reads_argparse_reads_the_same(argv: list[str]) -> None:
    fast = parse_serve(argv)
    if fast is not None:
        assert vars(fast) == _argparse(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve"],
        ["serve", "--framing", "content-length"],
        ["serve", "--framing=newline", "--stdio", "--log-level", "debug"],
        ["serve", "--state-dir", ":memory:", "--memory-history-mb", "8"],
        ["serve", "--max-inflight", "5", "--max-inflight", "7", "--journal-sync", "full"],
        ["serve", "--retain-days", "2", "--retain-mb", "0.5", "--daemon", "auto"],
    ],
)
def test_a_host_s_command_lines_are_read_without_argparse(argv: list[str]) -> None:
    fast = parse_serve(argv)
    assert fast is not None
    assert vars(fast) == _argparse(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--help"],
        ["serve", "--fram", "newline"],  # an abbreviation: argparse decides
        ["serve", "--max-inflight", "-1"],
        ["serve", "--max-message-bytes", "10"],
        ["serve", "--stdio=yes"],
        ["serve", "extra"],
        ["serve", "--framing"],
        ["demo"],
        [],
    ],
)
def test_anything_unusual_is_left_to_argparse(argv: list[str]) -> None:
    assert parse_serve(argv) is None


def test_reading_a_serve_command_line_imports_no_argparse() -> None:
    code = (
        "import sys\n"
        "from agent_bridge.cli import main\n"
        "from agent_bridge.commands.options import parse_serve\n"
        "assert parse_serve(['serve', '--framing', 'newline']) is not None\n"
        "assert 'argparse' not in sys.modules\n"
        "assert 'logging' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ------------------------------------------------------------- the journal's options


_JOURNAL_LINE = [
    "--state-dir",
    "/tmp/some-state",
    "--memory-history-mb",
    "8",
    "--retain-days",
    "2.5",
    "--retain-mb",
    "100",
    "--journal-sync",
    "normal",
    "--journal-writer",
    "process",
    "--journal-fault-limit",
    "7",
]


@pytest.mark.parametrize("command", ["acp", "daemon"])
def test_every_command_that_runs_a_runtime_takes_serve_s_journal_options(command: str) -> None:
    """``acp`` and ``daemon`` read the journal's options from serve's table: the same
    values, the same defaults, the same checks."""
    dests = [flag[2:].replace("-", "_") for flag in JOURNAL_FLAGS]
    serve = vars(_parser().parse_args(["serve", *_JOURNAL_LINE]))
    other = vars(_parser().parse_args([command, *_JOURNAL_LINE]))
    assert {d: other[d] for d in dests} == {d: serve[d] for d in dests}
    assert history_settings(_parser().parse_args([command, *_JOURNAL_LINE])) == history_settings(
        _parser().parse_args(["serve", *_JOURNAL_LINE])
    )
    defaults_serve = vars(_parser().parse_args(["serve"]))
    defaults_other = vars(_parser().parse_args([command]))
    assert {d: defaults_other[d] for d in dests} == {d: defaults_serve[d] for d in dests}
    with pytest.raises(SystemExit):
        _parser().parse_args([command, "--journal-fault-limit", "3601"])  # serve's range


def test_history_settings_are_what_open_history_takes() -> None:
    args = _parser().parse_args(["serve", *_JOURNAL_LINE])
    settings_ = history_settings(args)
    assert settings_["sync"] == "normal"
    assert settings_["memory_bytes"] == 8 * 1024 * 1024
    assert settings_["retention"].max_age_days == 2.5
    assert settings_["retention"].max_bytes == 100 * 1024 * 1024
    assert settings_["writer"] == "process"


def test_the_journal_writer_comes_from_the_flag_then_the_config_file_then_auto(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG", str(config))
    assert history_settings(_parser().parse_args(["serve"]))["writer"] == "auto"
    config.write_text('[journal]\nwriter = "thread"\n')
    assert history_settings(_parser().parse_args(["serve"]))["writer"] == "thread"
    line = ["serve", "--journal-writer", "process"]
    assert history_settings(_parser().parse_args(line))["writer"] == "process"
    config.write_text('[journal]\nwriter = "fast"\n')  # not a writer: the default
    assert history_settings(_parser().parse_args(["serve"]))["writer"] == "auto"
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--journal-writer", "fast"])


def test_the_journal_s_defaults_are_the_options_defaults() -> None:
    """The defaults ``serve`` (and ``acp``, ``daemon``) parse to are the journal's own, so a
    bridge embedded without the command line keeps the same promises."""
    import inspect

    from agent_bridge.journal import open_history
    from agent_bridge.journal.memory import DEFAULT_MEMORY_HISTORY_MB
    from agent_bridge.journal.schema import DEFAULT_SYNC

    settings_ = history_settings(_parser().parse_args(["serve"]))
    assert settings_["sync"] == DEFAULT_SYNC == "full"
    assert settings_["writer"] == inspect.signature(open_history).parameters["writer"].default
    assert settings_["writer"] == "auto"
    assert settings_["memory_bytes"] == DEFAULT_MEMORY_HISTORY_MB * 1024 * 1024


def test_acp_runs_on_a_journal_opened_with_those_options(tmp_path: Path) -> None:
    """``agent-bridge acp`` with every journal option answers ``initialize`` and creates a
    session in the journal it opened."""
    state = tmp_path / "state"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        },
    ]
    line = [a if a != "/tmp/some-state" else str(state) for a in _JOURNAL_LINE]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_bridge", "acp", "--provider", "scripted", *line],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        proc.stdin.flush()
        by_id: dict[object, dict[str, object]] = {}
        while 2 not in by_id:  # (stdin stays open: at its EOF the client is gone)
            reply = proc.stdout.readline()
            assert reply, proc.stderr.read() if proc.stderr else b""
            message = json.loads(reply)
            by_id[message.get("id")] = message
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert "result" in by_id[1], by_id
    result = by_id[2]["result"]
    assert isinstance(result, dict) and "sessionId" in result, by_id
    assert (state / "journal.sqlite3").exists()


@pytest.mark.parametrize("command", ["serve", "acp", "daemon", "exec"])
def test_every_command_with_an_interrupt_grace_checks_it_as_serve_does(command: str) -> None:
    """``--interrupt-grace`` comes from serve's table everywhere: the same default, range
    and help (``exec`` once took any float, a negative one too)."""
    extra = ["prompt"] if command == "exec" else []
    assert _parser().parse_args([command, *extra]).interrupt_grace == 5.0
    given = _parser().parse_args([command, "--interrupt-grace", "2.5", *extra])
    assert given.interrupt_grace == 2.5
    for bad in ("-1", "3601", "soon"):
        with pytest.raises(SystemExit):
            _parser().parse_args([command, "--interrupt-grace", bad, *extra])
