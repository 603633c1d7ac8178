"""The bridge's closed set of error codes, each with whether a retry can help.

A host receives a JSON-RPC error whose ``data`` is an :class:`ErrorInfo`; failed runs
carry the same object in their ``run.failed`` event.  Messages come from this table, never
from upstream prose, so nothing a provider printed reaches a host.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final, Literal

from agent_bridge.wire.common import WireStruct

__all__ = [
    "DETAIL_TYPES",
    "ERROR_CODES",
    "ErrorCode",
    "ErrorDetailValue",
    "ErrorInfo",
    "ErrorSpec",
    "FailureCause",
    "safe_details",
]

ErrorCode = Literal[
    "not_initialized",
    "already_initialized",
    "unsupported_protocol_version",
    "shutting_down",
    "invalid_params",
    "invalid_option",
    "unsupported",
    "provider_not_found",
    "provider_unavailable",
    "provider_auth_required",
    "provider_failed",
    "provider_crashed",
    "provider_timeout",
    "provider_rate_limited",
    "provider_contract",
    "session_not_found",
    "blob_not_found",
    "session_closed",
    "run_not_found",
    "run_active",
    "run_not_active",
    "interaction_not_found",
    "interaction_already_settled",
    "interaction_not_pending",
    "invalid_answer",
    "command_conflict",
    "workspace_invalid",
    "recovery_invalid",
    "overloaded",
    "bridge_crashed",
    "session_in_use",
    "history_unavailable",
    "journal_failing",
    "history_corrupt",
    "internal",
]


#: Why a provider failed, as far as the adapter can tell without passing on upstream prose:
#: ``details.cause`` of a ``provider_*`` error (``run.failed`` or a command's error).
FailureCause = Literal[
    "connection_refused",
    "connection_reset",
    "connection_timeout",
    "dns_failure",
    "tls_failure",
    "http_status",
    "auth_missing",
    "rate_limited",
    "quota_exhausted",
    "overloaded",
    "max_turns",
    "cli_exited",
    "cli_too_old",
    "cli_not_found",
    "unknown",
]

_CAUSES: Final = frozenset(FailureCause.__args__)  # type: ignore[attr-defined]
_HTTP_CLASSES: Final = frozenset({"1xx", "2xx", "3xx", "4xx", "5xx"})
_SAFE_TEXT: Final = re.compile(r"^[A-Za-z0-9_.:/@+\-]{1,100}$")
#: An instant as ``resetsAt`` carries it: ISO 8601 in UTC, to the second.
_INSTANT: Final = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")

#: A value of ``ErrorInfo.details``: a short allowlisted string, or (``supported``) a
#: list of integers.
ErrorDetailValue = str | list[int]

#: The keys of ``details`` whose value is a list of integers (every other key is a string).
_INT_LIST_DETAILS: Final = frozenset({"supported"})

#: The keys ``details`` may carry, each with the check its (string) value must pass.
#: Anything else (or a value that fails its check) is dropped before it reaches a host.
_DETAIL_CHECKS: Final[dict[str, Callable[[str], bool]]] = {
    "cause": lambda v: v in _CAUSES,
    "httpStatusClass": lambda v: v in _HTTP_CLASSES,
    "httpStatus": lambda v: v.isdigit() and len(v) == 3,
    "exitStatus": lambda v: re.fullmatch(r"-?\d{1,4}", v) is not None,
    "version": lambda v: _SAFE_TEXT.match(v) is not None,
    "minimumVersion": lambda v: _SAFE_TEXT.match(v) is not None,
    "field": lambda v: _SAFE_TEXT.match(v) is not None,
    "option": lambda v: len(v) <= 100,
    "scope": lambda v: v in ("session", "run"),
    "provider": lambda v: len(v) <= 100,
    "missing": lambda v: len(v) <= 200,
    "searched": lambda v: len(v) <= 300,
    "variable": lambda v: _SAFE_TEXT.match(v) is not None,
    "reason": lambda v: len(v) <= 300,
    "nextStep": lambda v: len(v) <= 300,
    "resetsAt": lambda v: _INSTANT.match(v) is not None,
    "retryAfterSeconds": lambda v: v.isdigit() and len(v) <= 7,
}

#: Every key ``details`` may carry and the JSON type of its value (``string`` or
#: ``integers``), as the published schema types ``ErrorDetails``.
DETAIL_TYPES: Final[dict[str, Literal["string", "integers"]]] = {
    **{key: "string" for key in _DETAIL_CHECKS},
    **{key: "integers" for key in _INT_LIST_DETAILS},
}


def _safe_value(key: str, value: object) -> bool:
    if key in _INT_LIST_DETAILS:
        return (
            isinstance(value, list)
            and 0 < len(value) <= 20
            and all(type(i) is int and 0 <= i < 10_000 for i in value)
        )
    check = _DETAIL_CHECKS.get(key)
    return check is not None and isinstance(value, str) and check(value)


def safe_details(
    details: Mapping[str, ErrorDetailValue] | None,
) -> dict[str, ErrorDetailValue] | None:
    """Keep only the allowlisted keys of ``details`` whose values pass their checks
    (``None`` when nothing is left).  ``reason``/``nextStep``/``missing`` are the bridge's
    own sentences (adapter constants), never a provider's output."""
    if not details:
        return None
    out: dict[str, ErrorDetailValue] = {
        k: (list(v) if isinstance(v, list) else v) for k, v in details.items() if _safe_value(k, v)
    }
    return out or None


