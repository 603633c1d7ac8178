"""How Claude Code's records become the bridge's payloads, interactions and outcomes:
pure functions (no I/O, no clock), tested directly.

A turn's records are read one after the other; what the mapping must remember between
them (the tools started, the messages already streamed, token counts) is a
:class:`TurnState` the session keeps per run and passes in.  Nothing here copies upstream
prose into anything a host sees: diagnostics carry fixed codes and messages, outcomes
carry codes, and ``detail`` strings (log only) are built from field values checked here.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from agent_bridge.adapters.claude import protocol
from agent_bridge.adapters.kit.approvals import approval_modes, approval_verdict, is_allow
from agent_bridge.adapters.kit.bounds import json_within
from agent_bridge.adapters.kit.limits import (
    MeterStatus,
    http_status_code,
    instant,
    limit_details,
    reset_of,
)
from agent_bridge.adapters.kit.tools import ToolCalls
from agent_bridge.spi import InteractionOutcome, RunOutcome
from agent_bridge.wire.errors import ErrorCode, FailureCause
from agent_bridge.wire.events import (
    ContextUsage,
    CumulativeUsage,
    Diagnostic,
    LimitMeter,
    LimitsUpdated,
    ProviderPayload,
    Subagent,
    SubagentUsage,
    TextDelta,
    ThinkingDelta,
    ToolActivity,
    Usage,
)
from agent_bridge.wire.inputs import (
    CommandInfo,
    CommandInput,
    FileInput,
    ImageInput,
    ResourceInput,
    TextInput,
)
from agent_bridge.wire.interactions import (
    Answer,
    ApprovalRequest,
    Choice,
    InteractionRequest,
    QuestionAnswer,
    QuestionItem,
    QuestionRequest,
    QuestionSetAnswer,
    QuestionSetRequest,
)
from agent_bridge.wire.methods import RunInput
from agent_bridge.wire.settings import SettingValue
from agent_bridge.wire.tools import ToolContent, ToolEdit, ToolKind, ToolLocation

__all__ = [
    "DECLINED",
    "MAX_TOOL_OUTPUT",
    "OVERSIZED",
    "RETRY",
    "STRAY",
    "SUBAGENT_TOOLS",
    "UNKNOWN",
    "UNPARSEABLE",
    "AskedQuestion",
    "LimitHints",
    "Permission",
    "TurnState",
    "UsageTotals",
    "assistant_payloads",
    "classify_result",
    "context_window",
    "endpoint_label",
    "limits_payload",
    "open_tools_failed",
    "parse_questions",
    "permission_reply",
    "permission_request",
    "prompt_tokens",
    "question_answers",
    "retry_diagnostic",
    "retry_hint",
    "session_permission_updates",
    "stream_event_payloads",
    "subagent_of",
    "task_payloads",
    "tool_output",
    "tool_result_payloads",
    "turn_tokens",
    "usage_payload",
    "user_content",
]

_MAX_QUESTIONS: Final = 16
_MAX_OPTIONS: Final = 32
_MAX_TEXT: Final = 4000

#: Tool output in a ``tool.activity`` event is cut to this many characters.
MAX_TOOL_OUTPUT: Final = 8192

#: ``can_use_tool`` permission suggestions that a ``session`` approval may apply (scoped
#: to the session; ``setMode`` would widen far more than the one tool asked about).
_SESSION_SUGGESTIONS: Final = frozenset({"addRules", "replaceRules", "addDirectories"})


def _diag(level: Literal["info", "warning", "error"], code: str, message: str) -> Diagnostic:
    return Diagnostic(level=level, code=code, message=message)


#: A turn frame while no run waits for one, or a reply to a request never sent.
STRAY: Final = _diag(
    "warning",
    "provider_stray_record",
    "the provider sent a record that belongs to no active run; it was ignored",
)
#: A record type the adapter does not know (reported once per type and run).
UNKNOWN: Final = _diag(
    "info",
    "provider_unknown_record",
    "the provider sent a record of a type the adapter does not know; it was ignored",
)
UNPARSEABLE: Final = _diag(
    "warning",
    "provider_unparseable_record",
    "the provider sent a line that is not a JSON object; it was ignored",
)
OVERSIZED: Final = _diag(
    "warning",
    "provider_oversized_record",
    "the provider sent a record larger than the adapter accepts; it was skipped",
)
DECLINED: Final = _diag(
    "info",
    "provider_request_declined",
    "the provider asked for something the adapter does not support; it was declined",
)
#: A turn of the active run begun (``system``/``init``) in another conversation.
SWITCHED: Final = _diag(
    "error",
    "provider_session_switched",
    "the provider began the turn in a conversation that is not this session's",
)
#: A ``can_use_tool`` request declined without asking (reported once per run).
REQUEST_DECLINED: Final = _diag(
    "warning",
    "claude_request_declined",
    "Claude Code asked to approve a tool call too large or malformed to show; declined",
)
#: The CLI named its session with an id ``valid_session_id`` does not keep (reported once
#: a session): the runs go on, but the conversation cannot be resumed by that id.
SESSION_ID_UNUSABLE: Final = _diag(
    "warning",
    "provider_session_id_unusable",
    "Claude Code named its conversation with an id that cannot be kept; it cannot be resumed",
)
RETRY: Final = _diag("info", "provider_retry", "the provider is retrying a failed model request")

_SAFE_NAME: Final = re.compile(r"[a-z0-9_]{1,40}")
_HOST_RE: Final = re.compile(r"^[A-Za-z0-9.\-]{1,100}$|^\[[0-9A-Fa-f:.]{2,60}\]$")


def endpoint_label(environ: Mapping[str, str]) -> str:
    """The model endpoint a ``claude`` child with ``environ`` talks to, for a message:
    ``ANTHROPIC_BASE_URL``'s scheme, host and port only (never its user, password, path
    or query), else "the default model endpoint"."""
    from urllib.parse import urlsplit

    raw = environ.get("ANTHROPIC_BASE_URL", "")
    try:
        url = urlsplit(raw)
        port = url.port
    except ValueError:
        return "the model endpoint set in ANTHROPIC_BASE_URL"
    host = url.hostname or ""
    if host and ":" in host:
        host = f"[{host}]"
    if url.scheme not in ("http", "https") or not _HOST_RE.match(host):
        return "the default model endpoint" if not raw else "ANTHROPIC_BASE_URL's endpoint"
    return f"{url.scheme}://{host}" + (f":{port}" if port is not None else "")


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1000:
        return value
    return None


def retry_diagnostic(message: Mapping[str, Any], endpoint: str) -> Diagnostic:
    """The ``provider_retry`` diagnostic of a ``system``/``api_retry`` record, naming the
    cause: the HTTP status the endpoint answered with, or no answer at all (the CLI gives
    no status when it cannot connect), the endpoint (:func:`endpoint_label`) and the
    attempt. Built from numbers and the bridge's own words: the record's ``error`` text
    is upstream's and is not used."""
    attempt, most = _count(message.get("attempt")), _count(message.get("max_retries"))
    status = _count(message.get("error_status"))
    which = f" (attempt {attempt} of {most})" if attempt and most else ""
    if status is not None and 100 <= status <= 599:
        cause = f"HTTP {status} from {endpoint}"
        if status in (401, 403):
            cause += " (the credentials were refused)"
        elif status == 429:
            cause += " (rate limited)"
        elif status >= 500:
            cause += " (a server error or overload)"
    else:
        cause = f"no response from {endpoint} (unreachable, refused or timed out)"
    text = f"the provider is retrying a failed model request{which}: {cause}"
    return _diag("warning", "provider_retry", text)


