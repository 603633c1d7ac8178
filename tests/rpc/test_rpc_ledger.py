"""Tests for rpc.ledger: monotonic ids, exactly-once settlement, decoding by recorded kind."""

# mypy: no-strict-equality
# (a state read again after a call that changes it is not narrowed to its first value)

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from agent_bridge.rpc.errors import ConnectionClosed, RequestTimedOut, RpcError
from agent_bridge.rpc.ledger import Ledger, LedgerEntry


class Point(msgspec.Struct):
    x: int
    y: int


class Named(msgspec.Struct):
    name: str


class Recorder:
    """An on_settle callback that counts how often each entry settled."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []

    def __call__(self, entry: LedgerEntry[Any]) -> None:
        self.calls.append((entry.id, entry.state))


def test_ids_are_monotonic_integers_never_reused() -> None:
    ledger = Ledger()
    seen: list[int] = []
    for i in range(50):
        entry: LedgerEntry[Any] = ledger.open("m", Any)
        seen.append(entry.id)
        if i % 2:
            ledger.settle_result(entry.id, b"1")
        elif i % 3:
            ledger.cancel(entry.id)
    ledger.fail_all()
    seen.extend(ledger.open("m", Any).id for _ in range(5))
    assert all(isinstance(i, int) and not isinstance(i, bool) for i in seen)
    assert seen == sorted(seen)
    assert len(set(seen)) == len(seen)
    assert seen[0] == 1


def test_first_id_is_configurable() -> None:
    ledger = Ledger(first_id=100)
    assert [ledger.open("m", Any).id for _ in range(3)] == [100, 101, 102]


def test_settle_by_result_decodes_by_recorded_type() -> None:
    ledger = Ledger()
    rec = Recorder()
    entry = ledger.open("geo/point", Point, on_settle=rec)
    assert not entry.settled and entry.state == "pending"
    with pytest.raises(RuntimeError):
        entry.outcome()
    assert ledger.settle_result(str(entry.id).encode(), b'{"x":1,"y":2}') is entry
    assert entry.state == "result"
    assert entry.outcome() == Point(1, 2)
    assert rec.calls == [(entry.id, "result")]
    assert len(ledger) == 0


def test_result_matching_a_different_type_is_an_error_never_guessed() -> None:
    ledger = Ledger()
    rec = Recorder()
    entry = ledger.open("geo/point", Point, on_settle=rec)
    other: LedgerEntry[Any] = ledger.open("who", Named)
    # A perfectly valid Named result arriving for the Point request must not be accepted.
    ledger.settle_result(entry.id, b'{"name":"n"}')
    assert entry.state == "error"
    with pytest.raises(RpcError) as info:
        entry.outcome()
    assert info.value.data["reason"] == "invalid_result"
    assert rec.calls == [(entry.id, "error")]
    ledger.settle_result(other.id, b'{"name":"n"}')
    assert other.outcome() == Named("n")


def test_any_result_type_accepts_any_json() -> None:
    ledger = Ledger()
    entry: LedgerEntry[Any] = ledger.open("m", Any)
    ledger.settle_result(entry.id, b'{"error":1,"result":[2]}')
    assert entry.outcome() == {"error": 1, "result": [2]}


def test_settle_by_error_raises_that_error() -> None:
    ledger = Ledger()
    entry: LedgerEntry[Any] = ledger.open("m", Any)
    err = RpcError(-32000, "nope", {"k": 1})
    assert ledger.settle_error(b"%d" % entry.id, err) is entry
    assert entry.state == "error"
    with pytest.raises(RpcError) as info:
        entry.outcome()
    assert info.value is err


def test_duplicate_response_returns_none_and_counts_unknown() -> None:
    ledger = Ledger()
    rec = Recorder()
    entry = ledger.open("m", int, on_settle=rec)
    assert ledger.settle_result(entry.id, b"1") is entry
    assert ledger.settle_result(entry.id, b"2") is None
    assert ledger.settle_error(entry.id, RpcError(1, "x")) is None
    assert ledger.unknown_responses == 2
    assert entry.outcome() == 1
    assert rec.calls == [(entry.id, "result")]


@pytest.mark.parametrize("raw_id", [b"999", b'"1"', b"null", b"-1", b"1.0", b""])
def test_unknown_response_ids_return_none_and_count_unknown(raw_id: bytes) -> None:
    ledger = Ledger()
    entry: LedgerEntry[Any] = ledger.open("m", Any)
    assert ledger.settle_result(raw_id, b"1") is None
    assert ledger.settle_error(raw_id, RpcError(1, "x")) is None
    assert ledger.unknown_responses == 2
    assert not entry.settled
    assert ledger.get(entry.id) is entry


def test_fail_all_fails_every_pending_entry_at_once() -> None:
    ledger = Ledger()
    rec = Recorder()
    entries = [ledger.open("m", Any, on_settle=rec, deadline=10.0) for _ in range(4)]
    ledger.settle_result(entries[0].id, b"0")
    failed = ledger.fail_all("peer exited")
    assert [e.id for e in failed] == [e.id for e in entries[1:]]
    for entry in entries[1:]:
        assert entry.state == "closed"
        with pytest.raises(ConnectionClosed, match="peer exited"):
            entry.outcome()
    assert len(ledger) == 0
    assert ledger.next_deadline() is None
    assert ledger.fail_all() == []
    assert sorted(rec.calls) == sorted(
        [(entries[0].id, "result")] + [(e.id, "closed") for e in entries[1:]]
    )
    # A late response after the failure is unknown, not a second settlement.
    assert ledger.settle_result(entries[1].id, b"1") is None
    assert entries[1].state == "closed"


def test_expire_settles_entries_at_or_before_now_as_timed_out() -> None:
    ledger = Ledger()
    rec = Recorder()
    early = ledger.open("early", Any, deadline=5.0, on_settle=rec)
    exact = ledger.open("exact", Any, deadline=6.0, on_settle=rec)
    late = ledger.open("late", Any, deadline=7.0, on_settle=rec)
    forever: LedgerEntry[Any] = ledger.open("forever", Any)
    assert ledger.expire(4.999) == []
    assert ledger.expire(6.0) == [early, exact]
    for entry in (early, exact):
        assert entry.state == "timeout"
        with pytest.raises(RequestTimedOut):
            entry.outcome()
    assert not late.settled and not forever.settled
    assert ledger.expire(6.5) == []
    assert ledger.settle_result(early.id, b"1") is None
    assert rec.calls == [(early.id, "timeout"), (exact.id, "timeout")]


def test_expire_skips_entries_already_settled() -> None:
    ledger = Ledger()
    rec = Recorder()
    entry = ledger.open("m", Any, deadline=1.0, on_settle=rec)
    ledger.settle_result(entry.id, b"1")
    assert ledger.expire(2.0) == []
    assert entry.state == "result"
    assert rec.calls == [(entry.id, "result")]


def test_local_cancel_settles_once_and_later_response_is_unknown() -> None:
    ledger = Ledger()
    rec = Recorder()
    entry = ledger.open("m", Any, on_settle=rec, deadline=3.0)
    assert ledger.cancel(entry.id) is entry
    assert entry.state == "cancelled"
    with pytest.raises(RpcError):
        entry.outcome()
    assert ledger.cancel(entry.id) is None
    assert ledger.settle_result(entry.id, b"1") is None
    assert ledger.expire(10.0) == []
    assert ledger.fail_all() == []
    assert rec.calls == [(entry.id, "cancelled")]
    assert ledger.unknown_responses == 1


def test_next_deadline_is_earliest_pending_deadline() -> None:
    ledger = Ledger()
    assert ledger.next_deadline() is None
    a: LedgerEntry[Any] = ledger.open("a", Any, deadline=30.0)
    b: LedgerEntry[Any] = ledger.open("b", Any, deadline=10.0)
    ledger.open("none", Any)
    c: LedgerEntry[Any] = ledger.open("c", Any, deadline=20.0)
    assert ledger.next_deadline() == 10.0
    ledger.settle_result(b.id, b"1")
    assert ledger.next_deadline() == 20.0
    ledger.cancel(c.id)
    assert ledger.next_deadline() == 30.0
    ledger.expire(30.0)
    assert a.state == "timeout"
    assert ledger.next_deadline() is None


def test_len_and_get_track_pending_entries() -> None:
    ledger = Ledger()
    a: LedgerEntry[Any] = ledger.open("a", Any)
    b: LedgerEntry[Any] = ledger.open("b", Any)
    assert len(ledger) == 2
    assert ledger.get(a.id) is a
    ledger.settle_error(a.id, RpcError(1, "x"))
    assert ledger.get(a.id) is None
    assert len(ledger) == 1
    assert ledger.get(b.id) is b