class ErrorSpec(WireStruct, frozen=True):
    """One row of the error table: the code's fixed message and whether to retry."""

    message: str
    retryable: bool


ERROR_CODES: Final[dict[ErrorCode, ErrorSpec]] = {
    "not_initialized": ErrorSpec("the connection is not initialized", False),
    "already_initialized": ErrorSpec("the connection is already initialized", False),
    "unsupported_protocol_version": ErrorSpec("unsupported protocol version", False),
    "shutting_down": ErrorSpec("the bridge is shutting down", False),
    "invalid_params": ErrorSpec("invalid params", False),
    "invalid_option": ErrorSpec("an option is unknown or has a value it does not allow", False),
    "unsupported": ErrorSpec("the provider does not support this", False),
    "provider_not_found": ErrorSpec("no provider with this id", False),
    "provider_unavailable": ErrorSpec("the provider is not available on this machine", False),
    "provider_auth_required": ErrorSpec("the provider needs authentication", False),
    "provider_failed": ErrorSpec("the provider failed", True),
    "provider_crashed": ErrorSpec("the provider process exited unexpectedly", True),
    "provider_timeout": ErrorSpec("the provider did not answer in time", True),
    "provider_rate_limited": ErrorSpec("the provider is rate limited", True),
    "provider_contract": ErrorSpec("the provider broke the adapter contract", False),
    "session_not_found": ErrorSpec("no session with this id", False),
    "blob_not_found": ErrorSpec("the journal holds no content with this SHA-256", False),
    "session_closed": ErrorSpec("the session is closed", False),
    "run_not_found": ErrorSpec("no run with this id", False),
    "run_active": ErrorSpec("the session already has an active run", True),
    "run_not_active": ErrorSpec("the run is not active", False),
    "interaction_not_found": ErrorSpec("no interaction with this id", False),
    "interaction_already_settled": ErrorSpec("the interaction was already settled", False),
    "interaction_not_pending": ErrorSpec("the interaction no longer accepts answers", False),
    "invalid_answer": ErrorSpec("the answer does not fit the interaction", False),
    "command_conflict": ErrorSpec("this commandId was used with another payload", False),
    "workspace_invalid": ErrorSpec("the workspace path is not acceptable", False),
    "recovery_invalid": ErrorSpec("the recovery record cannot be used", False),
    "overloaded": ErrorSpec("too many requests in flight", True),
    "bridge_crashed": ErrorSpec("the bridge process ended while the run was active", True),
    "session_in_use": ErrorSpec("the session is open in another bridge process", True),
    "history_unavailable": ErrorSpec("the session's history cannot be read now", True),
    "journal_failing": ErrorSpec(
        "the journal cannot record now (storage full or failing); retry once it recovers", True
    ),
    "history_corrupt": ErrorSpec(
        "the journal is damaged and is no longer written to; restart the bridge with "
        "another --state-dir (keep the damaged file to recover it)",
        False,
    ),
    "internal": ErrorSpec("internal error", False),
}


class ErrorInfo(WireStruct, frozen=True):
    """A classified error: ``code`` from the closed set, its fixed message, ``retryable``;
    ``correlationId`` names the bridge's log entry for internal errors."""

    code: ErrorCode
    message: str
    retryable: bool
    correlation_id: str | None = None
    details: dict[str, ErrorDetailValue] | None = None

    @classmethod
    def of(
        cls,
        code: ErrorCode,
        correlation_id: str | None = None,
        details: Mapping[str, ErrorDetailValue] | None = None,
    ) -> ErrorInfo:
        """Return the :class:`ErrorInfo` for ``code`` with its table message.

        ``details`` may name what the host sent (an option name, a field) or classify a
        provider failure (``cause``, ``httpStatusClass``, ``exitStatus`` …); it passes
        through :func:`safe_details`, so a key or value off the allowlist never reaches
        a host.
        """
        spec = ERROR_CODES[code]
        return cls(code, spec.message, spec.retryable, correlation_id, safe_details(details))
