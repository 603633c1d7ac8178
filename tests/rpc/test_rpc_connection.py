"""Tests for rpc.connection.Connection over in-memory anyio streams (cases 12-27).

Each test drives a real ``Connection`` with a small framing peer.  "Nothing else was
sent" is checked without sleeping: the peer sends a ``ping`` with a fresh id and
collects everything that arrives before its reply (the connection answers in order).
"""

from __future__ import annotations

import concurrent.futures
import errno
import itertools
import json
import logging
import math
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pylsp_jsonrpc.endpoint import Endpoint

from agent_bridge.rpc.connection import Connection, Limits, Method
from agent_bridge.rpc.errors import ConnectionClosed, RequestTimedOut, RpcError
from agent_bridge.rpc.framing import FramingKind, encode_frame, make_framer

BIG = 2**70

# --------------------------------------------------------------------------- harness


class _Receiver:
    """A memory object stream of byte chunks seen as a ``receive(max_bytes)`` stream."""

    def __init__(self, stream: MemoryObjectReceiveStream[bytes]) -> None:
        self._stream = stream
        self._pending = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._pending:
            self._pending = await self._stream.receive()
        data, self._pending = self._pending[:max_bytes], self._pending[max_bytes:]
        return data


class _Sender:
    def __init__(self, stream: MemoryObjectSendStream[bytes]) -> None:
        self._stream = stream

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)


class _FailingSender:
    """A sender whose reader is gone: every write fails (EPIPE seen as BrokenResourceError)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.attempts = 0

    async def send(self, item: bytes) -> None:
        self.attempts += 1
        raise self.exc


class Peer:
    """The other end: frames what it sends, unframes what the connection writes."""

    def __init__(
        self,
        send: MemoryObjectSendStream[bytes],
        receive: MemoryObjectReceiveStream[bytes],
        framing: FramingKind,
    ) -> None:
        self._send = send
        self._receive = receive
        self.framing: FramingKind = "content-length" if framing == "auto" else framing
        self._framer = make_framer("auto")
        self._bodies: deque[bytes] = deque()
        self._sync_ids = itertools.count(1)
        self.run_returned = anyio.Event()

    def frame(self, obj: Any) -> bytes:
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return encode_frame(self.framing, body)

    async def send_raw(self, data: bytes) -> None:
        await self._send.send(data)

    async def send(self, *objs: Any) -> None:
        """Send each object (or raw body bytes) as one frame, all in a single write."""
        await self.send_raw(b"".join(self.frame(o) for o in objs))

    async def close_input(self) -> None:
        await self._send.aclose()

    async def recv_raw(self, timeout: float = 5.0) -> bytes:
        with anyio.fail_after(timeout):
            while not self._bodies:
                data = await self._receive.receive()
                for item in self._framer.feed(data):
                    assert isinstance(item, bytes), item
                    self._bodies.append(item)
        return self._bodies.popleft()

    async def recv(self, timeout: float = 5.0) -> Any:
        return json.loads(await self.recv_raw(timeout))

    async def until_sync(self) -> list[Any]:
        """Send a ping with a fresh id; return every message received before its reply."""
        sync_id = f"sync-{next(self._sync_ids)}"
        await self.send({"jsonrpc": "2.0", "id": sync_id, "method": "ping"})
        got: list[Any] = []
        while True:
            message = await self.recv()
            if isinstance(message, dict) and message.get("id") == sync_id:
                assert message["result"] == "pong"
                return got
            got.append(message)

    async def until_sync_raw(self) -> list[bytes]:
        sync_id = f"sync-{next(self._sync_ids)}"
        await self.send({"jsonrpc": "2.0", "id": sync_id, "method": "ping"})
        got: list[bytes] = []
        while True:
            raw = await self.recv_raw()
            if f'"id":"{sync_id}"'.encode() in raw:
                return got
            got.append(raw)


def _pong(_params: Any) -> str:
    return "pong"


@asynccontextmanager
async def serve(
    *,
    methods: Mapping[str, Method] | None = None,
    notifications: Mapping[str, Method] | None = None,
    limits: Limits = Limits(),  # noqa: B008 - frozen
    framing: FramingKind = "content-length",
    jsonrpc: bool = True,
    in_buffer: float = math.inf,
    out_buffer: float = math.inf,
    sender: Any = None,
    gate: Callable[[str], None] | None = None,
    timeout: float = 5.0,
) -> AsyncIterator[tuple[Connection, Peer]]:
    """Run a Connection for the block; closing the peer's input at the end (EOF)."""
    c2s_send, c2s_recv = anyio.create_memory_object_stream[bytes](in_buffer)
    s2c_send, s2c_recv = anyio.create_memory_object_stream[bytes](out_buffer)
    conn = Connection(
        _Receiver(c2s_recv),
        sender if sender is not None else _Sender(s2c_send),
        methods={"ping": Method(_pong), **(methods or {})},
        notifications=notifications,
        framing=framing,
        jsonrpc=jsonrpc,
        limits=limits,
        gate=gate,
        name="test-peer",
    )
    peer = Peer(c2s_send, s2c_recv, framing)

    async def run() -> None:
        await conn.run()
        peer.run_returned.set()

    with c2s_send, c2s_recv, s2c_send, s2c_recv:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                with anyio.fail_after(timeout):
                    yield conn, peer
            finally:
                await c2s_send.aclose()
                with anyio.move_on_after(2):
                    await peer.run_returned.wait()
                conn.close()


