"""Validating ACP messages against ACP's published ``schema.json``.

The schema comes from the npm package ``@agentclientprotocol/sdk`` (pinned in
scripts/install-provider-clis.sh, installed into .tools/npm; ``AGENT_BRIDGE_ACP_SCHEMA``
names another copy).  Without it the schema checks are skipped loudly, and fail in CI
(``AGENT_BRIDGE_REQUIRE_CLIS=1`` or ``CI=true``), like a missing provider CLI.

Every request and notification is checked against the definition of its method (the
schema marks each with ``x-method``); every result and error against the response
definition of the request it answers, paired by id and direction.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parent.parent
TOOLS_DIR = Path(os.environ.get("AGENT_BRIDGE_TOOLS_DIR") or ROOT / ".tools" / "npm")
DEFAULT = TOOLS_DIR / "node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"

Msg = dict[str, Any]


def schema_path() -> Path:
    override = os.environ.get("AGENT_BRIDGE_ACP_SCHEMA")
    path = Path(override) if override else DEFAULT
    if path.exists():
        return path
    reason = (
        f"ACP's schema.json is not installed ({path}): run scripts/install-provider-clis.sh "
        "(it installs @agentclientprotocol/sdk)"
    )
    if os.environ.get("AGENT_BRIDGE_REQUIRE_CLIS") == "1" or os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip("LOUD SKIP: " + reason)


@functools.cache
def _load(path: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text())
    return data


class AcpSchema:
    """Validators by method, from ``schema.json``."""

    def __init__(self, path: Path | None = None) -> None:
        self.schema = _load(str(path or schema_path()))
        self.defs: dict[str, Any] = self.schema["$defs"]
        self.requests: dict[str, str] = {}
        self.responses: dict[str, str] = {}
        for name, definition in self.defs.items():
            method = definition.get("x-method") if isinstance(definition, dict) else None
            if method is None:
                continue
            if name.endswith("Response"):
                self.responses[method] = name
            else:
                self.requests[method] = name

    @functools.cache  # noqa: B019 - a handful of definitions, one schema per test run
    def validator(self, name: str) -> Draft202012Validator:
        return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": self.defs})

    def errors(self, name: str, value: Any) -> list[str]:
        return [
            f"{name}: {e.message} at {list(e.absolute_path)}"
            for e in self.validator(name).iter_errors(value)
        ]

    def check_transcript(self, records: list[Msg]) -> list[str]:
        """Problems in a transcript (``{"dir": "->"|"<-", "msg": ...}`` records; ``->``
        client to agent).  Returns ``[]`` when every message fits."""
        problems: list[str] = []
        asked: dict[tuple[str, Any], str] = {}
        for record in records:
            direction, msg = record.get("dir"), record.get("msg")
            if direction not in ("->", "<-") or not isinstance(msg, dict):
                continue
            if msg.get("jsonrpc") != "2.0":
                problems.append(f"no jsonrpc 2.0 member: {msg}")
            method = msg.get("method")
            if method is not None:
                name = self.requests.get(method)
                if name is None:
                    if not str(method).startswith("_"):
                        problems.append(f"{direction} {method}: not an ACP method")
                    continue
                problems += self.errors(name, msg.get("params"))
                if "id" in msg:
                    asked[(direction, msg["id"])] = method
                continue
            # A response travels the other way from its request.
            back = "<-" if direction == "->" else "->"
            method = asked.pop((back, msg.get("id")), None)
            if method is None:
                problems.append(f"{direction} response to an unknown request {msg.get('id')}")
            elif "error" in msg:
                problems += self.errors("Error", msg["error"])
            elif method in self.responses:
                problems += self.errors(self.responses[method], msg.get("result"))
        return problems


def read_transcript(path: Path) -> list[Msg]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
