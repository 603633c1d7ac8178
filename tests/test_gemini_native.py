"""Gemini CLI's own chats read from its chat files (``adapters/acp/gemini_native``).

The records are a chat the real ``gemini -p`` (0.61.0) wrote against the Gemini API
stand-in (a shell tool call run with ``-y``, then ``--resume latest`` with a second
prompt), sanitized (paths rewritten): ``tests/data/acp/gemini_chat_0.61.0.jsonl``.  Each
test lays them out in a private ``GEMINI_CLI_HOME`` and reads them back through the
adapter's real file reading.  The paging itself is the kit's
(``adapters/kit/jsonl_history.py``): it, the records the projection refuses and the
listing are checked on these records with Claude Code's and Codex's in
``tests/test_native_history_paging.py``; this file keeps the projection.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_native_history_paging import recorded_page

from agent_bridge.wire.events import Diagnostic, RunStarted, TextDelta, ToolActivity


def test_projection_of_the_cli_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = recorded_page("gemini", tmp_path, monkeypatch)
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


@pytest.mark.parametrize("root", ["/w\u0000x", "relative/w", "/w\nx"])
def test_a_project_whose_root_is_unusable_lists_without_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root: str
) -> None:
    """A project directory whose ``.project_root`` names a path the kit does not take
    (``history_files.recorded_cwd``: a NUL made the workspace check's ``realpath`` raise,
    so the whole listing failed): its chats list without a workspace and are in no
    workspace's listing; the others as before."""
    from agent_bridge.adapters.acp import gemini_native

    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "home"))
    work = tmp_path / "work"
    work.mkdir()
    chat = (
        b'{"sessionId":"33333333-0000-0000-0000-000000000000","projectHash":"h",'
        b'"startTime":"2027-01-01T00:00:00.000Z","kind":"main"}\n'
        b'{"id":"m","type":"user","content":[{"text":"hello"}]}\n'
    )
    for project, where in (("bad", root), ("good", str(work))):
        chats = tmp_path / "home" / ".gemini" / "tmp" / project / "chats"
        chats.mkdir(parents=True)
        (chats.parent / ".project_root").write_text(where)
        (chats / "session-2027-01-01T00-00-33333333.jsonl").write_bytes(chat)
    listed = {s.session_ref: s.workspace for s in gemini_native.list_page(None, None, 10).sessions}
    stem = "session-2027-01-01T00-00-33333333"
    assert listed == {f"bad/{stem}": None, f"good/{stem}": str(work)}
    mine = gemini_native.list_page(str(work), None, 10).sessions
    assert [s.session_ref for s in mine] == [f"good/{stem}"]