@dataclass
class Call:
    """An outgoing ``conn.request`` running in its own task."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: BaseException | None = None

    @classmethod
    def start(
        cls, tg: anyio.abc.TaskGroup, conn: Connection, method: str, params: Any = None, **kw: Any
    ) -> Call:
        call = cls()

        async def go() -> None:
            try:
                call.result = await conn.request(method, params, **kw)
            except RpcError as exc:
                call.error = exc
            finally:
                call.done.set()

        tg.start_soon(go)
        return call

    async def outcome(self, timeout: float = 5.0) -> Any:
        with anyio.fail_after(timeout):
            await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result


class Gate:
    """An async handler that waits until released; records starts and cancellations."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started: list[Any] = []
        self.cancelled: list[Any] = []
        self.any_started = anyio.Event()

    async def __call__(self, params: Any) -> Any:
        self.started.append(params)
        self.any_started.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(params)
            raise
        return {"done": params}


def _slow(gate: Gate) -> Method:
    return Method(gate, params_type=Any, is_async=True)


def _req(id: Any, method: str = "ping", params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _cancel(id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}}


# --------------------------------------------------------------------------- basics


async def test_sync_request_answered() -> None:
    async with serve() as (_conn, peer):
        await peer.send(_req(1))
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": "pong"}


# --------------------------------------------------------------------------- case 12


async def test_case_12_invalid_json_answered_with_parse_error_then_valid_request_served() -> None:
    async with serve() as (_conn, peer):
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"', _req(2))
        error = await peer.recv()
        assert error["id"] is None
        assert error["error"]["code"] == -32700
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 2, "result": "pong"}


# --------------------------------------------------------------------------- case 13


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0"}',
        b'{"foo":1}',
        b"42",
        b'"text"',
        b"null",
        b'{"jsonrpc":"1.0","method":"ping"}',
        b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
    ],
)
async def test_case_13_bad_envelope_answered_with_invalid_request_and_reader_keeps_running(
    body: bytes,
) -> None:
    async with serve() as (_conn, peer):
        await peer.send(body)
        before = await peer.until_sync()
        assert len(before) == 1
        assert before[0]["id"] is None
        assert before[0]["error"]["code"] == -32600
        assert await peer.until_sync() == []


async def test_case_13_all_bad_envelopes_in_one_read_then_ping_answered() -> None:
    async with serve() as (_conn, peer):
        await peer.send(
            b'{"jsonrpc":"2.0"}', b'{"foo":1}', b"7", b'{"jsonrpc":"3.0","id":1}', _req(9)
        )
        replies = [await peer.recv() for _ in range(5)]
        assert [r["error"]["code"] for r in replies[:4]] == [-32600] * 4
        assert [r["id"] for r in replies[:3]] == [None] * 3
        assert replies[4] == {"jsonrpc": "2.0", "id": 9, "result": "pong"}


def test_case_13_stock_endpoint_dies_on_envelope_without_method_or_id() -> None:
    # Justifies the guard: python-lsp-jsonrpc's Endpoint raises (it would kill a reader).
    endpoint = Endpoint({}, lambda _m: None)
    with pytest.raises(KeyError):
        endpoint.consume({"jsonrpc": "2.0"})


def test_case_13_stock_endpoint_dies_on_a_json_number() -> None:
    endpoint = Endpoint({}, lambda _m: None)
    with pytest.raises(TypeError):
        endpoint.consume(42)


# --------------------------------------------------------------------------- case 14


async def test_case_14_method_not_a_string_answered_with_invalid_request() -> None:
    async with serve() as (_conn, peer):
        for method in (5, None, ["ping"]):
            await peer.send({"jsonrpc": "2.0", "id": 3, "method": method})
            (reply,) = await peer.until_sync()
            assert reply["error"]["code"] == -32600
            assert "result" not in reply


async def test_case_14_rpc_dot_method_answered_with_method_not_found() -> None:
    calls: list[Any] = []

    def discover(params: Any) -> str:
        calls.append(params)
        return "listed"

    methods = {"rpc.discover": Method(discover)}
    async with serve(methods=methods) as (_conn, peer):
        await peer.send(_req(4, "rpc.discover"))
        (reply,) = await peer.until_sync()
        assert reply["id"] == 4
        assert reply["error"]["code"] == -32601
        assert calls == []


async def test_case_14_method_null_answered_and_not_taken_for_a_response() -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        call = Call.start(tg, conn, "host/ask")
        request = await _outgoing(peer, "host/ask")
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "method": None})
        (reply,) = await peer.until_sync()
        assert (reply["id"], reply["error"]["code"]) == (request["id"], -32600)
        assert not call.done.is_set()
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "fine"})
        assert await call.outcome() == "fine"


# --------------------------------------------------------------------------- case 15


@pytest.mark.parametrize(
    "raw_id", [b"0", b'""', str(BIG).encode(), b'"x"', b"-7", b'"\\u65e5 \xe6\x97\xa5"']
)
async def test_case_15_ids_echoed_exactly(raw_id: bytes) -> None:
    async with serve() as (_conn, peer):
        await peer.send(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % raw_id)
        raw = await peer.recv_raw()
        assert raw == b'{"jsonrpc":"2.0","id":%s,"result":"pong"}' % raw_id


async def test_case_15_error_replies_echo_big_id_exactly() -> None:
    async with serve() as (_conn, peer):
        await peer.send(b'{"jsonrpc":"2.0","id":%d,"method":"nope"}' % BIG)
        raw = await peer.recv_raw()
        assert raw.startswith(b'{"jsonrpc":"2.0","id":%d,"error":' % BIG)
        assert json.loads(raw)["id"] == BIG


@pytest.mark.parametrize("raw_id", [b"1.5", b"true", b"{}", b"[]", b"1e2"])
async def test_case_15_invalid_ids_answered_with_invalid_request_and_null_id(raw_id: bytes) -> None:
    async with serve() as (_conn, peer):
        await peer.send(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % raw_id)
        (reply,) = await peer.until_sync()
        assert reply["id"] is None
        assert reply["error"]["code"] == -32600


