"""Run, session and interaction states and their legal transitions, as tables.

Every state change in the runtime goes through :func:`transition`, so an illegal one is
a typed error in one place instead of an ``if`` scattered across handlers.
"""

from __future__ import annotations

from typing import Final, Literal, TypeVar

__all__ = [
    "INTERACTION_TRANSITIONS",
    "RUN_TERMINAL",
    "RUN_TRANSITIONS",
    "SESSION_TRANSITIONS",
    "IllegalTransition",
    "RunState",
    "SessionState",
    "transition",
]

RunState = Literal[
    "starting", "running", "awaiting_input", "interrupting", "completed", "failed", "interrupted"
]
SessionState = Literal["active", "closing", "closed"]
InteractionState = Literal["pending", "responded", "cancelled", "expired", "withdrawn"]

RUN_TERMINAL: Final[frozenset[str]] = frozenset({"completed", "failed", "interrupted"})

RUN_TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    "starting": frozenset({"running", "interrupting", "failed", "interrupted"}),
    "running": frozenset({"awaiting_input", "interrupting", "completed", "failed", "interrupted"}),
    "awaiting_input": frozenset({"running", "interrupting", "completed", "failed", "interrupted"}),
    "interrupting": frozenset({"interrupted", "failed", "completed"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "interrupted": frozenset(),
}

SESSION_TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    "active": frozenset({"closing", "closed"}),
    "closing": frozenset({"closed"}),
    "closed": frozenset(),
}

INTERACTION_TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    "pending": frozenset({"responded", "cancelled", "expired", "withdrawn"}),
    "responded": frozenset(),
    "cancelled": frozenset(),
    "expired": frozenset(),
    "withdrawn": frozenset(),
}

S = TypeVar("S", bound=str)


class IllegalTransition(Exception):
    """A state change the table does not allow (a bug, never the host's fault)."""

    def __init__(self, machine: str, current: str, new: str) -> None:
        super().__init__(f"{machine}: {current} -> {new} is not allowed")
        self.current = current
        self.new = new


def transition(table: dict[str, frozenset[str]], machine: str, current: str, new: S) -> S:
    """Return ``new`` if ``table`` allows ``current`` → ``new``; raise
    :class:`IllegalTransition` otherwise."""
    if new not in table[current]:
        raise IllegalTransition(machine, current, new)
    return new