_UNIFIED_STATUS: Final[dict[str, MeterStatus]] = {
    "allowed": "ok",
    "allowed_warning": "warning",
    "rejected": "exhausted",
}


def limits_payload(info: object) -> LimitsUpdated | None:
    """The ``limits.updated`` of a ``rate_limit_event``'s ``rate_limit_info`` (Claude
    Code's subscription limits, from the ``anthropic-ratelimit-unified-*`` headers):
    a meter in pool ``claude`` named by its ``rateLimitType`` (``five_hour``,
    ``seven_day`` …; ``unified`` when absent) with its status, ``utilization`` (a
    fraction) as percent and ``resetsAt``; and an ``overage`` meter when the overage
    status is given.  ``None`` for a record without a known status."""
    if not isinstance(info, dict):
        return None
    status = _UNIFIED_STATUS.get(str(info.get("status")))
    if status is None:
        return None
    kind = info.get("rateLimitType")
    name = kind if isinstance(kind, str) and _SAFE_NAME.fullmatch(kind) else "unified"
    used = info.get("utilization")
    percent = (
        round(float(used) * 100.0, 2)
        if isinstance(used, (int, float)) and not isinstance(used, bool) and 0 <= used < 100
        else None
    )
    meters = [
        LimitMeter(
            "claude", name, percent=percent, resets_at=instant(info.get("resetsAt")), status=status
        )
    ]
    overage = _UNIFIED_STATUS.get(str(info.get("overageStatus")))
    if overage is not None:
        meters.append(
            LimitMeter(
                "claude", "overage", resets_at=instant(info.get("overageResetsAt")), status=overage
            )
        )
    return LimitsUpdated(tuple(meters))