# --------------------------------------------------------------------------- case 16


async def test_case_16_reused_id_of_pending_request_rejected_and_pending_one_answered_later() -> (
    None
):
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (_conn, peer):
        await peer.send(_req(1, "slow", {"n": "first"}))
        await gate.any_started.wait()
        await peer.send(_req(1, "slow", {"n": "second"}))
        (error,) = await peer.until_sync()
        assert error["id"] == 1
        assert error["error"]["code"] == -32600
        gate.release.set()
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"done": {"n": "first"}}}
        assert gate.started == [{"n": "first"}]
        assert await peer.until_sync() == []
        # Once settled, the id may be used again.
        await peer.send(_req(1, "slow", {"n": "third"}))
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"done": {"n": "third"}}}


async def test_case_16_sync_request_reusing_the_id_of_a_pending_one_rejected() -> None:
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (_conn, peer):
        await peer.send(_req(7, "slow", {"n": "first"}))
        await gate.any_started.wait()
        await peer.send(_req(7, "ping"), _req(8, "ping"))
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32600,
                "message": "a request with this id is still pending",
                "data": {"reason": "invalid_request"},
            },
        }
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 8, "result": "pong"}
        gate.release.set()
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 7, "result": {"done": {"n": "first"}}}


async def test_case_16_same_number_and_string_ids_are_distinct() -> None:
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (_conn, peer):
        await peer.send(_req(1, "slow", {"v": 1}), _req("1", "slow", {"v": 2}))
        assert await peer.until_sync() == []
        gate.release.set()
        replies = [await peer.recv(), await peer.recv()]
        assert sorted(json.dumps(r["id"]) for r in replies) == ['"1"', "1"]


# --------------------------------------------------------------------------- case 17


class Inner(msgspec.Struct):
    count: int


class EchoParams(msgspec.Struct):
    text: str = ""
    inner: Inner | None = None
    tags: list[str] = []


class RequiredParams(msgspec.Struct):
    name: str


def _echo(params: EchoParams) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(params)
    return out


_ECHO = {
    "echo": Method(_echo, params_type=EchoParams),
    "need": Method(lambda p: p.name, params_type=RequiredParams),
}


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"text": 5}, "params.text"),
        ({"inner": {"count": "x"}}, "params.inner.count"),
        ({"tags": ["a", 2]}, "params.tags[1]"),
        ([1, 2], "params"),
    ],
)
async def test_case_17_wrong_param_type_answered_with_invalid_params_and_path(
    params: Any, path: str
) -> None:
    async with serve(methods=_ECHO) as (_conn, peer):
        await peer.send(_req(1, "echo", params))
        reply = await peer.recv()
        assert reply["id"] == 1
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["path"] == path


async def test_case_17_params_not_object_or_array_answered_with_invalid_params() -> None:
    async with serve(methods=_ECHO) as (_conn, peer):
        await peer.send(_req(1, "echo", 5))
        reply = await peer.recv()
        assert reply["id"] == 1
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["path"] == "params"


async def test_case_17_missing_required_field_answered_with_invalid_params() -> None:
    async with serve(methods=_ECHO) as (_conn, peer):
        await peer.send(_req(1, "need", {}), _req(2, "need"))
        for id in (1, 2):
            reply = await peer.recv()
            assert reply["id"] == id
            assert reply["error"]["code"] == -32602
            assert reply["error"]["data"]["path"] == "params"


async def test_case_17_null_and_missing_params_accepted_where_optional() -> None:
    async with serve(methods=_ECHO) as (_conn, peer):
        expected: dict[str, Any] = {"text": "", "inner": None, "tags": []}
        await peer.send(
            {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": None}, _req(2, "echo")
        )
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": expected}
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 2, "result": expected}


async def test_case_17_async_handler_params_validated_before_start() -> None:
    gate = Gate()
    methods = {"slow": Method(gate, params_type=RequiredParams, is_async=True)}
    async with serve(methods=methods) as (_conn, peer):
        await peer.send(_req(1, "slow", {"name": 3}))
        reply = await peer.recv()
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["path"] == "params.name"
        assert await peer.until_sync() == []
        assert gate.started == []


# --------------------------------------------------------------------------- case 18


async def test_case_18_unknown_request_answered_with_method_not_found() -> None:
    async with serve() as (_conn, peer):
        await peer.send(_req(1, "no/such"))
        reply = await peer.recv()
        assert (reply["id"], reply["error"]["code"]) == (1, -32601)


async def test_case_18_unknown_notification_ignored() -> None:
    async with serve() as (_conn, peer):
        await peer.send({"jsonrpc": "2.0", "method": "no/such", "params": {}})
        await peer.send({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}})
        assert await peer.until_sync() == []


async def test_case_18_unknown_dollar_request_answered_with_method_not_found() -> None:
    async with serve() as (_conn, peer):
        await peer.send(_req("d", "$/setTrace", {"value": "off"}))
        reply = await peer.recv()
        assert (reply["id"], reply["error"]["code"]) == ("d", -32601)


async def test_case_18_cancel_request_sent_as_a_request_answered_with_method_not_found() -> None:
    async with serve() as (_conn, peer):
        await peer.send(_req(5, "$/cancelRequest", {"id": 1}))
        reply = await peer.recv()
        assert (reply["id"], reply["error"]["code"]) == (5, -32601)


# --------------------------------------------------------------------------- case 19

_LEAK = "SECRET-detail in /home/someone/project/module.py line 3"


def _boom(_params: Any) -> Any:
    raise ValueError(_LEAK)


async def _boom_async(_params: Any) -> Any:
    await anyio.sleep(0)
    raise KeyError(_LEAK)


