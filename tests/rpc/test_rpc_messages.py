"""Tests for rpc.messages.parse_body (cases 12-15, 17, 20-22 at the message layer).

``parse_body`` never raises: every defect is an ``Invalid`` carrying the JSON-RPC code
and the id to answer with (``None`` meaning ``null``).  Ids are kept as raw bytes.
"""

from __future__ import annotations

import json

import pytest

from agent_bridge.rpc.errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from agent_bridge.rpc.messages import (
    Batch,
    Invalid,
    Notification,
    Request,
    Response,
    encode_error_response,
    encode_notification,
    encode_request,
    encode_result_response,
    parse_body,
    response_id_in,
)


def _invalid(body: bytes, **kw: bool) -> Invalid:
    message = parse_body(body, **kw)
    assert isinstance(message, Invalid), message
    return message


# --------------------------------------------------------------------------- case 12


@pytest.mark.parametrize(
    "body",
    [b'{"jsonrpc":"2.0","id":1,"method":"ping"', b"{not json}", b"[{]", b'{"a":1}}', b"\xff\xfe"],
)
def test_case_12_invalid_json_is_parse_error_with_null_id(body: bytes) -> None:
    message = _invalid(body)
    assert (message.code, message.id, message.reply) == (PARSE_ERROR, None, True)


# --------------------------------------------------------------------------- case 13


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0"}',
        b'{"foo":1}',
        b"{}",
        b"42",
        b'"a string"',
        b"null",
        b"true",
        b'{"jsonrpc":"1.0","method":"ping"}',
        b'{"jsonrpc":"2.1","method":"ping","params":{}}',
        b'{"method":"ping"}',
    ],
)
def test_case_13_bad_envelope_is_invalid_request_with_null_id(body: bytes) -> None:
    message = _invalid(body)
    assert (message.code, message.id, message.reply) == (INVALID_REQUEST, None, True)


def test_case_13_wrong_jsonrpc_value_with_valid_id_echoes_that_id() -> None:
    message = _invalid(b'{"jsonrpc":"1.0","id":7,"method":"ping"}')
    assert (message.code, message.id) == (INVALID_REQUEST, b"7")


def test_case_13_jsonrpc_of_wrong_type_is_invalid_request() -> None:
    message = _invalid(b'{"jsonrpc":2.0,"id":"a","method":"ping"}')
    assert (message.code, message.id) == (INVALID_REQUEST, b'"a"')


# --------------------------------------------------------------------------- case 14


@pytest.mark.parametrize("method", [b"5", b"null", b"{}", b'["ping"]', b"true"])
def test_case_14_method_not_a_string_is_invalid_request(method: bytes) -> None:
    message = _invalid(b'{"jsonrpc":"2.0","id":3,"method":%s}' % method)
    assert (message.code, message.id) == (INVALID_REQUEST, b"3")


def test_case_14_method_null_is_invalid_request_not_a_response() -> None:
    # ``"method": null`` once passed for a (malformed) response to id 3, failing our own
    # pending request 3 and leaving the peer without a reply.
    message = _invalid(b'{"jsonrpc":"2.0","id":3,"method":null}')
    assert (message.code, message.id, message.reply) == (INVALID_REQUEST, b"3", True)
    message = _invalid(b'{"jsonrpc":"2.0","method":null}')
    assert (message.code, message.id) == (INVALID_REQUEST, None)


def test_case_14_method_not_a_string_with_big_id_echoes_the_id() -> None:
    message = _invalid(b'{"jsonrpc":"2.0","id":%d,"method":5}' % 2**70)
    assert (message.code, message.id) == (INVALID_REQUEST, str(2**70).encode())


