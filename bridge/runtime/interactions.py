"""Interactions on the runtime side: one object per question a run asks, settled once.

This module is the one place where exactly-once settlement is decided, whichever path an
answer takes (the reply to an ``interaction/request`` sent to any attached host, or
``interaction/respond``).

An interaction settles exactly once: ``responded`` (an answer was applied), ``cancelled``,
``expired`` or ``withdrawn``.  The same answer again is a no-op ``duplicate``; a different
answer, or any answer after another settlement (for example the cancellation that happens
when an interrupt begins), is ``interaction_already_settled``.  An answer that does not fit
the request (wrong kind, unknown choice, wrong keys, a mode not offered) is
``invalid_answer`` and settles nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import anyio

from agent_bridge.errors import BridgeError
from agent_bridge.spi import InteractionOutcome
from agent_bridge.states import INTERACTION_TRANSITIONS, transition
from agent_bridge.wire.interactions import (
    Answer,
    ApprovalAnswer,
    ApprovalRequest,
    InteractionRequest,
    InteractionStatus,
    QuestionAnswer,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
    SettledStatus,
)

__all__ = ["Interaction", "SettledInteraction", "validate_answer"]


def validate_answer(request: InteractionRequest, answer: Answer) -> None:
    """Raise ``BridgeError("invalid_answer")`` unless ``answer`` fits ``request``."""
    ok = False
    if isinstance(request, ApprovalRequest) and isinstance(answer, ApprovalAnswer):
        ok = answer.decision == "deny" or answer.mode in request.modes
    elif isinstance(request, QuestionRequest) and isinstance(answer, QuestionAnswer):
        if answer.choice is not None:
            ok = answer.text is None and any(c.id == answer.choice for c in request.choices)
        elif answer.text is not None:
            ok = not request.choices or request.allow_free_text
    elif isinstance(request, QuestionSetRequest) and isinstance(answer, QuestionSetAnswer):
        asked = {item.key: item for item in request.items}
        ok = set(answer.answers) == set(asked) and all(
            not asked[key].choices or any(c.id == value for c in asked[key].choices)
            for key, value in answer.answers.items()
        )
    if not ok:
        raise BridgeError("invalid_answer")


def _answer_settled(
    status: InteractionStatus, settled_answer: Answer | None, auto: bool, answer: Answer
) -> Literal["duplicate"]:
    """The reply to an answer for an interaction that is no longer pending: ``duplicate``
    for the settling answer again; raises ``interaction_already_settled`` otherwise."""
    if status == "responded" and settled_answer == answer and not auto:
        return "duplicate"
    raise BridgeError("interaction_already_settled")


class SettledInteraction:
    """What is kept of an interaction once its run has ended: enough to answer a late
    ``interaction/respond`` (``duplicate`` or ``interaction_already_settled``), none of
    the request, callbacks or wake-up event."""

    __slots__ = ("answer", "auto", "status")

    def __init__(self, status: InteractionStatus, answer: Answer | None, auto: bool) -> None:
        self.status = status
        self.answer = answer
        self.auto = auto

    def respond(self, answer: Answer) -> Literal["applied", "duplicate"]:
        """Returns ``duplicate``; raises ``interaction_already_settled``."""
        return _answer_settled(self.status, self.answer, self.auto, answer)


class Interaction:
    """One pending-then-settled interaction of a run.

    ``on_settle`` callbacks run synchronously at the one settlement (the run uses them to
    publish ``interaction.settled``; each host it was offered to, to withdraw its request).
    """

    __slots__ = (
        "_settled",
        "answer",
        "auto",
        "interaction_id",
        "on_settle",
        "request",
        "run_id",
        "session_id",
        "status",
    )

    def __init__(
        self,
        interaction_id: str,
        session_id: str,
        run_id: str,
        request: InteractionRequest,
    ) -> None:
        self.interaction_id = interaction_id
        self.session_id = session_id
        self.run_id = run_id
        self.request = request
        self.status: InteractionStatus = "pending"
        self.answer: Answer | None = None
        self.auto = False
        self._settled = anyio.Event()
        self.on_settle: list[Callable[[Interaction], None]] = []

    @property
    def kind(self) -> Literal["approval", "question", "questionSet"]:
        """The request's kind."""
        if isinstance(self.request, ApprovalRequest):
            return "approval"
        if isinstance(self.request, QuestionRequest):
            return "question"
        return "questionSet"

    @property
    def pending(self) -> bool:
        """Whether the interaction still waits for its settlement."""
        return self.status == "pending"

    def respond(self, answer: Answer) -> Literal["applied", "duplicate"]:
        """Apply a host's answer.

        Returns ``applied`` for the settling answer and ``duplicate`` for the same answer
        again.  Raises ``invalid_answer`` (nothing settled) or
        ``interaction_already_settled``.
        """
        if not self.pending:
            return _answer_settled(self.status, self.answer, self.auto, answer)
        validate_answer(self.request, answer)
        self.settle("responded", answer)
        return "applied"

    def settle(
        self, status: SettledStatus, answer: Answer | None = None, *, auto: bool = False
    ) -> bool:
        """Settle once; return ``False`` (and change nothing) if already settled."""
        if not self.pending:
            return False
        self.status = transition(INTERACTION_TRANSITIONS, "interaction", self.status, status)
        self.answer = answer if status == "responded" else None
        self.auto = auto
        callbacks, self.on_settle = self.on_settle, []
        for callback in callbacks:
            callback(self)
        self._settled.set()
        return True

    async def wait(self) -> InteractionOutcome:
        """Wait for the settlement and return it."""
        await self._settled.wait()
        return InteractionOutcome(self.status, self.answer)

    def settled_record(self) -> SettledInteraction:
        """The compact record kept once the run has ended (see :class:`SettledInteraction`)."""
        return SettledInteraction(self.status, self.answer, self.auto)

    # InteractionHandle protocol
    def withdraw(self) -> bool:
        """Settle as ``withdrawn``; return whether it was still pending."""
        return self.settle("withdrawn")
