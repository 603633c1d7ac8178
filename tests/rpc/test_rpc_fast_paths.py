"""The fast paths of the request path agree with the slow ones (issue 17).

Three fast paths are checked against the code they stand in for, on random and damaged
input in random chunkings:

* ``ContentLengthFramer._split_frames`` (a run of frames taken with one ``re.split``)
  against the framer's own loop (a framer whose split takes nothing);
* ``NewlineFramer.feed`` (lines split in C) against the per-line loop it replaced;
* ``FastPath.serve``'s inline answers against ``_dispatch_frame`` for every frame (a
  connection without inline entries), byte for byte, errors, notifications a handler
  sends and the order of everything included.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest
from chunking import split_at
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_bridge.rpc.connection import Connection, Method
from agent_bridge.rpc.errors import RpcError
from agent_bridge.rpc.framing import (
    ContentLengthFramer,
    FramingError,
    FramingKind,
    NewlineFramer,
    encode_frame,
    make_framer,
)

_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _seen(items: list[bytes | FramingError]) -> list[object]:
    """Items as comparable values (a ``FramingError``'s ``body`` is not compared by ``==``)."""
    return [
        (item.reason, item.detail, item.body) if isinstance(item, FramingError) else item
        for item in items
    ]


# --------------------------------------------------------------------------- Content-Length


class _LoopOnly(ContentLengthFramer):
    """The framer without its split: every frame goes through the loop."""

    def _split_frames(self, buf: bytes, out: list[bytes | FramingError]) -> int:
        return 0


_BODIES = st.one_of(
    st.integers(0, 2**40).map(lambda i: b'{"jsonrpc":"2.0","id":%d,"method":"m"}' % i),
    st.text(max_size=30).map(lambda t: json.dumps({"data": t}).encode()),
    st.sampled_from(
        [
            b"[1,2]",
            b"{}",
            b"",
            b"xyz",
            b'{"a":1}Content-Len',
            b'{"a":"\r\n\r\n"}',
            b'{"a":1}Content-Length: 3\r\n\r\n{}',
            b'{"a":1} ',
            b"{" + b"x" * 70 + b"}",
        ]
    ),
    st.binary(max_size=20),
)


@st.composite
def _cl_piece(draw: st.DrawFn) -> bytes:
    body = draw(_BODIES)
    kind = draw(st.integers(0, 9))
    if kind <= 4:
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    if kind == 5:  # a lying length
        lie = max(0, len(body) + draw(st.integers(-5, 5)))
        return b"Content-Length: %d\r\n\r\n%s" % (lie, body)
    if kind == 6:  # other headers, other spellings
        header = draw(
            st.sampled_from(
                [
                    b"Content-Type: x\r\nContent-Length: %d",
                    b"content-length: %d",
                    b"Content-Length:%d",
                    b"Content-Length: %d \r\nX: y",
                ]
            )
        )
        return header % len(body) + b"\r\n\r\n" + body
    if kind == 7:  # junk
        return draw(st.sampled_from([b"junk", b"\r\n\r\n", b"Content-Length: x\r\n\r\n", b" "]))
    if kind == 8:  # over the limit (the framer below allows 64 bytes)
        return b"Content-Length: 99\r\n\r\n" + b"{" + b"y" * 97 + b"}"
    return b"Content-Length: 0000000000001\r\n\r\n}"  # too many digits


def _fed_alike(
    fast: ContentLengthFramer | NewlineFramer,
    slow: ContentLengthFramer | NewlineFramer,
    data: bytes,
    cuts: list[int],
) -> tuple[list[object], list[object]]:
    """Feed ``data``, cut at ``cuts``, then EOF to both framers; return what each gave."""
    got: list[object] = []
    want: list[object] = []
    for chunk in split_at(data, cuts):
        got += _seen(fast.feed(chunk))
        want += _seen(slow.feed(chunk))
    return got + _seen(fast.eof()), want + _seen(slow.eof())


@_SETTINGS
@given(pieces=st.lists(_cl_piece(), max_size=12), cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_content_length_split_agrees_with_the_loop(pieces: list[bytes], cuts: list[int]) -> None:
    data = b"".join(pieces)
    fast, slow = ContentLengthFramer(64), _LoopOnly(64)
    got, want = _fed_alike(fast, slow, data, cuts)
    assert got == want


_ODD_BODIES = [
    b'{"a":1}Content-Len',
    b'{"a":"\r\n\r\n"}',
    b'{"a":1}Content-Length: 3\r\n\r\n{}',
    b'{"a":1} ',
    b"xyz",
    b"",
    b"{" + b"x" * 70 + b"}",
]


@pytest.mark.parametrize("odd", _ODD_BODIES)
@pytest.mark.parametrize("where", [0, 1, 3])
def test_content_length_split_agrees_on_odd_bodies(odd: bytes, where: int) -> None:
    bodies = [b'{"id":%d}' % i for i in range(4)]
    bodies.insert(where, odd)
    data = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)
    assert _seen(ContentLengthFramer(64).feed(data)) == _seen(_LoopOnly(64).feed(data))


@pytest.mark.parametrize("where", [0, 1, 3])
def test_content_length_split_agrees_on_a_length_with_leading_zeros(where: int) -> None:
    # The split decodes the lengths as one JSON array; ``007`` is not JSON: the loop
    # takes the run, and the outcome is the loop's.
    bodies = [b'{"id":%d}' % i for i in range(4)]
    headers = [b"Content-Length: %d\r\n\r\n" % len(b) for b in bodies]
    headers[where] = b"Content-Length: 00%d\r\n\r\n" % len(bodies[where])
    data = b"".join(h + b for h, b in zip(headers, bodies, strict=True))
    assert ContentLengthFramer(64).feed(data) == bodies
    assert _seen(ContentLengthFramer(64).feed(data)) == _seen(_LoopOnly(64).feed(data))


def test_content_length_split_takes_a_run_of_frames() -> None:
    bodies = [b'{"id":%d}' % i for i in range(50)]
    data = b"".join(encode_frame("content-length", b) for b in bodies)
    framer = ContentLengthFramer()
    out: list[bytes | FramingError] = []
    pos = framer._split_frames(data, out)
    assert out == bodies[:-1]
    assert data[pos:] == encode_frame("content-length", bodies[-1])
    assert framer.feed(data) == bodies


# --------------------------------------------------------------------------- newline


class _PerLine(NewlineFramer):
    """The per-line loop ``NewlineFramer.feed`` had before lines were split in C."""

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        out: list[bytes | FramingError] = []
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                return out
            data = data[nl + 1 :]
            self._discarding = False
        buf = self._buf
        start = 0
        if buf:
            nl = data.find(b"\n")
            if nl < 0:
                buf += data
                self._check_overflow(out)
                return out
            buf += data[:nl]
            self._emit(bytes(buf), out)
            buf.clear()
            start = nl + 1
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self._emit(data[start:nl], out)
            start = nl + 1
        if start < len(data):
            buf += data[start:]
            self._check_overflow(out)
        return out


_LINES = st.one_of(
    st.integers(0, 10**6).map(lambda i: b'{"id":%d}' % i),
    st.sampled_from([b"", b" ", b"\t \r", b"\r", b"{}\r", b'{"a":"x"}\r\r', b"x" * 40, b"\x0b"]),
    st.binary(max_size=12).filter(lambda b: b"\n" not in b),
)


@_SETTINGS
@given(
    lines=st.lists(_LINES, max_size=15),
    last=st.booleans(),
    cuts=st.lists(st.integers(0, 10**6), max_size=6),
)
def test_newline_split_agrees_with_the_per_line_loop(
    lines: list[bytes], last: bool, cuts: list[int]
) -> None:
    data = b"\n".join(lines) + (b"\n" if last else b"")
    fast, slow = NewlineFramer(32), _PerLine(32)
    got, want = _fed_alike(fast, slow, data, cuts)
    assert got == want


# --------------------------------------------------------------------------- connection


class _Ping(msgspec.Struct):
    data: Any = None


class _Needs(msgspec.Struct):
    n: int


class _Pair(msgspec.Struct, array_like=True):
    a: int = 0
    b: int = 0


class _Sink:
    """A sender nothing is written to: the test reads the connection's output queue."""

    async def send(self, item: bytes) -> None:
        raise AssertionError("never run")


class _Source:
    async def receive(self, max_bytes: int = 65536) -> bytes:
        raise AssertionError("never run")


def _connection(framing: FramingKind, jsonrpc: bool, *, inline: bool) -> Connection:
    conn: Connection

    def noisy(params: _Ping) -> Any:
        conn.notify("note", {"before": params.data})
        return {"data": params.data}

    def events(params: _Ping) -> Any:
        conn.notify_encoded([b'{"e":1}'], b'{"method":"event","params":', b"}")
        return None

    def fail(_params: Any) -> Any:
        raise RpcError(-32000, "nope", {"x": 1})

    def bug(_params: Any) -> Any:
        raise ValueError("a bug")

    def stop(_params: Any) -> None:
        conn.finish()

    methods = {
        "ping": Method(lambda p: {"data": p.data}, _Ping),
        "needs": Method(lambda p: p.n, _Needs),
        "pair": Method(lambda p: [p.a, p.b], _Pair),
        "none": Method(lambda p: 1),
        "any": Method(lambda p: p, Any),
        "fail": Method(fail, _Ping),
        "bug": Method(bug, _Ping),
        "noisy": Method(noisy, _Ping),
        "events": Method(events, _Ping),
        "rpc.ping": Method(lambda p: 2, _Ping),
    }
    conn = Connection(
        _Source(),
        _Sink(),
        methods=methods,
        notifications={"stop": Method(stop)},
        framing=framing,
        jsonrpc=jsonrpc,
    )
    if not inline:
        conn.fast.entries = {}
    return conn


_IDS = st.sampled_from(
    [
        b"1",
        b"0",
        b"-0",
        b"-7",
        b"2",
        b"1180591620717411303424",
        b'"a"',
        b'"\\u0041"',
        b'""',
        b"1.5",
        b"1e3",
        b"null",
        b"true",
        b"{}",
        b"[1]",
    ]
)
_METHODS = st.sampled_from(
    [
        b'"ping"',
        b'"needs"',
        b'"pair"',
        b'"none"',
        b'"any"',
        b'"fail"',
        b'"bug"',
        b'"noisy"',
        b'"events"',
        b'"rpc.ping"',
        b'"nope"',
        b'"stop"',
        b"5",
        b"null",
    ]
)
_PARAMS = st.sampled_from(
    [
        b"{}",
        b'{"data":"x"}',
        b'{"data":[1,{"a":null}]}',
        b'{"n":3}',
        b'{"n":"x"}',
        b"[]",
        b"[1,2]",
        b"[1,2,3]",
        b"null",
        b"5",
        b'"s"',
        b"true",
        b"{",
        b'{"data":1,"data":2}',
    ]
)
_JSONRPC = st.sampled_from([b'"2.0"', b'"1.0"', b"2.0", b"null", None])


@st.composite
def _message(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 15)) == 0:
        return draw(st.sampled_from([b"{", b"[]", b"[1]", b"7", b"nul", b'"x"', b" {}", b"\t"]))
    members = []
    jsonrpc = draw(_JSONRPC)
    if jsonrpc is not None:
        members.append(b'"jsonrpc":' + jsonrpc)
    if draw(st.integers(0, 5)):
        members.append(b'"id":' + draw(_IDS))
    if draw(st.integers(0, 7)):
        members.append(b'"method":' + draw(_METHODS))
    if draw(st.integers(0, 3)):
        members.append(b'"params":' + draw(_PARAMS))
    if not draw(st.integers(0, 9)):
        members.append(draw(st.sampled_from([b'"result":1', b'"error":{"code":1}', b'"x":[]'])))
    members = draw(st.permutations(members))
    space = draw(st.sampled_from([b"", b" "]))
    return space + b"{" + b",".join(members) + b"}"


