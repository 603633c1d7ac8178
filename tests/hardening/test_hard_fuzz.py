"""Fuzzing the JSON-RPC engine with hypothesis (cases 1-22 under random input).

The framer (both framings and auto-detection) and the message layer get random bytes and
structure-aware mutations of valid messages (see ``fuzzkit.py``: fields dropped,
duplicated or retyped, bodies truncated or spliced, 400-digit numbers, nesting thousands
deep, invalid UTF-8, batches, bad and odd headers).  What must hold:

* only declared errors come out: :class:`FramingError` values from the framer,
  :class:`Invalid` messages from the message layer, JSON-RPC error replies with a code
  from the closed set from a connection -- never an exception, never a traceback;
* the reader survives: after the garbage (and, for ``Content-Length``, enough padding to
  outlast any length the garbage itself declared) a valid request is still served;
* the framer's output does not depend on how the input was chunked, garbage included.

The same corpus is replayed once against a real ``agent-bridge serve`` process.
"""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

import anyio
import msgspec
import pytest
from chunking import split_at
from conftest import running_bridge
from hardening.fuzzkit import BASE_MESSAGES, MUTATORS, declared_lengths, garbage_stream, mutate
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agent_bridge.rpc.connection import Connection, Limits, Method
from agent_bridge.rpc.errors import RpcError
from agent_bridge.rpc.framing import MAX_HEADER_BLOCK_BYTES, FramingError, encode_frame, make_framer
from agent_bridge.rpc.ledger import Ledger, LedgerEntry
from agent_bridge.rpc.messages import Batch, Invalid, Notification, Request, Response, parse_body

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FRAMING_REASONS = {
    "missing_content_length",
    "bad_content_length",
    "too_large",
    "bad_header",
    "header_too_large",
    "length_mismatch",
    "truncated",
}
#: Every code a connection may answer bad input with.
DECLARED_CODES = {-32700, -32600, -32601, -32602, -32800, -32001}
VALID = b'{"jsonrpc":"2.0","id":"sync","method":"ping"}'
LIMIT = 64 * 1024

_chunk_cuts = st.lists(st.integers(0, 10**7), max_size=40)


def _run_framer(kind: str, chunks: list[bytes]) -> list[bytes | FramingError]:
    framer = make_framer(kind, LIMIT)  # type: ignore[arg-type]
    out: list[bytes | FramingError] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    out.extend(framer.eof())
    return out


def _check_frames(items: list[bytes | FramingError]) -> None:
    for item in items:
        if isinstance(item, FramingError):
            assert item.reason in FRAMING_REASONS, item
        else:
            assert type(item) is bytes
            assert len(item) <= LIMIT


def _pad(kind: str, garbage: bytes) -> bytes:
    """What it takes for any framer state left by ``garbage`` to reach a message boundary:
    a newline; or, for Content-Length, more filler than the largest length the garbage
    declared plus a full header block (the filler is then either a body, skipped bytes, or
    an over-long header block that makes the framer resynchronise)."""
    if kind == "newline":
        return b"\n"
    return b" " * (declared_lengths(garbage) + MAX_HEADER_BLOCK_BYTES + 64)


class Garbage:
    """Garbage drawn by hypothesis: random bytes, or a mutated-message stream built from a
    small seed (so failing examples print short, and still shrink)."""

    def __init__(self, raw: bytes | None, kind: str = "", seed: int = 0, count: int = 0) -> None:
        self._spec = (raw, kind, seed, count)
        self.data = raw if raw is not None else garbage_stream(kind, random.Random(seed), count)

    def __repr__(self) -> str:
        raw, kind, seed, count = self._spec
        if raw is not None:
            return f"Garbage({raw!r})"
        return f"Garbage(None, {kind!r}, seed={seed}, count={count})"


_garbage = st.one_of(
    st.binary(max_size=1500).map(Garbage),
    st.builds(
        lambda kind, seed, n: Garbage(None, kind, seed, n),
        st.sampled_from(["content-length", "newline"]),
        st.integers(0, 2**32),
        st.integers(1, 6),
    ),
)


# --------------------------------------------------------------------------- framer


