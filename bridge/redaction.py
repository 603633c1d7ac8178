"""Credential redaction for text the bridge did not write.

Why this module exists: a provider's stderr, an upstream error body or a CLI's message
may carry API keys, bearer tokens or passwords, and such text must not reach a log, an
error detail or a host unscrubbed.  :func:`redact` is that one safety net, shared by the
process layer (:mod:`bridge.processes` redacts every stderr tail) and the adapters.  It
depends on nothing but :mod:`re`, so anything may import it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["redact"]

_REDACTED: Final = "[REDACTED]"

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
    text = _AUTH_HEADER_RE.sub(rf"\1{_REDACTED}", text)
    text = _BEARER_RE.sub(rf"\1{_REDACTED}", text)
    text = _KEY_VALUE_RE.sub(_redact_key_value, text)
    text = _URL_USERINFO_RE.sub(rf"\1{_REDACTED}@", text)
    return _TOKEN_SHAPES_RE.sub(_REDACTED, text)
