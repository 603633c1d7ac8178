"""Which methods can be cancelled is published, and the bridge acts on it (issue 11, case 4).

``docs/protocol.md`` promised ``-32800`` for any request still in progress, but
``session/close`` (shielded: it must finish) ignored ``$/cancelRequest``.  Now the catalog
says which methods cannot be cancelled, ``methods.json`` carries it and the docs name them.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_bridge.wire.catalog import CATALOG

ROOT = Path(__file__).resolve().parent.parent
_UNCANCELLABLE = {
    "shutdown",
    "session/close",
    "session/delete",
    "interaction/respond",
    "session/configure",
    "provider/sessions/continue",
}


def test_methods_json_marks_which_host_requests_are_cancellable() -> None:
    methods = json.loads((ROOT / "schemas" / "methods.json").read_text())["methods"]
    requests = {m.name for m in CATALOG if m.kind == "request" and m.direction == "host->bridge"}
    flags = {name: methods[name]["cancellable"] for name in requests}
    assert {name for name, flag in flags.items() if not flag} == _UNCANCELLABLE
    protocol = (ROOT / "docs" / "protocol.md").read_text()
    for name in _UNCANCELLABLE:
        assert f"`{name}`" in protocol.split("## Cancellation", 1)[1].split("## Errors", 1)[0]


def test_frontend_binds_uncancellable_methods_as_such() -> None:
    from agent_bridge.frontends.bridge_protocol import BridgeFrontend

    methods, _ = BridgeFrontend._handlers.__get__(_Stub())()
    assert {name for name, spec in methods.items() if not spec.cancellable} == _UNCANCELLABLE


class _Stub:
    def __getattr__(self, name: str) -> object:
        async def handler(_params: object) -> None:
            return None

        return handler
