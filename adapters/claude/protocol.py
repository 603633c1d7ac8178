"""Claude Code's stream-json protocol, as pure functions: the frames the adapter writes,
and how the frames it reads become the bridge's payloads and outcomes.

The shapes are those of Claude Code 2.1.197 (see ``docs/providers/claude-code.md``).
Nothing here copies upstream prose into anything a host sees: outcomes carry codes,
and ``detail`` strings (log only) are built from field values the adapter checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agent_bridge.spi import RunOutcome
from agent_bridge.wire.errors import ErrorCode
from agent_bridge.wire.interactions import (
    Answer,
    Choice,
    InteractionRequest,
    QuestionAnswer,
    QuestionItem,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)

__all__ = [
    "ASK_TOOL",
    "CLIENT_ID_PREFIX",
    "DENY_MESSAGE",
    "IGNORED_TYPES",
    "MAX_TOOL_OUTPUT",
    "NO_ANSWER_MESSAGE",
    "UNSUPPORTED_MESSAGE",
    "AskedQuestion",
    "allow_reply",
    "classify_result",
    "context_window",
    "control_error",
    "control_request",
    "control_success",
    "deny_reply",
    "parse_client_id",
    "parse_questions",
    "prompt_tokens",
    "question_answers",
    "session_permission_updates",
    "tool_output",
    "turn_tokens",
    "user_message",
]

#: Our control requests carry ``request_id`` ``bridge_<ledger id>``; the CLI's own
#: requests use UUIDs, so the two id spaces cannot collide.
CLIENT_ID_PREFIX: Final = "bridge_"

#: What the model is told when the host denies (or does not answer) a tool request.
DENY_MESSAGE: Final = "The user denied this tool use."
UNSUPPORTED_MESSAGE: Final = "Unsupported control request subtype"
#: What the model is told when the host does not answer its question.
NO_ANSWER_MESSAGE: Final = "The user did not answer the question."

#: The tool through which the model asks the user questions; the CLI asks permission for
#: it like for any tool, and the answers go back in ``updatedInput.answers``.
ASK_TOOL: Final = "AskUserQuestion"
_MAX_QUESTIONS: Final = 16
_MAX_OPTIONS: Final = 32
_MAX_TEXT: Final = 4000

#: Tool output in a ``tool.activity`` event is cut to this many characters.
MAX_TOOL_OUTPUT: Final = 8192

#: Message types the CLI sends that carry nothing for a host (ignored without a
#: diagnostic).  Anything else unknown becomes a diagnostic.
IGNORED_TYPES: Final = frozenset(
    {"keep_alive", "tool_progress", "auth_status", "rate_limit_event", "prompt_suggestion"}
)

#: ``can_use_tool`` permission suggestions that a ``session`` approval may apply (scoped
#: to the session; ``setMode`` would widen far more than the one tool asked about).
_SESSION_SUGGESTIONS: Final = frozenset({"addRules", "replaceRules", "addDirectories"})


def user_message(text: str) -> dict[str, Any]:
    """A user turn (the CLI ignores the ``session_id`` of input messages)."""
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "session_id": "default",
    }


def control_request(request_id: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """A control request from the adapter (``initialize``, ``interrupt``)."""
    return {"type": "control_request", "request_id": request_id, "request": dict(request)}


def control_success(request_id: str, response: Mapping[str, Any]) -> dict[str, Any]:
    """A successful reply to one of the CLI's control requests."""
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": dict(response)},
    }


def control_error(request_id: str, error: str = UNSUPPORTED_MESSAGE) -> dict[str, Any]:
    """An error reply to one of the CLI's control requests."""
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }


def parse_client_id(raw: object) -> int | None:
    """Our ledger id from a ``request_id`` we sent, or ``None`` for anything else."""
    if not isinstance(raw, str) or not raw.startswith(CLIENT_ID_PREFIX):
        return None
    digits = raw[len(CLIENT_ID_PREFIX) :]
    return int(digits) if digits.isdigit() and len(digits) < 19 else None