def _assert_generic_internal_error(raw: bytes, id: Any) -> str:
    for needle in (b"Traceback", b"SECRET", b"/home", b".py", b"ValueError", b"KeyError"):
        assert needle not in raw, needle
    reply = json.loads(raw)
    assert reply["id"] == id
    error = reply["error"]
    assert error["code"] == -32603
    assert error["message"] == "Internal error"
    assert set(error["data"]) == {"correlationId"}
    cid = error["data"]["correlationId"]
    assert isinstance(cid, str) and cid
    return cid


async def test_case_19_sync_handler_raising_answered_with_generic_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="agent_bridge.rpc")
    async with serve(methods={"boom": Method(_boom)}) as (_conn, peer):
        await peer.send(_req(1, "boom"))
        cid = _assert_generic_internal_error(await peer.recv_raw(), 1)
        assert await peer.until_sync() == []
    # The details stay on our side, findable by the correlation id.
    records = [r for r in caplog.records if cid in r.getMessage()]
    assert records and records[0].exc_info is not None


async def test_case_19_async_handler_raising_answered_with_generic_internal_error() -> None:
    async with serve(methods={"boom": Method(_boom_async, is_async=True)}) as (_conn, peer):
        await peer.send(_req(1, "boom"), _req(2, "boom"))
        cids = {_assert_generic_internal_error(await peer.recv_raw(), i) for i in (1, 2)}
        assert len(cids) == 2


async def test_case_19_unencodable_result_answered_with_generic_internal_error() -> None:
    async with serve(methods={"odd": Method(lambda _p: object())}) as (_conn, peer):
        await peer.send(_req(1, "odd"))
        _assert_generic_internal_error(await peer.recv_raw(), 1)


async def test_case_19_rpc_error_from_handler_passed_through() -> None:
    def refuse(_params: Any) -> Any:
        raise RpcError(-32042, "not now", {"retryAfter": 1})

    async with serve(methods={"refuse": Method(refuse)}) as (_conn, peer):
        await peer.send(_req(1, "refuse"))
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32042, "message": "not now", "data": {"retryAfter": 1}},
        }


# --------------------------------------------------------------------------- case 20

_TRICKY = {"error": {"code": 1, "message": "not really"}, "result": 7, "other": [1]}


async def test_case_20_result_containing_error_and_result_keys_sent_untouched() -> None:
    async def tricky_async(_p: Any) -> Any:
        return _TRICKY

    methods = {"tricky": Method(lambda _p: _TRICKY), "tricky2": Method(tricky_async, is_async=True)}
    async with serve(methods=methods) as (_conn, peer):
        await peer.send(_req(1, "tricky"), _req(2, "tricky2"))
        for id in (1, 2):
            assert await peer.recv() == {"jsonrpc": "2.0", "id": id, "result": _TRICKY}


def test_case_20_stock_endpoint_merges_such_a_result_into_the_envelope() -> None:
    sent: list[dict[str, Any]] = []
    endpoint = Endpoint({"tricky": lambda _p: dict(_TRICKY)}, sent.append)
    endpoint.consume({"jsonrpc": "2.0", "id": 1, "method": "tricky"})
    assert sent[0]["error"] == _TRICKY["error"]
    assert sent[0]["result"] == 7


# --------------------------------------------------------------------------- case 21


async def test_case_21_empty_batch_answered_with_one_invalid_request() -> None:
    async with serve() as (_conn, peer):
        await peer.send(b"[]")
        (reply,) = await peer.until_sync()
        assert isinstance(reply, dict)
        assert reply["id"] is None
        assert reply["error"]["code"] == -32600


async def test_case_21_batch_of_non_objects_answered_with_array_of_errors() -> None:
    async with serve() as (_conn, peer):
        await peer.send(b"[1,2]")
        (reply,) = await peer.until_sync()
        assert isinstance(reply, list) and len(reply) == 2
        for item in reply:
            assert item["id"] is None
            assert item["error"]["code"] == -32600


async def test_case_21_mixed_batch_answered_in_one_array_with_replies_for_requests_only() -> None:
    seen: list[Any] = []
    notes = {"note": Method(lambda p: seen.append(p), params_type=Any)}
    gate = Gate()
    methods = {"slow": _slow(gate), **_ECHO}
    async with serve(methods=methods, notifications=notes) as (_conn, peer):
        await peer.send(
            [
                _req(1),
                {"jsonrpc": "2.0", "method": "note", "params": {"k": 1}},
                _req(2, "slow", ["s"]),
                {"foo": 1},
                _req(3, "missing"),
                _req(4, "echo", {"text": 1}),
                {"jsonrpc": "2.0", "id": 999, "result": 1},
            ]
        )
        # The array waits for the async request.
        assert await peer.until_sync() == []
        assert seen == [{"k": 1}]
        gate.release.set()
        reply = await peer.recv()
        assert isinstance(reply, list)
        by_id = {json.dumps(r["id"]): r for r in reply}
        assert sorted(by_id) == sorted(["1", "2", "3", "4", "null"])
        assert by_id["1"]["result"] == "pong"
        assert by_id["2"]["result"] == {"done": ["s"]}
        assert by_id["3"]["error"]["code"] == -32601
        assert by_id["4"]["error"]["code"] == -32602
        assert by_id["null"]["error"]["code"] == -32600
        assert await peer.until_sync() == []


async def test_case_21_batch_of_notifications_produces_no_output_at_all() -> None:
    seen: list[Any] = []
    async with serve(notifications={"note": Method(lambda p: seen.append(p), params_type=Any)}) as (
        _conn,
        peer,
    ):
        await peer.send(
            [
                {"jsonrpc": "2.0", "method": "note", "params": [1]},
                {"jsonrpc": "2.0", "method": "unknown"},
                {"jsonrpc": "2.0", "method": "note", "params": 5},
                {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}},
            ]
        )
        assert await peer.until_sync_raw() == []
        assert seen == [[1]]


