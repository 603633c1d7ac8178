"""The journal's one exception: what went wrong opening or using it, in one line."""

from __future__ import annotations

__all__ = ["JournalError"]


class JournalError(Exception):
    """The journal cannot be used; ``str()`` is a one-line message for a person (it names
    the file and what to do), printed by ``serve`` on stderr before it exits non-zero."""
