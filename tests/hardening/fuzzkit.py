"""Structure-aware input mutation shared by the fuzz tests and the soak script.

Valid JSON-RPC messages are mutated the ways peers actually break them: a field dropped,
duplicated or of the wrong type, the body truncated or spliced with another, numbers too
big for any integer type, nesting thousands deep, invalid UTF-8, non-JSON tokens, batches
of any of those -- and then framed correctly, framed wrongly, or not framed at all.

Every mutator is a plain function of a :class:`random.Random`, so the same corpus can be
driven by hypothesis (which draws the seed and the choice of mutators, and shrinks them)
or by a fixed seed against a real bridge process.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "BASE_MESSAGES",
    "FRAME_MUTATORS",
    "MUTATORS",
    "declared_lengths",
    "garbage_stream",
    "mutate",
]

BASE_MESSAGES: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": "s-1", "method": "echo", "params": {"text": "héllo 日本 🎉"}},
    {"jsonrpc": "2.0", "id": 7, "method": "slow", "params": {"n": 1}},
    {"jsonrpc": "2.0", "id": 0, "method": "echo", "params": [1, 2, 3]},
    {"jsonrpc": "2.0", "id": 3, "method": "echo_any", "params": {"v": [1, {"w": None}]}},
    {"jsonrpc": "2.0", "method": "note", "params": {"x": 1}},
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}},
    {"jsonrpc": "2.0", "id": 99, "result": {"ok": True}},
    {"jsonrpc": "2.0", "id": 98, "error": {"code": -32000, "message": "x"}},
    {"jsonrpc": "2.0", "id": 2**70, "method": "unknown/method", "params": {}},
]

_ODD_VALUES: list[str] = [
    "null",
    "true",
    "false",
    "1.5",
    "-1",
    "0",
    '""',
    '"x"',
    "[]",
    "{}",
    "[1,2]",
    '{"a":1}',
    "1" + "0" * 400,
    "-" + "9" * 400,
    "1e999",
    "-0",
    "1E+2",
    '"\\ud800"',
    '"\\u0000"',
    "NaN",
    "Infinity",
    "-Infinity",
    '"' + "a" * 5000 + '"',
]


def _dump(obj: Any) -> bytes:
    # surrogatepass: a lone surrogate decoded from "\\ud800" is written back as the
    # (invalid) UTF-8 bytes it stands for -- more garbage, which is the point.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def _keys(body: bytes) -> list[str]:
    return re.findall(r'"([A-Za-z$/_]+)":', body.decode("utf-8", "replace"))


# --------------------------------------------------------------------------- body mutators


def drop_field(body: bytes, rnd: random.Random) -> bytes:
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return body
    if isinstance(obj, dict) and obj:
        del obj[rnd.choice(sorted(obj))]
        return _dump(obj)
    return body


def duplicate_field(body: bytes, rnd: random.Random) -> bytes:
    keys = _keys(body) or ["id"]
    if not body.endswith(b"}"):
        return body
    extra = b',"%s":%s' % (rnd.choice(keys).encode(), rnd.choice(_ODD_VALUES).encode())
    return body[:-1] + extra + b"}"


def retype_field(body: bytes, rnd: random.Random) -> bytes:
    keys = _keys(body)
    if not keys:
        return body
    key = rnd.choice(keys).encode()
    value = rnd.choice(_ODD_VALUES).encode()
    # Replace the first value of that key, whatever it was, by textual surgery (so
    # non-JSON tokens such as NaN and 400-digit numbers survive).
    pattern = re.compile(rb'"' + re.escape(key) + rb'":("(?:[^"\\]|\\.)*"|[^,}\]]*)')
    return pattern.sub(lambda m: b'"' + key + b'":' + value, body, count=1)


def huge_number(body: bytes, rnd: random.Random) -> bytes:
    big = rnd.choice([b"1" + b"0" * 500, b"-1" + b"0" * 40, b"1e400", b"18446744073709551616"])
    return re.sub(rb"(?<=:)-?\d+", lambda m: big, body, count=1)


def deep_nesting(body: bytes, rnd: random.Random) -> bytes:
    depth = rnd.choice([64, 900, 1_100, 5_000, 50_000])
    opener, closer = rnd.choice([(b"[", b"]"), (b'{"a":', b"}")])
    nested = opener * depth + b"1" + closer * depth
    if rnd.random() < 0.3:
        return nested  # the whole message
    if body.endswith(b"}"):
        return body[:-1] + b',"params":' + nested + b"}"
    return nested


def truncate(body: bytes, rnd: random.Random) -> bytes:
    return body[: rnd.randrange(len(body) + 1)] if body else body


def splice(body: bytes, rnd: random.Random) -> bytes:
    other = _dump(rnd.choice(BASE_MESSAGES))
    return body[: rnd.randrange(len(body) + 1)] + other[rnd.randrange(len(other) + 1) :]


def invalid_utf8(body: bytes, rnd: random.Random) -> bytes:
    bad = rnd.choice([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\x80", b"\xf4\x90\x80\x80", b"\xfe"])
    quote = body.find(b'"', rnd.randrange(len(body) + 1)) if body else -1
    at = quote + 1 if quote >= 0 else rnd.randrange(len(body) + 1)
    return body[:at] + bad + body[at:]


def bad_tokens(body: bytes, rnd: random.Random) -> bytes:
    token = rnd.choice([b"NaN", b"undefined", b"'single'", b"//c", b"/*", b"\x00", b"\t\v", b","])
    at = rnd.randrange(len(body) + 1)
    return body[:at] + token + body[at:]


def batch(body: bytes, rnd: random.Random) -> bytes:
    others = [_dump(rnd.choice(BASE_MESSAGES)) for _ in range(rnd.randrange(0, 4))]
    items = [body, *others]
    rnd.shuffle(items)
    return b"[" + b",".join(items) + b"]"


def not_an_object(body: bytes, rnd: random.Random) -> bytes:
    return rnd.choice([b"1", b'"str"', b"null", b"true", b"[]", b"[1,2]", b"{}", b'{"foo":1}'])


def wrong_jsonrpc(body: bytes, rnd: random.Random) -> bytes:
    return body.replace(b'"2.0"', rnd.choice([b'"1.0"', b"2.0", b"null", b'"2.0 "']), 1)


MUTATORS: list[Callable[[bytes, random.Random], bytes]] = [
    drop_field,
    duplicate_field,
    retype_field,
    huge_number,
    deep_nesting,
    truncate,
    splice,
    invalid_utf8,
    bad_tokens,
    batch,
    not_an_object,
    wrong_jsonrpc,
]


def mutate(base: int, ops: list[int], seed: int) -> bytes:
    """Apply mutators ``ops`` (indexes into :data:`MUTATORS`) to base message ``base``."""
    rnd = random.Random(seed)
    body = _dump(BASE_MESSAGES[base % len(BASE_MESSAGES)])
    for op in ops:
        body = MUTATORS[op % len(MUTATORS)](body, rnd)
    return body


# --------------------------------------------------------------------------- frame mutators


def frame_ok(kind: str, body: bytes, rnd: random.Random) -> bytes:
    if kind == "newline":
        return body.replace(b"\n", b" ") + rnd.choice([b"\n", b"\r\n", b"\n\n"])
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def frame_bad_length(kind: str, body: bytes, rnd: random.Random) -> bytes:
    if kind == "newline":
        return body + b"\n"
    value = rnd.choice(
        [
            b"abc",
            b"-1",
            b"+5",
            b"0x10",
            b"",
            b"1" * 5000,
            b"%d" % (len(body) + rnd.randrange(-5, 5)),
        ]
    )
    return b"Content-Length: " + value + b"\r\n\r\n" + body


def frame_odd_headers(kind: str, body: bytes, rnd: random.Random) -> bytes:
    if kind == "newline":
        return b"\r\n\n   \n" + body + b"\r\n"
    header = rnd.choice(
        [
            b"content-length: %d\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n",
            b"Content-Type: x\r\nContent-Length: %d\r\n\r\n",
            b"Content-Length: %d\r\nContent-Length: 3\r\n\r\n",
            b"X-Nothing: 1\r\n\r\n",
            b"no colon here\r\n\r\n",
            b"Content-Length: %d\n\n",
        ]
    )
    if b"%d" in header:
        header = header % len(body)
    return header + body


def frame_raw(kind: str, body: bytes, rnd: random.Random) -> bytes:
    return body


FRAME_MUTATORS: list[Callable[[str, bytes, random.Random], bytes]] = [
    frame_ok,
    frame_ok,
    frame_bad_length,
    frame_odd_headers,
    frame_raw,
]


def garbage_stream(kind: str, rnd: random.Random, count: int) -> bytes:
    """``count`` mutated messages, each framed well or badly, concatenated."""
    out = []
    for _ in range(count):
        ops = [rnd.randrange(len(MUTATORS)) for _ in range(rnd.randrange(0, 4))]
        body = mutate(rnd.randrange(len(BASE_MESSAGES)), ops, rnd.randrange(2**32))
        out.append(rnd.choice(FRAME_MUTATORS)(kind, body, rnd))
    return b"".join(out)


_DECLARED = re.compile(rb"(?i)content-length[ \t]*:[ \t]*([0-9]{1,12})(?![0-9])")


def declared_lengths(data: bytes) -> int:
    """The largest ``Content-Length`` a framer could honour anywhere in ``data`` (values of
    more than 12 digits are rejected outright, so they cannot swallow input); 0 if none."""
    return max((int(m.group(1)) for m in _DECLARED.finditer(data)), default=0)
