"""Codex's own sessions read from its rollout files (``adapters/codex/native``).

The records are a rollout the real ``codex exec`` (0.171.0) wrote against the Responses
stand-in, sanitized (paths rewritten): ``tests/data/codex/native_rollout_0.171.0.jsonl``.
Each test lays them out in a private ``CODEX_HOME`` and reads them back through the
adapter's real file reading.
The paging contract (cursors, partial lines, bounds, errors, read-only) is checked on
these records with the other stores' in ``tests/test_native_history_paging.py``.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from agent_bridge.adapters.codex import native
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta, ToolActivity
from agent_bridge.wire.native import NativeRecord

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


def test_a_late_agent_message_and_the_thread_of_a_reference(home: Path) -> None:
    late = (
        b'{"timestamp":"2026-12-02T03:40:00.000Z","type":"event_msg",'
        b'"payload":{"type":"agent_message","message":"late"}}'
    )
    assert native.project_record(late) == (TextDelta(text="late"),)
    assert native.thread_id(REF) == THREAD


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
