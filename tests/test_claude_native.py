"""Claude Code's own sessions read from its session files (``adapters/claude/native``).

The records are a session the real ``claude -p`` (2.1.197) wrote against the stand-in
Messages API, sanitized (working directory replaced, long attachment listings cut):
``tests/data/claude/native_session_2.1.197.jsonl``.  Each test lays them out in a private
``CLAUDE_CONFIG_DIR`` and reads them back through the adapter's real file reading.
The paging and listing contract (cursors, partial lines, bounds, errors, records it
cannot project, listing, read-only) is checked on these records with the other stores'
in ``tests/test_native_history_paging.py``; this file keeps the projection.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_bridge.adapters.claude import native
from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta

DATA = Path(__file__).parent / "data" / "claude" / "native_session_2.1.197.jsonl"
PROJECT = "-workspace-project"
SESSION_ID = "28377def-ee38-4b08-ab48-cac0f67ecdff"
REF = f"{PROJECT}/{SESSION_ID}"


def lay_out(config: Path, data: bytes) -> Path:
    directory = config / "projects" / PROJECT
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{SESSION_ID}.jsonl"
    path.write_bytes(data)
    return path


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


def test_projection_of_the_cli_records(config: Path) -> None:
    lay_out(config, DATA.read_bytes())
    page = native.read_page(REF, None, 100, "start")
    assert page.coverage == "exact"
    events = [e for r in page.records for e in r.events]
    assert RunStarted(input="say hello") in events
    assert (
        TextDelta(text="(stand-in: no scripted reply left)", message_id="msg_standin_1") in events
    )
    assert not [e for e in events if isinstance(e, Diagnostic)]  # every type is known
