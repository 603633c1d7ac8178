"""Interactions -> ACP requests to the client, and the client's replies -> answers (pure).

* An approval is a ``session/request_permission``: its options come from the approval's
  modes (``allow_once``; ``allow_always`` when it may last for the session;
  ``reject_once``); its ``toolCall`` describes the action (title, kind, raw input).
* A question or question set is an ``elicitation/create`` form when the client declared
  ``elicitation.form``: one string property per question (an enum of the choices' ids,
  titled by their labels, unless free text is allowed).
* Without elicitation, a question whose answer is one of its choices is asked as a
  ``session/request_permission`` with one ``allow_once`` option per choice and a
  ``reject_once`` "Do not answer" (the approval-style fallback).  A free-text question or
  a question set cannot be asked that way: the client is shown the question as an
  ``agent_message_chunk`` and the interaction is settled ``cancelled`` (the visible deny).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from agent_bridge.wire.acp import obj, text_block
from agent_bridge.wire.interactions import (
    Answer,
    ApprovalAnswer,
    ApprovalRequest,
    InteractionRequest,
    QuestionAnswer,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)

__all__ = [
    "ALLOW_ALWAYS",
    "ALLOW_ONCE",
    "REJECT",
    "Plan",
    "elicitation_answer",
    "permission_answer",
    "plan_for",
    "unanswerable_notice",
]

ALLOW_ONCE: Final = "allow_once"
ALLOW_ALWAYS: Final = "allow_always"
REJECT: Final = "reject_once"
_CHOICE_PREFIX: Final = "choice:"
_KIND_OF_ACTION: Final = {"command": "execute", "fileChange": "edit", "tool": "other"}

How = Literal["permission", "elicitation", "notice"]


class Plan:
    """How one interaction is put to the client: ``method`` and ``params`` of the request
    (``how`` ``notice``: no request, only :func:`unanswerable_notice`)."""

    __slots__ = ("how", "method", "params", "request")

    def __init__(
        self, how: How, method: str, params: dict[str, Any], request: InteractionRequest
    ) -> None:
        self.how = how
        self.method = method
        self.params = params
        self.request = request


def _tool_call(interaction_id: str, request: ApprovalRequest) -> dict[str, Any]:
    call: dict[str, Any] = {
        "toolCallId": interaction_id,
        "title": request.title,
        "kind": _KIND_OF_ACTION.get(request.action, "other"),
        "status": "pending",
    }
    raw: dict[str, Any] = {}
    if request.tool_name:
        raw["tool"] = request.tool_name
    if request.command:
        raw["command"] = request.command
    if request.cwd:
        raw["cwd"] = request.cwd
    if request.input is not None:
        raw["input"] = request.input
    if raw:
        call["rawInput"] = raw
    return call


def plan_for(
    session_id: str, interaction_id: str, request: InteractionRequest, *, elicitation: bool
) -> Plan:
    """How to ask ``request`` of a client (``elicitation``: it declared form elicitation)."""
    if isinstance(request, ApprovalRequest):
        options = [{"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"}]
        if "session" in request.modes:
            options.append(
                {"optionId": ALLOW_ALWAYS, "name": "Allow for this session", "kind": "allow_always"}
            )
        options.append({"optionId": REJECT, "name": "Deny", "kind": "reject_once"})
        params = {
            "sessionId": session_id,
            "toolCall": _tool_call(interaction_id, request),
            "options": options,
        }
        return Plan("permission", "session/request_permission", params, request)
    if elicitation:
        return Plan("elicitation", "elicitation/create", _form(session_id, request), request)
    if isinstance(request, QuestionRequest) and request.choices and not request.allow_free_text:
        options = [
            {"optionId": _CHOICE_PREFIX + c.id, "name": c.label, "kind": "allow_once"}
            for c in request.choices
        ]
        options.append({"optionId": REJECT, "name": "Do not answer", "kind": "reject_once"})
        params = {
            "sessionId": session_id,
            "toolCall": {
                "toolCallId": interaction_id,
                "title": request.prompt,
                "kind": "other",
                "status": "pending",
            },
            "options": options,
        }
        return Plan("permission", "session/request_permission", params, request)
    return Plan("notice", "", {}, request)


def _property(prompt: str, choices: tuple[Any, ...], free_text: bool) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": "string", "title": prompt}
    if choices and not free_text:
        prop["oneOf"] = [{"const": c.id, "title": c.label} for c in choices]
    elif choices:
        prop["description"] = "One of: " + ", ".join(f"{c.id} ({c.label})" for c in choices)
    return prop


def _form(session_id: str, request: QuestionRequest | QuestionSetRequest) -> dict[str, Any]:
    if isinstance(request, QuestionRequest):
        message = request.prompt
        properties = {"answer": _property(request.prompt, request.choices, request.allow_free_text)}
    else:
        message = request.title
        properties = {
            item.key: _property(item.prompt, item.choices, not item.choices)
            for item in request.items
        }
    return {
        "sessionId": session_id,
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
        },
    }


def permission_answer(request: InteractionRequest, result: Any) -> Answer | None:
    """The answer a ``session/request_permission`` result gives (``None``: cancelled or
    not understood, so the interaction is settled ``cancelled``)."""
    outcome = obj(obj(result).get("outcome"))
    if outcome.get("outcome") != "selected":
        return None
    option = outcome.get("optionId")
    if not isinstance(option, str):
        return None
    if isinstance(request, ApprovalRequest):
        if option == ALLOW_ONCE:
            return ApprovalAnswer("allow")
        if option == ALLOW_ALWAYS and "session" in request.modes:
            return ApprovalAnswer("allow", "session")
        if option == REJECT:
            return ApprovalAnswer("deny")
        return None
    if isinstance(request, QuestionRequest) and option.startswith(_CHOICE_PREFIX):
        choice = option[len(_CHOICE_PREFIX) :]
        if any(c.id == choice for c in request.choices):
            return QuestionAnswer(choice=choice)
    return None


def _value_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return None


def elicitation_answer(request: InteractionRequest, result: Any) -> Answer | None:
    """The answer an ``elicitation/create`` result gives (``None``: declined, cancelled or
    not understood)."""
    reply = obj(result)
    if reply.get("action") != "accept":
        return None
    content: Mapping[str, Any] = obj(reply.get("content"))
    if isinstance(request, QuestionRequest):
        text = _value_text(content.get("answer"))
        if text is None:
            return None
        if any(c.id == text for c in request.choices):
            return QuestionAnswer(choice=text)
        return QuestionAnswer(text=text) if request.allow_free_text or not request.choices else None
    if isinstance(request, QuestionSetRequest):
        answers: dict[str, str] = {}
        for item in request.items:
            text = _value_text(content.get(item.key))
            if text is None:
                return None
            answers[item.key] = text
        return QuestionSetAnswer(answers)
    return None


def unanswerable_notice(request: InteractionRequest) -> dict[str, Any]:
    """The ``agent_message_chunk`` update shown for a question the client cannot answer."""
    if isinstance(request, QuestionRequest):
        what = request.prompt
    elif isinstance(request, QuestionSetRequest):
        what = request.title + "".join(f"\n- {item.prompt}" for item in request.items)
    else:
        what = request.title
    text = (
        "\n\n[agent-bridge] The agent asked a question this client cannot answer "
        f"(no elicitation support), so it was declined:\n{what}\n"
    )
    return {"sessionUpdate": "agent_message_chunk", "content": text_block(text)}
