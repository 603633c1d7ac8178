"""Cutting a byte stream into the chunks a reader might receive (for framing tests)."""

from __future__ import annotations


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """Return ``data`` cut at the offsets ``cuts`` (each taken modulo ``len(data) + 1``,
    duplicates ignored): consecutive chunks, possibly empty, that join back to ``data``."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in [*points, len(data)]:
        out.append(data[last:p])
        last = p
    return out