@pytest.mark.parametrize("method", ["rpc.discover", "rpc.", "rpc.x.y"])
def test_case_14_rpc_dot_method_is_method_not_found(method: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": method}).encode()
    message = _invalid(body)
    assert (message.code, message.id) == (METHOD_NOT_FOUND, b"9")


def test_case_14_rpc_prefix_without_dot_is_an_ordinary_method() -> None:
    message = parse_body(b'{"jsonrpc":"2.0","id":9,"method":"rpcx"}')
    assert isinstance(message, Request)
    assert message.method == "rpcx"


# --------------------------------------------------------------------------- case 15


@pytest.mark.parametrize(
    "raw_id",
    [b"0", b'""', str(2**70).encode(), b'"x"', b"-1", b'"\\u00e9\\n"', b'"\xe6\x97\xa5"'],
)
def test_case_15_valid_ids_kept_exactly_as_raw_bytes(raw_id: bytes) -> None:
    message = parse_body(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % raw_id)
    assert isinstance(message, Request)
    assert message.id == raw_id


def test_case_15_id_whitespace_is_not_part_of_the_raw_id() -> None:
    message = parse_body(b'{"jsonrpc":"2.0","id" :  7 ,"method":"ping"}')
    assert isinstance(message, Request)
    assert message.id == b"7"


@pytest.mark.parametrize(
    "raw_id", [b"1.5", b"true", b"false", b"{}", b"[]", b"[1]", b"1e3", b"-0.0", b"null"]
)
def test_case_15_invalid_ids_are_invalid_request_with_null_id(raw_id: bytes) -> None:
    message = _invalid(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % raw_id)
    assert (message.code, message.id, message.reply) == (INVALID_REQUEST, None, True)


# --------------------------------------------------------------------------- case 17


@pytest.mark.parametrize("params", [b"5", b'"s"', b"true", b"1.5"])
def test_case_17_params_of_wrong_type_is_invalid_params(params: bytes) -> None:
    message = _invalid(b'{"jsonrpc":"2.0","id":4,"method":"m","params":%s}' % params)
    assert (message.code, message.id, message.reply) == (INVALID_PARAMS, b"4", True)


def test_case_17_notification_with_bad_params_is_dropped_not_answered() -> None:
    message = _invalid(b'{"jsonrpc":"2.0","method":"m","params":5}')
    assert (message.code, message.reply) == (INVALID_PARAMS, False)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (b',"params":null', None),
        (b"", None),
        (b',"params":{"a":[1]}', b'{"a":[1]}'),
        (b',"params":[1,2]', b"[1,2]"),
    ],
)
def test_case_17_null_missing_object_and_array_params_accepted(
    params: bytes, expected: bytes | None
) -> None:
    request = parse_body(b'{"jsonrpc":"2.0","id":1,"method":"m"%s}' % params)
    assert isinstance(request, Request)
    assert request.params == expected
    note = parse_body(b'{"jsonrpc":"2.0","method":"m"%s}' % params)
    assert isinstance(note, Notification)
    assert note.params == expected


# --------------------------------------------------------------------------- requests etc.


def test_request_notification_and_response_classified() -> None:
    request = parse_body(b'{"jsonrpc":"2.0","id":"r1","method":"a/b","params":{}}')
    assert isinstance(request, Request)
    assert (request.id, request.method, request.params) == (b'"r1"', "a/b", b"{}")
    note = parse_body(b' {"jsonrpc":"2.0","method":"$/progress"}')
    assert isinstance(note, Notification)
    assert note.method == "$/progress"


def test_unknown_members_are_ignored() -> None:
    request = parse_body(b'{"jsonrpc":"2.0","id":1,"method":"m","extra":{"x":[1]}}')
    assert isinstance(request, Request)


# --------------------------------------------------------------------------- case 20/22


def test_case_20_result_containing_error_and_result_keys_kept_raw() -> None:
    body = b'{"jsonrpc":"2.0","id":5,"result":{"error":{"code":1},"result":2}}'
    response = parse_body(body)
    assert isinstance(response, Response)
    assert response.malformed is None and response.error is None
    assert response.result == b'{"error":{"code":1},"result":2}'


def test_case_22_null_result_is_a_result() -> None:
    response = parse_body(b'{"jsonrpc":"2.0","id":1,"result":null}')
    assert isinstance(response, Response)
    assert (response.result, response.error, response.malformed) == (b"null", None, None)


def test_case_22_error_response_decoded() -> None:
    response = parse_body(
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"boom","data":{"k":1}}}'
    )
    assert isinstance(response, Response)
    assert response.malformed is None and response.result is None
    assert response.error is not None
    assert (response.error.code, response.error.message, response.error.data) == (
        -32000,
        "boom",
        {"k": 1},
    )


def test_case_22_response_with_both_result_and_error_is_malformed() -> None:
    response = parse_body(b'{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"x"}}')
    assert isinstance(response, Response)
    assert response.id == b"3"
    assert response.malformed == "both result and error"


def test_case_22_response_with_neither_result_nor_error_is_malformed() -> None:
    response = parse_body(b'{"jsonrpc":"2.0","id":3}')
    assert isinstance(response, Response)
    assert response.id == b"3"
    assert response.malformed == "neither result nor error"


@pytest.mark.parametrize("error", [b'"oops"', b'{"message":"no code"}', b'{"code":"x"}', b"null"])
def test_case_22_response_with_bad_error_object_is_malformed(error: bytes) -> None:
    response = parse_body(b'{"jsonrpc":"2.0","id":3,"error":%s}' % error)
    assert isinstance(response, Response)
    assert response.id == b"3"
    assert response.malformed is not None


def test_case_22_error_response_with_null_id_is_a_response() -> None:
    response = parse_body(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}')
    assert isinstance(response, Response)
    assert response.id == b"null"


# --------------------------------------------------------------------------- case 21


def test_case_21_empty_batch_is_one_invalid_request() -> None:
    message = _invalid(b"[]")
    assert (message.code, message.id) == (INVALID_REQUEST, None)
    message = _invalid(b" [ ] ")
    assert message.code == INVALID_REQUEST


