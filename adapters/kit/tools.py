"""The tool calls of one run, as a mapping tracks them.

Every provider reports a tool call in pieces: it starts (with an id and a name), it may
stream output, and it ends.  The bridge's ``tool.activity`` events follow one life
(``started`` → ``output``… → ``completed`` or ``failed``), whatever the provider said, so
each mapping has to remember, within a run, which calls it has seen, under which name,
whether output was reported and whether the call has ended — and, when the run ends,
report every call still open as ``failed``.  :class:`ToolCalls` is that memory, once;
the mappings (pure functions) keep one in their per-run state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_bridge.wire.events import ToolActivity

__all__ = ["ToolCall", "ToolCalls"]


@dataclass(slots=True, eq=False)
class ToolCall:
    """One tool call of the run."""

    id: str
    #: The name its activities are reported under.
    name: str
    #: Whether output was reported (a final copy of the whole output is then not sent).
    output: bool = False
    #: Whether ``completed`` or ``failed`` was reported.
    ended: bool = False
    #: What the adapter keeps beside the call (Codex: the file changes an approval shows).
    detail: Any = None


class ToolCalls:
    """The tool calls of one run, by id, in the order they started."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[str, ToolCall] = {}

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._calls

    def __len__(self) -> int:
        return len(self._calls)

    def start(self, tool_id: str, name: str, detail: Any = None) -> ToolCall | None:
        """Record a new call; return it, or ``None`` if ``tool_id`` was already seen
        (the call started before: nothing to report again)."""
        if tool_id in self._calls:
            return None
        call = self._calls[tool_id] = ToolCall(tool_id, name, detail=detail)
        return call

    def get(self, tool_id: str) -> ToolCall | None:
        """The call ``tool_id``, or ``None`` if it never started."""
        return self._calls.get(tool_id)

    def name(self, tool_id: str, default: str) -> str:
        """The name ``tool_id`` started under, else ``default``."""
        call = self._calls.get(tool_id)
        return default if call is None else call.name

    def is_ended(self, tool_id: str) -> bool:
        """Whether ``tool_id`` started and has ended."""
        call = self._calls.get(tool_id)
        return call is not None and call.ended

    def end(self, tool_id: str) -> bool:
        """Mark ``tool_id`` ended; return whether it was open (started, not ended)."""
        call = self._calls.get(tool_id)
        if call is None or call.ended:
            return False
        call.ended = True
        return True

    def fail_open(self) -> list[ToolActivity]:
        """At a run's end: a ``failed`` activity for every call started and not ended,
        in the order they started; marks them ended (a second call returns ``[]``)."""
        out: list[ToolActivity] = []
        for call in self._calls.values():
            if not call.ended:
                call.ended = True
                out.append(ToolActivity(call.id, call.name, "failed"))
        return out
