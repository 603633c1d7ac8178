"""The tool-call model of ``tool.activity`` (the Agent Client Protocol's): what a tool
does (:data:`ToolKind`), the files it touches (:class:`ToolLocation`) and what it shows
(:data:`ToolContent`: text, and structured edits for a diff view).

Kept apart from :mod:`agent_bridge.wire.events`, whose tagged structs are all event
payloads (the journal gives each a type code).
"""

from __future__ import annotations

from typing import Literal

from agent_bridge.wire.common import WireStruct

__all__ = ["ToolContent", "ToolEdit", "ToolKind", "ToolLocation", "ToolText"]

#: What a tool does, in the Agent Client Protocol's terms: ``read``, ``edit``, ``delete``,
#: ``move``, ``search``, ``execute``, ``think``, ``fetch`` or ``other``.
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


class ToolLocation(WireStruct, frozen=True):
    """A file a tool call touches (``line`` from 1 when known)."""

    path: str
    line: int | None = None


class ToolText(WireStruct, frozen=True, tag="text", tag_field="type"):
    """Text a tool call shows (a description, its result)."""

    text: str


class ToolEdit(WireStruct, frozen=True, tag="edit", tag_field="type"):
    """A structured edit of one file, for a diff view: ``oldText`` is replaced by
    ``newText``.  Either is the whole file or the changed fragment (with context) as the
    provider reports it; ``oldText`` absent means a new file (or content not known),
    ``newText`` empty with ``oldText`` set means the text was deleted."""

    path: str
    new_text: str
    old_text: str | None = None


ToolContent = ToolText | ToolEdit
