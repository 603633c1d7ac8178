"""JSON a provider sent, measured before it is kept, journaled or shown: what an adapter
asks a host to approve is what is approved, so a value too large or too deep to show
whole is declined without asking (Codex's permissions and command actions, Claude Code's
tool inputs).  Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, cast

import msgspec

__all__ = ["depth_within", "json_within", "text_ok"]

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


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


def text_ok(text: str) -> bool:
    """Whether ``text`` has no control character (a NUL makes path functions raise, a
    newline forges a log line) and no lone surrogate (it could not be encoded)."""
    if _CONTROL.search(text):
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
