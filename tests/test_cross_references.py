"""Every dotted name the package's docstrings and comments point at exists.

The folders are ``bridge/``, ``rpc/`` and ``adapters/`` but the one import root is
``agent_bridge``: a cross-reference written by the folder (``bridge.journal.base.History``,
``rpc.framing``) names nothing.  Each ``:mod:``/``:class:``/``:func:``… role and each
``agent_bridge.…`` name in double backquotes must import (a module) or be an attribute,
annotation or field of what does.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("bridge", "rpc", "adapters")

#: a dotted name under a folder's name, not the package's (``bridge.x``, ``rpc.x``)
_OLD_ROOT = re.compile(r"(?<![\w/.-])((?:bridge|rpc|adapters)\.[a-z_]\w*(?:\.\w+)*)")
#: ``:role:`~agent_bridge.x.y``` and ````agent_bridge.x.y````
_REFERENCE = re.compile(r":\w+:`~?(agent_bridge(?:\.\w+)+)`|``(agent_bridge(?:\.\w+)+)``")
#: names that are not Python objects: the providers' entry-point group
_NOT_OBJECTS = {"agent_bridge.providers"}


def _lines() -> list[tuple[str, int, str]]:
    out = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.lstrip().startswith(("from ", "import ")):
                    out.append((f"{path.relative_to(ROOT)}:{number}", number, line))
    return out


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if obj is not None and hasattr(obj, attr):
                obj = getattr(obj, attr)
                continue
            declared = (
                *(getattr(obj, "__annotations__", None) or {}),
                *(getattr(obj, "__slots__", None) or ()),
                *(getattr(obj, "__struct_fields__", None) or ()),
            )
            if attr not in declared:
                return False
            obj = None  # an instance attribute: nothing further to look into
        return True
    return False


def test_no_cross_reference_uses_a_folder_name() -> None:
    stale = [
        f"{where}: {m.group(1)}" for where, _, line in _lines() for m in _OLD_ROOT.finditer(line)
    ]
    assert not stale, "write agent_bridge.… instead:\n" + "\n".join(stale)


def test_every_cross_reference_resolves() -> None:
    names: dict[str, str] = {}
    for where, _, line in _lines():
        for m in _REFERENCE.finditer(line):
            names.setdefault(m.group(1) or m.group(2), where)
    assert len(names) > 50  # the scan sees the references
    broken = [
        f"{where}: {name}"
        for name, where in sorted(names.items())
        if name not in _NOT_OBJECTS and not _resolves(name)
    ]
    assert not broken, "\n".join(broken)
