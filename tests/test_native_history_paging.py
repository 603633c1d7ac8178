"""The paging and listing contract every reader of a CLI's own JSON Lines history keeps,
checked alike on each: Claude Code's session files (``adapters/claude/native``), Codex's
rollouts (``adapters/codex/native``) and Gemini CLI's chats (``adapters/acp/gemini_native``),
all paged by ``adapters/kit/jsonl_history``.

Each store is laid out in a private home holding records the real CLI wrote against its
stand-in (sanitized: ``tests/data/``), and read back through the adapter's real file
reading: raw records preserved, cursor progress from an empty first cursor, the newest
page then backward, a half-written last line held back, a record past the bound as a
diagnostic, a malformed or undecodable record still delivered raw, typed errors for a
missing, unreadable or foreign reference and a bad cursor, nothing written, and cursors
that stay valid while the CLI appends (property test); records the store cannot project
(unknown kinds, shapes its projection refuses) delivered raw with their diagnostic; and the
listing: newest first, paged, filtered by workspace, files that are no session skipped, a
bad cursor refused, an empty store when the CLI never wrote one.  What only one store does
(its projection of the recorded session) stays in ``tests/test_<store>_native.py``.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_bridge.adapters.kit import jsonl_history
from agent_bridge.errors import BridgeError
from agent_bridge.wire.events import Diagnostic
from agent_bridge.wire.native import (
    NativeRecord,
    NativeSessionsListResult,
    NativeSessionsReadResult,
)

DATA = Path(__file__).parent / "data"

Reader = Callable[[str, str | None, int, Literal["start", "end"]], NativeSessionsReadResult]
Lister = Callable[[str | None, str | None, int], NativeSessionsListResult]


@dataclass(frozen=True)
class Store:
    """One CLI's history store: where a session's file goes under ``home`` and how its
    reference reads back."""

    name: str
    data: Path
    env: str
    ref: str
    read: Reader
    #: the file of reference ``ref`` under ``home`` (its directories made)
    place: Callable[[Path, str], Path]
    #: a reference of the store's shape naming no file, and one for an unreadable "file"
    missing: str
    unreadable: str
    foreign: tuple[str, ...]
    #: a complete record the CLI might append, a record that is only large
    extra: bytes
    big: bytes
    #: records the CLI did not write this way, each with the diagnostic codes of its record
    odd: tuple[tuple[bytes, list[str]], ...]
    #: the store's listing ``(workspace, cursor, limit)``, read-only like its reading
    list_page: Lister
    #: another session of the workspace of ``ref``
    other: str
    #: lay out a session of one prompt, "other project", in workspace ``work``: its
    #: reference and file
    elsewhere: Callable[[Path, Path], tuple[str, Path]]
    #: put files in the store that are no session (the listing skips them)
    stray: Callable[[Path], object]
    #: the listing's title and creation time of the recorded session (its workspace is
    #: /workspace/project, as sanitized)
    title: str
    created_at: str

    @property
    def lines(self) -> list[bytes]:
        return self.data.read_bytes().splitlines()

    def lay_out(self, home: Path, data: bytes) -> Path:
        path = self.place(home, self.ref)
        path.write_bytes(data)
        return path


def _claude() -> Store:
    from agent_bridge.adapters.claude import native

    project, sid = "-workspace-project", "28377def-ee38-4b08-ab48-cac0f67ecdff"

    def place(home: Path, ref: str) -> Path:
        directory, _, name = ref.partition("/")
        (home / "projects" / directory).mkdir(parents=True, exist_ok=True)
        return home / "projects" / directory / f"{name}.jsonl"

    def elsewhere(home: Path, work: Path) -> tuple[str, Path]:
        ref = f"{native._encoded(str(work))}/33333333-3333-3333-3333-333333333333"
        path = place(home, ref)
        path.write_bytes(
            b'{"type":"user","message":{"role":"user","content":"other project"},"cwd":"'
            + str(work).encode()
            + b'","timestamp":"2026-01-01T00:00:00.000Z"}\n'
        )
        return ref, path

    return Store(
        name="claude",
        data=DATA / "claude" / "native_session_2.1.197.jsonl",
        env="CLAUDE_CONFIG_DIR",
        ref=f"{project}/{sid}",
        read=native.read_page,
        place=place,
        missing=f"{project}/00000000-0000-0000-0000-000000000000",
        unreadable=f"{project}/11111111-1111-1111-1111-111111111111",
        foreign=("../x/" + sid, f"{project}/../../etc/passwd", "", f"..//{sid}"),
        extra=b'{"type":"last-prompt","lastPrompt":"again","sessionId":"' + sid.encode() + b'"}',
        big=b'{"type":"summary","summary":"' + b"x" * 5000 + b'"}',
        odd=(
            (b"{not json", ["malformed_record"]),
            (b'{"type":"from-the-future","x":1}', ["unknown_record"]),
            (b'{"type":"user","message":"\xff"}', ["malformed_record"]),
        ),
        list_page=native.list_page,
        other=f"{project}/22222222-2222-2222-2222-222222222222",
        elsewhere=elsewhere,
        stray=lambda home: (home / "projects" / project / "not-a-session.jsonl").write_text("{}\n"),
        title="say hello",
        created_at="2026-12-02T01:24:45.379Z",
    )


def _codex() -> Store:
    from agent_bridge.adapters.codex import native

    thread, day = "01a234d6-10e4-73a1-8369-9cd1e2844254", "2026/12/02"
    stem = f"rollout-2026-12-02T03-39-33-{thread}"

    def place(home: Path, ref: str) -> Path:
        directory, _, name = ref.rpartition("/")
        (home / "sessions" / directory).mkdir(parents=True, exist_ok=True)
        return home / "sessions" / directory / f"{name}.jsonl"

    def elsewhere(home: Path, work: Path) -> tuple[str, Path]:
        ref = "2027/01/01/rollout-2027-01-01T00-00-00-33333333-3333-3333-3333-333333333333"
        path = place(home, ref)
        path.write_bytes(
            b'{"type":"session_meta","payload":{"id":"33333333-3333-3333-3333-333333333333",'
            b'"timestamp":"2027-01-01T00:00:00.000Z","cwd":"' + str(work).encode() + b'"}}\n'
            b'{"type":"event_msg","payload":{"type":"user_message","message":"other project"}}\n'
        )
        return ref, path

    def stray(home: Path) -> None:
        (home / "sessions" / day / "rollout-not-a-session.jsonl").write_text("{}\n")
        (home / "sessions" / "archive").mkdir()

    return Store(
        name="codex",
        data=DATA / "codex" / "native_rollout_0.171.0.jsonl",
        env="CODEX_HOME",
        ref=f"{day}/{stem}",
        read=native.read_page,
        place=place,
        missing=f"{day}/rollout-2026-12-02T03-39-33-00000000-0000-0000-0000-000000000000",
        unreadable=f"{day}/rollout-2026-12-02T03-39-33-11111111-1111-1111-1111-111111111111",
        foreign=(
            "../x/" + stem,
            f"{day}/../../../etc/passwd",
            "",
            stem,
            f"2026/12/02/rollout-x-{thread}",
            f"{day}/{stem}/..",
        ),
        extra=(
            b'{"timestamp":"2026-12-02T03:40:00.000Z","type":"event_msg",'
            b'"payload":{"type":"agent_message","message":"late"}}'
        ),
        big=b'{"type":"compacted","payload":{"message":"' + b"x" * 5000 + b'"}}',
        odd=(
            (b"{not json", ["malformed_record"]),
            (b'{"type":"from-the-future","payload":{}}', ["unknown_record"]),
            (b'{"type":"event_msg","payload":{"type":"from-the-future"}}', ["unknown_record"]),
            (
                b'{"type":"event_msg","payload":{"type":"item_completed",'
                b'"item":{"type":"CommandExecution"}}}',
                ["projection_failed"],
            ),
            (
                b'{"type":"event_msg","payload":{"type":"agent_message","message":"\xff"}}',
                ["malformed_record"],
            ),
        ),
        list_page=native.list_page,
        other="2026/12/03/rollout-2026-12-03T10-00-00-22222222-2222-2222-2222-222222222222",
        elsewhere=elsewhere,
        stray=stray,
        title="list the files please",
        created_at="2026-12-02T03:39:33.992Z",
    )


def _gemini() -> Store:
    from agent_bridge.adapters.acp import gemini_native as native

    project, stem = "project", "session-2026-12-02T04-02-237d83c7"

    def place(home: Path, ref: str) -> Path:
        directory, _, name = ref.partition("/")
        chats = home / ".gemini" / "tmp" / directory / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        (chats.parent / ".project_root").write_text("/workspace/project")
        return chats / f"{name}.jsonl"

    def elsewhere(home: Path, work: Path) -> tuple[str, Path]:
        ref = "elsewhere/session-2027-01-01T00-00-33333333"
        path = place(home, ref)
        (path.parent.parent / ".project_root").write_text(str(work))
        path.write_bytes(
            b'{"sessionId":"33333333-0000-0000-0000-000000000000","projectHash":"h",'
            b'"startTime":"2027-01-01T00:00:00.000Z","kind":"main"}\n'
            b'{"id":"m","type":"user","content":[{"text":"other project"}]}\n'
        )
        return ref, path

    return Store(
        name="gemini",
        data=DATA / "acp" / "gemini_chat_0.61.0.jsonl",
        env="GEMINI_CLI_HOME",
        ref=f"{project}/{stem}",
        read=native.read_page,
        place=place,
        missing=f"{project}/session-2026-12-02T04-02-00000000",
        unreadable=f"{project}/session-2026-12-02T04-02-11111111",
        foreign=("../x/" + stem, f"{project}/../../etc/passwd", "", stem, f"{project}/{stem}x"),
        extra=b'{"id":"late","type":"info","content":"late"}',
        big=b'{"id":"big","type":"info","content":"' + b"x" * 5000 + b'"}',
        odd=(
            (b"{not json", ["malformed_record"]),
            (b'{"id":"x","type":"from-the-future"}', ["unknown_record"]),
            (
                b'{"id":"y","type":"gemini","content":"","toolCalls":[{"name":1}]}',
                ["projection_failed"],
            ),
            (b'{"id":"z","type":"user","content":[{"text":"\xff"}]}', ["malformed_record"]),
            # a ``type`` that is no string, or JSON that is no object (a list ``type`` once
            # made the whole read fail with a TypeError)
            (b'{"id":"a","type":["user"]}', ["projection_failed"]),
            (b'{"id":"b","type":{"x":1}}', ["projection_failed"]),
            (b"[1,2]", ["malformed_record"]),
            (b"7", ["malformed_record"]),
        ),
        list_page=native.list_page,
        other=f"{project}/session-2026-12-03T10-00-22222222",
        elsewhere=elsewhere,
        stray=lambda home: (
            home / ".gemini" / "tmp" / project / "chats" / "notes.jsonl"
        ).write_text("{}\n"),
        title="TOOL: echo hi",
        created_at="2026-12-02T04:02:12.390Z",
    )


STORES = {"claude": _claude, "codex": _codex, "gemini": _gemini}


@pytest.fixture(params=sorted(STORES))
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Store, Path]]:
    made = STORES[request.param]()
    home = tmp_path / "home"
    monkeypatch.setenv(made.env, str(home))
    yield made, home


def recorded_page(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> NativeSessionsReadResult:
    """Store ``name``'s recorded session, laid out in a private home under ``tmp_path``
    and read from the start in one page (what ``tests/test_<store>_native.py`` project)."""
    s = STORES[name]()
    home = tmp_path / "home"
    monkeypatch.setenv(s.env, str(home))
    s.lay_out(home, s.data.read_bytes())
    return s.read(s.ref, None, 100, "start")


def read_all(s: Store, limit: int) -> tuple[list[NativeRecord], str]:
    """Every record from the empty cursor on, ``limit`` at a time; and the last cursor."""
    records: list[NativeRecord] = []
    cursor: str | None = None
    while True:
        page = s.read(s.ref, cursor, limit, "start")
        assert len(page.records) <= limit
        if not page.records:
            assert page.next_cursor == (cursor or "f0")
            return records, page.next_cursor
        assert page.next_cursor != cursor  # progress
        records.extend(page.records)
        cursor = page.next_cursor


def raws(records: list[NativeRecord]) -> list[bytes]:
    return [r.raw.encode() if r.raw is not None else b"" for r in records]


def codes(record: NativeRecord) -> list[str]:
    return [e.code for e in record.events if isinstance(e, Diagnostic)]


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 100])
def test_raw_records_preserved_and_cursor_progress(store: tuple[Store, Path], limit: int) -> None:
    s, home = store
    s.lay_out(home, s.data.read_bytes())
    records, last = read_all(s, limit)
    assert raws(records) == s.lines
    assert len({r.ref for r in records}) == len(s.lines)
    assert last == f"f{len(s.data.read_bytes())}"
    assert s.read(s.ref, None, 100, "start").coverage == "exact"


def test_newest_page_then_backward(store: tuple[Store, Path]) -> None:
    s, home = store
    s.lay_out(home, s.data.read_bytes())
    page = s.read(s.ref, None, 3, "end")
    assert raws(list(page.records)) == s.lines[-3:]
    collected = list(page.records)
    while page.previous_cursor is not None:
        page = s.read(s.ref, page.previous_cursor, 3, "start")
        collected[:0] = page.records
    assert raws(collected) == s.lines


def test_partial_last_line_waits_until_complete(store: tuple[Store, Path]) -> None:
    s, home = store
    path = s.lay_out(home, s.data.read_bytes())
    _, cursor = read_all(s, 100)
    with path.open("ab") as f:
        f.write(s.extra[:20])  # the CLI is writing
    waiting = s.read(s.ref, cursor, 100, "start")
    assert waiting.records == ()
    assert waiting.next_cursor == cursor
    newest = s.read(s.ref, None, 100, "end")
    assert raws(list(newest.records)) == s.lines[-100:]
    assert newest.next_cursor == cursor
    with path.open("ab") as f:
        f.write(s.extra[20:] + b"\n")
    page = s.read(s.ref, cursor, 100, "start")
    assert raws(list(page.records)) == [s.extra]


def test_malformed_and_undecodable_records_are_delivered_raw(store: tuple[Store, Path]) -> None:
    s, home = store
    undecodable_line = b'{"\xff' + s.extra[2:]  # not UTF-8
    s.lay_out(home, b"\n".join([*s.lines[:2], b"{not json", undecodable_line]) + b"\n")
    malformed, undecodable = s.read(s.ref, None, 100, "start").records[2:]
    assert malformed.raw == "{not json" and codes(malformed) == ["malformed_record"]
    assert undecodable.raw is None and undecodable.raw_base64 is not None
    assert base64.b64decode(undecodable.raw_base64) == undecodable_line


def test_record_larger_than_the_bound_is_a_diagnostic(
    store: tuple[Store, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    s, home = store
    monkeypatch.setattr(jsonl_history, "MAX_RECORD_BYTES", 1000)
    small = s.extra
    s.lay_out(home, b"\n".join([small, s.big, small]) + b"\n")
    records, _ = read_all(s, 1)
    assert records[0].raw == small.decode()
    assert records[1].raw is None and records[1].raw_base64 is None
    assert codes(records[1]) == ["record_too_large"]
    assert records[2].raw == small.decode()
    page = s.read(s.ref, None, 2, "end")
    assert page.records[0].ref == records[1].ref


def test_records_the_store_cannot_project_are_delivered_raw_with_a_diagnostic(
    store: tuple[Store, Path],
) -> None:
    """A record that is no JSON, of a kind the adapter does not know, of a shape its
    projection refuses, or not UTF-8: the page is read, each such record delivered as it
    is stored (base64 when it is no text) with its diagnostic."""
    s, home = store
    s.lay_out(home, b"\n".join([*s.lines[:2], *(line for line, _ in s.odd)]) + b"\n")
    records = s.read(s.ref, None, 100, "start").records
    assert raws(list(records[:2])) == s.lines[:2]
    assert len(records) == 2 + len(s.odd)
    for record, (line, expected) in zip(records[2:], s.odd, strict=True):
        try:
            text: str | None = line.decode()
        except UnicodeDecodeError:
            text = None
        if text is None:
            assert record.raw is None and record.raw_base64 is not None, line
            assert base64.b64decode(record.raw_base64) == line
        else:
            assert record.raw == text and record.raw_base64 is None, line
        assert codes(record) == expected, line


def test_missing_unreadable_and_foreign_references(store: tuple[Store, Path]) -> None:
    s, home = store
    s.lay_out(home, s.data.read_bytes())
    with pytest.raises(BridgeError) as missing:
        s.read(s.missing, None, 10, "start")
    assert missing.value.error_code == "session_not_found"
    s.place(home, s.unreadable).mkdir()  # exists, cannot be read as a file (root too)
    with pytest.raises(BridgeError) as unavailable:
        s.read(s.unreadable, None, 10, "start")
    assert unavailable.value.error_code == "history_unavailable"
    assert unavailable.value.info.retryable
    for ref in s.foreign:
        with pytest.raises(BridgeError) as foreign:
            s.read(ref, None, 10, "start")
        assert foreign.value.error_code == "invalid_params", ref
    for cursor in ("x", "f5", f"f{10**9}", "b-1"):
        with pytest.raises(BridgeError) as bad:
            s.read(s.ref, cursor, 10, "start")
        assert bad.value.error_code == "invalid_params", cursor


def test_read_never_writes(store: tuple[Store, Path]) -> None:
    s, home = store
    path = s.lay_out(home, s.data.read_bytes())
    os.chmod(path, 0o444)
    before = path.stat()
    read_all(s, 2)
    s.read(s.ref, None, 2, "end")
    s.list_page(None, None, 10)
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


@pytest.mark.parametrize("name", sorted(STORES))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=40),
    partial=st.integers(min_value=0, max_value=400),
    limits=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=12),
)
def test_cursors_stable_while_the_cli_appends(
    name: str, tmp_path_factory: pytest.TempPathFactory, cut: int, partial: int, limits: list[int]
) -> None:
    """Pages read between appends (some leaving a half-written line) add up to the
    whole file, in order, each record once."""
    s = STORES[name]()
    home = tmp_path_factory.mktemp("home")
    old = os.environ.get(s.env)
    os.environ[s.env] = str(home)
    try:
        lines = s.lines
        cut = min(cut, len(lines))
        appended = b"".join(line + b"\n" for line in lines[cut:])
        path = s.lay_out(home, b"".join(line + b"\n" for line in lines[:cut]))
        written = 0
        cursor: str | None = None
        records: list[NativeRecord] = []
        for limit in limits:
            page = s.read(s.ref, cursor, limit, "start")
            records.extend(page.records)
            cursor = page.next_cursor
            step = min(len(appended) - written, partial + 60)
            with path.open("ab") as f:
                f.write(appended[written : written + step])
            written += step
        with path.open("ab") as f:
            f.write(appended[written:])
        while True:
            page = s.read(s.ref, cursor, 5, "start")
            if not page.records:
                break
            records.extend(page.records)
            cursor = page.next_cursor
        assert raws(records) == lines
    finally:
        if old is None:
            del os.environ[s.env]
        else:
            os.environ[s.env] = old


def test_a_session_deleted_while_paging_is_not_found_never_an_empty_page(
    store: tuple[Store, Path],
) -> None:
    """The CLI (or its user) deletes the session between two pages: the next page is a
    typed ``session_not_found``, not an empty page that would read as 'nothing more'."""
    s, home = store
    path = s.lay_out(home, s.data.read_bytes())
    first = s.read(s.ref, None, 2, "start")
    assert len(first.records) == 2 and first.next_cursor is not None
    path.unlink()
    with pytest.raises(BridgeError) as gone:
        s.read(s.ref, first.next_cursor, 2, "start")
    assert gone.value.error_code == "session_not_found"
    with pytest.raises(BridgeError) as newest:
        s.read(s.ref, None, 2, "end")
    assert newest.value.error_code == "session_not_found"


def test_a_session_rewritten_shorter_while_paging_is_a_typed_error(
    store: tuple[Store, Path],
) -> None:
    """The file is replaced by a shorter one (rewritten, not appended): a cursor past its
    end is refused as ``invalid_params`` rather than read as 'nothing more'; reading again
    from the first page works."""
    s, home = store
    path = s.lay_out(home, s.data.read_bytes())
    _, cursor = read_all(s, 100)
    path.write_bytes(b"".join(line + b"\n" for line in s.lines[:2]))
    with pytest.raises(BridgeError) as past:
        s.read(s.ref, cursor, 100, "start")
    assert past.value.error_code == "invalid_params"
    assert raws(list(s.read(s.ref, None, 100, "start").records)) == s.lines[:2]


def test_list_newest_first_paged_and_filtered(store: tuple[Store, Path], tmp_path: Path) -> None:
    """Every workspace's sessions newest first (by modification time), two a page, files
    that are no session skipped; the recorded session's entry; one workspace alone; a bad
    cursor refused."""
    s, home = store
    a = s.lay_out(home, s.data.read_bytes())
    b = s.place(home, s.other)
    b.write_bytes(s.data.read_bytes())
    work = tmp_path / "elsewhere"
    work.mkdir()
    third, c = s.elsewhere(home, work)
    s.stray(home)
    for i, path in enumerate((a, b, c)):
        os.utime(path, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    first = s.list_page(None, None, 2)
    assert [e.session_ref for e in first.sessions] == [third, s.other]
    assert first.next_cursor is not None
    second = s.list_page(None, first.next_cursor, 2)
    assert [e.session_ref for e in second.sessions] == [s.ref]
    assert second.next_cursor is None
    entry = second.sessions[0]
    assert entry.title == s.title
    assert entry.workspace == "/workspace/project"
    assert entry.created_at == s.created_at
    assert entry.size_bytes == len(s.data.read_bytes())
    only = s.list_page(str(work), None, 10)
    assert [(e.session_ref, e.title, e.workspace) for e in only.sessions] == [
        (third, "other project", str(work))
    ]
    with pytest.raises(BridgeError) as bad:
        s.list_page(None, "garbage", 10)
    assert bad.value.error_code == "invalid_params"


def test_list_without_the_store_is_empty(store: tuple[Store, Path]) -> None:
    """The CLI never ran (no store directory at all): an empty listing, not an error."""
    s, home = store
    assert not home.exists()
    listed = s.list_page(None, None, 10)
    assert listed.sessions == () and listed.next_cursor is None
