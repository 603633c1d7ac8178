"""Limits in one shape: the normaliser (adapters/kit/limits.py), each provider's mapping of
what it says about its limits (Codex's rate-limit snapshots, Claude Code's
``rate_limit_event`` and 429 retries), the run outcome of a run that hit a limit, and the
runtime's book behind ``provider/limits``.  Pure functions: the real CLIs are driven in
tests/test_limits_e2e.py."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from agent_bridge.adapters.claude import mapping as claude
from agent_bridge.adapters.codex import mapping as codex
from agent_bridge.adapters.codex import protocol as proto
from agent_bridge.adapters.kit import limits as kit_limits
from agent_bridge.adapters.kit.limits import (
    instant,
    limit_details,
    merge_meters,
    reset_of,
    status_of,
)
from agent_bridge.runtime.limits import MAX_METERS, LimitsBook
from agent_bridge.wire.errors import ErrorInfo
from agent_bridge.wire.events import LimitMeter, LimitsUpdated

RESET = 1796183885  # 2026-12-02T03:58:05Z
RESET_ISO = "2026-12-02T03:58:05Z"


def test_instants_are_utc_seconds_and_implausible_ones_are_dropped() -> None:
    assert instant(RESET) == RESET_ISO
    assert instant(RESET * 1000) == RESET_ISO  # milliseconds
    assert instant(RESET + 0.9) == RESET_ISO
    for bad in (None, "1796183885", True, -1, 0, float("nan"), float("inf"), 10**20):
        assert instant(bad) is None, bad


def test_status_follows_the_percent() -> None:
    assert [status_of(p) for p in (None, 0, 79.9, 80, 99.9, 100, 130)] == [
        None,
        "ok",
        "ok",
        "warning",
        "warning",
        "exhausted",
        "exhausted",
    ]


def test_the_reset_is_when_every_exhausted_meter_has_reset() -> None:
    meters = [
        LimitMeter("codex", "primary", status="exhausted", resets_at="2026-12-02T05:00:00Z"),
        LimitMeter("codex", "secondary", status="exhausted", resets_at="2026-12-03T00:00:00Z"),
        LimitMeter("codex", "tertiary", status="ok", resets_at="2027-01-01T00:00:00Z"),
    ]
    assert reset_of(meters) == "2026-12-03T00:00:00Z"
    assert reset_of(meters[2:]) is None
    assert reset_of([LimitMeter("codex", "primary", status="exhausted")]) is None
    # Once a reset has passed, its meter no longer holds requests back.
    assert reset_of(meters, now=RESET + 10 * 86400) is None
    assert reset_of(meters[:1], now=RESET) == "2026-12-02T05:00:00Z"


def test_merging_keeps_the_newest_figures_of_each_meter() -> None:
    known: dict[tuple[str, str], LimitMeter] = {}
    merge_meters(known, [LimitMeter("codex", "primary", percent=10.0)])
    merge_meters(known, [LimitMeter("codex", "secondary", percent=5.0)])
    merge_meters(known, [LimitMeter("codex", "primary", percent=20.0)])
    assert {k: m.percent for k, m in known.items()} == {
        ("codex", "primary"): 20.0,
        ("codex", "secondary"): 5.0,
    }


def test_merging_keeps_at_most_max_meters_the_oldest_dropped_first() -> None:
    """A provider names its meters (Claude Code's ``rateLimitType``: any 1 to 40 of
    ``[a-z0-9_]``), so what a session keeps of them is bounded: before, every name a
    CLI ever sent was kept for the session's life."""
    known: dict[tuple[str, str], LimitMeter] = {}
    merge_meters(known, [LimitMeter("claude", "five_hour", percent=99.0)])
    for i in range(kit_limits.MAX_METERS - 1):
        merge_meters(known, [LimitMeter("claude", f"m{i}", percent=1.0)])
    assert len(known) == kit_limits.MAX_METERS  # N: all kept
    merge_meters(known, [LimitMeter("claude", "five_hour", percent=100.0)])  # refreshed
    merge_meters(known, [LimitMeter("claude", "one_more", percent=1.0)])  # N + 1
    assert len(known) == kit_limits.MAX_METERS
    assert ("claude", "m0") not in known  # the least recently reported went
    assert known[("claude", "five_hour")].percent == 100.0
    for i in range(100_000):
        merge_meters(known, [LimitMeter("claude", f"x{i}")])
    assert len(known) == kit_limits.MAX_METERS


