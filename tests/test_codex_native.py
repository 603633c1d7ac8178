"""Codex's own sessions read from its rollout files (``adapters/codex/native``).

The records are a rollout the real ``codex exec`` (0.171.0) wrote against the Responses
stand-in, sanitized (paths rewritten): ``tests/data/codex/native_rollout_0.171.0.jsonl``.
Each test lays them out in a private ``CODEX_HOME`` and reads them back through the
adapter's real file reading.
The paging and listing contract (cursors, partial lines, bounds, errors, records it
cannot project, listing, read-only) is checked on these records with the other stores'
in ``tests/test_native_history_paging.py``; this file keeps the projection.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_native_history_paging import recorded_page

from agent_bridge.adapters.codex import native
from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta, ToolActivity

THREAD = "01a234d6-10e4-73a1-8369-9cd1e2844254"
DAY = "2026/12/02"
STEM = f"rollout-2026-12-02T03-39-33-{THREAD}"
REF = f"{DAY}/{STEM}"


def test_projection_of_the_cli_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = recorded_page("codex", tmp_path, monkeypatch)
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


def test_a_late_agent_message_and_the_thread_of_a_reference() -> None:
    late = (
        b'{"timestamp":"2026-12-02T03:40:00.000Z","type":"event_msg",'
        b'"payload":{"type":"agent_message","message":"late"}}'
    )
    assert native.project_record(late) == (TextDelta(text="late"),)
    assert native.thread_id(REF) == THREAD


@pytest.mark.parametrize("cwd", ["/w\u0000x", "relative/w", "/" + "d" * 5000, "/w\nx"])
def test_a_rollout_whose_working_directory_is_unusable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cwd: str
) -> None:
    """A rollout whose ``session_meta`` names a working directory ``cwd_ok`` does not keep
    (a NUL made the workspace filter's ``realpath`` raise: the whole listing failed) is
    listed without a workspace, is in no workspace's listing, and cannot be continued
    (``workspace_invalid``); the other rollouts list as before."""
    import json

    from agent_bridge.errors import BridgeError

    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    day = tmp_path / "sessions" / DAY
    day.mkdir(parents=True)
    good_thread = "01a234d6-10e4-73a1-8369-9cd1e2844255"
    for thread, where in ((THREAD, cwd), (good_thread, str(tmp_path))):
        meta = {"id": thread, "timestamp": "2026-12-02T03:39:33.000Z", "cwd": where}
        line = {"timestamp": "2026-12-02T03:39:33.000Z", "type": "session_meta", "payload": meta}
        stem = f"rollout-2026-12-02T03-39-33-{thread}"
        (day / f"{stem}.jsonl").write_text(json.dumps(line) + "\n")
    listed = {s.session_ref: s.workspace for s in native.list_page(None, None, 10).sessions}
    assert listed == {REF: None, f"{DAY}/rollout-2026-12-02T03-39-33-{good_thread}": str(tmp_path)}
    mine = native.list_page(str(tmp_path), None, 10).sessions
    assert [s.session_ref for s in mine] == [f"{DAY}/rollout-2026-12-02T03-39-33-{good_thread}"]
    with pytest.raises(BridgeError) as refused:
        native.continuation(REF)
    assert refused.value.info.code == "workspace_invalid"
