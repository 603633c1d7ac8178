"""Unit tests of ``tests/wire_validation.py`` (the helper other end-to-end tests use), and
of the published schema against values built from the Python wire types."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from conformance.replay import CORPUS_DIR, load_corpus_file
from wire_validation import WireValidator

from agent_bridge.errors import BridgeError
from agent_bridge.wire.errors import ErrorInfo
from agent_bridge.wire.events import EventEnvelope, RunFailed, TextDelta, ToolActivity
from agent_bridge.wire.interactions import ApprovalAnswer, ApprovalRequest, QuestionSetAnswer
from agent_bridge.wire.methods import InteractionRequestParams, SessionInfo, SessionResult

INIT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientInfo": {"name": "t"}},
}
INIT_RESULT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "protocolVersion": 1,
        "serverInfo": {"name": "agent-bridge", "version": "0"},
        "capabilities": {"methods": ["initialize"]},
    },
}


def _b(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _event(sequence: int, payload: Any, session: str = "s1", event_id: str | None = None) -> Any:
    envelope = EventEnvelope(
        event_id or f"e{session}{sequence}", session, sequence, "t", payload, "r1"
    )
    return {"jsonrpc": "2.0", "method": "event", "params": _b(envelope)}


def test_request_and_its_result() -> None:
    v = WireValidator()
    v.check("host->bridge", INIT)
    v.check("bridge->host", INIT_RESULT)
    v.expect_no_pending()


def test_result_is_checked_against_the_requests_method() -> None:
    v = WireValidator()
    v.check("send", {"jsonrpc": "2.0", "id": "a", "method": "session/list"})
    with pytest.raises(AssertionError, match="SessionListResponse"):
        v.check("recv", {"jsonrpc": "2.0", "id": "a", "result": {"session": {}}})


def test_response_to_unknown_or_answered_id() -> None:
    v = WireValidator()
    with pytest.raises(AssertionError, match="unknown or answered id"):
        v.check("recv", INIT_RESULT)
    v.check("send", INIT)
    v.check("recv", INIT_RESULT)
    with pytest.raises(AssertionError, match="unknown or answered id"):
        v.check("recv", INIT_RESULT)


def test_ids_are_tracked_per_direction_and_type() -> None:
    v = WireValidator()
    v.check("send", {"jsonrpc": "2.0", "id": 7, "method": "bridge/ping"})
    with pytest.raises(AssertionError, match="still pending"):
        v.check("send", {"jsonrpc": "2.0", "id": 7, "method": "bridge/ping"})
    v.check("send", {"jsonrpc": "2.0", "id": "7", "method": "bridge/ping"})
    params = _b(InteractionRequestParams("i1", "s1", "r1", ApprovalRequest("tool", "t")))
    v.check("recv", {"jsonrpc": "2.0", "id": 7, "method": "interaction/request", "params": params})
    v.check("send", {"jsonrpc": "2.0", "id": 7, "result": _b(ApprovalAnswer("deny"))})
    v.check("recv", {"jsonrpc": "2.0", "id": 7, "result": {"data": None}})
    v.check("recv", {"jsonrpc": "2.0", "id": "7", "result": {}})
    v.expect_no_pending()


def test_answer_to_interaction_request_is_validated() -> None:
    v = WireValidator()
    params = _b(InteractionRequestParams("i1", "s1", "r1", ApprovalRequest("tool", "t")))
    v.check("recv", {"jsonrpc": "2.0", "id": 1, "method": "interaction/request", "params": params})
    with pytest.raises(AssertionError, match="InteractionRequestResponse"):
        v.check(
            "send", {"jsonrpc": "2.0", "id": 1, "result": {"kind": "approval", "decision": "maybe"}}
        )
    v.check("recv", {"jsonrpc": "2.0", "id": 2, "method": "interaction/request", "params": params})
    v.check("send", {"jsonrpc": "2.0", "id": 2, "result": _b(ApprovalAnswer("allow", "session"))})


def test_bridge_errors_carry_error_info() -> None:
    v = WireValidator()
    for i, error in enumerate(
        [
            BridgeError("not_initialized"),
            BridgeError("session_not_found"),
            BridgeError("overloaded"),
        ]
    ):
        v.check("send", {"jsonrpc": "2.0", "id": i, "method": "session/list"})
        v.check("recv", {"jsonrpc": "2.0", "id": i, "error": error.to_wire()})
    v.check("send", {"jsonrpc": "2.0", "id": 10, "method": "session/list"})
    with pytest.raises(AssertionError, match="NotInitialized"):
        wrong = BridgeError("session_not_found").to_wire() | {"code": -32002}
        v.check("recv", {"jsonrpc": "2.0", "id": 10, "error": wrong})
    v.check("send", {"jsonrpc": "2.0", "id": 11, "method": "session/list"})
    with pytest.raises(AssertionError, match="Overloaded"):
        data = {"retryable": True, "limit": 1}
        v.check(
            "recv",
            {"jsonrpc": "2.0", "id": 11, "error": {"code": -32001, "message": "x", "data": data}},
        )
    v.check("send", {"jsonrpc": "2.0", "id": 12, "method": "session/list"})
    with pytest.raises(AssertionError, match="not one the bridge publishes"):
        v.check("recv", {"jsonrpc": "2.0", "id": 12, "error": {"code": -32099, "message": "x"}})


def test_host_error_replies_may_use_any_code() -> None:
    v = WireValidator()
    params = _b(InteractionRequestParams("i1", "s1", "r1", ApprovalRequest("tool", "t")))
    v.check("recv", {"jsonrpc": "2.0", "id": 1, "method": "interaction/request", "params": params})
    v.check("send", {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "no"}})


def test_parse_error_reply_has_null_id() -> None:
    v = WireValidator()
    v.check(
        "recv", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
    )


def test_deliberately_invalid_messages() -> None:
    v = WireValidator()
    bad = {"jsonrpc": "2.0", "id": 1, "method": "session/create", "params": {"provider": 1}}
    with pytest.raises(AssertionError, match="SessionCreateRequest"):
        v.check("send", bad)
    v.check("send", bad, valid=False)
    v.check(
        "recv",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32602, "message": "x", "data": {"path": "params.provider"}},
        },
    )
    with pytest.raises(AssertionError, match="expected to violate"):
        v.check("send", INIT, valid=False)
    v.check("send", {"jsonrpc": "2.0", "id": 9, "method": "no/such"}, valid=False)
    with pytest.raises(AssertionError, match="request that was invalid"):
        v.check("recv", {"jsonrpc": "2.0", "id": 9, "result": {}})


def test_direction_and_kind_of_methods() -> None:
    v = WireValidator()
    with pytest.raises(AssertionError, match="not sent host->bridge"):
        v.check("send", _event(1, TextDelta("x")))
    with pytest.raises(AssertionError, match="is a request, sent as a notification"):
        v.check("send", {"jsonrpc": "2.0", "method": "session/list"})
    v.check("recv", {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 3}})
    v.check("send", {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "x"}})


def test_events_are_validated_and_gapless() -> None:
    v = WireValidator()
    v.check("recv", _event(4, TextDelta("a")))
    v.check("recv", _event(5, ToolActivity("c1", "Bash", "started", input={"x": [1]})))
    v.check("recv", _event(1, RunFailed(ErrorInfo.of("provider_failed")), session="s2"))
    with pytest.raises(AssertionError, match="does not follow"):
        v.check("recv", _event(7, TextDelta("b")))
    with pytest.raises(AssertionError, match="reused"):
        v.check("recv", _event(2, TextDelta("b"), session="s2", event_id="es14"))
    bad = _event(8, TextDelta("a"))
    bad["params"]["payload"]["text"] = 5
    with pytest.raises(AssertionError, match="EventNotification"):
        v.check("recv", bad)
    bad = _event(8, TextDelta("a"))
    bad["params"]["payload"]["type"] = "text.unknown"
    with pytest.raises(AssertionError):
        v.check("recv", bad)


def test_batches() -> None:
    v = WireValidator()
    v.check("send", [INIT, {"jsonrpc": "2.0", "id": 2, "method": "session/list"}])
    v.check("recv", [INIT_RESULT, {"jsonrpc": "2.0", "id": 2, "result": {"sessions": []}}])
    with pytest.raises(AssertionError, match="empty batch"):
        v.check("send", [])


def test_lenient_capabilities_accept_unknown_members() -> None:
    v = WireValidator()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": 1,
            "clientInfo": {"name": "t", "build": 7},
            "capabilities": {"future": True, "interactions": {"approval": True, "later": 1}},
        },
    }
    v.check("send", init)
    with pytest.raises(AssertionError):
        v.check("send", INIT | {"id": 2, "params": INIT["params"] | {"extra": 1}})


def test_python_values_validate_against_their_definitions() -> None:
    v = WireValidator()
    info = SessionInfo("s1", "scripted", "active", "2025-01-01T00:00:00.000Z", title="x")
    v.validate("SessionResult", _b(SessionResult(info)))
    v.validate("ErrorInfo", _b(ErrorInfo.of("invalid_option", details={"option": "x"})))
    v.validate("Answer", _b(QuestionSetAnswer({"k": "v"})))
    with pytest.raises(AssertionError):
        v.validate("Answer", {"kind": "questionSet"})


def _corpus_payloads() -> list[Any]:
    """Event payloads of the conformance corpus: every type in it, up to two shapes of
    each (the members present)."""
    out: list[Any] = []
    shapes: dict[str, set[tuple[str, ...]]] = {}
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        for step in load_corpus_file(path).steps:
            for message in step.msg if isinstance(step.msg, list) else [step.msg]:
                if isinstance(message, dict) and message.get("method") == "event":
                    payload = message["params"].get("payload")
                    if not isinstance(payload, dict) or step.invalid:
                        continue
                    seen = shapes.setdefault(str(payload.get("type")), set())
                    shape = tuple(sorted(payload))
                    if shape not in seen and len(seen) < 2:
                        seen.add(shape)
                        out.append(payload)
    return out


def _mutations(payload: dict[str, Any], names: list[str]) -> list[Any]:
    """``payload`` and what a broken or later bridge could send instead: each member
    dropped, each member of the wrong type, an extra member, every other type name, an
    unknown type, a type that is not a string, no type at all."""
    out: list[Any] = [payload, {**payload, "laterMember": 1}]
    for key in payload:
        out.append({k: v for k, v in payload.items() if k != key})
        out.append({**payload, key: [payload[key]]})
        out.append({**payload, key: None})
    out += [{**payload, "type": name} for name in names]
    out += [{**payload, "type": "later.event"}, {**payload, "type": 7}, "text.delta", None]
    return out


def test_the_discriminated_event_check_agrees_with_the_published_schema() -> None:
    """The validator checks an event's payload against the one branch its type names
    (tests/wire_validation.py, what keeps validating every streamed event affordable;
    the figure is in bench/validation.py).  It must accept and refuse exactly what the
    published anyOf/oneOf does, for every payload type and for broken ones."""
    contract = WireValidator().contract
    assert contract._fast_id is not None, "the schema no longer discriminates payloads"
    names = contract.schema["$defs"]["UnknownEventPayload"]["properties"]["type"]["not"]["enum"]
    payloads = _corpus_payloads()
    assert {p["type"] for p in payloads} == set(names)  # every payload type
    pointer = contract.def_pointer("EventEnvelope")
    fast, published = contract.validator(pointer, fast=True), contract.validator(pointer)
    checked = accepted = 0
    for payload in payloads:
        for candidate in _mutations(payload, names):
            envelope = {"eventId": "e1", "sessionId": "s", "sequence": 1, "occurredAt": "t"}
            envelope["payload"] = candidate
            want = published.is_valid(envelope)
            assert fast.is_valid(envelope) == want, candidate
            assert (contract.errors(pointer, envelope) == []) == want
            checked += 1
            accepted += want
    assert 0 < accepted < checked  # both outcomes were exercised
    v = WireValidator()
    with pytest.raises(AssertionError, match="EventNotification"):
        v.check("recv", _event(1, TextDelta(5)))  # type: ignore[arg-type]


def test_corpus_messages_match_the_message_unions() -> None:
    """Every valid message of the corpus matches HostToBridgeMessage/BridgeToHostMessage."""
    v = WireValidator()
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        for step in load_corpus_file(path).steps:
            if step.msg is None or step.invalid:
                continue
            union = "HostToBridgeMessage" if step.dir == "send" else "BridgeToHostMessage"
            for message in step.msg if isinstance(step.msg, list) else [step.msg]:
                v.validate(union, message)


def test_bridge_to_host_messages_are_open_to_additions() -> None:
    """Within a protocol version the bridge may add members and event types: a host
    validating what it receives against schemas/ must not break on either."""
    v = WireValidator()
    v.check("host->bridge", INIT)
    grown = dict(INIT_RESULT, result=dict(INIT_RESULT["result"], laterMember={"x": 1}))
    grown["result"]["serverInfo"] = {"name": "agent-bridge", "version": "0", "build": "b"}
    v.check("bridge->host", grown)
    event = _event(1, TextDelta("hi"))
    event["params"]["payload"]["laterMember"] = True
    event["params"]["laterEnvelopeMember"] = 3
    v.check("bridge->host", event)
    added = _event(2, TextDelta("x"))
    added["params"]["payload"] = {"type": "later.event", "anything": [1, 2]}
    v.check("bridge->host", added)
    # A known type must still have its own shape: the fallback is for unknown types only.
    wrong = _event(3, TextDelta("x"))
    wrong["params"]["payload"] = {"type": "text.delta"}
    with pytest.raises(AssertionError):
        v.check("bridge->host", wrong)


def test_host_to_bridge_messages_stay_closed() -> None:
    v = WireValidator()
    extra = dict(INIT, params=dict(INIT["params"], laterMember=1))
    with pytest.raises(AssertionError, match="InitializeRequest"):
        v.check("host->bridge", extra)
    create = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/create",
        "params": {"provider": "scripted", "bogus": 1},
    }
    with pytest.raises(AssertionError):
        v.check("host->bridge", create)


def test_times_are_date_time_and_supported_is_a_list() -> None:
    from wire_validation import load_contract

    defs = load_contract().schema["$defs"]
    assert defs["EventEnvelope"]["properties"]["occurredAt"]["format"] == "date-time"
    assert defs["ErrorDetails"]["properties"]["supported"] == {
        "type": "array",
        "items": {"type": "integer"},
    }
    info = ErrorInfo.of("unsupported_protocol_version", details={"supported": [1, 2]})
    assert info.details == {"supported": [1, 2]}
    assert ErrorInfo.of("unsupported_protocol_version", details={"supported": "1"}).details is None