@st.composite
def _frame_body(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 8)) == 0:
        return b"[" + b",".join(draw(st.lists(_message(), min_size=1, max_size=4))) + b"]"
    return draw(_message())


def _output(conn: Connection) -> list[bytes]:
    """The bodies ``conn`` queued, unframed by a fresh framer (so every length is checked),
    correlation ids (a process-wide counter) blanked."""
    if conn.outbox.raw:
        conn.outbox.frame_raw()
    data = b"".join(conn.outbox.out)
    framer = make_framer(conn._out_kind or "content-length")
    items = [*framer.feed(data), *framer.eof()]
    assert all(type(item) is bytes for item in items), items
    return [re.sub(rb"err-\d+", b"err-N", item) for item in items]  # type: ignore[arg-type]


@pytest.mark.parametrize("framing", ["content-length", "newline"])
@pytest.mark.parametrize("jsonrpc", [True, False])
@_SETTINGS
@given(
    bodies=st.lists(_frame_body(), max_size=12),
    cuts=st.lists(st.integers(0, 10**6), max_size=4),
)
def test_inline_answers_agree_with_the_slow_path(
    framing: FramingKind,
    jsonrpc: bool,
    bodies: list[bytes],
    cuts: list[int],
) -> None:
    data = b"".join(encode_frame(framing, b) for b in bodies if b"\n" not in b)
    fast = _connection(framing, jsonrpc, inline=True)
    slow = _connection(framing, jsonrpc, inline=False)
    for chunk in split_at(data, cuts):
        fast.feed(chunk)
        slow.feed(chunk)
    assert _output(fast) == _output(slow)


def test_inline_answers_keep_the_order_of_what_handlers_send() -> None:
    conn = _connection("newline", True, inline=True)
    conn.feed(
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"data":1}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"noisy","params":{"data":2}}\n'
        b'{"jsonrpc":"2.0","id":3,"method":"events"}\n'
        b'{"jsonrpc":"2.0","id":4,"method":"ping"}\n'
    )
    lines = [json.loads(body) for body in _output(conn)]
    assert [m.get("id", m.get("method")) for m in lines] == [1, "note", 2, "event", 3, 4]
