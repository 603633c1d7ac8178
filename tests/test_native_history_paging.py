"""The paging contract every reader of a CLI's own JSON Lines history keeps, checked
alike on each: Claude Code's session files (``adapters/claude/native``), Codex's rollouts
(``adapters/codex/native``) and Gemini CLI's chats (``adapters/acp/gemini_native``), all
paged by ``adapters/kit/jsonl_history``.

Each store is laid out in a private home holding records the real CLI wrote against its
stand-in (sanitized: ``tests/data/``), and read back through the adapter's real file
reading: raw records preserved, cursor progress from an empty first cursor, the newest
page then backward, a half-written last line held back, a record past the bound as a
diagnostic, a malformed or undecodable record still delivered raw, typed errors for a
missing, unreadable or foreign reference and a bad cursor, nothing written, and cursors
that stay valid while the CLI appends (property test).  What only one store does (its
projection, its listing, its reference shapes) stays in ``tests/test_<store>_native.py``.
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
from agent_bridge.wire.native import NativeRecord, NativeSessionsReadResult

DATA = Path(__file__).parent / "data"

Reader = Callable[[str, str | None, int, Literal["start", "end"]], NativeSessionsReadResult]


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
    #: the store's listing (newest first, every workspace), read-only like its reading
    listing: Callable[[], object]

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
        listing=lambda: native.list_page(None, None, 10),
    )


def _codex() -> Store:
    from agent_bridge.adapters.codex import native

    thread, day = "01a234d6-10e4-73a1-8369-9cd1e2844254", "2026/12/02"
    stem = f"rollout-2026-12-02T03-39-33-{thread}"

    def place(home: Path, ref: str) -> Path:
        directory, _, name = ref.rpartition("/")
        (home / "sessions" / directory).mkdir(parents=True, exist_ok=True)
        return home / "sessions" / directory / f"{name}.jsonl"

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
        listing=lambda: native.list_page(None, None, 10),
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
        listing=lambda: native.list_page(None, None, 10),
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
    s.listing()
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
