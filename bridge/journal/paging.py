"""Which sequences an ``events/read`` page covers (sans-I/O)."""

from __future__ import annotations

__all__ = ["page_range"]


def page_range(
    last: int, after: int | None, before: int | None, limit: int
) -> tuple[int, int, bool]:
    """Return ``(lo, hi, has_more)`` for a page of a log holding sequences ``1..last``.

    ``before`` pages backward: the ``limit`` sequences just below ``before``, and
    ``has_more`` says whether older ones exist.  Otherwise the page goes forward from just
    above ``after`` (0 when omitted), and ``has_more`` says whether newer ones exist.  An
    empty page has ``hi < lo``.
    """
    if before is not None:
        hi = min(before - 1, last)
        lo = max(1, hi - limit + 1)
        return lo, hi, lo > 1 and hi >= 1
    lo = max(0, after or 0) + 1
    hi = min(last, lo + limit - 1)
    return lo, hi, hi < last
