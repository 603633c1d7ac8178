"""The Content-Length framer never goes deaf, and its buffering is linear (issues 11 and 17).

Property tests splice lies and junk into valid streams at random points and feed them in
random chunkings: every valid frame the damage did not touch is still delivered, in order,
and the damage is reported as a :class:`FramingError` (or, for a length that is too small,
as a body the parser will reject).  The linearity test counts bytes copied by buffer
concatenation rather than timing anything.
"""

from __future__ import annotations

import json

from chunking import split_at
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_bridge.rpc.framing import (
    ContentLengthFramer,
    FramingError,
    NewlineFramer,
    encode_frame,
)

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _body(i: int, pad: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": i, "method": "bridge/ping", "params": {"data": "p" * pad}}
    ).encode()


def _feed(framer: ContentLengthFramer | NewlineFramer, chunks: list[bytes]) -> list[object]:
    out: list[object] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    out.extend(framer.eof())
    return out


_JUNK = st.binary(min_size=1, max_size=80).filter(
    lambda b: (
        b.strip() != b"" and b"\r\n\r\n" not in b and b"ength" not in b.lower() and b"\n" not in b
    )
)


@_SETTINGS
@given(
    pads=st.lists(st.integers(0, 120), min_size=2, max_size=8),
    where=st.integers(0, 100),
    damage=st.sampled_from(["junk", "too_long", "too_short", "over_limit", "huge"]),
    delta=st.integers(1, 90),
    junk=_JUNK,
    cuts=st.lists(st.integers(0, 10**5), max_size=12),
)
def test_content_length_resyncs_after_lies_and_junk_spliced_into_a_valid_stream(
    pads: list[int],
    where: int,
    damage: str,
    delta: int,
    junk: bytes,
    cuts: list[int],
) -> None:
    bodies = [_body(i, pad) for i, pad in enumerate(pads)]
    victim = where % len(bodies)
    frames = [encode_frame("content-length", b) for b in bodies]
    expected = list(bodies)
    if damage == "junk":
        frames[victim] = junk + frames[victim]
    elif damage == "too_long":
        frames[victim] = b"Content-Length: %d\r\n\r\n%s" % (
            len(bodies[victim]) + delta,
            bodies[victim],
        )
        expected.remove(bodies[victim])
    elif damage == "too_short":
        short = max(1, len(bodies[victim]) - delta)
        frames[victim] = b"Content-Length: %d\r\n\r\n%s" % (short, bodies[victim])
        expected.remove(bodies[victim])
    elif damage == "over_limit":  # a declared length over the limit, and no such body
        frames[victim] = b"Content-Length: 99999999999\r\n\r\n" + frames[victim]
    else:  # a body over the limit that does arrive
        frames[victim] = encode_frame("content-length", _body(99, 3000)) + frames[victim]
    # A lie in the last frame is only found out by the bytes that follow it.
    stream = b"".join(frames) + encode_frame("content-length", _body(100, 0))
    expected.append(_body(100, 0))
    for chunks in ([stream], split_at(stream, cuts)):
        out = _feed(ContentLengthFramer(max_message_bytes=2048), chunks)
        delivered = [o for o in out if isinstance(o, bytes) and o in bodies + expected]
        assert delivered == expected
        if damage != "too_short":  # a short length yields a cut body the parser rejects
            assert any(isinstance(o, FramingError) for o in out)


@_SETTINGS
@given(
    pads=st.lists(st.integers(0, 120), min_size=2, max_size=8),
    where=st.integers(0, 100),
    junk=_JUNK,
    long_line=st.booleans(),
    cuts=st.lists(st.integers(0, 10**5), max_size=12),
)
def test_newline_resyncs_after_junk_and_long_lines_spliced_into_a_valid_stream(
    pads: list[int], where: int, junk: bytes, long_line: bool, cuts: list[int]
) -> None:
    bodies = [_body(i, pad) for i, pad in enumerate(pads)]
    victim = where % len(bodies)
    lines = [b + b"\n" for b in bodies]
    lines.insert(victim, (b"x" * 5000 if long_line else junk) + b"\n")
    stream = b"".join(lines)
    for chunks in ([stream], split_at(stream, cuts)):
        out = _feed(NewlineFramer(max_message_bytes=2048), chunks)
        assert [o for o in out if isinstance(o, bytes) and o in bodies] == bodies


class _Counting(bytes):
    """A read whose concatenation onto earlier buffered bytes is counted (``tail + data``
    calls this ``__radd__`` first, because it is a subclass of ``bytes``)."""

    copied = 0

    def __radd__(self, other: bytes) -> bytes:
        _Counting.copied += len(other) + len(self)
        return bytes(other) + bytes(self)


def _copied_feeding(size: int, chunk: int) -> int:
    body = b'"' + b"a" * (size - 2) + b'"'
    stream = encode_frame("content-length", body)
    framer = ContentLengthFramer(max_message_bytes=64 * 1024 * 1024)
    _Counting.copied = 0
    got: list[object] = []
    for i in range(0, len(stream), chunk):
        got.extend(framer.feed(_Counting(stream[i : i + chunk])))
    assert got == [body]
    return _Counting.copied


@settings(max_examples=8, deadline=None)
@given(
    size=st.sampled_from([1 << 18, 1 << 20, 4 << 20, 10 << 20]),
    chunk=st.sampled_from([4096, 65536]),
)
def test_framing_cost_is_linear_in_message_size(size: int, chunk: int) -> None:
    # Before: every read rebuilt the buffer (tail + data), ~size**2 / (2 * chunk) bytes.
    assert _copied_feeding(size, chunk) <= 2 * size + 16 * 1024


@settings(max_examples=60, deadline=None)
@given(
    bodies=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    head=st.sampled_from([b"", b'{"e":']),
    tail=st.sampled_from([b"", b"}"]),
)
def test_frames_encoder_output_equals_one_frame_per_body(
    bodies: list[bytes], head: bytes, tail: bytes
) -> None:
    from agent_bridge.rpc.framing import frames_encoder

    before = list(bodies)
    for kind in ("content-length", "newline"):
        expected = b"".join(encode_frame(kind, head + b + tail) for b in bodies)
        assert frames_encoder(kind)(bodies, head, tail) == expected
        assert bodies == before  # the caller's list is not changed


def test_a_header_ended_by_bare_lf_is_what_protocol_md_says() -> None:
    """docs/protocol.md (Framing): ``Content-Length: N\\n\\n`` is no header end; alone it
    gets nothing (the framer waits), the next frame's header makes it
    ``bad_content_length``, and that next frame is read."""
    body, good = _body(1, 0), _body(2, 0)
    framer = ContentLengthFramer()
    assert list(framer.feed(b"Content-Length: %d\n\n" % len(body) + body)) == []
    out = list(framer.feed(encode_frame("content-length", good)))
    assert [getattr(x, "reason", x) for x in out] == ["bad_content_length", good]
