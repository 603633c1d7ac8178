"""Static policy over the source tree (cases 31, 36 and the "spawn safely, in one module"
rule): processes are started only by ``bridge/processes/spawning.py``, never through a shell,
and nothing in the bridge opens a PTY or parses terminal escapes.

The checker works on the AST and resolves what each name *is* from the imports, so an
alias cannot slip past: ``import subprocess as sp``, ``from subprocess import Popen as
P``, ``from os import system``, ``x = importlib.import_module("subprocess")``,
``__import__("os").system``, ``getattr(os, "system")`` and ``y = os.system`` all resolve
to the qualified name that is checked.  The self-tests below feed it one small source per
form to prove each is caught.

Limits (documented in docs/hardening.md): a module name computed at run time
(``import_module(name)`` with a non-constant ``name``, as the provider registry does for
entry points) cannot be resolved statically and is allowed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("bridge", "rpc", "adapters")
SPAWNING_MODULE = "bridge/processes/spawning.py"
_OUTSIDE = f"process spawning outside {SPAWNING_MODULE}"

#: Forbidden everywhere, including the spawning module: shells, PTYs, terminals.
FORBIDDEN_EVERYWHERE: dict[str, str] = {
    "os.system": "runs a shell",
    "os.popen": "runs a shell",
    "subprocess.getoutput": "runs a shell",
    "subprocess.getstatusoutput": "runs a shell",
    "asyncio.create_subprocess_shell": "runs a shell",
    "pty": "PTY use",
    "tty": "terminal control",
    "termios": "terminal control",
    "os.openpty": "PTY use",
    "os.forkpty": "PTY use",
    "os.login_tty": "PTY use",
}

#: Forbidden outside the spawning module: every way of starting a process.
FORBIDDEN_OUTSIDE: dict[str, str] = {
    "subprocess": _OUTSIDE,
    "_posixsubprocess": _OUTSIDE,
    "asyncio.subprocess": _OUTSIDE,
    "asyncio.create_subprocess_exec": _OUTSIDE,
    "anyio.open_process": _OUTSIDE,
    "anyio.run_process": _OUTSIDE,
    "multiprocessing": _OUTSIDE,
    "concurrent.futures.process": _OUTSIDE,
    "concurrent.futures.ProcessPoolExecutor": _OUTSIDE,
    "os.fork": _OUTSIDE,
    "os.posix_spawn": _OUTSIDE,
    "os.posix_spawnp": _OUTSIDE,
    **{
        f"os.{name}": _OUTSIDE
        for name in (
            "execl",
            "execle",
            "execlp",
            "execlpe",
            "execv",
            "execve",
            "execvp",
            "execvpe",
            "spawnl",
            "spawnle",
            "spawnlp",
            "spawnlpe",
            "spawnv",
            "spawnve",
            "spawnvp",
            "spawnvpe",
        )
    },
}

#: Method names that start processes on any object (``loop.subprocess_exec``).
ATTRS_EVERYWHERE = {"subprocess_shell": "runs a shell"}
ATTRS_OUTSIDE = {"subprocess_exec": _OUTSIDE}

#: Terminal escape sequences in literals mean someone is parsing or emitting them.
ESCAPE_MARKERS = ("\x1b", "\\x1b", "\\x1B", "\\033", "\\u001b", "\\u001B", "\\e[")

_DYNAMIC_IMPORTERS = {"importlib.import_module", "__import__"}


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _matches(qualified: str, table: dict[str, str]) -> str | None:
    for name, why in table.items():
        if qualified == name or qualified.startswith(name + "."):
            return f"{qualified} ({why})"
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str, spawning_module: bool) -> None:
        self.path = path
        self.outside = not spawning_module
        self.aliases: dict[str, str] = {}
        self.violations: list[Violation] = []

    # ----------------------------------------------------------- resolution

    def qualify(self, node: ast.AST) -> str | None:
        """The qualified name an expression refers to, if it is resolvable."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id == "__import__":
                return "__import__"
            return None
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Call):
            func = self.qualify(node.func)
            if func in _DYNAMIC_IMPORTERS:
                return self._imported_module(node)
            is_getattr = func == "getattr" or (
                isinstance(node.func, ast.Name) and node.func.id == "getattr"
            )
            if is_getattr and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                base = self.qualify(node.args[0])
                attr = node.args[1].value
                if base is not None and isinstance(attr, str):
                    return f"{base}.{attr}"
        return None

    def _imported_module(self, call: ast.Call) -> str | None:
        if not call.args:
            return None
        arg = call.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
        if isinstance(arg, ast.JoinedStr) and arg.values:
            first = arg.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return first.value.rstrip(".") or None
        return None

    # ----------------------------------------------------------- reporting

    def report(self, node: ast.AST, qualified: str | None) -> None:
        if qualified is None:
            return
        found = _matches(qualified, FORBIDDEN_EVERYWHERE)
        if found is None and self.outside:
            found = _matches(qualified, FORBIDDEN_OUTSIDE)
        if found is not None:
            self.violations.append(Violation(self.path, getattr(node, "lineno", 0), found))

    # ----------------------------------------------------------- visitors

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.report(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases[top] = top
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:  # relative imports stay inside the project
            self.generic_visit(node)
            return
        self.report(node, module)
        for alias in node.names:
            if alias.name == "*":
                if module in ("os", "asyncio", "anyio", "subprocess", "pty", "importlib"):
                    self.violations.append(
                        Violation(self.path, node.lineno, f"from {module} import * (unresolvable)")
                    )
                continue
            qualified = f"{module}.{alias.name}"
            self.report(node, qualified)
            self.aliases[alias.asname or alias.name] = qualified
        self.generic_visit(node)

    def _bind(self, targets: list[ast.expr], value: ast.AST) -> None:
        qualified = self.qualify(value)
        if qualified is None:
            return
        for target in targets:
            if isinstance(target, ast.Name):
                self.aliases[target.id] = qualified

    def visit_Assign(self, node: ast.Assign) -> None:
        self._bind(node.targets, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._bind([node.target], node.value)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._bind([node.target], node.value)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.aliases and isinstance(node.ctx, ast.Load):
            self.report(node, self.aliases[node.id])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ATTRS_EVERYWHERE:
            self.violations.append(
                Violation(self.path, node.lineno, f".{node.attr} ({ATTRS_EVERYWHERE[node.attr]})")
            )
        elif self.outside and node.attr in ATTRS_OUTSIDE:
            self.violations.append(
                Violation(self.path, node.lineno, f".{node.attr} ({ATTRS_OUTSIDE[node.attr]})")
            )
        self.report(node, self.qualify(node))
        # Do not descend into the value: ``os.system`` is reported once, not as ``os`` too.
        if not isinstance(node.value, ast.Name):
            self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        func = self.qualify(node.func)
        if func in _DYNAMIC_IMPORTERS or (
            isinstance(node.func, ast.Name) and node.func.id == "getattr"
        ):
            self.report(node, self.qualify(node))
        for keyword in node.keywords:
            if keyword.arg == "shell" and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                self.violations.append(Violation(self.path, node.lineno, "shell= not False"))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if isinstance(value, str) and any(marker in value for marker in ESCAPE_MARKERS):
            self.violations.append(
                Violation(self.path, node.lineno, "terminal escape sequence in a literal")
            )


def check_source(source: str, path: str = "<src>", *, spawning_module: bool = False) -> list[str]:
    """Return the policy violations in ``source`` as ``path:line: what`` strings."""
    checker = _Checker(path, spawning_module)
    checker.visit(ast.parse(source, path))
    return [str(v) for v in checker.violations]


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for top in SCANNED:
        files.extend(p for p in sorted((ROOT / top).rglob("*.py")) if "__pycache__" not in p.parts)
    return files


# --------------------------------------------------------------------------- the tree


def test_source_tree_spawns_only_in_bridge_processes_and_never_through_a_shell() -> None:
    files = scanned_files()
    assert len(files) > 20, "the scan found too few files; is ROOT right?"
    violations: list[str] = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        violations += check_source(
            path.read_text(encoding="utf-8"), rel, spawning_module=rel == SPAWNING_MODULE
        )
    assert violations == []


def test_the_spawning_module_is_really_the_one_that_spawns() -> None:
    """Sanity check of the exemption: checked as if it were any other module, the spawning
    module is flagged (so the tree test above is not vacuous)."""
    source = (ROOT / SPAWNING_MODULE).read_text(encoding="utf-8")
    found = check_source(source, SPAWNING_MODULE)
    assert any("subprocess_exec" in v for v in found)
    assert any("subprocess" in v for v in found)


# --------------------------------------------------------------------------- self-test

CAUGHT = {
    "plain import": "import subprocess\n",
    "import as": "import subprocess as sp\nsp.Popen(['x'])\n",
    "from import": "from subprocess import Popen\n",
    "from import as": "from subprocess import Popen as P\nP(['x'])\n",
    "from os import system": "from os import system\nsystem('ls')\n",
    "from os import system as s": "from os import system as s\ns('ls')\n",
    "os.system": "import os\nos.system('ls')\n",
    "os.popen": "import os\nos.popen('ls')\n",
    "import os as o": "import os as o\no.execv('/bin/ls', ['ls'])\n",
    "os.fork": "import os\nos.fork()\n",
    "os.spawnv": "import os\nos.spawnv(os.P_WAIT, '/bin/ls', ['ls'])\n",
    "os.posix_spawn": "import os\nos.posix_spawn('/bin/ls', ['ls'], {})\n",
    "import_module": "import importlib\nm = importlib.import_module('subprocess')\nm.run(['x'])\n",
    "import_module from": "from importlib import import_module as im\nim('subprocess')\n",
    "import_module f-string": "import importlib\nimportlib.import_module(f'subprocess')\n",
    "__import__": "__import__('subprocess').Popen(['x'])\n",
    "__import__ os.system": "__import__('os').system('ls')\n",
    "getattr": "import os\ngetattr(os, 'system')('ls')\n",
    "rebinding": "import os\nrun = os.system\nrun('ls')\n",
    "module rebinding": "import os\nx = os\nx.popen('ls')\n",
    "walrus": "import os\n(f := os.execvp)\n",
    "asyncio shell": "import asyncio\nasyncio.create_subprocess_shell('ls')\n",
    "asyncio exec": "import asyncio\nasyncio.create_subprocess_exec('ls')\n",
    "asyncio exec from": "from asyncio import create_subprocess_exec as c\n",
    "asyncio.subprocess": "import asyncio.subprocess\n",
    "loop.subprocess_exec": "async def f(loop):\n    await loop.subprocess_exec(P, 'ls')\n",
    "loop.subprocess_shell": "async def f(loop):\n    await loop.subprocess_shell(P, 'ls')\n",
    "anyio.open_process": "import anyio\nanyio.open_process(['ls'])\n",
    "anyio.run_process from": "from anyio import run_process\n",
    "multiprocessing": "import multiprocessing\n",
    "process pool": "from concurrent.futures import ProcessPoolExecutor\n",
    "pty": "import pty\npty.spawn('sh')\n",
    "os.openpty": "import os\nos.openpty()\n",
    "termios": "import termios\n",
    "shell=True": "run(['ls'], shell=True)\n",
    "shell=variable": "run(['ls'], shell=flag)\n",
    "star import": "from os import *\n",
    "escape regex": "import re\nANSI = re.compile(r'\\x1b\\[[0-9;]*m')\n",
    "escape char": "CLEAR = '\\x1b[2J'\n",
    "escape octal": "CLEAR = '\\\\033[2J'\n",
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_checker_catches_every_alias_form(name: str) -> None:
    assert check_source(CAUGHT[name]) != [], f"not caught: {name}"


NOT_CAUGHT = {
    "the spawning API": "from agent_bridge.processes import ProcessSpec, spawn\n",
    "os.path and environ": "import os\nos.path.join('a', 'b')\nos.environ.get('X')\n",
    "a variable called system": "system = 'linux'\nprint(system)\n",
    "shell=False": "spawn(argv, shell=False)\n",
    "dynamic import_module": "import importlib\nimportlib.import_module(name)\n",
    "wire module import": "import importlib\nimportlib.import_module(f'agent_bridge.wire.{n}')\n",
    "anyio otherwise": "import anyio\nanyio.create_task_group()\n",
    "asyncio otherwise": "import asyncio\nasyncio.get_running_loop()\n",
}


@pytest.mark.parametrize("name", sorted(NOT_CAUGHT))
def test_checker_leaves_ordinary_code_alone(name: str) -> None:
    assert check_source(NOT_CAUGHT[name]) == []


def test_checker_exempts_only_spawning_from_the_spawning_module() -> None:
    assert check_source("import subprocess\n", spawning_module=True) == []
    assert (
        check_source("async def f(l):\n    await l.subprocess_exec(P)\n", spawning_module=True)
        == []
    )
    # A shell, a PTY or os.system is forbidden even there.
    assert check_source("import os\nos.system('x')\n", spawning_module=True) != []
    assert check_source("run(x, shell=True)\n", spawning_module=True) != []
    assert check_source("import pty\n", spawning_module=True) != []


def test_violation_names_file_and_line() -> None:
    found = check_source("x = 1\nimport os\nos.system('ls')\n", "pkg/mod.py")
    assert found == ["pkg/mod.py:3: os.system (runs a shell)"]
