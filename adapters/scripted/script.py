"""How the scripted provider reads its ``script`` option (and ``scriptFile``).

The script language itself is a published contract, shared with ``agent-bridge record``:
:mod:`agent_bridge.wire.script`.  This is the provider's side of it: an option that does
not hold a valid script is an ``invalid_option`` error at ``session/create``, with a
``reason``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import msgspec

from agent_bridge.errors import BridgeError
from agent_bridge.wire.script import Script, decode_script, read_script_file

__all__ = ["load_script"]


def load_script(options: Mapping[str, Any], key: str = "script") -> Script | None:
    """The script given in ``options``: ``options[key]`` (inline JSON, or a string: the
    path of a JSON file holding it, relative to the bridge's working directory), else
    for the session key the file named by ``scriptFile``; ``None`` when there is none.
    Raises ``invalid_option`` naming ``key`` (or ``scriptFile``), with a ``reason`` that
    tells a missing or unreadable file, a file that is not JSON and a script that does
    not validate (the step and the field) apart."""
    path: str | None = None
    named = key  # the option the error names: the one the script came from
    try:
        value = options.get(key)
        if isinstance(value, str):
            path = value
        elif value is not None:
            return decode_script(value)
        elif key == "script" and isinstance(options.get("scriptFile"), str):
            path, named = options["scriptFile"], "scriptFile"
        if path is None:
            return None
        return read_script_file(path)
    except FileNotFoundError:
        reason = f"no script file {_shown(path)} (relative to {_shown(os.getcwd())})"
    except IsADirectoryError:
        reason = f"the script file {_shown(path)} is a directory"
    except OSError as exc:
        reason = f"the script file {_shown(path)} cannot be read ({exc.strerror or 'error'})"
    except msgspec.ValidationError as exc:
        # msgspec's own sentence about the value the host gave, e.g. "Invalid value
        # 'dance' - at `$.steps[0].type`"; the script is the host's input, not upstream's.
        reason = f"the script does not validate: {exc}"
    except ValueError as exc:
        import json  # imported by the file's reading already

        where = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        reason = f"the script file {_shown(path)} is not JSON{where}"
    raise BridgeError("invalid_option", details={"option": named, "reason": reason[:300]})


def _shown(path: str | None) -> str:
    """``path`` as a reason shows it: quoted, its middle cut when long."""
    text = repr(path or "")
    return text if len(text) <= 120 else f"{text[:58]}…{text[-58:]}"
