"""What the bridge and its journal writer process say to each other (see
:mod:`agent_bridge.journal.writer_child` for the protocol).

Why this module exists: both sides need these constants, and the bridge must not import
the child's program (``python -m agent_bridge.journal.writer_child`` would then find it
imported already).
"""

from __future__ import annotations

import struct
from typing import Final

from agent_bridge.journal.errors import Fault

__all__ = ["FAULTS", "HEADER", "REPORT"]

#: a frame's length
HEADER: Final = struct.Struct("<I")
#: ``(operations committed, events committed, fault code)``
REPORT: Final = struct.Struct("<QQB")
#: fault codes on the wire between the two (index 0: none)
FAULTS: Final[tuple[Fault | None, ...]] = (
    None,
    "disk_full",
    "io_error",
    "read_only",
    "damaged",
    "other",
    "internal",
    "writer_exited",
)
