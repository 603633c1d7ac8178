"""Gemini CLI's own chats read from its chat files (``adapters/acp/gemini_native``).

The records are a chat the real ``gemini -p`` (0.61.0) wrote against the Gemini API
stand-in (a shell tool call run with ``-y``, then ``--resume latest`` with a second
prompt), sanitized (paths rewritten): ``tests/data/acp/gemini_chat_0.61.0.jsonl``.  Each
test lays them out in a private ``GEMINI_CLI_HOME`` and reads them back through the
adapter's real file reading.  The paging itself is shared with Codex's reader
(``adapters/kit/jsonl_history.py``) and property-tested in ``tests/test_codex_native.py``;
the appending case is repeated here on these records.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def read_all(ref: str, limit: int) -> tuple[list[NativeRecord], str]:
    records: list[NativeRecord] = []
    cursor: str | None = None
    while True:
        page = native.read_page(ref, cursor, limit, "start")
        assert len(page.records) <= limit
        if not page.records:
            assert page.next_cursor == (cursor or "f0")
            return records, page.next_cursor
        assert page.next_cursor != cursor
        records.extend(page.records)
        cursor = page.next_cursor


def raws(records: list[NativeRecord]) -> list[bytes]:
    return [r.raw.encode() if r.raw is not None else b"" for r in records]


@pytest.mark.parametrize("limit", [1, 4, 100])
def test_raw_records_preserved_and_cursor_progress(home: Path, limit: int) -> None:
    lay_out(home, DATA.read_bytes())
    records, last = read_all(REF, limit)
    assert raws(records) == LINES
    assert last == f"f{len(DATA.read_bytes())}"


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


def test_newest_page_then_backward(home: Path) -> None:
    lay_out(home, DATA.read_bytes())
    page = native.read_page(REF, None, 3, "end")
    assert raws(list(page.records)) == LINES[-3:]
    collected = list(page.records)
    while page.previous_cursor is not None:
        page = native.read_page(REF, page.previous_cursor, 3, "start")
        collected[:0] = page.records
    assert raws(collected) == LINES


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


def test_unavailable_missing_and_foreign_references(home: Path) -> None:
    lay_out(home, DATA.read_bytes())
    with pytest.raises(BridgeError) as missing:
        native.read_page(f"{PROJECT}/session-2026-12-02T04-02-00000000", None, 10, "start")
    assert missing.value.error_code == "session_not_found"
    odd = "session-2026-12-02T04-02-11111111"
    (home / ".gemini" / "tmp" / PROJECT / "chats" / f"{odd}.jsonl").mkdir()
    with pytest.raises(BridgeError) as unavailable:
        native.read_page(f"{PROJECT}/{odd}", None, 10, "start")
    assert unavailable.value.error_code == "history_unavailable"
    assert unavailable.value.info.retryable
    for ref in ("../x/" + STEM, f"{PROJECT}/../../etc/passwd", "", STEM, f"{PROJECT}/{STEM}x"):
        with pytest.raises(BridgeError) as foreign:
            native.read_page(ref, None, 10, "start")
        assert foreign.value.error_code == "invalid_params"


def test_read_never_writes(home: Path) -> None:
    path = lay_out(home, DATA.read_bytes())
    os.chmod(path, 0o444)
    before = path.stat()
    read_all(REF, 2)
    native.read_page(REF, None, 2, "end")
    native.list_page(None, None, 10)
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=len(LINES)),
    partial=st.integers(min_value=0, max_value=400),
    limits=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=12),
)
def test_cursors_stable_while_the_cli_appends(
    home: Path, cut: int, partial: int, limits: list[int]
) -> None:
    appended = b"".join(line + b"\n" for line in LINES[cut:])
    path = lay_out(home, b"".join(line + b"\n" for line in LINES[:cut]))
    written = 0
    cursor: str | None = None
    records: list[NativeRecord] = []
    for limit in limits:
        page = native.read_page(REF, cursor, limit, "start")
        records.extend(page.records)
        cursor = page.next_cursor
        step = min(len(appended) - written, partial + 200)
        with path.open("ab") as f:
            f.write(appended[written : written + step])
        written += step
    with path.open("ab") as f:
        f.write(appended[written:])
    while True:
        page = native.read_page(REF, cursor, 5, "start")
        if not page.records:
            break
        records.extend(page.records)
        cursor = page.next_cursor
    assert raws(records) == LINES


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
