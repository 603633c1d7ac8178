"""The journal's pieces in-process: state directory, blocks, paging, the settled
projection, schema versions and the checks made when a journal file is opened."""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
import typing
import zlib
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_bridge.journal.blocks import (
    CODEC_PLAIN,
    CODEC_ZLIB,
    CODEC_ZSTD,
    MAX_BLOCK_BYTES,
    MAX_BLOCK_EVENTS,
    MAX_PLAIN_BLOCK,
    TYPE_CODES,
    TYPE_NAMES,
    block_spans,
    decode_bodies,
    encode_bodies,
    pack_sizes,
    slice_block,
)
from agent_bridge.journal.errors import JournalError
from agent_bridge.journal.paging import page_range
from agent_bridge.journal.paths import default_state_dir, resolve_state_dir
from agent_bridge.journal.raw import encode_raw, raw_records
from agent_bridge.journal.schema import APPLICATION_ID, SCHEMA_VERSION, open_journal_db
from agent_bridge.journal.settle import settle
from agent_bridge.journal.writer import EventBatch
from agent_bridge.wire import events as wire_events

# --------------------------------------------------------------------- state directory


def test_state_dir_follows_platform_conventions(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    assert Path(default_state_dir("linux", {}, home)) == Path(home) / ".local/state/agent-bridge"
    assert Path(default_state_dir("linux", {"XDG_STATE_HOME": "/x/state"}, home)) == Path(
        "/x/state/agent-bridge"
    )
    # a relative XDG_STATE_HOME is ignored, as the XDG spec says
    assert Path(default_state_dir("linux", {"XDG_STATE_HOME": "rel"}, home)) == (
        Path(home) / ".local/state/agent-bridge"
    )
    assert Path(default_state_dir("darwin", {}, home)) == (
        Path(home) / "Library/Application Support/agent-bridge"
    )
    assert Path(default_state_dir("win32", {"LOCALAPPDATA": "C:/L"}, home)) == Path(
        "C:/L/agent-bridge"
    )


def test_state_dir_precedence_flag_then_environment_then_default(tmp_path: Path) -> None:
    env = {"AGENT_BRIDGE_STATE_DIR": str(tmp_path / "env"), "HOME": str(tmp_path)}
    assert resolve_state_dir(str(tmp_path / "flag"), env) == str(tmp_path / "flag")
    assert resolve_state_dir(None, env) == str(tmp_path / "env")
    assert resolve_state_dir(":memory:", env) == ":memory:"
    assert resolve_state_dir(None, {"AGENT_BRIDGE_STATE_DIR": ":memory:"}) == ":memory:"
    assert resolve_state_dir(None, {"HOME": str(tmp_path)}) == str(
        tmp_path / ".local/state/agent-bridge"
    )


# --------------------------------------------------------------------- blocks


def test_every_payload_type_has_a_stable_code() -> None:
    assert set(TYPE_CODES) == set(typing.get_args(wire_events.EventPayload))
    structs = [cls for cls in TYPE_CODES if issubclass(cls, msgspec.Struct)]
    assert len(structs) == len(TYPE_CODES)
    assert {TYPE_NAMES[code] for code in TYPE_CODES.values()} == {
        cls.__struct_config__.tag for cls in structs
    }
    assert TYPE_NAMES[1] == "text.delta" and TYPE_NAMES[13] == "session.closed"


@given(st.lists(st.integers(min_value=0, max_value=MAX_BLOCK_BYTES * 2), max_size=2000))
@settings(max_examples=200, deadline=None)
def test_block_spans_cover_everything_within_the_limits(sizes: list[int]) -> None:
    spans = block_spans(sizes)
    assert [i for a, b in spans for i in range(a, b)] == list(range(len(sizes)))
    for a, b in spans:
        assert 1 <= b - a <= MAX_BLOCK_EVENTS
        assert b - a == 1 or sum(sizes[a:b]) <= MAX_BLOCK_BYTES


@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=1000),
    st.integers(min_value=-5, max_value=70),
    st.integers(min_value=-5, max_value=70),
)
@settings(max_examples=200, deadline=None)
def test_a_block_gives_back_any_range_of_its_events(
    bodies: list[bytes], first: int, lo: int, hi: int
) -> None:
    codec, blob = encode_bodies(bodies)
    plain = decode_bodies(codec, blob)
    sizes = pack_sizes([len(b) for b in bodies])
    got = slice_block(first, sizes, plain, first + lo, first + hi)
    want = bodies[max(0, lo) : max(0, hi + 1)]
    assert got == want


