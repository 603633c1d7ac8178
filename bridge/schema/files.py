"""The published files: generated as text, written into a directory, or compared with
what is there (``--check``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator

from agent_bridge.schema import javascript, jsonschema, methodmap, typescript
from agent_bridge.schema.common import (
    CJS_FILE,
    DCTS_FILE,
    DMTS_FILE,
    DTS_FILE,
    METHODS_FILE,
    MJS_FILE,
    SCHEMA_FILE,
    Json,
)

__all__ = ["generate", "write_schemas"]


def _dump(value: Json) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generate() -> dict[str, str]:
    """Return the published files as ``{file name: text}``."""
    model = jsonschema.build()
    method_map = methodmap.method_entries(model)
    return {
        SCHEMA_FILE: _dump(jsonschema.schema_document(model)),
        METHODS_FILE: _dump(methodmap.method_document(model, method_map)),
        DTS_FILE: typescript.declarations(model, method_map),
        MJS_FILE: javascript.runtime_module(model.defs),
        DMTS_FILE: javascript.runtime_declarations(),
        CJS_FILE: javascript.commonjs_module(model.defs),
        DCTS_FILE: javascript.commonjs_declarations(),
    }


def _differing(out_dir: str, files: dict[str, str]) -> Iterator[str]:
    for name, text in sorted(files.items()):
        path = os.path.join(out_dir, name)
        try:
            with open(path, "rb") as fh:
                current = fh.read()
        except FileNotFoundError:
            yield f"{path}: missing"
            continue
        if current != text.encode("utf-8"):
            yield f"{path}: differs from what the wire types generate"


def write_schemas(out_dir: str, *, check: bool = False) -> int:
    """Write the published schemas into ``out_dir`` (or, with ``check``, compare them).

    Returns 0 on success; with ``check``, 1 when a file is missing or differs (each one is
    named on stderr).
    """
    files = generate()
    if check:
        problems = list(_differing(out_dir, files))
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print(
                f"the published schemas are out of date: run `agent-bridge schema --out {out_dir}`",
                file=sys.stderr,
            )
            return 1
        return 0
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(files):
        path = os.path.join(out_dir, name)
        data = files[name].encode("utf-8")
        try:
            with open(path, "rb") as fh:
                if fh.read() == data:
                    continue
        except FileNotFoundError:
            pass
        with open(path, "wb") as fh:
            fh.write(data)
        print(f"wrote {path}", file=sys.stderr)
    return 0
