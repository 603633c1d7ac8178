"""Interactions: what a run asks the host (approval, question, question set) and the answers.

Each interaction settles exactly once: ``responded`` (an answer was applied), ``cancelled``
(the run was interrupted or ended, or the host declined), ``expired`` (its deadline passed)
or ``withdrawn`` (the provider no longer needs it).
"""

from __future__ import annotations

from typing import Any, Literal

from agent_bridge.wire.common import WireStruct

__all__ = [
    "Answer",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Choice",
    "InteractionKind",
    "InteractionRequest",
    "InteractionStatus",
    "QuestionAnswer",
    "QuestionItem",
    "QuestionRequest",
    "QuestionSetAnswer",
    "QuestionSetRequest",
    "SettledStatus",
]

InteractionKind = Literal["approval", "question", "questionSet"]
InteractionStatus = Literal["pending", "responded", "cancelled", "expired", "withdrawn"]
#: The four ways an interaction ends (what ``interaction.settled`` carries).
SettledStatus = Literal["responded", "cancelled", "expired", "withdrawn"]
ApprovalMode = Literal["once", "session"]


class ApprovalRequest(WireStruct, frozen=True, tag="approval", tag_field="kind"):
    """Permission for an action: ``action`` is e.g. ``tool``, ``command``, ``fileChange``;
    ``modes`` lists how long an approval may last; ``parent_tool_call_id`` says that a
    subagent asks, started by that tool call."""

    action: str
    title: str
    tool_name: str | None = None
    input: Any = None
    command: str | None = None
    cwd: str | None = None
    modes: tuple[ApprovalMode, ...] = ("once",)
    #: the tool call whose subagent asks (absent when the main agent asks)
    parent_tool_call_id: str | None = None


class Choice(WireStruct, frozen=True):
    """One allowed answer of a question."""

    id: str
    label: str


class QuestionRequest(WireStruct, frozen=True, tag="question", tag_field="kind"):
    """A question: free text when ``choices`` is empty, else one of ``choices`` by id."""

    prompt: str
    choices: tuple[Choice, ...] = ()
    allow_free_text: bool = False


class QuestionItem(WireStruct, frozen=True):
    """One keyed question of a question set."""

    key: str
    prompt: str
    choices: tuple[Choice, ...] = ()


class QuestionSetRequest(WireStruct, frozen=True, tag="questionSet", tag_field="kind"):
    """Several keyed questions; an answer must cover exactly the asked keys."""

    title: str
    items: tuple[QuestionItem, ...]


InteractionRequest = ApprovalRequest | QuestionRequest | QuestionSetRequest


class ApprovalAnswer(WireStruct, frozen=True, tag="approval", tag_field="kind"):
    """``allow`` or ``deny``; ``mode`` says whether an allow lasts for the session."""

    decision: Literal["allow", "deny"]
    mode: ApprovalMode = "once"


class QuestionAnswer(WireStruct, frozen=True, tag="question", tag_field="kind"):
    """Either ``choice`` (a choice id) or ``text``."""

    choice: str | None = None
    text: str | None = None


class QuestionSetAnswer(WireStruct, frozen=True, tag="questionSet", tag_field="kind"):
    """Answers by key: each value is a choice id or free text."""

    answers: dict[str, str]


Answer = ApprovalAnswer | QuestionAnswer | QuestionSetAnswer
