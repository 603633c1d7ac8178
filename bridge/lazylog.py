"""A logger that imports :mod:`logging` when it is first used.

``agent-bridge serve`` answers ``initialize`` before it loads the rest of the bridge, and
the journal it opens first logs only when something goes wrong; ``logging`` (with
``traceback``, ``string`` and ``weakref``) is milliseconds of that first reply.  Modules
on that path declare ``log = lazy_logger(name)`` and use it as a :class:`logging.Logger`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

__all__ = ["lazy_logger"]


class _LazyLogger:
    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: logging.Logger | None = None

    def __getattr__(self, attr: str) -> Any:
        logger = self._logger
        if logger is None:
            import logging

            logger = self._logger = logging.getLogger(self._name)
        return getattr(logger, attr)


def lazy_logger(name: str) -> logging.Logger:
    """The logger ``name``, looked up (and :mod:`logging` imported) on its first use."""
    return cast("logging.Logger", _LazyLogger(name))