@pytest.mark.parametrize("kind", ["content-length", "newline", "auto"])
@FUZZ
@given(garbage=_garbage, cuts=_chunk_cuts)
def test_fuzz_framer_random_input_only_declared_errors_and_chunking_does_not_matter(
    kind: str, garbage: Garbage, cuts: list[int]
) -> None:
    data = garbage.data
    whole = _run_framer(kind, [data])
    _check_frames(whole)
    assert _run_framer(kind, split_at(data, cuts)) == whole
    if len(data) <= 8192:
        assert _run_framer(kind, [data[i : i + 1] for i in range(len(data))]) == whole


@pytest.mark.parametrize("kind", ["content-length", "newline"])
@FUZZ
@given(garbage=_garbage, cuts=_chunk_cuts)
def test_fuzz_framer_valid_message_after_garbage_is_delivered(
    kind: str, garbage: Garbage, cuts: list[int]
) -> None:
    data = garbage.data
    assume(declared_lengths(data) <= 4 * LIMIT)
    stream = data + _pad(kind, data) + encode_frame(kind, VALID)  # type: ignore[arg-type]
    framer = make_framer(kind, LIMIT)  # type: ignore[arg-type]
    out: list[bytes | FramingError] = []
    for chunk in split_at(stream, cuts):
        out.extend(framer.feed(chunk))
    _check_frames(out)
    assert out and out[-1] == VALID
    assert framer.eof() == []


# --------------------------------------------------------------------------- message layer

_ops = st.lists(st.integers(0, len(MUTATORS) - 1), min_size=1, max_size=4)


def _check_message(message: object) -> None:
    if isinstance(message, Batch):
        assert message.items
        for item in message.items:
            assert not isinstance(item, Batch)
            _check_message(item)
        return
    assert isinstance(message, Request | Notification | Response | Invalid), message
    if isinstance(message, Invalid):
        assert message.code in (-32700, -32600, -32601, -32602)
        if message.id is not None:
            assert isinstance(msgspec.json.decode(message.id), int | str)
    elif isinstance(message, Request):
        assert isinstance(msgspec.json.decode(message.id), int | str)
        assert isinstance(message.method, str)


@FUZZ
@given(base=st.integers(0, len(BASE_MESSAGES) - 1), ops=_ops, seed=st.integers(0, 2**32))
def test_fuzz_message_layer_mutated_messages_classified_never_raised(
    base: int, ops: list[int], seed: int
) -> None:
    body = mutate(base, ops, seed)
    for require in (True, False):
        _check_message(parse_body(body, require_jsonrpc=require))


@FUZZ
@given(body=st.binary(max_size=500))
def test_fuzz_message_layer_random_bytes_classified_never_raised(body: bytes) -> None:
    _check_message(parse_body(body))


@pytest.mark.parametrize("depth", [10, 900, 1_100, 10_000, 200_000])
@pytest.mark.parametrize("shape", ["params", "whole", "batch", "id"])
def test_fuzz_deep_nesting_is_a_declared_error_not_an_exception(depth: int, shape: str) -> None:
    nested = b"[" * depth + b"]" * depth
    body = {
        "params": b'{"jsonrpc":"2.0","id":1,"method":"m","params":[%s]}' % nested,
        "whole": nested,
        "batch": b"[" + nested + b"]",
        "id": b'{"jsonrpc":"2.0","id":%s,"method":"m"}' % nested,
    }[shape]
    _check_message(parse_body(body))


# --------------------------------------------------------------------------- connection


class _Receiver:
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return bytes(await self._stream.receive())


class _Sender:
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)


class EchoParams(msgspec.Struct):
    text: str = ""
    n: int = 0


async def _slow(params: Any) -> Any:
    await anyio.sleep(0)
    return params


METHODS = {
    "ping": Method(lambda _p: "pong"),
    "echo": Method(lambda p: p, EchoParams),
    "echo_any": Method(lambda p: p, Any),
    "slow": Method(_slow, Any, is_async=True),
}