def allow_reply(
    tool_input: Mapping[str, Any], updated_permissions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``can_use_tool`` → allow.  ``updatedInput`` is required by the CLI (without it the
    tool fails validation); it is the input as asked, unchanged."""
    reply: dict[str, Any] = {"behavior": "allow", "updatedInput": dict(tool_input)}
    if updated_permissions:
        reply["updatedPermissions"] = updated_permissions
    return reply


def deny_reply(*, interrupt: bool = False, message: str = DENY_MESSAGE) -> dict[str, Any]:
    """``can_use_tool`` → deny with a fixed message; ``interrupt`` also ends the turn."""
    reply: dict[str, Any] = {"behavior": "deny", "message": message}
    if interrupt:
        reply["interrupt"] = True
    return reply


def session_permission_updates(suggestions: object) -> list[dict[str, Any]]:
    """The CLI's permission suggestions a ``session`` approval applies, each scoped to the
    session (``destination: "session"``: nothing is written to settings files)."""
    if not isinstance(suggestions, list):
        return []
    out: list[dict[str, Any]] = []
    for item in suggestions:
        if not isinstance(item, dict) or item.get("type") not in _SESSION_SUGGESTIONS:
            continue
        if item.get("type") != "addDirectories" and item.get("behavior", "allow") != "allow":
            continue
        out.append({**item, "destination": "session"})
    return out


@dataclass(frozen=True, slots=True)
class AskedQuestion:
    """One question of an ``AskUserQuestion`` call: its text (the answer's key), the
    option labels (choice ``i`` is ``labels[i - 1]``) and whether several may be picked."""

    text: str
    labels: tuple[str, ...]
    multi: bool


def parse_questions(
    tool_input: Mapping[str, Any],
) -> tuple[InteractionRequest, tuple[AskedQuestion, ...]] | None:
    """The interaction for an ``AskUserQuestion`` input, or ``None`` when the input does
    not have the expected shape (it is then asked as a plain tool approval).

    One question becomes a ``question`` (choices, plus free text for "other"); several
    become a ``questionSet`` keyed ``q1``, ``q2`` …  A multi-select question has no single
    choice to pick, so it is asked as free text with the options listed in its prompt.
    """
    raw = tool_input.get("questions")
    if not isinstance(raw, list) or not raw or len(raw) > _MAX_QUESTIONS:
        return None
    asked: list[AskedQuestion] = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            return None
        options = item.get("options")
        options = options if isinstance(options, list) else []
        labels: list[str] = []
        for option in options[:_MAX_OPTIONS]:
            label = option.get("label") if isinstance(option, dict) else None
            if not isinstance(label, str) or not label:
                return None
            labels.append(label)
        multi = item.get("multiSelect") is True
        asked.append(AskedQuestion(item["question"], tuple(labels), multi))
    if len(asked) == 1:
        question = asked[0]
        return (
            QuestionRequest(
                prompt=_prompt(question),
                choices=() if question.multi else _choices(question),
                allow_free_text=True,
            ),
            tuple(asked),
        )
    items = tuple(
        QuestionItem(
            key=f"q{i}",
            prompt=_prompt(question),
            choices=() if question.multi else _choices(question),
        )
        for i, question in enumerate(asked, start=1)
    )
    return QuestionSetRequest(title="Claude Code has questions", items=items), tuple(asked)


def _prompt(question: AskedQuestion) -> str:
    text = question.text[:_MAX_TEXT]
    if question.multi and question.labels:
        text += " (one or more of: " + ", ".join(question.labels) + ")"
    return text


def _choices(question: AskedQuestion) -> tuple[Choice, ...]:
    return tuple(
        Choice(id=str(i), label=label[:_MAX_TEXT]) for i, label in enumerate(question.labels, 1)
    )


def _answer_text(question: AskedQuestion, choice: str | None, text: str | None) -> str | None:
    if choice is not None:
        if choice.isdigit() and 1 <= int(choice) <= len(question.labels):
            return question.labels[int(choice) - 1]
        return None
    return text


def question_answers(
    asked: tuple[AskedQuestion, ...], answer: Answer | None
) -> dict[str, str] | None:
    """``updatedInput.answers`` (question text → chosen label or typed text) for the
    host's answer, or ``None`` when it does not answer every question."""
    out: dict[str, str] = {}
    if len(asked) == 1 and isinstance(answer, QuestionAnswer):
        value = _answer_text(asked[0], answer.choice, answer.text)
        if value is None:
            return None
        out[asked[0].text] = value
        return out
    if not isinstance(answer, QuestionSetAnswer):
        return None
    for i, question in enumerate(asked, start=1):
        given = answer.answers.get(f"q{i}")
        if given is None:
            return None
        value = _answer_text(question, None if question.multi else given, given)
        if value is None:
            return None
        out[question.text] = value
    return out


def _status_code(status: object) -> ErrorCode:
    if status in (401, 403):
        return "provider_auth_required"
    if status == 429:
        return "provider_rate_limited"
    return "provider_failed"


#: The ``error`` field of the CLI's synthetic assistant message on an API failure.
_ASSISTANT_ERRORS: Final[dict[str, ErrorCode]] = {
    "authentication_failed": "provider_auth_required",
    "rate_limit": "provider_rate_limited",
}


def classify_result(
    result: Mapping[str, Any], *, interrupting: bool, assistant_error: str | None = None
) -> RunOutcome:
    """The outcome of a turn from its ``result`` message.

    * ``is_error`` false (and subtype ``success``) → completed with ``stop_reason``;
    * after an interrupt: ``terminal_reason`` ``aborted_*`` or subtype
      ``error_during_execution`` → interrupted;
    * otherwise failed: ``api_error_status`` 401/403 → ``provider_auth_required``, 429 →
      ``provider_rate_limited``, else (5xx, connection failures, ``error_max_turns`` …)
      ``provider_failed``; without a status, the synthetic assistant message's ``error``
      kind decides.
    """
    subtype = result.get("subtype")
    is_error = result.get("is_error") is True
    terminal = result.get("terminal_reason")
    aborted = isinstance(terminal, str) and terminal.startswith("aborted")
    if interrupting and (aborted or subtype == "error_during_execution"):
        return RunOutcome.interrupted()
    if subtype == "success" and not is_error:
        stop = result.get("stop_reason")
        return RunOutcome.completed(stop if isinstance(stop, str) else None)
    status = result.get("api_error_status")
    code = _status_code(status)
    if status is None and assistant_error in _ASSISTANT_ERRORS:
        code = _ASSISTANT_ERRORS[assistant_error]
    detail = (
        f"result subtype={_short(subtype)} api_error_status={_short(status)} "
        f"terminal_reason={_short(terminal)} error_kind={_short(assistant_error)}"
    )
    return RunOutcome.failed(code, detail)


def _short(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.replace("_", "").isalnum() and len(value) <= 40:
        return value
    return "-" if value is None else "?"


def tool_output(content: object) -> str:
    """The text of a ``tool_result`` block's content, cut to :data:`MAX_TOOL_OUTPUT`."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    else:
        text = ""
    if len(text) > MAX_TOOL_OUTPUT:
        return text[:MAX_TOOL_OUTPUT] + "…[truncated]"
    return text


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def turn_tokens(usage: object) -> tuple[int, int, int]:
    """``(input incl. cache, output, cache reads)`` of a ``result.usage`` (one turn)."""
    if not isinstance(usage, dict):
        return (0, 0, 0)
    cached = _int(usage.get("cache_read_input_tokens"))
    total_in = (
        _int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens")) + cached
    )
    return (total_in, _int(usage.get("output_tokens")), cached)


def prompt_tokens(usage: object) -> int:
    """Tokens of one model request's prompt (``message_start.message.usage``)."""
    if not isinstance(usage, dict):
        return 0
    return (
        _int(usage.get("input_tokens"))
        + _int(usage.get("cache_creation_input_tokens"))
        + _int(usage.get("cache_read_input_tokens"))
    )


def context_window(model_usage: object, model: str | None) -> int | None:
    """The context window of the session's model from ``result.modelUsage``."""
    if not isinstance(model_usage, dict):
        return None
    windows: list[int] = []
    for name, entry in model_usage.items():
        if not isinstance(entry, dict):
            continue
        window = _int(entry.get("contextWindow"))
        if not window:
            continue
        if model is not None and name == model:
            return window
        windows.append(window)
    return max(windows) if windows else None