def retry_hint(message: Mapping[str, Any]) -> float | None:
    """The delay in seconds an ``api_retry`` record announces before retrying an HTTP
    429 (the CLI follows the server's ``retry-after``), else ``None``."""
    if message.get("error_status") != 429:
        return None
    delay = message.get("retry_delay_ms")
    if isinstance(delay, (int, float)) and not isinstance(delay, bool) and 0 <= delay < 1e10:
        return float(delay) / 1000.0
    return None


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


#: The ``error`` field of the CLI's synthetic assistant message on an API failure.
_ASSISTANT_ERRORS: Final[dict[str, ErrorCode]] = {
    "authentication_failed": "provider_auth_required",
    "rate_limit": "provider_rate_limited",
    "billing_error": "provider_rate_limited",
}

#: Tokens of the CLI's synthetic error text (``API Error: Unable to connect to API
#: (ConnectionRefused)``) and the cause each one names.  Only the cause is sent to the
#: host; the text itself is upstream prose and goes nowhere but the detail of the log.
_CONNECTION_TOKENS: Final[dict[str, FailureCause]] = {
    "ConnectionRefused": "connection_refused",
    "ECONNREFUSED": "connection_refused",
    "ConnectionReset": "connection_reset",
    "ECONNRESET": "connection_reset",
    "ConnectionClosed": "connection_reset",
    "EPIPE": "connection_reset",
    "ETIMEDOUT": "connection_timeout",
    "Timeout": "connection_timeout",
    "TimeoutError": "connection_timeout",
    "ENOTFOUND": "dns_failure",
    "EAI_AGAIN": "dns_failure",
    "FailedToOpenSocket": "connection_refused",
    "UNABLE_TO_VERIFY_LEAF_SIGNATURE": "tls_failure",
    "CERT_HAS_EXPIRED": "tls_failure",
    "SELF_SIGNED_CERT_IN_CHAIN": "tls_failure",
    "DEPTH_ZERO_SELF_SIGNED_CERT": "tls_failure",
}
_TOKEN_RE: Final = re.compile(r"[A-Za-z_]+")


def _billing_details(status: object) -> dict[str, str]:
    # "credit balance is too low": the CLI's kind for a spent quota (an HTTP 400).
    out = {"cause": "quota_exhausted"}
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
        out.update(httpStatus=str(status), httpStatusClass=f"{status // 100}xx")
    return out


def failure_details(
    result: Mapping[str, Any], status: object, assistant_error: str | None
) -> dict[str, str]:
    """The allowlisted ``details`` of a failed turn: ``cause`` (and for an HTTP error
    ``httpStatus`` and ``httpStatusClass``), from the result's status, its subtype, the
    synthetic message's error kind and the tokens of the CLI's error text."""
    if assistant_error == "billing_error":
        return _billing_details(status)
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
        cause: FailureCause = "http_status"
        if status in (401, 403):
            cause = "auth_missing"
        elif status == 429:
            cause = "rate_limited"
        elif status == 529:
            cause = "overloaded"
        return {"cause": cause, "httpStatus": str(status), "httpStatusClass": f"{status // 100}xx"}
    if result.get("subtype") == "error_max_turns":
        return {"cause": "max_turns"}
    if assistant_error == "authentication_failed":
        return {"cause": "auth_missing"}
    if assistant_error == "rate_limit":
        return {"cause": "rate_limited"}
    text = result.get("result")
    if isinstance(text, str):
        for token in _TOKEN_RE.findall(text[-500:]):
            found = _CONNECTION_TOKENS.get(token)
            if found is not None:
                return {"cause": found}
    return {"cause": "unknown"}


@dataclass(frozen=True, slots=True)
class LimitHints:
    """What the CLI told about limits before a turn failed: the latest meters of its
    ``rate_limit_event`` records, and its last retry of an HTTP 429 (``api_retry``:
    the delay it chose, which follows the server's ``retry-after``, and when)."""

    meters: tuple[LimitMeter, ...] = ()
    retry_after: float | None = None
    retry_at: float | None = None
    #: the time of the failure (Unix seconds): a meter whose reset passed no longer counts
    now: float | None = None


