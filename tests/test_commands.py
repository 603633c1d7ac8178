"""The command line's shape: the table of commands, what building it costs, and the
checkout's folders that must not import as packages of their own."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from agent_bridge import cli

ROOT = Path(__file__).resolve().parent.parent


def test_every_command_of_the_table_has_a_parser_and_a_runner() -> None:
    parser = cli._parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices) == list(cli.COMMANDS)  # --help lists them in the table's order
    for name in cli.COMMANDS:
        module = cli._command(name)
        assert callable(module.add_parsers) and callable(module.run), name


def test_building_every_parser_loads_no_runtime() -> None:
    """``--version``, ``--help`` and argument errors build the whole table: the command
    modules import what they run only when they run."""
    code = (
        "import sys\n"
        "from agent_bridge.cli import _parser\n"
        "_parser().format_help()\n"
        "heavy = [m for m in ('anyio', 'msgspec', 'agent_bridge.runtime', "
        "'agent_bridge.journal', 'agent_bridge.registry', 'agent_bridge.frontends', "
        "'agent_bridge.adapters') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize(
    ("folder", "package"),
    [
        ("rpc", "agent_bridge.rpc"),
        ("bridge", "agent_bridge"),
        ("adapters", "agent_bridge.adapters"),
    ],
)
def test_a_folder_of_the_checkout_does_not_import_as_its_own_package(
    folder: str, package: str
) -> None:
    """From the repository's root, ``import rpc.framing`` would load a second copy of
    the module beside ``agent_bridge.rpc.framing``; it fails, naming the real package."""
    module = {"rpc": "rpc.framing", "bridge": "bridge.cli", "adapters": "adapters.kit"}[folder]
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: "), proc.stderr
    assert f"import {package} instead" in last
    # the package itself imports as before, from the same directory
    subprocess.run(
        [sys.executable, "-c", f"import {module.replace(folder, package, 1)}"],
        cwd=ROOT,
        check=True,
        timeout=60,
    )
