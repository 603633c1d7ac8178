"""Approval-mode helpers shared by the adapters.

The bridge answers an approval with ``{decision: allow|deny, mode: once|session}`` — or
not at all (cancelled, expired, withdrawn).  Each provider wants its own decision back
(Claude Code ``allow``/``deny`` with session rules, Codex ``accept``/``acceptForSession``/
``decline``/``cancel``).  :func:`approval_verdict` folds the settlement into one closed set
once, so an adapter maps five verdicts instead of re-reading the outcome, and
:func:`approval_modes` builds the ``modes`` an approval request offers.
"""

from __future__ import annotations

from typing import Final, Literal

from agent_bridge.spi import InteractionOutcome
from agent_bridge.wire.interactions import ApprovalAnswer, ApprovalMode

__all__ = ["ONCE", "ONCE_OR_SESSION", "Verdict", "approval_modes", "approval_verdict", "is_allow"]

ONCE: Final[tuple[ApprovalMode, ...]] = ("once",)
ONCE_OR_SESSION: Final[tuple[ApprovalMode, ...]] = ("once", "session")

#: ``allow_once`` / ``allow_session`` / ``deny``: the host answered; ``cancelled``: the
#: interaction was cancelled (the run is being interrupted or closed); ``unanswered``:
#: expired or withdrawn (nobody decided).
Verdict = Literal["allow_once", "allow_session", "deny", "cancelled", "unanswered"]


def approval_modes(session_ok: bool) -> tuple[ApprovalMode, ...]:
    """The ``modes`` to offer: ``("once", "session")`` when the provider can make an
    approval last for the session, else ``("once",)``."""
    return ONCE_OR_SESSION if session_ok else ONCE


def approval_verdict(outcome: InteractionOutcome, *, session_ok: bool = True) -> Verdict:
    """The verdict of an approval's settlement.  An allow with mode ``session`` is
    ``allow_session`` only when ``session_ok`` (the provider offered it), else
    ``allow_once``."""
    answer = outcome.answer
    if outcome.status == "responded" and isinstance(answer, ApprovalAnswer):
        if answer.decision == "allow":
            return "allow_session" if answer.mode == "session" and session_ok else "allow_once"
        return "deny"
    if outcome.status == "cancelled":
        return "cancelled"
    return "unanswered"


def is_allow(verdict: Verdict) -> bool:
    """Whether ``verdict`` lets the action go ahead."""
    return verdict in ("allow_once", "allow_session")
