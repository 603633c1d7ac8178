"""Credential redaction for text the bridge did not write.

Why this module exists: a provider's stderr, an upstream error body or a CLI's message
may carry API keys, bearer tokens or passwords, and such text must not reach a log, an
error detail or a host unscrubbed.  :func:`redact` is that one safety net, shared by the
process layer (:mod:`agent_bridge.processes` redacts every stderr tail) and the adapters.  It
depends on nothing but :mod:`re` (``logging`` only once a secret is remembered), so
anything may import it.

Two ways a secret is recognised:

* by **shape**: ``Authorization:`` values, ``api_key=...``, ``sk-...`` and the like;
* by **value**: every credential the bridge itself passes to a child process is
  remembered (:func:`remember_secrets`, called by
  :func:`agent_bridge.processes.build_child_env`, the one place a child's environment
  is built) and replaced wherever it appears, whatever it looks like
  (``ANTHROPIC_AUTH_TOKEN=tok-...`` has no key shape).  From the first remembered
  secret on, every log record's message of this process is redacted as it is made
  (a :mod:`logging` record factory), so no handler -- ``--log-file``, stderr, the
  daemon's log -- can print one, whichever module logged it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["MIN_SECRET_LENGTH", "redact", "redact_values", "remember_secrets"]

_REDACTED: Final = "[REDACTED]"

#: Shorter values are not remembered: replacing every ``1`` or ``true`` would make logs
#: unreadable and hide nothing (a credential that short is not one).
MIN_SECRET_LENGTH: Final = 8

#: the remembered values, longest first (so a secret containing another goes whole)
_values: tuple[str, ...] = ()

# Every pattern below runs in linear time on any input: matches start only where the
# previous character cannot continue the match (a lookbehind, not \b, since tokens
# contain "-"), repetitions that could fail late are bounded or possessive, and values
# are matched greedily with nothing after them that could force backtracking.

# Header-style credentials: everything after the colon up to the end of the line/quote.
_AUTH_HEADER_RE: Final = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n]+"
)
_BEARER_RE: Final = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*")
# key=value / "key": "value" where the key names a credential.  No leading \b so that
# FOO_API_KEY=... and x-api-key: ... match at API_KEY / api-key.  A quoted value runs to
# its closing quote or, if there is none, to the end of the line.
_KEY_VALUE_RE: Final = re.compile(
    r"(?i)("
    r"api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|[_-]key"
    r"|client[_-]?secret|secret|access[_-]?token|refresh[_-]?token|id[_-]?token"
    r"|auth[_-]?token|token|passwd|password|credentials?"
    r")"
    r"([\"']?[ \t]*[:=][ \t]*)"
    r"(\"[^\"\r\n]*+\"?|'[^'\r\n]*+'?|[^\s\"',;&}\]]+)"
)
_URL_USERINFO_RE: Final = re.compile(
    r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,31}+://)[^/\s:@]{1,256}+:[^/\s@]{1,256}+@"
)
_TOKEN_SHAPES_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"  # OpenAI / Anthropic keys
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}+(?![0-9A-Za-z])"  # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
    r"|eyJ[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]*"  # JWT
    r")"
)


def _redact_key_value(match: re.Match[str]) -> str:
    """Return the replacement for one key/value credential match (key kept, quotes kept)."""
    value = match.group(3)
    quote = value[0] if value[0] in "'\"" else ""
    if not quote:
        return f"{match.group(1)}{match.group(2)}{_REDACTED}"
    closing = quote if len(value) > 1 and value.endswith(quote) else ""
    return f"{match.group(1)}{match.group(2)}{quote}{_REDACTED}{closing}"


def redact(text: str) -> str:
    """Return ``text`` with credentials replaced by ``[REDACTED]``.

    Recognised: ``Authorization:`` header values, ``Bearer <token>``, key/value pairs
    whose key names a credential (``api_key=...``, ``"apiKey": "..."``,
    ``x-api-key: ...``, ``FOO_TOKEN=...``, ``password: ...``), ``user:pass@`` in URLs,
    and token shapes that are secrets wherever they appear (``sk-...``, GitHub, Slack,
    AWS and Google keys, JWTs).  The names of keys and headers are kept so the text
    still says *what* was removed.  Never raises; runs in time linear in ``len(text)``.

    This is a safety net for text the bridge did not write (a provider's stderr, an
    upstream error body), not a licence to log secrets.
    """
    text = redact_values(text)
    text = _AUTH_HEADER_RE.sub(rf"\1{_REDACTED}", text)
    text = _BEARER_RE.sub(rf"\1{_REDACTED}", text)
    text = _KEY_VALUE_RE.sub(_redact_key_value, text)
    text = _URL_USERINFO_RE.sub(rf"\1{_REDACTED}@", text)
    return _TOKEN_SHAPES_RE.sub(_REDACTED, text)


def redact_values(text: str) -> str:
    """Return ``text`` with every remembered secret value (:func:`remember_secrets`)
    replaced by ``[REDACTED]``; time O(len(text) x remembered values)."""
    for value in _values:
        if value in text:
            text = text.replace(value, _REDACTED)
    return text


def remember_secrets(values: Iterable[str]) -> None:
    """Remember credential ``values`` (those of at least :data:`MIN_SECRET_LENGTH`
    characters) for the life of the process: :func:`redact` replaces them from now on,
    and so does every log record made from now on."""
    global _values
    new = {v for v in values if len(v) >= MIN_SECRET_LENGTH} - set(_values)
    if not new:
        return
    _values = tuple(sorted({*_values, *new}, key=len, reverse=True))
    _redact_log_records()


def _redact_log_records() -> None:
    """Install (once) a log record factory that redacts each record's message."""
    import logging

    previous = logging.getLogRecordFactory()
    if getattr(previous, "agent_bridge_redacts", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # logging reports a bad format itself
            return record
        record.msg = redact(message)
        record.args = None
        return record

    factory.agent_bridge_redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