def check_reply(reply: Any) -> None:
    """A reply to bad input: a well-formed response whose error, if any, is declared and
    carries no internals."""
    if isinstance(reply, list):
        assert reply, "an empty batch reply"
        for item in reply:
            check_reply(item)
        return
    assert isinstance(reply, dict), reply
    assert reply.get("jsonrpc") == "2.0"
    assert "id" in reply
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        error = reply["error"]
        assert error["code"] in DECLARED_CODES, error
        text = json.dumps(error)
        assert "Traceback" not in text and 'File "' not in text, text


def _decode_out(kind: str, data: bytes) -> list[Any]:
    framer = make_framer(kind)  # type: ignore[arg-type]
    out: list[Any] = []
    for item in [*framer.feed(data), *framer.eof()]:
        assert isinstance(item, bytes), item
        out.append(json.loads(item))
    return out


async def _connection_scenario(kind: str, chunks: list[bytes], pad: bytes) -> list[Any]:
    c2s_send, c2s_recv = anyio.create_memory_object_stream[bytes](math.inf)
    s2c_send, s2c_recv = anyio.create_memory_object_stream[bytes](math.inf)
    conn = Connection(
        _Receiver(c2s_recv),
        _Sender(s2c_send),
        methods=METHODS,
        notifications={"note": Method(lambda _p: None)},
        framing=kind,  # type: ignore[arg-type]
        limits=Limits(max_message_bytes=LIMIT),
        name="fuzz",
    )
    received = bytearray()
    with c2s_send, c2s_recv, s2c_send, s2c_recv, anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.run)
            for chunk in chunks:
                await c2s_send.send(chunk)
            await c2s_send.send(pad + encode_frame(kind, VALID))  # type: ignore[arg-type]
            while b'"id":"sync"' not in received:
                received += await s2c_recv.receive()
            await c2s_send.aclose()
            await conn.closed_event.wait()
        while True:
            try:
                received += s2c_recv.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
    return _decode_out(kind, bytes(received))


@pytest.mark.parametrize("kind", ["content-length", "newline"])
@settings(FUZZ, max_examples=200)
@given(garbage=_garbage, cuts=_chunk_cuts)
def test_fuzz_connection_survives_garbage_and_serves_the_next_request(
    kind: str, garbage: Garbage, cuts: list[int]
) -> None:
    data = garbage.data
    assume(declared_lengths(data) <= 4 * LIMIT)
    replies = anyio.run(_connection_scenario, kind, split_at(data, cuts), _pad(kind, data))
    for reply in replies:
        check_reply(reply)
    syncs = [r for r in replies if isinstance(r, dict) and r.get("id") == "sync"]
    assert syncs == [{"jsonrpc": "2.0", "id": "sync", "result": "pong"}]


@settings(FUZZ, max_examples=200)
@given(
    base=st.integers(0, len(BASE_MESSAGES) - 1),
    ops=_ops,
    seed=st.integers(0, 2**32),
    kind=st.sampled_from(["content-length", "newline"]),
)
def test_fuzz_connection_mutated_messages_framed_correctly(
    base: int, ops: list[int], seed: int, kind: str
) -> None:
    body = mutate(base, ops, seed)
    if kind == "newline":
        body = body.replace(b"\n", b" ")
    frame = encode_frame(kind, body)  # type: ignore[arg-type]
    replies = anyio.run(_connection_scenario, kind, [frame], b"\n" if kind == "newline" else b"")
    for reply in replies:
        check_reply(reply)
    assert {"jsonrpc": "2.0", "id": "sync", "result": "pong"} in replies


