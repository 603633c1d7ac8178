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
from test_native_history_paging import recorded_page

from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta


def test_projection_of_the_cli_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = recorded_page("claude", tmp_path, monkeypatch)
    assert page.coverage == "exact"
    events = [e for r in page.records for e in r.events]
    assert RunStarted(input="say hello") in events
    assert (
        TextDelta(text="(stand-in: no scripted reply left)", message_id="msg_standin_1") in events
    )
    assert not [e for e in events if isinstance(e, Diagnostic)]  # every type is known
