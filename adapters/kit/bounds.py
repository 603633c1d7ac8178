"""JSON a provider sent, measured before it is kept, journaled or shown: what an adapter
asks a host to approve is what is approved, so a value too large or too deep to show
whole is declined without asking (Codex's permissions and command actions, Claude Code's
tool inputs).  Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import msgspec

__all__ = ["depth_within", "json_within"]


def json_within(value: Any, max_bytes: int, max_depth: int) -> bool:
    """Whether ``value`` (decoded JSON) takes at most ``max_bytes`` encoded and nests
    objects and arrays at most ``max_depth`` deep."""
    try:  # in C and bounded by the frame; the walk below then sees a small value
        size = len(msgspec.json.encode(value))
    except (TypeError, ValueError, OverflowError, RecursionError):
        return False
    return size <= max_bytes and depth_within(value, max_depth)


def depth_within(value: Any, limit: int) -> bool:
    """Whether objects and arrays nest at most ``limit`` deep in ``value`` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = cast("dict[str, Any]", item).values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return True