# --------------------------------------------------------------------------- case 22


class Answer(msgspec.Struct):
    value: int


async def _outgoing(peer: Peer, method: str) -> dict[str, Any]:
    message = await peer.recv()
    assert message["method"] == method
    assert isinstance(message["id"], int)
    out: dict[str, Any] = message
    return out


async def test_case_22_response_with_unknown_id_dropped_and_pending_request_unaffected() -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        call = Call.start(tg, conn, "host/ask", {"q": 1}, result_type=Answer)
        request = await _outgoing(peer, "host/ask")
        await peer.send({"jsonrpc": "2.0", "id": request["id"] + 1000, "result": {"value": 0}})
        await peer.send({"jsonrpc": "2.0", "id": "str-id", "result": {"value": 0}})
        assert await peer.until_sync() == []
        assert conn.ledger.unknown_responses == 2
        assert not call.done.is_set()
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"value": 42}})
        assert await call.outcome() == Answer(42)


async def test_case_22_duplicate_response_dropped() -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        call = Call.start(tg, conn, "host/ask", result_type=Answer)
        request = await _outgoing(peer, "host/ask")
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"value": 1}})
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"value": 2}})
        assert await peer.until_sync() == []
        assert await call.outcome() == Answer(1)
        assert conn.ledger.unknown_responses == 1


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"result": {"value": 1}, "error": {"code": 1, "message": "x"}}, "both result and error"),
        ({}, "neither result nor error"),
    ],
)
async def test_case_22_malformed_response_fails_the_pending_request(
    extra: dict[str, Any], reason: str
) -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        call = Call.start(tg, conn, "host/ask", result_type=Answer)
        request = await _outgoing(peer, "host/ask")
        await peer.send({"jsonrpc": "2.0", "id": request["id"], **extra})
        with pytest.raises(RpcError) as info:
            await call.outcome()
        assert info.value.data == {"reason": reason}
        assert len(conn.ledger) == 0
        assert await peer.until_sync() == []


async def test_case_22_result_decoded_by_recorded_type_and_mismatch_fails() -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        good = Call.start(tg, conn, "a", result_type=Answer)
        bad = Call.start(tg, conn, "b", result_type=Answer)
        req_a = await _outgoing(peer, "a")
        req_b = await _outgoing(peer, "b")
        await peer.send(
            {"jsonrpc": "2.0", "id": req_b["id"], "result": {"name": "not an answer"}},
            {"jsonrpc": "2.0", "id": req_a["id"], "result": {"value": 5}},
        )
        assert await good.outcome() == Answer(5)
        with pytest.raises(RpcError) as info:
            await bad.outcome()
        assert info.value.data["reason"] == "invalid_result"


async def test_case_22_error_response_raised_with_peer_code_message_and_data() -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        call = Call.start(tg, conn, "host/ask")
        request = await _outgoing(peer, "host/ask")
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32000, "message": "no", "data": [1]},
            }
        )
        with pytest.raises(RpcError) as info:
            await call.outcome()
        assert (info.value.code, info.value.message, info.value.data) == (-32000, "no", [1])


async def test_case_22_error_response_with_malformed_error_object_fails_the_request() -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        call = Call.start(tg, conn, "host/ask")
        request = await _outgoing(peer, "host/ask")
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": "broken"})
        with pytest.raises(RpcError) as info:
            await call.outcome()
        assert info.value.data == {"reason": "malformed error object"}


async def test_outgoing_request_ids_are_monotonic_integers() -> None:
    async with serve() as (conn, peer), anyio.create_task_group() as tg:
        calls = [Call.start(tg, conn, "m", i) for i in range(5)]
        ids = [(await _outgoing(peer, "m"))["id"] for _ in calls]
        assert ids == sorted(ids) and len(set(ids)) == 5
        for id in ids:
            await peer.send({"jsonrpc": "2.0", "id": id, "result": id})
        assert [await c.outcome() for c in calls] == ids


async def test_outgoing_request_timeout_raises_and_late_response_is_dropped() -> None:
    async with serve() as (conn, peer):
        with pytest.raises(RequestTimedOut):
            await conn.request("host/slow", timeout=0.05)
        request = await _outgoing(peer, "host/slow")
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": 1})
        assert await peer.until_sync() == []
        assert conn.ledger.unknown_responses == 1


async def test_outgoing_request_cancelled_by_caller_sends_cancel_request() -> None:
    async with serve() as (conn, peer):
        with anyio.move_on_after(0.05):
            await conn.request("host/slow")
        request = await _outgoing(peer, "host/slow")
        cancel = await peer.recv()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancelRequest",
            "params": {"id": request["id"]},
        }
        assert len(conn.ledger) == 0


# --------------------------------------------------------------------------- case 24


async def test_case_24_cancel_in_flight_async_request_gets_exactly_one_request_cancelled() -> None:
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (_conn, peer):
        await peer.send(_req("job", "slow", [1]))
        await gate.any_started.wait()
        await peer.send(_cancel("job"))
        reply = await peer.recv()
        assert reply["id"] == "job"
        assert reply["error"]["code"] == -32800
        assert "result" not in reply
        assert gate.cancelled == [[1]]
        gate.release.set()
        await peer.send(_cancel("job"))
        assert await peer.until_sync() == []