@pytest.mark.parametrize("method", ["echo_any", "slow"])
@pytest.mark.parametrize("depth", [900, 960, 970, 975, 980, 990, 1_100, 5_000, 20_000])
async def test_fuzz_connection_deeply_nested_params_answered_without_internals(
    method: str, depth: int
) -> None:
    """Params nested about as deep as the decoder's recursion limit (it is Python's, so
    the exact depth depends on the stack): the result, a declared ``-32602`` when the
    params decoder gives up, or ``-32600`` when even the envelope cannot be decoded --
    under the request's own id either way (it was ``-32700`` with id null, leaving the
    request unanswered), and never a ``-32603`` carrying a traceback (which is what the
    stock Endpoint sent when a ``RecursionError`` escaped the params decoder)."""
    nested = b"[" * depth + b"]" * depth
    body = b'{"jsonrpc":"2.0","id":5,"method":"%s","params":[%s]}' % (method.encode(), nested)
    replies = await _connection_scenario("newline", [body + b"\n"], b"")
    for reply in replies:
        check_reply(reply)
    answers = [r for r in replies if r.get("id") in (5, None)]
    assert len(answers) == 1, replies
    answer = answers[0]
    assert answer["id"] == 5, answer
    assert "result" in answer or answer["error"] in (
        {"code": -32602, "message": "Invalid params", "data": {"path": "params"}},
        {"code": -32600, "message": "nested too deep", "data": {"reason": "invalid_request"}},
    ), answer


def test_fuzz_ledger_deeply_nested_result_fails_the_pending_request() -> None:
    """A result nested too deep for the ledger's decoder still settles the request it
    answers, as an error (case 22: never left hanging)."""
    ledger = Ledger()
    entry: LedgerEntry[Any] = ledger.open("deep", Any)
    nested = b"[" * 100_000 + b"]" * 100_000
    assert ledger.settle_result(entry.id, nested) is entry
    assert entry.state == "error"
    with pytest.raises(RpcError):
        entry.outcome()


# --------------------------------------------------------------------------- real bridge


async def _raw_call(bridge: Any, id: str, method: str, params: Any) -> Any:
    """A request with a string id, answered by a reply found among batch replies too."""
    message = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    await bridge.send_raw(bridge.frame(json.dumps(message).encode()))
    return await bridge.wait_for(lambda m: isinstance(m, dict) and m.get("id") == id)


@pytest.mark.parametrize("kind", ["newline", "content-length"])
async def test_fuzz_real_bridge_process_survives_the_corpus(kind: str) -> None:
    """The same mutations, written to a real ``agent-bridge serve`` over its stdin pipe
    after ``initialize``; every reply is well formed and declared, the bridge still
    serves, and it exits 0 at EOF."""
    rnd = random.Random(20261130)
    async with running_bridge(kind, "--max-message-bytes", str(LIMIT)) as bridge:
        bridge.validator = None  # replies to garbage are checked here, not by the schema
        for round_ in range(40):
            garbage = garbage_stream(kind, rnd, 10)
            if declared_lengths(garbage) > 4 * LIMIT:
                continue
            await bridge.send_raw(garbage + _pad(kind, garbage))
            pong = await _raw_call(bridge, f"ping-{round_}", "bridge/ping", {"data": round_})
            assert pong["result"] == {"data": round_}, pong
        listed = await _raw_call(bridge, "list", "session/list", {})
        assert listed["result"]["sessions"] == []
        await bridge.close_stdin()
        assert await bridge.wait_exit() == 0
    for message in bridge.received:
        if (
            isinstance(message, dict) and "method" in message
        ):  # the bridge's own requests/notifications (none here)
            continue
        check_reply(message)
    assert not re.search(rb"Traceback", bytes(bridge.stderr))


@pytest.mark.parametrize("extra", [0, 1])
def test_case_06_header_block_limit_at_n_and_n_plus_one_whatever_the_chunking(
    extra: int,
) -> None:
    """Found by the chunking property above: the header-block limit used to be enforced
    only while a block was incomplete, so an over-long block was accepted when it arrived
    in one read and rejected when it arrived in several."""
    head = b"Content-Length: 2\r\nX-Pad: "
    block = head + b"a" * (MAX_HEADER_BLOCK_BYTES - len(head) + extra)
    assert len(block) == MAX_HEADER_BLOCK_BYTES + extra
    stream = block + b"\r\n\r\n{}"
    whole = _run_framer("content-length", [stream])
    assert _run_framer("content-length", [stream[i : i + 1] for i in range(len(stream))]) == whole
    assert _run_framer("content-length", [stream[:100], stream[100:]]) == whole
    if extra == 0:
        assert whole == [b"{}"]
    else:
        assert isinstance(whole[0], FramingError) and whole[0].reason == "header_too_large"
        assert b"{}" not in whole
