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


@pytest.mark.parametrize("cwd", ["/w\u0000x", "relative/w", "/" + "d" * 5000, "/w\nx"])
def test_a_session_whose_recorded_cwd_is_unusable_lists_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cwd: str
) -> None:
    """A session file whose records name a working directory the kit does not take
    (``history_files.recorded_cwd``: a NUL made the workspace check's ``realpath`` raise,
    so the whole listing failed) is listed without a workspace; the others as before."""
    import json

    from agent_bridge.adapters.claude import native

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    work = tmp_path / "work"
    work.mkdir()
    folder = tmp_path / "config" / "projects" / native._encoded(str(work.resolve()))
    folder.mkdir(parents=True)
    ids = {
        "0b0c3c37-5f63-4c4b-9d4b-2a3c4d5e6f70": cwd,
        "1b0c3c37-5f63-4c4b-9d4b-2a3c4d5e6f71": str(work),
    }
    for session_id, where in ids.items():
        record = {
            "type": "user",
            "cwd": where,
            "sessionId": session_id,
            "timestamp": "2026-12-02T03:39:33.000Z",
            "message": {"role": "user", "content": "hello"},
        }
        (folder / f"{session_id}.jsonl").write_text(json.dumps(record) + "\n")
    for workspace in (None, str(work)):
        listed = {
            s.session_ref.partition("/")[2]: s.workspace
            for s in native.list_page(workspace, None, 10).sessions
        }
        assert listed == {
            "0b0c3c37-5f63-4c4b-9d4b-2a3c4d5e6f70": None,
            "1b0c3c37-5f63-4c4b-9d4b-2a3c4d5e6f71": str(work),
        }


def test_a_record_nested_too_deep_to_decode_is_a_diagnostic_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session file whose first record nests arrays 5,000 deep (msgspec raises
    ``RecursionError`` past about 1,000, not ``DecodeError``): the session is still
    listed, in its workspace, and read: that record a ``malformed_record`` diagnostic,
    the next one projected.  Before, the listing and the read raised (an internal error
    for the whole ``provider/sessions/list`` page)."""
    import json

    from agent_bridge.adapters.claude import native

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    work = tmp_path / "work"
    work.mkdir()
    folder = tmp_path / "config" / "projects" / native._encoded(str(work.resolve()))
    folder.mkdir(parents=True)
    session_id = "2b0c3c37-5f63-4c4b-9d4b-2a3c4d5e6f72"
    deep = '{"type":"user","message":' + "[" * 5000 + "]" * 5000 + "}"
    record = {
        "type": "user",
        "cwd": str(work),
        "sessionId": session_id,
        "timestamp": "2026-12-02T03:39:33.000Z",
        "message": {"role": "user", "content": "hello"},
    }
    (folder / f"{session_id}.jsonl").write_text(deep + "\n" + json.dumps(record) + "\n")
    listed = native.list_page(str(work), None, 10).sessions
    assert [s.session_ref.partition("/")[2] for s in listed] == [session_id]
    assert listed[0].workspace == str(work)
    page = native.read_page(listed[0].session_ref, None, 10, "start")
    first, second = page.records
    assert [e.code for e in first.events if isinstance(e, Diagnostic)] == ["malformed_record"]
    assert RunStarted(input="hello") in second.events