async def test_cancel_request_for_an_uncancellable_method_is_ignored_and_its_result_sent() -> None:
    # Issue 11, case 4: a method that cannot stop half way says so (``cancellable``) and
    # a ``$/cancelRequest`` for it is ignored; the result arrives, never -32800.
    gate = Gate()
    pinned = Method(gate, params_type=Any, is_async=True, cancellable=False)
    async with serve(methods={"close": pinned}) as (_conn, peer):
        await peer.send(_req("c", "close", [2]))
        await gate.any_started.wait()
        await peer.send(_cancel("c"))
        assert await peer.until_sync() == []
        gate.release.set()
        reply = await peer.recv()
        assert reply == {"jsonrpc": "2.0", "id": "c", "result": {"done": [2]}}
        assert gate.cancelled == []


async def test_case_24_cancel_with_big_integer_id() -> None:
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (_conn, peer):
        await peer.send(_req(BIG, "slow"))
        await gate.any_started.wait()
        await peer.send(_cancel(BIG))
        raw = await peer.recv_raw()
        assert raw.startswith(b'{"jsonrpc":"2.0","id":%d,"error":{"code":-32800' % BIG)


@pytest.mark.parametrize(
    "cancel",
    [
        _cancel(12345),
        _cancel("other"),
        _cancel(None),
        _cancel(True),
        _cancel([1]),
        {"jsonrpc": "2.0", "method": "$/cancelRequest"},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": None},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {}},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": [1]},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": 1},
    ],
)
async def test_case_24_cancel_for_unknown_id_or_without_params_ignored(cancel: Any) -> None:
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (_conn, peer):
        await peer.send(_req(1, "slow", ["x"]))
        await gate.any_started.wait()
        await peer.send(cancel)
        assert await peer.until_sync() == []
        gate.release.set()
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"done": ["x"]}}
        assert gate.cancelled == []


async def test_case_24_cancel_for_queued_request_not_yet_started_gets_request_cancelled() -> None:
    started: list[Any] = []

    async def quick(params: Any) -> Any:
        started.append(params)
        return "ran"

    async with serve(methods={"quick": Method(quick, params_type=Any, is_async=True)}) as (
        _conn,
        peer,
    ):
        # Request and cancel arrive in one read: the handler's task has not started yet.
        await peer.send(_req(7, "quick", ["q"]), _cancel(7))
        reply = await peer.recv()
        assert reply["id"] == 7
        assert reply["error"]["code"] == -32800
        assert await peer.until_sync() == []
        assert started == []


def test_case_24_stock_endpoint_leaves_cancelled_queued_request_without_reply() -> None:
    # Justifies handling $/cancelRequest ourselves: Endpoint's own cancel of a request
    # still queued in its executor never produces a reply.
    sent: list[dict[str, Any]] = []
    release = threading.Event()
    endpoint = Endpoint(
        {"slow": lambda p: lambda: (release.wait(5), p)[1]}, sent.append, max_workers=1
    )
    logger = logging.getLogger("concurrent.futures")
    previous = logger.level
    logger.setLevel(logging.CRITICAL)  # it logs the InvalidStateError it hits
    try:
        endpoint.consume({"jsonrpc": "2.0", "id": 1, "method": "slow", "params": 1})
        endpoint.consume({"jsonrpc": "2.0", "id": 2, "method": "slow", "params": 2})
        endpoint.consume({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}})
        release.set()
        endpoint.shutdown()
    finally:
        logger.setLevel(previous)
    assert [m["id"] for m in sent] == [1]


# --------------------------------------------------------------------------- case 25


async def test_case_25_cancel_racing_completion_never_two_replies() -> None:
    async def quick(params: Any) -> Any:
        for _ in range(params[0]):
            await anyio.sleep(0)
        return "done"

    limits = Limits(max_inflight_requests=100_000)
    outcomes = {"done": 0, "cancelled": 0}
    async with serve(
        methods={"quick": Method(quick, params_type=Any, is_async=True)}, limits=limits
    ) as (_c, peer):
        ids = []
        for i in range(400):
            work, delay, together = i % 4, (i // 4) % 4, (i // 16) % 2
            ids.append(i)
            if together:
                await peer.send(_req(i, "quick", [work]), _cancel(i))
            else:
                await peer.send(_req(i, "quick", [work]))
                for _ in range(delay):
                    await anyio.sleep(0)
                await peer.send(_cancel(i))
            if i % 50 == 49:
                await anyio.sleep(0)
        replies = await peer.until_sync()
        # Late cancels after everything settled must not add replies either.
        await peer.send(*[_cancel(i) for i in ids])
        replies += await peer.until_sync()
    counts: dict[int, int] = {}
    for reply in replies:
        counts[reply["id"]] = counts.get(reply["id"], 0) + 1
        if "result" in reply:
            assert reply["result"] == "done"
            outcomes["done"] += 1
        else:
            assert reply["error"]["code"] == -32800
            outcomes["cancelled"] += 1
    assert counts == dict.fromkeys(ids, 1)
    # Both sides of the race were actually exercised.
    assert outcomes["done"] > 0 and outcomes["cancelled"] > 0


# --------------------------------------------------------------------------- case 26


async def test_case_26_requests_beyond_inflight_limit_get_retryable_overloaded_error() -> None:
    gate = Gate()
    limits = Limits(max_inflight_requests=3)
    async with serve(methods={"slow": _slow(gate)}, limits=limits) as (_c, peer):
        await peer.send(*[_req(i, "slow", [i]) for i in range(3)])
        assert await peer.until_sync() == []  # N accepted; sync requests still served
        await peer.send(_req(3, "slow", [3]))
        (reply,) = await peer.until_sync()  # N+1 rejected
        assert reply["id"] == 3
        assert -32099 <= reply["error"]["code"] <= -32000
        assert reply["error"]["code"] == -32001
        assert reply["error"]["data"]["retryable"] is True
        assert sorted(gate.started) == [[0], [1], [2]]
        gate.release.set()
        results = sorted([await peer.recv() for _ in range(3)], key=lambda r: r["id"])
        assert [r["result"] for r in results] == [{"done": [i]} for i in range(3)]
        # Capacity is back once they finished.
        await peer.send(_req(4, "slow", [4]))
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 4, "result": {"done": [4]}}


