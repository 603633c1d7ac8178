"""Claude Code's own sessions read from its session files (``adapters/claude/native``).

The records are a session the real ``claude -p`` (2.1.197) wrote against the stand-in
Messages API, sanitized (working directory replaced, long attachment listings cut):
``tests/data/claude/native_session_2.1.197.jsonl``.  Each test lays them out in a private
``CLAUDE_CONFIG_DIR`` and reads them back through the adapter's real file reading.
The paging contract (cursors, partial lines, bounds, errors, read-only) is checked on
these records with the other stores' in ``tests/test_native_history_paging.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_bridge.adapters.claude import native
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta

DATA = Path(__file__).parent / "data" / "claude" / "native_session_2.1.197.jsonl"
LINES = DATA.read_bytes().splitlines()
PROJECT = "-workspace-project"
SESSION_ID = "28377def-ee38-4b08-ab48-cac0f67ecdff"
REF = f"{PROJECT}/{SESSION_ID}"


def lay_out(config: Path, data: bytes, project: str = PROJECT, sid: str = SESSION_ID) -> Path:
    directory = config / "projects" / project
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{sid}.jsonl"
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


def test_malformed_unknown_and_undecodable_records_are_delivered_raw(config: Path) -> None:
    bad = [b"{not json", b'{"type":"from-the-future","x":1}', b'{"type":"user","message":"\xff"}']
    lay_out(config, b"\n".join([*LINES[:3], *bad]) + b"\n")
    page = native.read_page(REF, None, 100, "start")
    malformed, unknown, undecodable = page.records[3:]
    assert malformed.raw == "{not json"
    assert [e.code for e in malformed.events if isinstance(e, Diagnostic)] == ["malformed_record"]
    assert unknown.raw == '{"type":"from-the-future","x":1}'
    assert [e.code for e in unknown.events if isinstance(e, Diagnostic)] == ["unknown_record"]
    assert undecodable.raw is None
    assert undecodable.raw_base64 is not None
    import base64

    assert base64.b64decode(undecodable.raw_base64) == bad[2]


def test_list_newest_first_paged_and_filtered(config: Path, tmp_path: Path) -> None:
    other_id = "22222222-2222-2222-2222-222222222222"
    third_id = "33333333-3333-3333-3333-333333333333"
    a = lay_out(config, DATA.read_bytes())
    b = lay_out(config, DATA.read_bytes(), sid=other_id)
    work = tmp_path / "elsewhere"
    work.mkdir()
    c = lay_out(
        config,
        b'{"type":"user","message":{"role":"user","content":"other project"},"cwd":"'
        + str(work).encode()
        + b'","timestamp":"2026-01-01T00:00:00.000Z"}\n',
        project=native._encoded(str(work)),
        sid=third_id,
    )
    (config / "projects" / PROJECT / "not-a-session.jsonl").write_text("{}\n")
    for i, path in enumerate((a, b, c)):
        os.utime(path, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    first = native.list_page(None, None, 2)
    assert [s.session_ref for s in first.sessions] == [
        f"{native._encoded(str(work))}/{third_id}",
        f"{PROJECT}/{other_id}",
    ]
    assert first.next_cursor is not None
    second = native.list_page(None, first.next_cursor, 2)
    assert [s.session_ref for s in second.sessions] == [REF]
    assert second.next_cursor is None
    entry = second.sessions[0]
    assert entry.title == "say hello"
    assert entry.workspace == "/workspace/project"
    assert entry.created_at == "2026-12-02T01:24:45.379Z"
    assert entry.size_bytes == len(DATA.read_bytes())
    only = native.list_page(str(work), None, 10)
    assert [(s.title, s.workspace) for s in only.sessions] == [("other project", str(work))]
    with pytest.raises(BridgeError) as bad:
        native.list_page(None, "garbage", 10)
    assert bad.value.error_code == "invalid_params"


def test_list_without_a_projects_directory_is_empty(config: Path) -> None:
    assert native.list_page(None, None, 10).sessions == ()