def test_a_damaged_block_is_an_error_not_wrong_data() -> None:
    bodies = [b'{"a":%d,"text":"some words of a delta"}' % i for i in range(50)]
    codec, blob = encode_bodies(bodies)
    assert codec == CODEC_ZSTD
    assert decode_bodies(codec, blob) == b"".join(bodies)
    with pytest.raises(ValueError):
        decode_bodies(codec, blob[:-3] + b"xyz")  # the frame's checksum
    flipped = bytearray(blob)
    for at in range(len(blob) // 2, len(blob) // 2 + 4):
        flipped[at] ^= 0x5A
    with pytest.raises(ValueError):
        decode_bodies(codec, bytes(flipped))
    with pytest.raises(ValueError):
        decode_bodies(codec, b"not a zstandard frame at all")
    with pytest.raises(ValueError):
        slice_block(1, pack_sizes([3, 3]), b"12345", 1, 2)
    with pytest.raises(ValueError):
        decode_bodies(7, blob)
    zlib_blob = zlib.compress(b"".join(bodies), 1)
    with pytest.raises(ValueError):
        decode_bodies(CODEC_ZLIB, zlib_blob[:-3] + b"xyz")


def test_a_block_frame_claiming_more_than_a_block_can_hold_is_damage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A damaged frame header never makes a read allocate what it claims (the bound
    lowered here, so that the test allocates nothing large)."""
    from agent_bridge.journal import blocks

    codec, blob = encode_bodies([b'{"text":"a delta"}'] * 100)
    monkeypatch.setattr(blocks, "MAX_PLAIN_BLOCK", 1000)
    with pytest.raises(ValueError, match="claims 1800 bytes"):
        decode_bodies(codec, blob)
    assert MAX_PLAIN_BLOCK >= 64 * MAX_BLOCK_BYTES


def test_blocks_that_do_not_shrink_are_stored_plain() -> None:
    bodies = [os.urandom(40)]
    assert encode_bodies(bodies) == (CODEC_PLAIN, bodies[0])


def test_zlib_blocks_of_an_older_journal_are_still_read_beside_new_ones(tmp_path: Path) -> None:
    """A version-1 journal whose events are zlib blocks (codec 1, as every journal before
    version 8 wrote them) is upgraded; its old events read back, and the events a writer
    appends after them (Zstandard) too, through one read."""
    from agent_bridge.journal.reader import Reader
    from agent_bridge.journal.retention import Retention
    from agent_bridge.journal.schema import configure, connect
    from agent_bridge.journal.writer import OP_EVENTS, Writer

    path = tmp_path / "j.sqlite3"
    make_v1_journal(path, events=7)
    conn = sqlite3.connect(path)
    (plain,) = conn.execute("SELECT bodies FROM event_blocks").fetchone()
    conn.execute("UPDATE event_blocks SET codec = 1, bodies = ?", (zlib.compress(plain, 1),))
    conn.commit()
    conn.close()
    old = [bytes(plain[a:b]) for a, b in _spans_of(path)]
    open_journal_db(str(path)).close()
    wconn = connect(str(path), busy_timeout=5.0)
    configure(wconn, "full")
    writer = Writer(wconn, lambda *_: None, Retention(), str(tmp_path))
    batch = EventBatch("ses_v1a", 8)
    new = [b'{"sequence":%d,"text":"appended after the upgrade"}' % i for i in range(8, 20)]
    batch.bodies = list(new)
    batch.codes = bytearray(b"\x01" * len(new))
    writer._commit([(OP_EVENTS, [batch])])
    wconn.close()
    conn = sqlite3.connect(path)
    codecs = [c for (c,) in conn.execute("SELECT codec FROM event_blocks ORDER BY first_seq")]
    conn.close()
    assert codecs == [CODEC_ZLIB, CODEC_ZSTD]
    reader = Reader(connect(str(path), busy_timeout=5.0))
    try:
        assert reader.events("ses_v1a", 1, 19) == old + new
        assert reader.events("ses_v1a", 6, 9) == old[5:] + new[:2]
    finally:
        reader.close()


def _spans_of(path: Path) -> list[tuple[int, int]]:
    """The byte ranges of the events in the one block of ``path``'s journal."""
    conn = sqlite3.connect(path)
    (sizes,) = conn.execute("SELECT sizes FROM event_blocks").fetchone()
    conn.close()
    ends = list(
        itertools.accumulate(
            int.from_bytes(sizes[i : i + 4], "little") for i in range(0, len(sizes), 4)
        )
    )
    return list(zip([0, *ends[:-1]], ends, strict=True))


# --------------------------------------------------------------------- paging


@given(
    st.integers(min_value=0, max_value=300),
    st.integers(min_value=1, max_value=1000),
    st.data(),
)
@settings(max_examples=300, deadline=None)
def test_pages_forward_and_backward_concatenate_to_the_whole_log(
    last: int, limit: int, data: st.DataObject
) -> None:
    forward: list[int] = []
    after = 0
    while True:
        step = data.draw(st.integers(min_value=1, max_value=limit), label="limit")
        lo, hi, more = page_range(last, after, None, step)
        forward += range(lo, hi + 1)
        if not more:
            break
        after = hi
    assert forward == list(range(1, last + 1))
    backward: list[int] = []
    before = last + 1
    while True:
        step = data.draw(st.integers(min_value=1, max_value=limit), label="limit")
        lo, hi, more = page_range(last, None, before, step)
        backward = list(range(lo, hi + 1)) + backward
        if not more:
            break
        before = lo
    assert backward == list(range(1, last + 1))


# --------------------------------------------------------------------- settled view


def _envelope(seq: int, run: str | None, payload: dict[str, Any]) -> bytes:
    env: dict[str, Any] = {
        "eventId": f"evt_t_{seq:x}",
        "sessionId": "ses_t",
        "sequence": seq,
        "occurredAt": "2026-01-01T00:00:00.000Z",
        "payload": payload,
    }
    if run is not None:
        env["runId"] = run
    return msgspec.json.encode(env)


def test_a_settled_page_folds_each_message_apart_and_keeps_its_id() -> None:
    """Deltas of two messages of one run (``messageId``) fold into one event each, each
    with its message's id: the identity a host merges live and historical events by."""
    bodies = [
        _envelope(1, "run_a", {"type": "text.delta", "text": "He", "messageId": "m1"}),
        _envelope(2, "run_a", {"type": "text.delta", "text": "llo", "messageId": "m1"}),
        _envelope(3, "run_a", {"type": "text.delta", "text": "Bye", "messageId": "m2"}),
        _envelope(4, "run_a", {"type": "text.delta", "text": ".", "messageId": "m2"}),
    ]
    settled = [msgspec.json.decode(b)["payload"] for b in settle(bodies)]
    assert settled == [
        {"type": "text.delta", "text": "Hello", "messageId": "m1"},
        {"type": "text.delta", "text": "Bye.", "messageId": "m2"},
    ]


_kinds = st.sampled_from(["text", "thinking", "tool", "other-run-text"])


@given(st.lists(_kinds, max_size=60))
@settings(max_examples=300, deadline=None)
def test_settled_pages_fold_consecutive_deltas_and_keep_everything_else(kinds: list[str]) -> None:
    bodies = []
    for i, kind in enumerate(kinds, 1):
        if kind == "text":
            payload = {"type": "text.delta", "text": f"t{i};"}
            run = "run_a"
        elif kind == "other-run-text":
            payload, run = {"type": "text.delta", "text": f"o{i};"}, "run_b"
        elif kind == "thinking":
            payload, run = {"type": "thinking.delta", "text": f"h{i};"}, "run_a"
        else:
            payload, run = (
                {"type": "tool.activity", "toolCallId": "c", "name": "x", "status": "started"},
                "run_a",
            )
        bodies.append(_envelope(i, run, payload))
    settled = [msgspec.json.decode(b) for b in settle(bodies)]
    exact = [msgspec.json.decode(b) for b in bodies]

    def text_of(events: list[dict[str, Any]], run: str, kind: str) -> str:
        return "".join(
            e["payload"]["text"]
            for e in events
            if e.get("runId") == run and e["payload"]["type"] == kind
        )

    pairs = (("run_a", "text.delta"), ("run_b", "text.delta"), ("run_a", "thinking.delta"))
    for run, kind in pairs:
        assert text_of(settled, run, kind) == text_of(exact, run, kind)
    # every non-delta event is there, unchanged and in order; sequences ascend
    assert [e for e in settled if "text" not in e["payload"]] == [
        e for e in exact if "text" not in e["payload"]
    ]
    sequences = [e["sequence"] for e in settled]
    assert sequences == sorted(set(sequences))
    by_seq = {e["sequence"]: e for e in exact}
    for event in settled:
        # a folded event keeps the id and time of the last delta it stands for
        assert event["eventId"] == by_seq[event["sequence"]]["eventId"]
        start = event.get("foldedFrom", event["sequence"])
        group = [by_seq[s] for s in range(start, event["sequence"] + 1)]
        assert all(g["payload"]["type"] == event["payload"]["type"] for g in group)
        assert all(g.get("runId") == event.get("runId") for g in group)
    # no two neighbours could have been folded further
    for left, right in itertools.pairwise(settled):
        if left["payload"]["type"] in ("text.delta", "thinking.delta"):
            assert not (
                right["payload"]["type"] == left["payload"]["type"]
                and right.get("runId") == left.get("runId")
                and right.get("foldedFrom", right["sequence"]) == left["sequence"] + 1
            )


def test_a_page_without_neighbouring_deltas_is_its_own_settled_view() -> None:
    bodies = [
        _envelope(1, "r", {"type": "run.started", "input": "x"}),
        _envelope(2, "r", {"type": "text.delta", "text": "a"}),
        _envelope(3, "r", {"type": "usage"}),
        _envelope(4, "r", {"type": "text.delta", "text": "b"}),
    ]
    assert settle(bodies) == bodies


# --------------------------------------------------------------------- raw records


def test_raw_records_keep_bytes_as_received_and_encode_objects_once() -> None:
    assert encode_raw(b'{"x": 1}\n') == b'{"x": 1}\n'
    assert encode_raw("é") == "é".encode()
    assert encode_raw({"a": [1, 2]}) == b'{"a":[1,2]}'
    loop: list[Any] = []
    loop.append(loop)
    assert encode_raw(loop) is None
    out = raw_records([(1, 3, 1), (4, 4, 9), (5, 8, 1)], {1: b'{"k":1}', 9: b"not json \xff"}, 2, 6)
    assert [(r.raw_id, r.spans) for r in out] == [(1, ((2, 3), (5, 6))), (9, ((4, 4),))]
    assert bytes(out[0].record) == b'{"k":1}'
    assert out[1].text == "not json \ufffd" and out[1].record is None


@given(st.integers(min_value=1, max_value=50), st.lists(st.integers(0, 3), max_size=40))
@settings(max_examples=300, deadline=None)
def test_a_batch_links_each_event_to_its_raw_record(first: int, raws: list[int]) -> None:
    batch = EventBatch("ses_b", first)
    for offset, raw_id in enumerate(raws):  # what Journal.append does
        batch.bodies.append(b"{}")
        batch.codes.append(1)
        if raw_id != batch.raw_id:
            batch.changes.append((first + offset, raw_id))
            batch.raw_id = raw_id
    linked = {seq: raw_id for a, b, raw_id in batch.links() for seq in range(a, b + 1)}
    assert linked == {first + i: r for i, r in enumerate(raws) if r}
    spans = batch.links()
    assert all(a <= b for a, b, _ in spans)
    assert all(left[1] < right[0] for left, right in itertools.pairwise(spans))


# --------------------------------------------------------------------- opening a journal

V1_FIXTURE = """
CREATE TABLE sessions (skey INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE,
  provider_id TEXT NOT NULL, provider_version TEXT NOT NULL, workspace TEXT, title TEXT,
  options BLOB NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  state TEXT NOT NULL, owner TEXT, recovery BLOB);
CREATE INDEX sessions_owner ON sessions(owner) WHERE owner IS NOT NULL;
CREATE TABLE event_blocks (skey INTEGER NOT NULL, first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL, codec INTEGER NOT NULL, types BLOB NOT NULL,
  sizes BLOB NOT NULL, bodies BLOB NOT NULL, PRIMARY KEY (skey, first_seq)) WITHOUT ROWID;
CREATE TABLE raw_records (skey INTEGER NOT NULL, raw_id INTEGER NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY (skey, raw_id));
CREATE TABLE raw_links (skey INTEGER NOT NULL, first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL, raw_id INTEGER NOT NULL, PRIMARY KEY (skey, first_seq))
  WITHOUT ROWID;
CREATE TABLE runs (skey INTEGER NOT NULL, run_id TEXT NOT NULL, started_seq INTEGER NOT NULL,
  ended_seq INTEGER, state TEXT NOT NULL, PRIMARY KEY (skey, run_id)) WITHOUT ROWID;
CREATE INDEX runs_open ON runs(skey) WHERE ended_seq IS NULL;
CREATE TABLE interactions (skey INTEGER NOT NULL, interaction_id TEXT NOT NULL,
  run_id TEXT NOT NULL, status TEXT NOT NULL, request BLOB NOT NULL, answer BLOB,
  PRIMARY KEY (skey, interaction_id)) WITHOUT ROWID;
CREATE INDEX interactions_pending ON interactions(skey) WHERE status = 'pending';
CREATE TABLE receipts (command_id TEXT PRIMARY KEY, skey INTEGER NOT NULL,
  payload BLOB NOT NULL, result BLOB NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX receipts_session ON receipts(skey);
CREATE TABLE owners (token TEXT PRIMARY KEY, pid INTEGER NOT NULL, started_at TEXT NOT NULL);
"""


def make_v1_journal(path: Path, sessions: int = 1, events: int = 5) -> None:
    """A journal as schema version 1 left it (no retention columns), with closed sessions
    ``ses_v1a``… holding ``events`` text deltas each (plain blocks)."""
    conn = sqlite3.connect(path)
    conn.executescript(V1_FIXTURE)
    for s in range(sessions):
        sid = f"ses_v1{chr(97 + s)}"
        conn.execute(
            "INSERT INTO sessions (session_id, provider_id, provider_version, options, "
            "created_at, updated_at, state, recovery) VALUES (?, 'scripted', '1.0.0', '{}', "
            "?, ?, 'closed', ?)",
            (
                sid,
                f"2026-01-0{s + 1}T00:00:00.000Z",
                f"2026-01-0{s + 1}T00:00:00.000Z",
                b'{"script":{"steps":[{"type":"echo"}]},"history":["hi"]}',
            ),
        )
        skey = conn.execute("SELECT skey FROM sessions WHERE session_id=?", (sid,)).fetchone()[0]
        bodies = [
            msgspec.json.encode(
                {
                    "eventId": f"evt_{sid[4:]}_{i:x}",
                    "sessionId": sid,
                    "runId": "run_v1",
                    "sequence": i,
                    "occurredAt": "2026-01-01T00:00:00.000Z",
                    "payload": {"type": "text.delta", "text": f"old {i}"},
                }
            )
            for i in range(1, events + 1)
        ]
        conn.execute(
            "INSERT INTO event_blocks VALUES (?, 1, ?, 0, ?, ?, ?)",
            (
                skey,
                events,
                bytes([1] * events),
                pack_sizes([len(b) for b in bodies]),
                b"".join(bodies),
            ),
        )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_a_new_journal_gets_the_current_schema(tmp_path: Path) -> None:
    conn = open_journal_db(str(tmp_path / "j.sqlite3"))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_an_empty_file_is_a_new_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    path.touch()
    open_journal_db(str(path)).close()


def test_a_version_1_journal_is_upgraded_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    make_v1_journal(path, events=7)
    conn = open_journal_db(str(path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    (size,) = conn.execute("SELECT bytes FROM sessions").fetchone()
    (stored,) = conn.execute("SELECT length(bodies) FROM event_blocks").fetchone()
    assert size == stored > 0  # backfilled
    conn.close()
    # opening again changes nothing
    open_journal_db(str(path)).close()


def test_a_newer_journal_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE future (x)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(JournalError, match="newer agent-bridge") as err:
        open_journal_db(str(path))
    assert "\n" not in str(err.value)
    assert path.read_bytes() == before
    assert not Path(str(path) + "-wal").exists()


@pytest.mark.parametrize(
    "content",
    [b"this is not a database at all" * 10, b"SQLite format 3\x00" + os.urandom(4000)],
    ids=["text", "damaged"],
)
def test_a_damaged_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "j.sqlite3"
    path.write_bytes(content)
    with pytest.raises(JournalError, match=r"not a SQLite database|damaged") as err:
        open_journal_db(str(path))
    assert "\n" not in str(err.value)
    assert path.read_bytes() == content


def test_another_programs_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="not an agent-bridge journal"):
        open_journal_db(str(path))


def test_a_locked_journal_is_refused_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    open_journal_db(str(path)).close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(JournalError, match="locked"):
            open_journal_db(str(path), busy_timeout=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_two_openers_at_once_upgrade_once(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    make_v1_journal(path)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            open_journal_db(str(path), busy_timeout=10).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