def classify_result(
    result: Mapping[str, Any],
    *,
    interrupting: bool,
    assistant_error: str | None = None,
    limits: LimitHints | None = None,
) -> RunOutcome:
    """The outcome of a turn from its ``result`` message.

    * ``is_error`` false (and subtype ``success``) → completed with ``stop_reason``;
    * after an interrupt: ``terminal_reason`` ``aborted_*`` or subtype
      ``error_during_execution`` → interrupted;
    * otherwise failed: ``api_error_status`` 401/403 → ``provider_auth_required``, 429 →
      ``provider_rate_limited``, else (5xx, connection failures, ``error_max_turns`` …)
      ``provider_failed``; without a status, the synthetic assistant message's ``error``
      kind decides.  ``details`` classify the cause (:func:`failure_details`); a run
      that hit a limit (``rate_limited``, or ``quota_exhausted`` for the CLI's
      ``billing_error``) carries ``resetsAt`` / ``retryAfterSeconds`` from ``limits``.
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
    code = http_status_code(status) or "provider_failed"
    if (status is None or assistant_error == "billing_error") and (
        assistant_error in _ASSISTANT_ERRORS
    ):
        code = _ASSISTANT_ERRORS[assistant_error]
    detail = (
        f"result subtype={_short(subtype)} api_error_status={_short(status)} "
        f"terminal_reason={_short(terminal)} error_kind={_short(assistant_error)}"
    )
    details = failure_details(result, status, assistant_error)
    cause = details["cause"]
    hint = limits or LimitHints()
    if cause == "rate_limited" and any(m.status == "exhausted" for m in hint.meters):
        cause = details["cause"] = "quota_exhausted"  # the subscription's usage limit
    if cause == "rate_limited" or cause == "quota_exhausted":
        details.update(
            limit_details(
                cast("FailureCause", cause),
                resets_at=reset_of(hint.meters, hint.now),
                retry_after=hint.retry_after,
                now=hint.retry_at,
            )
        )
    return RunOutcome.failed(code, detail, details)


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


def _nonneg_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value)


# --------------------------------------------------------------------------- turn records


@dataclass(eq=False)
class TurnState:
    """What the mapping remembers within one turn."""

    #: The tools started in this turn (by tool-use id).
    tools: ToolCalls = field(default_factory=ToolCalls)
    #: Ids of assistant messages whose text was already streamed as deltas.
    streamed: set[str] = field(default_factory=set)
    #: The id of the assistant message being streamed (its ``message_start``'s).
    message_id: str | None = None
    #: Prompt size of the last model request (``None`` until one started).
    prompt_tokens: int | None = None
    output_tokens: int = 0
    #: The ``error`` kind of the CLI's synthetic assistant message, if one came.
    assistant_error: str | None = None
    #: Whether a ``can_use_tool`` request declined unasked was reported in this turn.
    declined_reported: bool = False
    #: Lines reported as stray, unparseable or oversized in this turn, by code.
    noted: dict[str, int] = field(default_factory=dict)
    #: Subtypes of control requests declined (and reported) in this turn.
    declined_subtypes: set[str] = field(default_factory=set)
    #: Unknown record types already reported in this turn.
    unknown_types: set[str] = field(default_factory=set)
    #: The subagent (its Task/Agent tool call) each tool call inside one was made by.
    parents: dict[str, str] = field(default_factory=dict)
    #: The Task/Agent tool calls that run a subagent.
    subagents: set[str] = field(default_factory=set)
    #: The Task/Agent tool call of each subagent, by the CLI's agent (task) id.
    agents: dict[str, str] = field(default_factory=dict)
    #: The delay the CLI announced before its last retry of an HTTP 429, and when.
    retry_after: float | None = None
    retry_at: float | None = None


def stream_event_payloads(state: TurnState, message: Mapping[str, Any]) -> list[ProviderPayload]:
    """The payloads of a ``stream_event`` (token deltas, each naming its message's id);
    records the message id (so its full ``assistant`` copy is not repeated) and the token
    counts in ``state``.  A
    subagent's stream (``parent_tool_use_id`` set) yields nothing."""
    if message.get("parent_tool_use_id") is not None:
        return []
    event = message.get("event")
    if not isinstance(event, dict):
        return []
    kind = event.get("type")
    if kind == "content_block_delta":
        delta = event.get("delta")
        if not isinstance(delta, dict):
            return []
        if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
            return [TextDelta(text=delta["text"], message_id=state.message_id)]
        if delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
            return [ThinkingDelta(text=delta["thinking"], message_id=state.message_id)]
    elif kind == "message_start":
        body = event.get("message")
        if isinstance(body, dict):
            message_id = body.get("id")
            state.message_id = message_id if isinstance(message_id, str) else None
            if isinstance(message_id, str):
                state.streamed.add(message_id)
            usage = body.get("usage")
            state.prompt_tokens = prompt_tokens(usage)
            state.output_tokens = _nonneg_int(
                usage.get("output_tokens") if isinstance(usage, dict) else 0
            )
    elif kind == "message_delta":
        usage = event.get("usage")
        if isinstance(usage, dict):
            state.output_tokens = _nonneg_int(usage.get("output_tokens")) or state.output_tokens
    return []


def assistant_payloads(state: TurnState, message: Mapping[str, Any]) -> list[ProviderPayload]:
    """The payloads of a complete ``assistant`` message: a ``started`` tool activity per
    new ``tool_use`` block, and its text and thinking unless they were streamed already,
    the message is synthetic (an API failure) or a subagent's."""
    body = message.get("message")
    if not isinstance(body, dict):
        return []
    out: list[ProviderPayload] = []
    error = message.get("error")
    if isinstance(error, str):
        state.assistant_error = error
    synthetic = isinstance(error, str) or body.get("model") == "<synthetic>"
    parent = message.get("parent_tool_use_id")
    parent = parent if isinstance(parent, str) and parent else None
    main_thread = parent is None
    streamed = body.get("id") in state.streamed
    message_id = body["id"] if isinstance(body.get("id"), str) else None
    content = body.get("content")
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use":
            tool_id, name = block.get("id"), block.get("name")
            name = name if isinstance(name, str) and name else "tool"
            if isinstance(tool_id, str) and state.tools.start(tool_id, name) is not None:
                tool_input = block.get("input")
                if parent is not None:
                    state.parents[tool_id] = parent
                subagent = subagent_of(name, tool_input)
                if subagent is not None:
                    state.subagents.add(tool_id)
                out.append(
                    ToolActivity(
                        tool_id,
                        name,
                        "started",
                        input=tool_input,
                        parent_tool_call_id=parent,
                        subagent=subagent,
                        **tool_view(name, tool_input),
                    )
                )
        elif synthetic or streamed or not main_thread:
            continue
        elif kind == "text" and _nonempty(block.get("text")):
            out.append(TextDelta(text=block["text"], message_id=message_id))
        elif kind == "thinking" and _nonempty(block.get("thinking")):
            out.append(ThinkingDelta(text=block["thinking"], message_id=message_id))
    return out


#: Claude Code's tools by what they do (ACP's tool kinds); others are ``other``.
_TOOL_KINDS: Final[dict[str, ToolKind]] = {
    "Read": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "TodoWrite": "think",
}


def _edit(path: str, old: object, new: object) -> ToolEdit | None:
    if not isinstance(new, str):
        return None
    return ToolEdit(path=path, new_text=new, old_text=old if isinstance(old, str) else None)


def tool_view(name: str, tool_input: object) -> dict[str, Any]:
    """The tool-call model of a ``tool_use`` (kind, title, locations, and for ``Edit``,
    ``MultiEdit`` and ``Write`` the structured edits): ``ToolActivity`` keyword
    arguments.  ``Write`` has no old text (a new file, or content the CLI replaces
    whole)."""
    view: dict[str, Any] = {"kind": _TOOL_KINDS.get(name, "other")}
    args = tool_input if isinstance(tool_input, dict) else {}
    path = args.get("file_path") or args.get("notebook_path") or args.get("path")
    if isinstance(path, str) and path:
        view["locations"] = (ToolLocation(path),)
        view["title"] = f"{name} {path}"[:500]
    elif name == "Bash" and isinstance(args.get("command"), str):
        view["title"] = args["command"][:500]
    content: list[ToolContent] = []
    if isinstance(path, str) and path:
        if name == "Edit":
            edit = _edit(path, args.get("old_string"), args.get("new_string"))
            content += [edit] if edit is not None else []
        elif name == "Write":
            edit = _edit(path, None, args.get("content"))
            content += [edit] if edit is not None else []
        elif name == "MultiEdit":
            for item in args.get("edits") or []:
                if isinstance(item, dict):
                    edit = _edit(path, item.get("old_string"), item.get("new_string"))
                    content += [edit] if edit is not None else []
    if content:
        view["content"] = tuple(content)
    return view


def tool_result_payloads(state: TurnState, message: Mapping[str, Any]) -> list[ProviderPayload]:
    """The payloads of a ``user`` message: a ``completed``/``failed`` tool activity (with
    the output, cut) per ``tool_result`` block."""
    body = message.get("message")
    content = body.get("content") if isinstance(body, dict) else None
    out: list[ProviderPayload] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        tool_id = block.get("tool_use_id")
        if not isinstance(tool_id, str):
            continue
        state.tools.end(tool_id)
        name = state.tools.name(tool_id, "tool")
        status: Literal["completed", "failed"] = (
            "failed" if block.get("is_error") is True else "completed"
        )
        subagent = Subagent(status=status) if tool_id in state.subagents else None
        out.append(
            ToolActivity(
                tool_id,
                name,
                status,
                output=tool_output(block.get("content")),
                parent_tool_call_id=state.parents.get(tool_id),
                subagent=subagent,
            )
        )
    return out


def open_tools_failed(state: TurnState) -> list[ProviderPayload]:
    """At a run's end (its ``result``, the CLI's exit, a failed task): a ``failed`` tool
    activity for every tool call of the turn that started and got no ``tool_result``, in
    the order they started, each with its subagent parent (and, for a call that runs a
    subagent, that subagent ``failed``); marks them ended (a second call returns ``[]``)."""
    out: list[ProviderPayload] = []
    for activity in state.tools.fail_open():
        tool_id = activity.tool_call_id
        subagent = Subagent(status="failed") if tool_id in state.subagents else None
        out.append(
            ToolActivity(
                tool_id,
                activity.name,
                "failed",
                parent_tool_call_id=state.parents.get(tool_id),
                subagent=subagent,
            )
        )
    return out


#: Claude Code's tools that run a subagent (``Task``; ``Agent`` in later versions).
SUBAGENT_TOOLS: Final = frozenset({"Task", "Agent"})


def subagent_of(name: str, tool_input: object) -> Subagent | None:
    """The subagent a ``tool_use`` of ``name`` starts (its type and description from
    the input), or ``None`` for any other tool."""
    if name not in SUBAGENT_TOOLS:
        return None
    args = tool_input if isinstance(tool_input, dict) else {}
    kind, description = args.get("subagent_type"), args.get("description")
    return Subagent(
        agent_type=kind[:100] if isinstance(kind, str) and kind else None,
        description=description[:500] if isinstance(description, str) and description else None,
        status="running",
    )


def _subagent_usage(usage: object) -> SubagentUsage | None:
    if not isinstance(usage, dict):
        return None

    def count(value: object) -> int | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53
        return value if ok else None  # type: ignore[return-value]

    return SubagentUsage(
        total_tokens=count(usage.get("total_tokens")),
        tool_uses=count(usage.get("tool_uses")),
        duration_ms=count(usage.get("duration_ms")),
    )


_TASK_STATUS: Final[dict[str, Literal["running", "completed", "failed"]]] = {
    "completed": "completed",
    "failed": "failed",
    "killed": "failed",
    "stopped": "failed",
}


def task_payloads(state: TurnState, message: Mapping[str, Any]) -> list[ProviderPayload]:
    """The payloads of a ``system`` record about a subagent (``task_started``,
    ``task_progress``, ``task_notification``; each names its agent's id, remembered in
    ``state``): an ``output`` tool activity of the tool call that runs it,
    with its status and usage so far.  Nothing for a call the turn did not start (a
    background task of another turn) or for ``task_started`` (its ``started`` came with
    the tool call)."""
    subtype = message.get("subtype")
    tool_id = message.get("tool_use_id")
    if not isinstance(tool_id, str) or tool_id not in state.subagents:
        return []
    task_id = message.get("task_id")
    if isinstance(task_id, str) and task_id and len(state.agents) < 1000:
        state.agents[task_id] = tool_id  # what its permission requests name it by
    if subtype == "task_progress":
        status: Literal["running", "completed", "failed"] = "running"
    elif subtype == "task_notification":
        status = _TASK_STATUS.get(str(message.get("status")), "running")
    else:
        return []
    if state.tools.is_ended(tool_id):
        return []
    subagent = Subagent(status=status, usage=_subagent_usage(message.get("usage")))
    name = state.tools.name(tool_id, "Task")
    return [
        ToolActivity(
            tool_id,
            name,
            "output",
            parent_tool_call_id=state.parents.get(tool_id),
            subagent=subagent,
        )
    ]


# --------------------------------------------------------------------------- usage


@dataclass(eq=False)
class UsageTotals:
    """The session's cumulative usage (kept across CLI processes in the recovery record).

    ``process_cost`` is the last ``total_cost_usd`` of the current CLI process, which
    reports it cumulatively per process (0 again after a restart).
    """

    input: int = 0
    output: int = 0
    cached: int = 0
    cost_usd: float | None = None
    process_cost: float = 0.0

    @classmethod
    def from_record(cls, usage: Mapping[str, Any] | None) -> UsageTotals:
        """The totals of a recovery record's ``usage`` (invalid fields count as 0)."""
        usage = usage or {}
        cost = usage.get("costUsd")
        return cls(
            input=_nonneg_int(usage.get("input")),
            output=_nonneg_int(usage.get("output")),
            cached=_nonneg_int(usage.get("cached")),
            cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
        )

    def record(self) -> dict[str, Any]:
        """The ``usage`` of the recovery record."""
        usage: dict[str, Any] = {"input": self.input, "output": self.output, "cached": self.cached}
        if self.cost_usd is not None:
            usage["costUsd"] = self.cost_usd
        return usage


def usage_payload(
    totals: UsageTotals, state: TurnState, result: Mapping[str, Any], model: str | None
) -> Usage:
    """The usage event of a turn's ``result``: adds the turn to ``totals`` and reports the
    context occupancy of its last model request."""
    tokens_in, tokens_out, cached = turn_tokens(result.get("usage"))
    totals.input += tokens_in
    totals.output += tokens_out
    totals.cached += cached
    cost = result.get("total_cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        spent = cost - totals.process_cost if cost >= totals.process_cost else cost
        totals.process_cost = float(cost)
        totals.cost_usd = round((totals.cost_usd or 0.0) + spent, 10)
    context = None
    if state.prompt_tokens is not None:
        context = ContextUsage(
            used_tokens=state.prompt_tokens + state.output_tokens,
            max_tokens=context_window(result.get("modelUsage"), model),
        )
    return Usage(
        context=context,
        cumulative=CumulativeUsage(
            input_tokens=totals.input,
            output_tokens=totals.output,
            cached_input_tokens=totals.cached,
            cost_usd=totals.cost_usd,
        ),
    )


# --------------------------------------------------------------------------- permissions


@dataclass(frozen=True, slots=True)
class Permission:
    """A ``can_use_tool`` request read: the interaction to raise and what the reply
    needs (the tool input as asked, the session rules an approval may apply, and for
    ``AskUserQuestion`` the questions asked)."""

    interaction: InteractionRequest
    tool_input: dict[str, Any]
    session_updates: list[dict[str, Any]]
    questions: tuple[AskedQuestion, ...] | None = None


#: The largest tool input a ``can_use_tool`` request may carry to be asked, as encoded
#: JSON: what is approved is sent back to the CLI as the input to run, and it is journaled
#: with the approval, so it must be shown whole.  A model's tool call is bounded by its
#: output (a few hundred KiB for the largest ``Write``); this leaves room to spare.
MAX_TOOL_INPUT_BYTES: Final = 4 * 1024 * 1024
#: How deep objects and arrays may nest in a tool input that is asked (the built-in
#: tools' inputs nest 3 deep; an MCP tool's schema rarely more than a few).
MAX_TOOL_INPUT_DEPTH: Final = 64
#: The longest tool name (and display name) of a ``can_use_tool`` request that is asked.
MAX_TOOL_NAME: Final = 256


def tool_request_ok(request: Mapping[str, Any]) -> bool:
    """Whether a ``can_use_tool`` request may be shown to the host (and so approved): its
    ``tool_name`` and ``display_name`` at most :data:`MAX_TOOL_NAME` characters, its
    ``input`` at most :data:`MAX_TOOL_INPUT_BYTES` encoded and
    :data:`MAX_TOOL_INPUT_DEPTH` deep.  One that is not is declined without asking."""
    for key in ("tool_name", "display_name"):
        text = request.get(key)
        if isinstance(text, str) and len(text) > MAX_TOOL_NAME:
            return False
    tool_input = request.get("input")
    return not isinstance(tool_input, dict) or json_within(
        tool_input, MAX_TOOL_INPUT_BYTES, MAX_TOOL_INPUT_DEPTH
    )


def permission_request(
    request: Mapping[str, Any], cwd: str, state: TurnState | None = None
) -> Permission:
    """Read a ``can_use_tool`` request: an ``AskUserQuestion`` of the expected shape is a
    question (set); anything else an approval of the tool, offering ``session`` only when
    the CLI suggested session-scoped rules."""
    tool_name = request.get("tool_name")
    tool_name = tool_name if isinstance(tool_name, str) and tool_name else "tool"
    display = request.get("display_name")
    display = display if isinstance(display, str) and display else tool_name
    raw_input = request.get("input")
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    if tool_name == protocol.ASK_TOOL:
        parsed = parse_questions(tool_input)
        if parsed is not None:
            question, asked = parsed
            return Permission(question, tool_input, [], asked)
    updates = session_permission_updates(request.get("permission_suggestions"))
    command = tool_input.get("command") if tool_name == "Bash" else None
    approval = ApprovalRequest(
        action="tool",
        title=f"Allow Claude Code to use {display[:100]}",
        tool_name=tool_name,
        input=tool_input,
        command=command if isinstance(command, str) else None,
        cwd=cwd,
        modes=approval_modes(bool(updates)),
        parent_tool_call_id=_parent_of(request, state),
    )
    return Permission(approval, tool_input, updates)


def _parent_of(request: Mapping[str, Any], state: TurnState | None) -> str | None:
    """The subagent tool call a ``can_use_tool`` request comes from (its tool call was
    made inside one), else ``None``."""
    if state is None:
        return None
    tool_id, agent_id = request.get("tool_use_id"), request.get("agent_id")
    # The CLI may ask before it reports the subagent's tool call: its agent id tells.
    if isinstance(tool_id, str) and tool_id in state.parents:
        return state.parents[tool_id]
    return state.agents.get(agent_id) if isinstance(agent_id, str) else None


def permission_reply(
    permission: Permission, outcome: InteractionOutcome, *, interrupt: bool
) -> dict[str, Any]:
    """The ``can_use_tool`` reply for the interaction's settlement: allow (with the
    answers, or with the session rules for a ``session`` approval) or deny (``interrupt``
    also ends the turn, when the run is being interrupted)."""
    if permission.questions is not None:
        answers = (
            question_answers(permission.questions, outcome.answer)
            if outcome.status == "responded"
            else None
        )
        if answers is None:
            return protocol.deny_reply(interrupt=interrupt, message=protocol.NO_ANSWER_MESSAGE)
        return protocol.allow_reply({**permission.tool_input, "answers": answers})
    verdict = approval_verdict(outcome, session_ok=bool(permission.session_updates))
    if is_allow(verdict):
        return protocol.allow_reply(
            permission.tool_input,
            permission.session_updates if verdict == "allow_session" else None,
        )
    return protocol.deny_reply(interrupt=interrupt)


def user_content(input: RunInput) -> str | list[dict[str, Any]]:
    """A run's input as the content of the CLI's user message: its text when it is text
    only; else Messages API blocks, in order: a text block as text, an image as a base64
    ``image`` block, a file reference as the mention ``@<path>`` (with ``(lines a-b)``)
    for the CLI's tools to read, an embedded resource as its text in
    ``<context ref="…">`` … ``</context>``; a command as the text ``/<name> <arguments>``
    (the whole message when it is the only block: the CLI expands a slash command, a
    custom command or a skill only from a message that starts with it)."""
    if input.text is not None:
        return input.text
    if len(input.content) == 1 and isinstance(input.content[0], CommandInput):
        return _command_text(input.content[0])
    out: list[dict[str, Any]] = []
    for block in input.content:
        if isinstance(block, TextInput):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageInput):
            source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
            out.append({"type": "image", "source": source})
        elif isinstance(block, FileInput):
            out.append({"type": "text", "text": _mention(block)})
        elif isinstance(block, ResourceInput):
            ref = block.uri or "untitled"
            out.append({"type": "text", "text": f'<context ref="{ref}">\n{block.text}\n</context>'})
        elif isinstance(block, CommandInput):
            out.append({"type": "text", "text": _command_text(block)})
    return out


def _command_text(block: CommandInput) -> str:
    return f"/{block.name} {block.arguments or ''}".rstrip()


#: The most commands (and models) kept of what the CLI names: they are sent to hosts
#: and journaled with each change (2.1.197 names a few dozen; plugins and skills add some).
MAX_COMMANDS: Final = 1024
#: The longest command description and argument hint kept (longer ones are cut).
_MAX_DESCRIPTION: Final = 1000
_MAX_HINT: Final = 200


def commands_of(value: object) -> tuple[CommandInfo, ...] | None:
    """The commands of the CLI's ``initialize`` answer (``commands``: name, description,
    ``argumentHint``), the first :data:`MAX_COMMANDS`; ``None`` when it names none."""
    if not isinstance(value, list):
        return None
    out: list[CommandInfo] = []
    for entry in value:
        if len(out) >= MAX_COMMANDS:
            break
        if not isinstance(entry, dict):
            continue
        name, description, hint = (
            entry.get("name"),
            entry.get("description"),
            entry.get("argumentHint"),
        )
        if isinstance(name, str) and name.strip():
            out.append(
                CommandInfo(
                    name.strip()[:200],
                    description[:_MAX_DESCRIPTION] if isinstance(description, str) else "",
                    hint[:_MAX_HINT] if isinstance(hint, str) and hint else None,
                )
            )
    return tuple(out)


def commands_after_init(
    known: tuple[CommandInfo, ...] | None, names: object
) -> tuple[CommandInfo, ...] | None:
    """The commands once a turn's ``init`` names ``slash_commands``: those still named
    keep what ``initialize`` said of them, new ones come with their name only.  ``None``
    when nothing changed (or the record names none)."""
    if not isinstance(names, list):
        return None
    wanted = [n.strip()[:200] for n in names if isinstance(n, str) and n.strip()]
    wanted = list(dict.fromkeys(wanted))[:MAX_COMMANDS]
    before = {c.name: c for c in known or ()}
    if known is not None and set(before) == set(wanted):
        return None
    return tuple(before.get(n) or CommandInfo(n) for n in wanted)


def _mention(block: FileInput) -> str:
    if block.start_line is None:
        return f"@{block.path}"
    end = block.end_line if block.end_line is not None else block.start_line
    return f"@{block.path} (lines {block.start_line}-{end})"


def models_of(value: object) -> tuple[SettingValue, ...]:
    """The models of the CLI's ``initialize`` answer (``value``, ``displayName``)."""
    if not isinstance(value, list):
        return ()
    models = (
        SettingValue(
            m["value"][:200], name[:200] if isinstance(name := m.get("displayName"), str) else ""
        )
        for m in value
        if isinstance(m, dict) and isinstance(m.get("value"), str) and m["value"]
    )
    return tuple(itertools.islice(models, MAX_COMMANDS))