def test_limit_details_pass_the_wire_allowlist() -> None:
    details = limit_details("rate_limited", retry_after=1.2, now=RESET - 2)
    assert details == {
        "cause": "rate_limited",
        "retryAfterSeconds": "2",
        "resetsAt": "2026-12-02T03:58:05Z",
    }
    # The provider's own reset wins over a relative hint.
    given = limit_details("quota_exhausted", resets_at=RESET_ISO, retry_after=5, now=0)
    assert given["resetsAt"] == RESET_ISO
    info = ErrorInfo.of("provider_rate_limited", details=details)
    assert info.details == details and info.retryable
    # What is not an instant or a small count never reaches a host.
    bad = ErrorInfo.of(
        "provider_rate_limited",
        details={"cause": "quota_exhausted", "resetsAt": "at 3:58 AM", "retryAfterSeconds": "-1"},
    )
    assert bad.details == {"cause": "quota_exhausted"}
    assert limit_details("rate_limited", retry_after=float("nan")) == {"cause": "rate_limited"}


# ----------------------------------------------------------------------------- Codex


def _snapshot(raw: dict[str, Any]) -> proto.RateLimitSnapshot:
    note = msgspec.json.decode(
        msgspec.json.encode({"rateLimits": raw}), type=proto.RateLimitsUpdated
    )
    return note.rate_limits


#: What codex 0.171.0 sent for a 429 ``usage_limit_reached`` with x-codex-* headers.
CODEX_SNAPSHOT: dict[str, Any] = {
    "limitId": "codex",
    "limitName": None,
    "primary": {"usedPercent": 100, "windowDurationMins": 300, "resetsAt": RESET},
    "secondary": {"usedPercent": 40, "windowDurationMins": 10080, "resetsAt": RESET + 86400},
    "credits": None,
    "planType": None,
    "rateLimitReachedType": None,
}


def test_codex_snapshots_become_meters() -> None:
    update = codex.limits_payload(_snapshot(CODEX_SNAPSHOT))
    assert update == LimitsUpdated(
        (
            LimitMeter(
                "codex",
                "primary",
                percent=100.0,
                window_seconds=18000,
                resets_at=RESET_ISO,
                status="exhausted",
            ),
            LimitMeter(
                "codex",
                "secondary",
                percent=40.0,
                window_seconds=604800,
                resets_at="2026-12-03T03:58:05Z",
                status="ok",
            ),
        )
    )
    # Sparse updates: no windows, only account metadata -> nothing to report.
    assert codex.limits_payload(_snapshot({"planType": "plus"})) is None
    credits = codex.limits_payload(
        _snapshot({"limitId": "x", "credits": {"hasCredits": False, "unlimited": False}})
    )
    assert credits == LimitsUpdated((LimitMeter("x", "credits", status="exhausted"),))
    unlimited = {"credits": {"hasCredits": False, "unlimited": True}}
    assert codex.limits_payload(_snapshot(unlimited)) is None
    # "reached" without an exhausted window still says the account is stopped.
    reached = codex.limits_payload(_snapshot({"rateLimitReachedType": "rate_limit_reached"}))
    assert reached == LimitsUpdated((LimitMeter("codex", "account", status="exhausted"),))


def _failed_turn(info: Any) -> proto.TurnCompleted:
    raw = {
        "threadId": "t",
        "turn": {"id": "u", "status": "failed", "error": {"message": "x", "codexErrorInfo": info}},
    }
    return msgspec.json.decode(msgspec.json.encode(raw), type=proto.TurnCompleted)


def test_codex_limit_failures_carry_cause_and_reset() -> None:
    update = codex.limits_payload(_snapshot(CODEX_SNAPSHOT))
    assert update is not None
    quota = codex.turn_outcome(_failed_turn("usageLimitExceeded"), None, update.meters)
    assert quota is not None and quota.state == "failed"
    assert quota.error_code == "provider_rate_limited"
    assert quota.details == {"cause": "quota_exhausted", "resetsAt": RESET_ISO}
    budget = codex.turn_outcome(_failed_turn("sessionBudgetExceeded"), None)
    assert budget is not None and budget.details == {"cause": "quota_exhausted"}
    http = codex.turn_outcome(
        _failed_turn({"responseTooManyFailedAttempts": {"httpStatusCode": 429}}), None, ()
    )
    assert http is not None and http.error_code == "provider_rate_limited"
    assert http.details == {"cause": "rate_limited", "httpStatus": "429", "httpStatusClass": "4xx"}
    other = codex.turn_outcome(_failed_turn("serverOverloaded"), None, update.meters)
    assert other is not None and other.details == {"cause": "overloaded"}  # no reset added


# ----------------------------------------------------------------------------- Claude Code


def test_claude_rate_limit_events_become_meters() -> None:
    # The shape of rate_limit_info in claude 2.1.x (its SDK schema).
    info = {
        "status": "allowed_warning",
        "resetsAt": RESET,
        "rateLimitType": "five_hour",
        "utilization": 0.91,
        "overageStatus": "rejected",
        "overageResetsAt": RESET + 3600,
        "isUsingOverage": False,
    }
    assert claude.limits_payload(info) == LimitsUpdated(
        (
            LimitMeter("claude", "five_hour", percent=91.0, resets_at=RESET_ISO, status="warning"),
            LimitMeter("claude", "overage", resets_at="2026-12-02T04:58:05Z", status="exhausted"),
        )
    )
    rejected = claude.limits_payload({"status": "rejected", "rateLimitType": "Bad Name!"})
    assert rejected == LimitsUpdated((LimitMeter("claude", "unified", status="exhausted"),))
    bad: list[Any] = [None, [], {}, {"status": "maybe"}]
    for each in bad:
        assert claude.limits_payload(each) is None


