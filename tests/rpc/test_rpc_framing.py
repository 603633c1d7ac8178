"""Tests for rpc.framing (bad-input-and-faults cases 1-10 and AutoFramer detection).

The framers are sans-I/O, so every test feeds plain bytes and inspects the returned
frames and ``FramingError`` values.  Limits are tested at N and N+1 bytes.
"""

# mypy: no-strict-equality
# (a state read again after a call that changes it is not narrowed to its first value)

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from chunking import split_at
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_bridge.rpc.framing import (
    AutoFramer,
    ContentLengthFramer,
    FramingError,
    NewlineFramer,
    _damage_patterns,
    encode_frame,
    make_framer,
)

Frames = list[bytes | FramingError]


def _cl(body: bytes) -> bytes:
    return encode_frame("content-length", body)


def _feed_all(framer: object, chunks: list[bytes]) -> Frames:
    out: Frames = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))  # type: ignore[attr-defined]
    out.extend(framer.eof())  # type: ignore[attr-defined]
    return out


def _bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


@contextmanager
def _traced() -> Iterator[Callable[[], int]]:
    """Trace allocations made inside the block; yields a function returning the peak."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result: list[int] = []
    try:
        yield lambda: result[0]
    finally:
        result.append(tracemalloc.get_traced_memory()[1] - base)
        tracemalloc.stop()


def _errors(frames: Frames) -> list[str]:
    return [f.reason for f in frames if isinstance(f, FramingError)]


def _bodies(frames: Frames) -> list[bytes]:
    return [f for f in frames if isinstance(f, bytes)]


VALID = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
VALID_FRAME = _cl(VALID)

# --------------------------------------------------------------------------- case 1

_TEXT = st.lists(
    st.one_of(
        st.text(max_size=6),
        st.sampled_from(["日本語", "中文", "한국어", "🎉", "👩‍💻", "🇯🇵", "\u2028", "\r\n", "\n"]),
    ),
    max_size=8,
).map("".join)
_MESSAGE = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.integers(0, 2**70), "method": _TEXT},
    optional={"params": st.dictionaries(_TEXT, _TEXT, max_size=3)},
)
_BODIES = st.lists(
    _MESSAGE.map(lambda m: json.dumps(m, ensure_ascii=False).encode()), min_size=1, max_size=12
)


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    ("framer_kind", "wire_kind"),
    [
        ("content-length", "content-length"),
        ("newline", "newline"),
        ("auto", "content-length"),
        ("auto", "newline"),
    ],
)
@_SETTINGS
@given(bodies=_BODIES, cuts=st.lists(st.integers(0, 10**6), max_size=30))
def test_case_01_stream_fed_whole_bytewise_or_chunked_yields_same_bodies_in_order(
    framer_kind: str, wire_kind: str, bodies: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(wire_kind, b) for b in bodies)  # type: ignore[arg-type]
    for chunks in ([stream], _bytewise(stream), split_at(stream, cuts)):
        framer = make_framer(framer_kind)  # type: ignore[arg-type]
        assert _feed_all(framer, chunks) == bodies
        assert framer.kind == wire_kind


@_SETTINGS
@given(
    bodies=st.lists(
        st.one_of(
            st.binary(max_size=60),
            st.sampled_from([b"\r\n\r\n", b"Content-Length: x\r\n\r\n", b"content-length:"]),
        ),
        min_size=1,
        max_size=10,
    ).filter(lambda bodies: not any(_damage_patterns()[1].search(b) for b in bodies)),
    cuts=st.lists(st.integers(0, 10**6), max_size=30),
)
def test_case_01_content_length_carries_arbitrary_bytes_including_header_lookalikes(
    bodies: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(_cl(b) for b in bodies)
    for chunks in ([stream], _bytewise(stream), split_at(stream, cuts)):
        assert _feed_all(ContentLengthFramer(), chunks) == bodies


# --------------------------------------------------------------------------- case 2


def test_case_02_header_and_body_split_across_reads() -> None:
    framer = ContentLengthFramer()
    frame = VALID_FRAME
    split_header = frame.index(b"\r\n") + 1  # inside the CRLFCRLF terminator
    assert framer.feed(frame[:5]) == []
    assert framer.feed(frame[5:split_header]) == []
    assert framer.feed(frame[split_header : split_header + 3]) == []
    body_start = frame.index(b"\r\n\r\n") + 4
    assert framer.feed(frame[split_header + 3 : body_start + 4]) == []
    assert framer.feed(frame[body_start + 4 :]) == [VALID]


def test_case_02_two_messages_in_one_read() -> None:
    other = '{"jsonrpc":"2.0","method":"note","params":{"t":"é"}}'.encode()
    framer = ContentLengthFramer()
    assert framer.feed(VALID_FRAME + _cl(other)) == [VALID, other]
    assert framer.eof() == []


def test_case_02_newline_two_messages_in_one_read_and_split_line() -> None:
    framer = NewlineFramer()
    assert framer.feed(b'{"a":1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert framer.feed(b":3}\n") == [b'{"c":3}']


# --------------------------------------------------------------------------- case 3


def test_case_03_header_block_without_content_length_reported_and_next_message_delivered() -> None:
    orphan = b"Content-Type: application/json\r\n\r\n" + b'{"orphan":true}'
    frames = _feed_all(ContentLengthFramer(), [orphan + VALID_FRAME])
    assert frames == [
        FramingError("missing_content_length", "header block without Content-Length"),
        VALID,
    ]


def test_case_03_missing_content_length_fed_bytewise_still_recovers() -> None:
    orphan = b"X-Other: 1\r\n\r\n" + b'{"orphan":true}'
    frames = _feed_all(ContentLengthFramer(), _bytewise(orphan + VALID_FRAME))
    assert _errors(frames) == ["missing_content_length"]
    assert _bodies(frames) == [VALID]


def test_case_03_header_line_without_colon_reported_and_next_message_delivered() -> None:
    frames = _feed_all(ContentLengthFramer(), [b"garbage line\r\n\r\n" + VALID_FRAME])
    assert _errors(frames) == ["bad_header"]
    assert _bodies(frames) == [VALID]


def test_case_03_header_block_too_large_reported_with_bounded_memory() -> None:
    framer = ContentLengthFramer()
    junk = b"X" * 4096
    out: Frames = []
    with _traced() as peak:
        for _ in range(500):  # 2 MB of header bytes with no terminator
            out.extend(framer.feed(junk))
    assert peak() < 256 * 1024, "header bytes are being accumulated"
    out.extend(framer.feed(VALID_FRAME))
    out.extend(framer.eof())
    assert _errors(out) == ["header_too_large"]
    assert _bodies(out) == [VALID]


# --------------------------------------------------------------------------- case 4


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: abc",
        b"Content-Length: -1",
        b"Content-Length: +5",
        b"Content-Length: 0x10",
        b"Content-Length: 1.5",
        b"Content-Length: ",
        b"Content-Length: 5\r\nContent-Length: 6",
        b"Content-Type: x\r\ncontent-length: 0x10",
    ],
)
def test_case_04_bad_content_length_values_rejected(header: bytes) -> None:
    frames = _feed_all(ContentLengthFramer(), [header + b"\r\n\r\n" + b"{}" + VALID_FRAME])
    assert _errors(frames) == ["bad_content_length"]
    assert _bodies(frames) == [VALID]


def test_case_04_same_content_length_value_twice_accepted() -> None:
    frames = _feed_all(ContentLengthFramer(), [b"Content-Length: 2\r\ncontent-length: 2\r\n\r\n{}"])
    assert frames == [b"{}"]


# --------------------------------------------------------------------------- case 5


def test_case_05_content_length_with_5000_digits_rejected_before_int() -> None:
    # int() of more than 4300 digits raises ValueError on Python 3.11: a framer that
    # converted first would raise here instead of returning a FramingError.
    header = b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n"
    frames = _feed_all(ContentLengthFramer(), [header + VALID_FRAME])
    assert _errors(frames) == ["bad_content_length"]
    assert _bodies(frames) == [VALID]


def test_case_05_content_length_with_5000_digits_in_slow_header_path_rejected() -> None:
    header = b"Content-Type: x\r\nContent-Length: " + b"1" * 5000 + b"\r\n\r\n"
    frames = _feed_all(ContentLengthFramer(), _bytewise(header + VALID_FRAME))
    assert _errors(frames) == ["bad_content_length"]
    assert _bodies(frames) == [VALID]


# --------------------------------------------------------------------------- case 6


def test_case_06_body_at_limit_accepted() -> None:
    body = b'"' + b"a" * 98 + b'"'
    assert len(body) == 100
    assert _feed_all(ContentLengthFramer(max_message_bytes=100), [_cl(body)]) == [body]


def test_case_06_body_one_over_limit_rejected_and_next_delivered() -> None:
    body = b'"' + b"a" * 99 + b'"'
    frames = _feed_all(ContentLengthFramer(max_message_bytes=100), [_cl(body) + VALID_FRAME])
    assert _errors(frames) == ["too_large"]
    assert _bodies(frames) == [VALID]


def test_case_06_oversized_body_streamed_in_chunks_is_never_buffered() -> None:
    limit = 1000
    declared = 8 * 1024 * 1024
    framer = ContentLengthFramer(max_message_bytes=limit)
    out = framer.feed(b"Content-Length: %d\r\n\r\n" % declared)
    assert _errors(out) == ["too_large"]
    chunk = b"x" * 65536
    with _traced() as peak:
        for _ in range(declared // len(chunk)):
            out += framer.feed(chunk)
    # A framer that allocated or accumulated the body would peak at megabytes.
    assert peak() < 256 * 1024, "oversized body bytes are being buffered"
    out += framer.feed(VALID_FRAME)
    out += framer.eof()
    assert _errors(out) == ["too_large"]
    assert _bodies(out) == [VALID]


def test_case_06_oversized_body_with_next_message_in_same_chunk() -> None:
    framer = ContentLengthFramer(max_message_bytes=50)
    body = b"y" * 51
    frames = framer.feed(b"Content-Length: 51\r\n\r\n" + body[:4])
    frames += framer.feed(body[4:] + VALID_FRAME)
    frames += framer.eof()
    assert _errors(frames) == ["too_large"]
    assert _bodies(frames) == [VALID]


# --------------------------------------------------------------------------- case 7


def test_case_07_lowercase_content_length_accepted() -> None:
    frames = _feed_all(
        ContentLengthFramer(), [b"content-length: %d\r\n\r\n%s" % (len(VALID), VALID)]
    )
    assert frames == [VALID]


def test_case_07_extra_content_type_header_accepted_before_and_after() -> None:
    ctype = b"Content-Type: application/vscode-jsonrpc; charset=utf-8"
    before = b"%s\r\nContent-Length: %d\r\n\r\n%s" % (ctype, len(VALID), VALID)
    after = b"CONTENT-LENGTH:%d\r\n%s\r\n\r\n%s" % (len(VALID), ctype, VALID)
    assert _feed_all(ContentLengthFramer(), [before + after]) == [VALID, VALID]


# --------------------------------------------------------------------------- case 8


def test_case_08_truncated_body_then_eof_delivers_nothing_and_reports_truncated() -> None:
    framer = ContentLengthFramer()
    assert framer.feed(VALID_FRAME[:-5]) == []
    assert framer.eof() == [FramingError("truncated", "stream ended inside a message")]


def test_case_08_truncated_header_then_eof_reports_truncated() -> None:
    framer = ContentLengthFramer()
    assert framer.feed(b"Content-Length: 12\r\n") == []
    assert _errors(framer.eof()) == ["truncated"]


def test_case_08_truncated_oversized_body_then_eof_reports_truncated() -> None:
    framer = ContentLengthFramer(max_message_bytes=4)
    assert _errors(framer.feed(b"Content-Length: 100\r\n\r\nabc")) == ["too_large"]
    assert _errors(framer.eof()) == ["truncated"]


def test_case_08_clean_eof_reports_nothing() -> None:
    framer = ContentLengthFramer()
    assert framer.feed(VALID_FRAME) == [VALID]
    assert framer.eof() == []


# --------------------------------------------------------------------------- case 9

CJK = "日本語のテキスト🎉👩‍💻"


def test_case_09_content_length_counts_utf8_bytes() -> None:
    body = json.dumps({"text": CJK}, ensure_ascii=False).encode()
    assert len(body) != len(body.decode())
    frame = _cl(body)
    assert frame.startswith(b"Content-Length: %d\r\n\r\n" % len(body))
    assert _feed_all(ContentLengthFramer(), _bytewise(frame + frame)) == [body, body]


def test_case_09_character_count_header_is_not_accepted_as_byte_count() -> None:
    body = json.dumps({"text": CJK}, ensure_ascii=False).encode()
    wrong = b"Content-Length: %d\r\n\r\n%s" % (len(body.decode()), body)
    frames = ContentLengthFramer().feed(wrong)
    assert frames == [body[: len(body.decode())]]


def test_case_09_limit_counts_utf8_bytes_not_characters() -> None:
    body = ("語" * 40).encode()  # 40 characters, 120 bytes
    assert _errors(_feed_all(ContentLengthFramer(max_message_bytes=100), [_cl(body)])) == [
        "too_large"
    ]
    assert _errors(_feed_all(NewlineFramer(max_message_bytes=100), [body + b"\n"])) == ["too_large"]
    assert _feed_all(NewlineFramer(max_message_bytes=120), [body + b"\n"]) == [body]


# --------------------------------------------------------------------------- case 10


def test_case_10_newline_blank_lines_skipped() -> None:
    frames = _feed_all(NewlineFramer(), [b"\n\n  \n\r\n\t\n" + VALID + b"\n\n"])
    assert frames == [VALID]


def test_case_10_newline_crlf_accepted() -> None:
    frames = _feed_all(NewlineFramer(), _bytewise(VALID + b"\r\n" + VALID + b"\r\n"))
    assert frames == [VALID, VALID]


def test_case_10_newline_final_line_without_newline_delivered_at_eof() -> None:
    framer = NewlineFramer()
    assert framer.feed(VALID + b"\n" + VALID) == [VALID]
    assert framer.eof() == [VALID]


def test_case_10_newline_line_at_limit_accepted() -> None:
    line = b"a" * 50
    assert _feed_all(NewlineFramer(max_message_bytes=50), [line + b"\n"]) == [line]
    assert _feed_all(NewlineFramer(max_message_bytes=50), _bytewise(line + b"\n")) == [line]
    assert _feed_all(NewlineFramer(max_message_bytes=50), [line]) == [line]


def test_case_10_newline_line_over_limit_one_error_and_stream_continues() -> None:
    line = b"a" * 51
    for chunks in ([line + b"\n" + VALID + b"\n"], _bytewise(line + b"\n" + VALID + b"\n")):
        frames = _feed_all(NewlineFramer(max_message_bytes=50), chunks)
        assert frames == [FramingError("too_large", "line exceeds the limit of 50 bytes"), VALID]


def test_case_10_newline_over_limit_line_streamed_is_not_buffered() -> None:
    framer = NewlineFramer(max_message_bytes=1000)
    chunk = b"z" * 65536
    out: Frames = []
    with _traced() as peak:
        for _ in range(128):  # an 8 MiB line
            out += framer.feed(chunk)
    assert peak() < 256 * 1024, "over-limit line bytes are being buffered"
    out += framer.feed(b"zz\n" + VALID + b"\n")
    out += framer.eof()
    assert _errors(out) == ["too_large"]
    assert _bodies(out) == [VALID]


def test_case_10_newline_over_limit_final_line_without_newline_not_delivered() -> None:
    framer = NewlineFramer(max_message_bytes=10)
    out = framer.feed(b"x" * 11)
    out += framer.eof()
    assert _errors(out) == ["too_large"]
    assert _bodies(out) == []


# --------------------------------------------------------------------------- AutoFramer


@pytest.mark.parametrize("first", [b"{", b"[", b"  \r\n{", b"\n["])
def test_auto_framer_detects_newline_from_json_start(first: bytes) -> None:
    framer = AutoFramer()
    assert framer.kind == "auto"
    rest = b'"a":1}\n' if first.endswith(b"{") else b"1]\n"
    frames = framer.feed(first + rest)
    assert framer.kind == "newline"
    assert frames == [first.lstrip() + rest.rstrip(b"\n")]


def test_auto_framer_detects_content_length_from_header() -> None:
    framer = AutoFramer()
    assert framer.feed(b"\r\n" + VALID_FRAME) == [VALID]
    assert framer.kind == "content-length"


def test_auto_framer_whitespace_only_input_defers_detection() -> None:
    framer = AutoFramer()
    assert framer.feed(b"\n \r\n") == []
    assert framer.kind == "auto"
    assert framer.feed(b"content-length: 2\r\n\r\n{}") == [b"{}"]
    assert framer.kind == "content-length"
    assert framer.eof() == []


def test_auto_framer_bytewise_detection_for_both_framings() -> None:
    for stream, kind in ((VALID_FRAME * 2, "content-length"), ((VALID + b"\n") * 2, "newline")):
        framer = AutoFramer()
        assert _feed_all(framer, _bytewise(stream)) == [VALID, VALID]
        assert framer.kind == kind


def test_auto_framer_eof_before_any_input_is_clean() -> None:
    assert AutoFramer().eof() == []


def test_auto_framer_applies_limit_to_detected_framing() -> None:
    framer = AutoFramer(max_message_bytes=5)
    assert _errors(framer.feed(b'{"abcdef":1}\n')) == ["too_large"]
    framer = AutoFramer(max_message_bytes=5)
    assert _errors(framer.feed(_cl(b'{"abcdef":1}'))) == ["too_large"]


# --------------------------------------------------------------------------- encode_frame


def test_encode_frame_content_length_exact_bytes() -> None:
    body = '{"t":"é"}'.encode()
    assert encode_frame("content-length", body) == b'Content-Length: 10\r\n\r\n{"t":"\xc3\xa9"}'


def test_encode_frame_auto_writes_content_length() -> None:
    assert encode_frame("auto", b"{}") == b"Content-Length: 2\r\n\r\n{}"


def test_encode_frame_newline_appends_newline() -> None:
    assert encode_frame("newline", b"{}") == b"{}\n"


@pytest.mark.parametrize("kind", ["content-length", "newline"])
def test_encode_frame_round_trips_through_matching_framer(kind: str) -> None:
    body = json.dumps({"text": CJK, "n": 2**70}, ensure_ascii=False).encode()
    framer = make_framer(kind)  # type: ignore[arg-type]
    assert framer.feed(encode_frame(kind, body)) == [body]  # type: ignore[arg-type]
    assert framer.eof() == []


def test_make_framer_unknown_kind_raises() -> None:
    with pytest.raises(ValueError, match="unknown framing"):
        make_framer("xml")  # type: ignore[arg-type]


def test_framing_error_detail_never_contains_body_bytes() -> None:
    secret = b"sk-" + b"S" * 40
    frames = _feed_all(ContentLengthFramer(max_message_bytes=8), [_cl(secret)])
    frames += _feed_all(NewlineFramer(max_message_bytes=8), [secret + b"\n"])
    frames += _feed_all(ContentLengthFramer(), [b"Content-Length: " + secret + b"\r\n\r\n"])
    assert len(_errors(frames)) == 3
    assert all("sk-" not in f.detail for f in frames if isinstance(f, FramingError))
