"""Claude Code's own sessions read from its session files (``adapters/claude/native``).

The records are a session the real ``claude -p`` (2.1.197) wrote against the stand-in
Messages API, sanitized (working directory replaced, long attachment listings cut):
``tests/data/claude/native_session_2.1.197.jsonl``.  Each test lays them out in a private
``CLAUDE_CONFIG_DIR`` and reads them back through the adapter's real file reading.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_bridge.adapters.claude import native
from agent_bridge.adapters.kit import jsonl_history
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta
from agent_bridge.wire.native import NativeRecord, NativeSessionsReadResult

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


def read_all(ref: str, limit: int) -> tuple[list[NativeRecord], str]:
    """Every record from the empty cursor on, ``limit`` at a time; and the last cursor."""
    records: list[NativeRecord] = []
    cursor: str | None = None
    while True:
        page = native.read_page(ref, cursor, limit, "start")
        assert len(page.records) <= limit
        if not page.records:
            assert page.next_cursor == (cursor or "f0")
            return records, page.next_cursor
        assert page.next_cursor != cursor  # progress
        records.extend(page.records)
        cursor = page.next_cursor


def raws(records: list[NativeRecord]) -> list[bytes]:
    return [r.raw.encode() if r.raw is not None else b"" for r in records]


@pytest.mark.parametrize("limit", [1, 2, 3, 100])
def test_raw_records_preserved_and_cursor_progress(config: Path, limit: int) -> None:
    lay_out(config, DATA.read_bytes())
    records, last = read_all(REF, limit)
    assert raws(records) == LINES
    assert len({r.ref for r in records}) == len(LINES)
    assert last == f"f{len(DATA.read_bytes())}"


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


def test_newest_page_then_backward(config: Path) -> None:
    lay_out(config, DATA.read_bytes())
    page = native.read_page(REF, None, 3, "end")
    assert raws(list(page.records)) == LINES[-3:]
    collected = list(page.records)
    while page.previous_cursor is not None:
        page = native.read_page(REF, page.previous_cursor, 3, "start")
        collected[:0] = page.records
    assert raws(collected) == LINES


def test_partial_last_line_waits_until_complete(config: Path) -> None:
    data = DATA.read_bytes()
    path = lay_out(config, data)
    _, cursor = read_all(REF, 100)
    extra = (
        b'{"type":"last-prompt","lastPrompt":"again","sessionId":"' + SESSION_ID.encode() + b'"}'
    )
    with path.open("ab") as f:
        f.write(extra[:20])  # the CLI is writing
    waiting = native.read_page(REF, cursor, 100, "start")
    assert waiting.records == ()
    assert waiting.next_cursor == cursor
    newest = native.read_page(REF, None, 100, "end")
    assert raws(list(newest.records)) == LINES
    assert newest.next_cursor == cursor
    with path.open("ab") as f:
        f.write(extra[20:] + b"\n")
    page = native.read_page(REF, cursor, 100, "start")
    assert raws(list(page.records)) == [extra]


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


def test_record_larger_than_the_bound_is_a_diagnostic(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl_history, "MAX_RECORD_BYTES", 1000)
    big = b'{"type":"summary","summary":"' + b"x" * 5000 + b'"}'
    lay_out(config, b"\n".join([LINES[0], big, LINES[1]]) + b"\n")
    records, _ = read_all(REF, 1)
    assert records[0].raw == LINES[0].decode()
    assert records[1].raw is None and records[1].raw_base64 is None
    assert [e.code for e in records[1].events if isinstance(e, Diagnostic)] == ["record_too_large"]
    assert records[2].raw == LINES[1].decode()
    page = native.read_page(REF, None, 2, "end")
    assert page.records[0].ref == records[1].ref


def test_unavailable_missing_and_foreign_references(config: Path) -> None:
    lay_out(config, DATA.read_bytes())
    with pytest.raises(BridgeError) as missing:
        native.read_page(f"{PROJECT}/00000000-0000-0000-0000-000000000000", None, 10, "start")
    assert missing.value.error_code == "session_not_found"
    # a session "file" that exists but cannot be read (root reads through chmod 000)
    unreadable = config / "projects" / PROJECT / "11111111-1111-1111-1111-111111111111.jsonl"
    unreadable.mkdir()
    with pytest.raises(BridgeError) as unavailable:
        native.read_page(f"{PROJECT}/11111111-1111-1111-1111-111111111111", None, 10, "start")
    assert unavailable.value.error_code == "history_unavailable"
    assert unavailable.value.info.retryable
    for ref in ("../x/" + SESSION_ID, f"{PROJECT}/../../etc/passwd", "", f"..//{SESSION_ID}"):
        with pytest.raises(BridgeError) as foreign:
            native.read_page(ref, None, 10, "start")
        assert foreign.value.error_code == "invalid_params"
    for cursor in ("x", "f5", f"f{10**9}", "b-1"):
        with pytest.raises(BridgeError) as bad:
            native.read_page(REF, cursor, 10, "start")
        assert bad.value.error_code == "invalid_params"


def test_read_never_writes(config: Path) -> None:
    path = lay_out(config, DATA.read_bytes())
    os.chmod(path, 0o444)
    before = path.stat()
    read_all(REF, 2)
    native.read_page(REF, None, 2, "end")
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=len(LINES)),
    partial=st.integers(min_value=0, max_value=40),
    limits=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=12),
)
def test_cursors_stable_while_the_cli_appends(
    config: Path, cut: int, partial: int, limits: list[int]
) -> None:
    """Pages read between appends (some leaving a half-written line) add up to the
    whole file, in order, each record once."""
    appended = b"".join(line + b"\n" for line in LINES[cut:])
    path = lay_out(config, b"".join(line + b"\n" for line in LINES[:cut]))
    written = 0
    cursor: str | None = None
    records: list[NativeRecord] = []
    for limit in limits:
        page: NativeSessionsReadResult = native.read_page(REF, cursor, limit, "start")
        records.extend(page.records)
        cursor = page.next_cursor
        step = min(len(appended) - written, partial + 30)
        with path.open("ab") as f:
            f.write(appended[written : written + step])
        written += step
    with path.open("ab") as f:
        f.write(appended[written:])
    while True:
        page = native.read_page(REF, cursor, 3, "start")
        if not page.records:
            break
        records.extend(page.records)
        cursor = page.next_cursor
    assert raws(records) == LINES


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