async def test_case_26_inflight_slot_freed_by_cancellation() -> None:
    gate = Gate()
    limits = Limits(max_inflight_requests=1)
    async with serve(methods={"slow": _slow(gate)}, limits=limits) as (_c, peer):
        await peer.send(_req(1, "slow"))
        await gate.any_started.wait()
        await peer.send(_cancel(1))
        assert (await peer.recv())["error"]["code"] == -32800
        await peer.send(_req(2, "slow"))
        assert await peer.until_sync() == []
        gate.release.set()
        assert (await peer.recv())["id"] == 2


# --------------------------------------------------------------------------- case 27


async def test_case_27_peer_eof_run_returns_and_pending_requests_fail() -> None:
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (conn, peer):
        async with anyio.create_task_group() as tg:
            calls = [Call.start(tg, conn, "host/ask") for _ in range(3)]
            for _ in calls:
                await _outgoing(peer, "host/ask")
            await peer.send(_req(1, "slow"))
            await gate.any_started.wait()
            await peer.close_input()
            await peer.run_returned.wait()
            for call in calls:
                with pytest.raises(ConnectionClosed):
                    await call.outcome()
        assert conn.closed
        assert gate.cancelled == [{}]
        with pytest.raises(ConnectionClosed):
            await conn.request("after/close")


async def test_case_27_replies_queued_before_eof_are_still_written() -> None:
    async with serve() as (_conn, peer):
        await peer.send(*[_req(i) for i in range(50)])
        await peer.close_input()
        await peer.run_returned.wait()
        assert [(await peer.recv())["id"] for _ in range(50)] == list(range(50))


@pytest.mark.parametrize("exc", [anyio.BrokenResourceError(), OSError(errno.EPIPE, "Broken pipe")])
async def test_case_27_write_failure_closes_connection_and_fails_pending_requests(
    exc: BaseException,
) -> None:
    sender = _FailingSender(exc)
    async with serve(sender=sender) as (conn, peer):
        with pytest.raises(ConnectionClosed):
            await conn.request("host/ask", {"x": 1})
        await peer.run_returned.wait()
        assert conn.closed
        assert conn.closed_event.is_set()
        assert sender.attempts == 1


async def test_case_27_close_cancels_inflight_handlers_and_fails_requests() -> None:
    gate = Gate()
    async with serve(methods={"slow": _slow(gate)}) as (conn, peer):
        async with anyio.create_task_group() as tg:
            call = Call.start(tg, conn, "host/ask")
            await _outgoing(peer, "host/ask")
            await peer.send(_req(1, "slow"))
            await gate.any_started.wait()
            conn.close()
            with pytest.raises(ConnectionClosed):
                await call.outcome()
            await peer.run_returned.wait()
        assert gate.cancelled == [{}]


# --------------------------------------------------------------------------- backpressure


async def test_backpressure_reader_stops_consuming_when_peer_stops_reading() -> None:
    limits = Limits(outbound_high_water=4096, read_chunk_bytes=1024)
    total = 3000
    sent = 0
    finished = anyio.Event()
    async with serve(limits=limits, in_buffer=0, out_buffer=0) as (conn, peer):

        async def pipeline() -> None:
            nonlocal sent
            for i in range(total):
                await peer.send(_req(i))
                sent += 1
            finished.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(pipeline)
            # Let it run until input stops being consumed.
            last = -1
            with anyio.fail_after(5):
                while not (conn.congested and sent == last):
                    last = sent
                    await anyio.sleep(0.02)
            assert not finished.is_set()
            assert conn.congested
            reply_size = len(peer.frame(b'{"jsonrpc":"2.0","id":100,"result":"pong"}'))
            # Consumed input is bounded by the high-water mark of pending output.
            assert sent <= limits.outbound_high_water // reply_size + 4
            # Once the peer reads again, everything is answered in order.
            ids = [(await peer.recv())["id"] for _ in range(total)]
            assert ids == list(range(total))
            await finished.wait()


async def test_backpressure_notify_flow_waits_while_congested() -> None:
    limits = Limits(outbound_high_water=2048)
    queued = 0
    async with serve(limits=limits, out_buffer=0) as (conn, peer):

        async def stream() -> None:
            nonlocal queued
            for i in range(500):
                await conn.notify_flow("progress", {"i": i, "pad": "x" * 40})
                queued += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(stream)
            last = -1
            with anyio.fail_after(5):
                while not (conn.congested and queued == last):
                    last = queued
                    await anyio.sleep(0.02)
            assert queued < 100
            got = [(await peer.recv())["params"]["i"] for _ in range(500)]
            assert got == list(range(500))


# --------------------------------------------------------------------------- notifications


async def test_notifications_dispatched_sync_and_async_and_failures_contained() -> None:
    seen: list[Any] = []
    done = anyio.Event()

    async def later(params: Any) -> None:
        await anyio.sleep(0)
        seen.append(("async", params))
        done.set()

    def fail(_params: Any) -> None:
        raise RuntimeError("handler bug")

    notes = {
        "sync": Method(lambda p: seen.append(("sync", p.name)), params_type=RequiredParams),
        "async": Method(later, params_type=Any, is_async=True),
        "fail": Method(fail),
    }
    async with serve(notifications=notes) as (_conn, peer):
        await peer.send(
            {"jsonrpc": "2.0", "method": "fail"},
            {"jsonrpc": "2.0", "method": "sync", "params": {"name": 1}},
            {"jsonrpc": "2.0", "method": "sync", "params": {"name": "ok"}},
            {"jsonrpc": "2.0", "method": "async", "params": [1]},
        )
        assert await peer.until_sync() == []
        await done.wait()
        assert seen == [("sync", "ok"), ("async", [1])]


