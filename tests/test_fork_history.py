"""A fork's history references its parent's: read through, never copied (every backend).

Driven through the :class:`History` port every backend implements (SQLite, PostgreSQL,
memory): a parent with two runs, a fork after the first, a fork of that fork; reads give the
parent's events up to each fork point as the fork's own (its ``sessionId``, its ``eventId``
s), then the fork's; the run positions a fork is made from are found through the parents; a
session forks read from is neither deleted nor dropped by retention.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agent_bridge.envelope import EnvelopeFormat, stamp
from agent_bridge.journal import TYPE_CODES, History, MemoryHistory, SessionRecord
from agent_bridge.journal.journal import Journal
from agent_bridge.journal.retention import Retention, apply_retention
from agent_bridge.journal.schema import open_journal_db
from agent_bridge.wire.events import TextDelta

NOW = "2026-01-01T00:00:00.000Z"
CODE = TYPE_CODES[TextDelta]


@asynccontextmanager
async def opened(kind: str, tmp: Path, request: pytest.FixtureRequest) -> AsyncIterator[History]:
    history: History
    if kind == "memory":
        history = MemoryHistory()
    elif kind == "postgresql":
        from agent_bridge.journal.postgres import open_pg_journal

        history = open_pg_journal(request.getfixturevalue("pg_url"), lease=3600, node="n")
    else:
        history = Journal.open(str(tmp / "state"))
    await history.start(lambda: None)
    try:
        yield history
    finally:
        await history.aclose()


def write(
    history: History, session_id: str, first: int, last: int, text: str, raw_id: int = 0
) -> None:
    fmt = EnvelopeFormat(session_id)
    for seq in range(first, last + 1):
        body = stamp(fmt, seq, "run_x", NOW.encode(), TextDelta(f"{text}{seq}"))
        history.append(session_id, seq, CODE, body, raw_id)


def record(session_id: str, parent: str | None = None, at: int = 0) -> SessionRecord:
    return SessionRecord(
        session_id, "p", "1", None, None, NOW, NOW, parent_id=parent, fork_sequence=at
    )


def decoded(bodies: list[bytes]) -> list[dict[str, Any]]:
    return [msgspec.json.decode(b) for b in bodies]


@pytest.mark.parametrize("kind", ["journal", "memory", "postgresql"])
async def test_a_fork_reads_its_parent_up_to_the_fork_point(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with opened(kind, tmp_path, request) as history:
        history.add_session(record("ses_a"))
        history.run_started("ses_a", "run_1", 1)
        history.run_started("ses_a", "run_2", 6)
        write(history, "ses_a", 1, 10, "a")
        history.run_ended("ses_a", "run_1", 5, "completed", b'{"at":5}')
        history.run_ended("ses_a", "run_2", 10, "completed", b'{"at":10}')
        history.add_session(record("ses_b", "ses_a", 5))
        write(history, "ses_b", 6, 8, "b")
        history.add_session(record("ses_c", "ses_b", 7))
        await history.committed_through(history.mark())

        b = decoded(await history.read_events("ses_b", 1, 100))
        assert [e["sequence"] for e in b] == list(range(1, 9))
        assert [e["payload"]["text"] for e in b] == [f"a{i}" for i in range(1, 6)] + [
            "b6",
            "b7",
            "b8",
        ]
        assert {e["sessionId"] for e in b} == {"ses_b"}
        assert [e["eventId"] for e in b] == [f"evt_b_{i:x}" for i in range(1, 9)]
        # a page that starts inside the parent's part and ends in the fork's own
        middle = decoded(await history.read_events("ses_b", 4, 6))
        assert [e["payload"]["text"] for e in middle] == ["a4", "a5", "b6"]
        # a fork of a fork reads through both
        c = decoded(await history.read_events("ses_c", 1, 100))
        assert [e["payload"]["text"] for e in c] == [f"a{i}" for i in range(1, 6)] + ["b6", "b7"]
        assert {e["sessionId"] for e in c} == {"ses_c"}
        # the parent is as it was
        a = decoded(await history.read_events("ses_a", 1, 100))
        assert [e["payload"]["text"] for e in a] == [f"a{i}" for i in range(1, 11)]
        assert {e["sessionId"] for e in a} == {"ses_a"}

        stored = await history.load_session("ses_c")
        assert stored is not None
        assert (stored.parent_id, stored.fork_sequence, stored.last_sequence) == ("ses_b", 7, 7)
        stored = await history.load_session("ses_b")
        assert stored is not None and stored.last_sequence == 8

        assert await history.position_at("ses_a", 9) == (5, b'{"at":5}')
        assert await history.position_at("ses_a", 10) == (10, b'{"at":10}')
        assert await history.position_at("ses_a", 4) is None
        # the fork's positions come from its parent's runs up to the fork point only
        assert await history.position_at("ses_b", 8) == (5, b'{"at":5}')
        assert await history.position_at("ses_c", 7) == (5, b'{"at":5}')
        # checkpoints inside a run (granularity: message) are points too
        history.run_started("ses_b", "run_3", 6)
        history.run_ended("ses_b", "run_3", 8, "completed", b'{"at":8}', ((6, b'{"at":6}'),))
        await history.committed_through(history.mark())
        assert await history.position_at("ses_b", 8) == (8, b'{"at":8}')
        assert await history.position_at("ses_b", 7) == (6, b'{"at":6}')
        # ses_c forks ses_b at 7: ses_b's checkpoint at 6 is in its history, the end at 8 not
        assert await history.position_at("ses_c", 7) == (6, b'{"at":6}')
        assert await history.position_at("ses_c", 5) == (5, b'{"at":5}')

        assert await history.has_forks("ses_a") and await history.has_forks("ses_b")
        assert not await history.has_forks("ses_c")
        assert await history.delete("ses_a") == "has_forks"
        assert await history.delete("ses_b") == "has_forks"


@pytest.mark.parametrize("kind", ["journal", "memory", "postgresql"])
async def test_a_forks_raw_records_are_its_parents_up_to_the_fork_point(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with opened(kind, tmp_path, request) as history:
        history.add_session(record("ses_a"))
        history.add_raw("ses_a", 1, b'{"a":1}')
        write(history, "ses_a", 1, 2, "a", 1)
        history.add_raw("ses_a", 3, b'{"a":3}')
        write(history, "ses_a", 3, 10, "a", 3)
        history.add_session(record("ses_b", "ses_a", 5))
        history.add_raw("ses_b", 6, b'{"b":6}')
        write(history, "ses_b", 6, 8, "b", 6)
        history.add_session(record("ses_c", "ses_b", 7))
        await history.committed_through(history.mark())

        def spans(raws: list[Any]) -> list[tuple[int, Any, Any]]:
            return [(r.raw_id, r.spans, msgspec.json.decode(r.record)) for r in raws]

        # the parent's record that goes on past the fork point counts only up to it
        assert spans(await history.read_raw("ses_b", 1, 100)) == [
            (1, ((1, 2),), {"a": 1}),
            (3, ((3, 5),), {"a": 3}),
            (6, ((6, 8),), {"b": 6}),
        ]
        # a page inside the parent's part, one across the fork point, one of its own
        assert spans(await history.read_raw("ses_b", 2, 4)) == [
            (1, ((2, 2),), {"a": 1}),
            (3, ((3, 4),), {"a": 3}),
        ]
        assert spans(await history.read_raw("ses_b", 5, 6)) == [
            (3, ((5, 5),), {"a": 3}),
            (6, ((6, 6),), {"b": 6}),
        ]
        assert spans(await history.read_raw("ses_b", 7, 8)) == [(6, ((7, 8),), {"b": 6})]
        # a fork of a fork reads through both; an unknown session and an empty range: none
        assert spans(await history.read_raw("ses_c", 1, 100)) == [
            (1, ((1, 2),), {"a": 1}),
            (3, ((3, 5),), {"a": 3}),
            (6, ((6, 7),), {"b": 6}),
        ]
        assert await history.read_raw("ses_x", 1, 100) == []
        assert await history.read_raw("ses_b", 4, 3) == []
        assert await history.read_events("ses_x", 1, 100) == []
        assert await history.position_at("ses_x", 100) is None


def test_retention_keeps_a_session_forks_read_from(tmp_path: Path) -> None:
    conn = open_journal_db(str(tmp_path / "journal.sqlite3"))
    old = "2020-01-01T00:00:00.000Z"
    for name, parent in (("parent", None), ("fork", "parent"), ("alone", None)):
        conn.execute(
            "INSERT INTO sessions (session_id, provider_id, provider_version, options, "
            "created_at, updated_at, state, bytes, parent_id, fork_seq) "
            "VALUES (?, 'p', '1', '{}', ?, ?, 'closed', 10, ?, 3)",
            (name, old, old, parent),
        )
    now = 1_767_225_600.0  # 2026-01-01
    assert sorted(apply_retention(conn, Retention(max_age_days=365), now=now)) == [
        "alone",
        "fork",
    ]
    # once its fork is gone, the parent goes too
    assert apply_retention(conn, Retention(max_bytes=1), now=now) == ["parent"]
    conn.close()
