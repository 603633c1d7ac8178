"""Gemini CLI's own chats read from its chat files (``adapters/acp/gemini_native``).

The records are a chat the real ``gemini -p`` (0.61.0) wrote against the Gemini API
stand-in (a shell tool call run with ``-y``, then ``--resume latest`` with a second
prompt), sanitized (paths rewritten): ``tests/data/acp/gemini_chat_0.61.0.jsonl``.  Each
test lays them out in a private ``GEMINI_CLI_HOME`` and reads them back through the
adapter's real file reading.  The paging itself is the kit's
(``adapters/kit/jsonl_history.py``), checked on these records with Claude Code's and
Codex's in ``tests/test_native_history_paging.py``.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from agent_bridge.adapters.acp import gemini_native as native
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta, ToolActivity
from agent_bridge.wire.native import NativeRecord

DATA = Path(__file__).parent / "data" / "acp" / "gemini_chat_0.61.0.jsonl"
LINES = DATA.read_bytes().splitlines()
PROJECT = "project"
STEM = "session-2026-12-02T04-02-237d83c7"
REF = f"{PROJECT}/{STEM}"


def lay_out(
    home: Path, data: bytes, project: str = PROJECT, stem: str = STEM, root: str | None = None
) -> Path:
    directory = home / ".gemini" / "tmp" / project
    (directory / "chats").mkdir(parents=True, exist_ok=True)
    (directory / ".project_root").write_text(root or "/workspace/project")
    path = directory / "chats" / f"{stem}.jsonl"
    path.write_bytes(data)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    return tmp_path / "gemini-home"


def test_projection_of_the_cli_records(home: Path) -> None:
    lay_out(home, DATA.read_bytes())
    page = native.read_page(REF, None, 100, "start")
    assert page.coverage == "exact"
    events = [e for r in page.records for e in r.events]
    assert not [e for e in events if isinstance(e, Diagnostic)]
    # the prompts as typed: not the CLI's injected context (inside a $set record)
    assert [e.input for e in events if isinstance(e, RunStarted)] == ["TOOL: echo hi", "and again"]
    tools = [e for e in events if isinstance(e, ToolActivity)]
    assert [(t.name, t.status) for t in tools] == [
        ("run_shell_command", "started"),
        ("run_shell_command", "completed"),
    ]
    assert tools[0].input == {"command": "echo hi", "description": "(scripted)"}
    assert tools[1].output == "hi"
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts[0].startswith("Tool finished.") and texts[1] == "Hi! I am the stand-in model."
    assert len(texts) == 2


def test_malformed_unknown_and_undecodable_records_are_delivered_raw(home: Path) -> None:
    bad = [
        b"{not json",
        b'{"id":"x","type":"from-the-future"}',
        b'{"id":"y","type":"gemini","content":"","toolCalls":[{"name":1}]}',
        b'{"id":"z","type":"user","content":[{"text":"\xff"}]}',
    ]
    lay_out(home, b"\n".join([*LINES[:2], *bad]) + b"\n")
    page = native.read_page(REF, None, 100, "start")
    malformed, unknown, unprojectable, undecodable = page.records[2:]

    def codes(record: NativeRecord) -> list[str]:
        return [e.code for e in record.events if isinstance(e, Diagnostic)]

    assert malformed.raw == "{not json" and codes(malformed) == ["malformed_record"]
    assert codes(unknown) == ["unknown_record"]
    assert unprojectable.raw == bad[2].decode() and codes(unprojectable) == ["projection_failed"]
    assert undecodable.raw is None and undecodable.raw_base64 is not None
    assert base64.b64decode(undecodable.raw_base64) == bad[3]


def test_a_record_of_no_kind_the_adapter_can_name_is_a_diagnostic_not_a_failed_page(
    home: Path,
) -> None:
    """A ``type`` that is not a string (a list, an object) or a line that is JSON but no
    object: the page is read, each such record a diagnostic (a list ``type`` once made the
    whole read fail with a TypeError)."""
    bad = [b'{"id":"a","type":["user"]}', b'{"id":"b","type":{"x":1}}', b"[1,2]", b"7"]
    lay_out(home, b"\n".join([*LINES[:2], *bad]) + b"\n")
    page = native.read_page(REF, None, 100, "start")
    codes = [[e.code for e in r.events if isinstance(e, Diagnostic)] for r in page.records[2:]]
    assert codes == [
        ["projection_failed"],
        ["projection_failed"],
        ["malformed_record"],
        ["malformed_record"],
    ]


def test_list_newest_first_paged_and_filtered(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "elsewhere"
    work.mkdir()
    a = lay_out(home, DATA.read_bytes())
    b = lay_out(home, DATA.read_bytes(), stem="session-2026-12-03T10-00-22222222")
    c = lay_out(
        home,
        b'{"sessionId":"33333333-0000-0000-0000-000000000000","projectHash":"h",'
        b'"startTime":"2027-01-01T00:00:00.000Z","kind":"main"}\n'
        b'{"id":"m","type":"user","content":[{"text":"other project"}]}\n',
        project="elsewhere",
        stem="session-2027-01-01T00-00-33333333",
        root=str(work),
    )
    (home / ".gemini" / "tmp" / PROJECT / "chats" / "notes.jsonl").write_text("{}\n")
    for i, path in enumerate((a, b, c)):
        os.utime(path, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    first = native.list_page(None, None, 2)
    assert [s.session_ref for s in first.sessions] == [
        "elsewhere/session-2027-01-01T00-00-33333333",
        f"{PROJECT}/session-2026-12-03T10-00-22222222",
    ]
    second = native.list_page(None, first.next_cursor, 2)
    assert [s.session_ref for s in second.sessions] == [REF]
    assert second.next_cursor is None
    entry = second.sessions[0]
    assert entry.title == "TOOL: echo hi"
    assert entry.workspace == "/workspace/project"
    assert entry.created_at == "2026-12-02T04:02:12.390Z"
    assert entry.size_bytes == len(DATA.read_bytes())
    only = native.list_page(str(work), None, 10)
    assert [(s.title, s.workspace) for s in only.sessions] == [("other project", str(work))]
    with pytest.raises(BridgeError) as bad:
        native.list_page(None, "garbage", 10)
    assert bad.value.error_code == "invalid_params"


def test_list_without_a_gemini_directory_is_empty(home: Path) -> None:
    assert native.list_page(None, None, 10).sessions == ()