async def test_gate_error_answers_request_without_dispatching() -> None:
    calls: list[Any] = []

    def gate(method: str) -> None:
        if method != "ping":
            raise RpcError(-32002, "not initialized")

    def work(params: Any) -> str:
        calls.append(params)
        return "worked"

    methods = {"work": Method(work)}
    async with serve(methods=methods, gate=gate) as (_conn, peer):
        await peer.send(_req(1, "work"))
        reply = await peer.recv()
        assert reply == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32002,
                "message": "not initialized",
                "data": {"reason": "not_initialized"},
            },
        }
        assert calls == []


# --------------------------------------------------------------------------- framing modes


async def test_jsonrpc_false_mode_omits_member_on_output_and_accepts_input_without_it() -> None:
    async with (
        serve(framing="newline", jsonrpc=False) as (conn, peer),
        anyio.create_task_group() as tg,
    ):
        await peer.send({"id": 1, "method": "ping"})
        assert await peer.recv_raw() == b'{"id":1,"result":"pong"}'
        await peer.send({"id": 2, "method": "missing"})
        raw = await peer.recv_raw()
        assert b"jsonrpc" not in raw and json.loads(raw)["error"]["code"] == -32601
        await peer.send({"jsonrpc": "1.0", "id": 3, "method": "ping"})
        reply = await peer.recv()
        assert "jsonrpc" not in reply and reply["error"]["code"] == -32600
        conn.notify("note", {"a": 1})
        assert await peer.recv_raw() == b'{"method":"note","params":{"a":1}}'
        call = Call.start(tg, conn, "ask", [1])
        raw = await peer.recv_raw()
        assert b"jsonrpc" not in raw
        request = json.loads(raw)
        assert request["method"] == "ask" and request["params"] == [1]
        await peer.send({"id": request["id"], "result": "ok"})
        assert await call.outcome() == "ok"


@pytest.mark.parametrize("wire", ["content-length", "newline"])
async def test_auto_framing_answers_in_the_detected_framing(wire: FramingKind) -> None:
    async with serve(framing="auto") as (_conn, peer):
        peer.framing = wire
        await peer.send(json.dumps(_req("é-日本"), ensure_ascii=False).encode())
        raw = await peer._receive.receive()
        body = '{"jsonrpc":"2.0","id":"é-日本","result":"pong"}'.encode()
        assert raw == encode_frame(wire, body)


async def test_framing_errors_counted_and_stream_continues() -> None:
    limits = Limits(max_message_bytes=64)
    async with serve(limits=limits) as (conn, peer):
        await peer.send_raw(b"Content-Length: abc\r\n\r\n{}" + peer.frame(b'"' + b"a" * 70 + b'"'))
        replies = await peer.until_sync()
        # Each rejected frame is answered (id null), not only logged (issue 11, case 2).
        assert [(r["id"], r["error"]["code"], r["error"]["data"]["reason"]) for r in replies] == [
            (None, -32700, "bad_content_length"),
            (None, -32600, "too_large"),
        ]
        assert conn.replies.framing_errors == 2


def _padded_request(id: int, size: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"text":"' % id
    body = head + b"a" * (size - len(head) - 3) + b'"}}'
    assert len(body) == size
    return body


async def test_max_message_bytes_at_limit_served_and_one_over_dropped() -> None:
    limits = Limits(max_message_bytes=120)
    async with serve(methods=_ECHO, limits=limits) as (conn, peer):
        await peer.send(_padded_request(1, 120), _padded_request(2, 121))
        replies = await peer.until_sync()
        assert [r["id"] for r in replies] == [1, 2]  # the frame names its id: answered
        assert replies[1]["error"]["data"] == {"reason": "too_large", "limit": 120}
        assert replies[0]["result"]["text"] == json.loads(_padded_request(1, 120))["params"]["text"]
        assert conn.replies.framing_errors == 1


async def test_truncated_input_at_eof_dispatches_nothing() -> None:
    calls: list[Any] = []
    async with serve(methods={"work": Method(lambda p: calls.append(p))}) as (conn, peer):
        frame = peer.frame(_req(1, "work"))
        await peer.send_raw(frame[:-3])
        await peer.close_input()
        await peer.run_returned.wait()
        assert calls == []
        assert conn.replies.framing_errors == 1


async def test_utf8_text_round_trips_in_both_directions() -> None:
    text = "日本語 🎉 👩‍💻 中文"
    methods = {"echo": Method(_echo, params_type=EchoParams)}
    async with serve(methods=methods) as (conn, peer):
        body = json.dumps(_req(1, "echo", {"text": text}), ensure_ascii=False).encode()
        await peer.send_raw(encode_frame("content-length", body))
        reply = await peer.recv()
        assert reply["result"]["text"] == text
        conn.notify("n", {"text": text})
        raw = await peer.recv_raw()
        assert json.loads(raw)["params"]["text"] == text


def test_stock_endpoint_answers_a_future_result_through_its_callback() -> None:
    # Sanity check of an assumption the connection relies on: a concurrent future handed
    # to Endpoint as a handler result is answered through its done-callback.
    sent: list[dict[str, Any]] = []
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    endpoint = Endpoint({"m": lambda _p: future}, sent.append)
    endpoint.consume({"jsonrpc": "2.0", "id": 1, "method": "m"})
    assert sent == []
    future.set_result(msgspec.Raw(b"1"))
    assert sent == [{"jsonrpc": "2.0", "id": 1, "result": msgspec.Raw(b"1")}]
