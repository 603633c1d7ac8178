"""Codex's own sessions read from its rollout files (``adapters/codex/native``).

The records are a rollout the real ``codex exec`` (0.171.0) wrote against the Responses
stand-in, sanitized (paths rewritten): ``tests/data/codex/native_rollout_0.171.0.jsonl``.
Each test lays them out in a private ``CODEX_HOME`` and reads them back through the
adapter's real file reading.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_bridge.adapters.codex import native
from agent_bridge.adapters.kit import jsonl_history
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta, ToolActivity
from agent_bridge.wire.native import NativeRecord, NativeSessionsReadResult

DATA = Path(__file__).parent / "data" / "codex" / "native_rollout_0.171.0.jsonl"
LINES = DATA.read_bytes().splitlines()
THREAD = "01a234d6-10e4-73a1-8369-9cd1e2844254"
DAY = "2026/12/02"
STEM = f"rollout-2026-12-02T03-39-33-{THREAD}"
REF = f"{DAY}/{STEM}"


def lay_out(home: Path, data: bytes, day: str = DAY, stem: str = STEM) -> Path:
    directory = home / "sessions" / day
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.jsonl"
    path.write_bytes(data)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    return tmp_path / "codex-home"


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


@pytest.mark.parametrize("limit", [1, 2, 7, 100])
def test_raw_records_preserved_and_cursor_progress(home: Path, limit: int) -> None:
    lay_out(home, DATA.read_bytes())
    records, last = read_all(REF, limit)
    assert raws(records) == LINES
    assert len({r.ref for r in records}) == len(LINES)
    assert last == f"f{len(DATA.read_bytes())}"


def test_projection_of_the_cli_records(home: Path) -> None:
    lay_out(home, DATA.read_bytes())
    page = native.read_page(REF, None, 100, "start")
    assert page.coverage == "exact"
    events = [e for r in page.records for e in r.events]
    assert not [e for e in events if isinstance(e, Diagnostic)]  # every type is known
    runs = [e for e in events if isinstance(e, RunStarted)]
    # the prompts as typed, not the harness's injected context messages
    assert [r.input for r in runs] == ["list the files please", "and again"]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == ["I will list files.", "Done: hi", "Second answer"]
    tools = [e for e in events if isinstance(e, ToolActivity)]
    assert [(t.tool_call_id, t.status) for t in tools] == [
        ("call_4", "started"),
        ("call_4", "completed"),
    ]
    assert tools[0].title == "echo hi" and tools[0].kind == "execute"
    assert tools[1].output == "hi\n" and tools[1].exit_code == 0
    # the conversation as sent to the model (response_item) is delivered raw only
    for record in page.records:
        if record.raw is not None and '"type":"response_item"' in record.raw[:80]:
            assert record.events == ()


def test_newest_page_then_backward(home: Path) -> None:
    lay_out(home, DATA.read_bytes())
    page = native.read_page(REF, None, 3, "end")
    assert raws(list(page.records)) == LINES[-3:]
    collected = list(page.records)
    while page.previous_cursor is not None:
        page = native.read_page(REF, page.previous_cursor, 3, "start")
        collected[:0] = page.records
    assert raws(collected) == LINES


def test_partial_last_line_waits_until_complete(home: Path) -> None:
    data = DATA.read_bytes()
    path = lay_out(home, data)
    _, cursor = read_all(REF, 100)
    extra = (
        b'{"timestamp":"2026-12-02T03:40:00.000Z","type":"event_msg",'
        b'"payload":{"type":"agent_message","message":"late"}}'
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
    assert page.records[0].events == (TextDelta(text="late"),)


def test_malformed_unknown_and_undecodable_records_are_delivered_raw(home: Path) -> None:
    bad = [
        b"{not json",
        b'{"type":"from-the-future","payload":{}}',
        b'{"type":"event_msg","payload":{"type":"from-the-future"}}',
        b'{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution"}}}',
        b'{"type":"event_msg","payload":{"type":"agent_message","message":"\xff"}}',
    ]
    lay_out(home, b"\n".join([*LINES[:3], *bad]) + b"\n")
    page = native.read_page(REF, None, 100, "start")
    malformed, unknown, unknown_event, unprojectable, undecodable = page.records[3:]

    def codes(record: NativeRecord) -> list[str]:
        return [e.code for e in record.events if isinstance(e, Diagnostic)]

    assert malformed.raw == "{not json" and codes(malformed) == ["malformed_record"]
    assert unknown.raw == bad[1].decode() and codes(unknown) == ["unknown_record"]
    assert codes(unknown_event) == ["unknown_record"]
    assert unprojectable.raw == bad[3].decode() and codes(unprojectable) == ["projection_failed"]
    assert undecodable.raw is None and undecodable.raw_base64 is not None
    assert base64.b64decode(undecodable.raw_base64) == bad[4]


def test_record_larger_than_the_bound_is_a_diagnostic(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl_history, "MAX_RECORD_BYTES", 1000)
    big = b'{"type":"compacted","payload":{"message":"' + b"x" * 5000 + b'"}}'
    small = b'{"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}'
    lay_out(home, b"\n".join([small, big, small]) + b"\n")
    records, _ = read_all(REF, 1)
    assert records[0].raw == small.decode()
    assert records[1].raw is None and records[1].raw_base64 is None
    assert [e.code for e in records[1].events if isinstance(e, Diagnostic)] == ["record_too_large"]
    assert records[2].raw == small.decode()
    page = native.read_page(REF, None, 2, "end")
    assert page.records[0].ref == records[1].ref


def test_unavailable_missing_and_foreign_references(home: Path) -> None:
    lay_out(home, DATA.read_bytes())
    missing_ref = f"{DAY}/rollout-2026-12-02T03-39-33-00000000-0000-0000-0000-000000000000"
    with pytest.raises(BridgeError) as missing:
        native.read_page(missing_ref, None, 10, "start")
    assert missing.value.error_code == "session_not_found"
    stem = "rollout-2026-12-02T03-39-33-11111111-1111-1111-1111-111111111111"
    (home / "sessions" / DAY / f"{stem}.jsonl").mkdir()  # exists, cannot be read as a file
    with pytest.raises(BridgeError) as unavailable:
        native.read_page(f"{DAY}/{stem}", None, 10, "start")
    assert unavailable.value.error_code == "history_unavailable"
    assert unavailable.value.info.retryable
    for ref in (
        "../x/" + STEM,
        f"{DAY}/../../../etc/passwd",
        "",
        STEM,
        f"2026/12/02/rollout-x-{THREAD}",
        f"{DAY}/{STEM}/..",
    ):
        with pytest.raises(BridgeError) as foreign:
            native.read_page(ref, None, 10, "start")
        assert foreign.value.error_code == "invalid_params"
    for cursor in ("x", "f5", f"f{10**9}", "b-1"):
        with pytest.raises(BridgeError) as bad:
            native.read_page(REF, cursor, 10, "start")
        assert bad.value.error_code == "invalid_params"
    assert native.thread_id(REF) == THREAD


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
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=len(LINES)),
    partial=st.integers(min_value=0, max_value=400),
    limits=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=12),
)
def test_cursors_stable_while_the_cli_appends(
    home: Path, cut: int, partial: int, limits: list[int]
) -> None:
    """Pages read between appends (some leaving a half-written line) add up to the
    whole file, in order, each record once."""
    appended = b"".join(line + b"\n" for line in LINES[cut:])
    path = lay_out(home, b"".join(line + b"\n" for line in LINES[:cut]))
    written = 0
    cursor: str | None = None
    records: list[NativeRecord] = []
    for limit in limits:
        page: NativeSessionsReadResult = native.read_page(REF, cursor, limit, "start")
        records.extend(page.records)
        cursor = page.next_cursor
        step = min(len(appended) - written, partial + 300)
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
    other = "rollout-2026-12-03T10-00-00-22222222-2222-2222-2222-222222222222"
    third = "rollout-2027-01-01T00-00-00-33333333-3333-3333-3333-333333333333"
    a = lay_out(home, DATA.read_bytes())
    b = lay_out(home, DATA.read_bytes(), day="2026/12/03", stem=other)
    work = tmp_path / "elsewhere"
    work.mkdir()
    c = lay_out(
        home,
        b'{"type":"session_meta","payload":{"id":"33333333-3333-3333-3333-333333333333",'
        b'"timestamp":"2027-01-01T00:00:00.000Z","cwd":"' + str(work).encode() + b'"}}\n'
        b'{"type":"event_msg","payload":{"type":"user_message","message":"other project"}}\n',
        day="2027/01/01",
        stem=third,
    )
    (home / "sessions" / DAY / "rollout-not-a-session.jsonl").write_text("{}\n")
    (home / "sessions" / "archive").mkdir()
    for i, path in enumerate((a, b, c)):
        os.utime(path, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    first = native.list_page(None, None, 2)
    assert [s.session_ref for s in first.sessions] == [f"2027/01/01/{third}", f"2026/12/03/{other}"]
    assert first.next_cursor is not None
    second = native.list_page(None, first.next_cursor, 2)
    assert [s.session_ref for s in second.sessions] == [REF]
    assert second.next_cursor is None
    entry = second.sessions[0]
    assert entry.title == "list the files please"
    assert entry.workspace == "/workspace/project"
    assert entry.created_at == "2026-12-02T03:39:33.992Z"
    assert entry.size_bytes == len(DATA.read_bytes())
    only = native.list_page(str(work), None, 10)
    assert [(s.title, s.workspace) for s in only.sessions] == [("other project", str(work))]
    with pytest.raises(BridgeError) as bad:
        native.list_page(None, "garbage", 10)
    assert bad.value.error_code == "invalid_params"


def test_list_without_a_sessions_directory_is_empty(home: Path) -> None:
    assert native.list_page(None, None, 10).sessions == ()