def test_claude_retry_hints_come_only_from_429_retries() -> None:
    retry = {"type": "system", "subtype": "api_retry", "error_status": 429}
    assert claude.retry_hint({**retry, "retry_delay_ms": 1000}) == 1.0
    assert claude.retry_hint({**retry, "error_status": 529, "retry_delay_ms": 1000}) is None
    assert claude.retry_hint({**retry, "retry_delay_ms": "soon"}) is None


#: The result claude 2.1.197 wrote after its retries of a 429 ran out.
CLAUDE_429 = {
    "type": "result",
    "subtype": "success",
    "is_error": True,
    "api_error_status": 429,
    "result": "API Error: Request rejected (429) · slow down",
}


def test_claude_429_fails_rate_limited_with_the_retry_hint() -> None:
    hints = claude.LimitHints((), retry_after=1.0, retry_at=RESET - 1)
    outcome = claude.classify_result(
        CLAUDE_429, interrupting=False, assistant_error="rate_limit", limits=hints
    )
    assert outcome.state == "failed" and outcome.error_code == "provider_rate_limited"
    assert outcome.details == {
        "cause": "rate_limited",
        "httpStatus": "429",
        "httpStatusClass": "4xx",
        "retryAfterSeconds": "1",
        "resetsAt": RESET_ISO,
    }
    # Without any hint: the cause alone.
    bare = claude.classify_result(CLAUDE_429, interrupting=False)
    assert bare.details == {"cause": "rate_limited", "httpStatus": "429", "httpStatusClass": "4xx"}


def test_claude_spent_quota_is_quota_exhausted() -> None:
    billing = {**CLAUDE_429, "api_error_status": 400, "result": "Credit balance is too low"}
    outcome = claude.classify_result(billing, interrupting=False, assistant_error="billing_error")
    assert outcome.error_code == "provider_rate_limited"
    assert outcome.details == {
        "cause": "quota_exhausted",
        "httpStatus": "400",
        "httpStatusClass": "4xx",
    }
    # A 429 while the subscription meter says rejected: the usage limit, with its reset.
    meter = LimitMeter("claude", "five_hour", resets_at=RESET_ISO, status="exhausted")
    limited = claude.classify_result(
        CLAUDE_429, interrupting=False, limits=claude.LimitHints((meter,))
    )
    assert limited.details is not None
    assert limited.details["cause"] == "quota_exhausted"
    assert limited.details["resetsAt"] == RESET_ISO


# ----------------------------------------------------------------------------- the book


def test_the_book_merges_reports_per_provider() -> None:
    book = LimitsBook()
    assert book.read("codex").meters == () and book.read("codex").updated_at is None
    book.note("codex", LimitsUpdated((LimitMeter("codex", "secondary", percent=1.0),)), "t1")
    book.note(
        "codex",
        LimitsUpdated(
            (LimitMeter("codex", "primary", percent=2.0), LimitMeter("codex", "secondary"))
        ),
        "t2",
    )
    read = book.read("codex")
    assert [(m.meter, m.percent) for m in read.meters] == [("primary", 2.0), ("secondary", None)]
    assert read.updated_at == "t2"
    assert book.read("claude-code").meters == ()


def test_the_book_is_bounded() -> None:
    book = LimitsBook()
    for i in range(MAX_METERS + 10):
        book.note("p", LimitsUpdated((LimitMeter("pool", f"m{i:03}"),)), "t")
    meters = book.read("p").meters
    assert len(meters) == MAX_METERS and meters[0].meter == "m010"  # the oldest dropped


@pytest.mark.parametrize("percent", ["50", [1], {"v": 1}])
def test_a_meter_of_the_wrong_shape_does_not_decode(percent: Any) -> None:
    raw = {"type": "limits.updated", "meters": [{"pool": "p", "meter": "m", "percent": percent}]}
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(msgspec.json.encode(raw), type=LimitsUpdated, strict=True)


def test_exec_text_shows_the_meters() -> None:
    import io

    from agent_bridge.frontends.exec_host import Output

    host = Output(io.BytesIO(), "text")
    update = {
        "type": "limits.updated",
        "meters": [
            {
                "pool": "codex",
                "meter": "primary",
                "percent": 100.0,
                "status": "exhausted",
                "resetsAt": RESET_ISO,
            },
            {"pool": "codex", "meter": "credits"},
        ],
    }
    line = host._text(update)
    assert line == f"· limits: codex primary 100% exhausted, resets {RESET_ISO}; codex credits\n"