def test_case_21_batch_of_non_objects_is_one_invalid_each() -> None:
    batch = parse_body(b"[1,2]")
    assert isinstance(batch, Batch)
    assert len(batch.items) == 2
    for item in batch.items:
        assert isinstance(item, Invalid)
        assert (item.code, item.id, item.reply) == (INVALID_REQUEST, None, True)


def test_case_21_mixed_batch_classified_item_by_item_in_order() -> None:
    batch = parse_body(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},'
        b'{"jsonrpc":"2.0","method":"n"},'
        b'{"foo":1},'
        b'"x",'
        b'{"jsonrpc":"2.0","id":2,"result":true},'
        b'{"jsonrpc":"2.0","id":3,"method":"b","params":7}]'
    )
    assert isinstance(batch, Batch)
    kinds = [type(item).__name__ for item in batch.items]
    assert kinds == ["Request", "Notification", "Invalid", "Invalid", "Response", "Invalid"]
    assert isinstance(batch.items[5], Invalid)
    assert (batch.items[5].code, batch.items[5].id) == (INVALID_PARAMS, b"3")


def test_case_21_nested_batch_item_is_invalid_request() -> None:
    batch = parse_body(b'[[{"jsonrpc":"2.0","id":1,"method":"a"}]]')
    assert isinstance(batch, Batch)
    assert len(batch.items) == 1
    item = batch.items[0]
    assert isinstance(item, Invalid) and item.code == INVALID_REQUEST


def test_case_21_truncated_batch_is_parse_error() -> None:
    message = _invalid(b'[{"jsonrpc":"2.0","id":1,"method":"a"},')
    assert (message.code, message.id) == (PARSE_ERROR, None)


# --------------------------------------------------------------------------- require_jsonrpc


def test_require_jsonrpc_false_accepts_messages_without_the_member() -> None:
    request = parse_body(b'{"id":1,"method":"m"}', require_jsonrpc=False)
    assert isinstance(request, Request)
    note = parse_body(b'{"method":"m"}', require_jsonrpc=False)
    assert isinstance(note, Notification)
    response = parse_body(b'{"id":1,"result":{}}', require_jsonrpc=False)
    assert isinstance(response, Response) and response.result == b"{}"


def test_require_jsonrpc_false_still_rejects_a_wrong_value() -> None:
    message = _invalid(b'{"jsonrpc":"1.0","id":1,"method":"m"}', require_jsonrpc=False)
    assert message.code == INVALID_REQUEST


def test_require_jsonrpc_true_rejects_missing_member() -> None:
    message = _invalid(b'{"id":1,"method":"m"}')
    assert (message.code, message.id) == (INVALID_REQUEST, b"1")


# --------------------------------------------------------------------------- encoders


def test_encoders_produce_valid_json_with_raw_ids() -> None:
    big = str(2**70).encode()
    body = encode_result_response(big, b'{"error":1}')
    assert body.startswith(b'{"jsonrpc":"2.0","id":%s,' % big)
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 2**70, "result": {"error": 1}}
    err = encode_error_response(None, {"code": -32600, "message": "m"})
    assert json.loads(err) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "m", "data": {"reason": "invalid_request"}},
    }
    assert json.loads(encode_request(3, 'a"b', None)) == {
        "jsonrpc": "2.0",
        "id": 3,
        "method": 'a"b',
    }
    assert json.loads(encode_notification("n", b"[1]")) == {
        "jsonrpc": "2.0",
        "method": "n",
        "params": [1],
    }


def test_encoders_without_jsonrpc_member() -> None:
    for body in (
        encode_result_response(b"1", b"2", jsonrpc=False),
        encode_error_response(b"1", {"code": 1, "message": "m"}, jsonrpc=False),
        encode_request(1, "m", b"{}", jsonrpc=False),
        encode_notification("n", None, jsonrpc=False),
    ):
        assert "jsonrpc" not in json.loads(body)


def test_the_start_of_an_oversized_response_names_its_request() -> None:
    assert response_id_in(b'{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_') == b"7"
    assert response_id_in(b' {"id":"a","error":{"code":1,"message":"xx') == b'"a"'
    assert response_id_in(b'{"result":{"x":1},"id":7,"jsonrpc":"2.0"}xx') == b"7"
    # a request or notification, an id inside a value, an id cut by the end, no id
    assert response_id_in(b'{"jsonrpc":"2.0","id":7,"method":"x","params":{"a') is None
    assert response_id_in(b'{"method":"session/update","params":{"id":3,"result":') is None
    assert response_id_in(b'{"result":{"id":3,"aaaa') is None
    assert response_id_in(b'{"jsonrpc":"2.0","id":12') is None
    assert response_id_in(b'[{"id":1,"result":') is None
    assert response_id_in(b'{"id":1.5,"result":') is None
