"""``serve``'s command line read without argparse (:func:`agent_bridge.serve_options.parse_serve`)
gives what argparse gives, or declines; and it imports no argparse."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_bridge.cli import _parser
from agent_bridge.serve_options import SERVE_OPTIONS, parse_serve


def _argparse(argv: list[str]) -> dict[str, object] | None:
    """What argparse makes of ``argv``, or ``None`` when it refuses it."""
    try:
        args, extra = _parser("serve").parse_known_args(argv)
    except SystemExit:
        return None
    return None if extra else vars(args)


_VALUES = st.sampled_from(
    [
        "auto", "newline", "content-length", "full", "normal", "off", "auto", "debug",
        "INFO", "warn", "1024", "1023", "0", "1", "-1", "2.5", "3601", "x", "", ":memory:",
        "/tmp/x.log", "/nonexistent/x.log", "=", "-", "--stdio", "1e3", "nan",
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
        "from agent_bridge.serve_options import parse_serve\n"
        "assert parse_serve(['serve', '--framing', 'newline']) is not None\n"
        "assert 'argparse' not in sys.modules\n"
        "assert 'logging' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
