"""What ``--journal`` accepts: a PostgreSQL address without a password (plain string work).

Its own small module because ``serve`` checks its options before its first reply
(:mod:`agent_bridge.commands.options`), where importing the journal package or a URL
parser would cost start-up time.  Everything else about the address is libpq's: the
password file (``~/.pgpass``, ``PGPASSFILE``), the service file (``service=``,
``PGSERVICE``), the ``PG*`` environment and TLS settings in the query.  A password
written into the address is refused: it would sit in argv (any local user's ``ps``), in
shell history and in whatever logs a command line.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SCHEMES", "check_url", "is_pg_url"]

SCHEMES: Final = ("postgresql://", "postgres://")
_PASSFILE_ADVICE: Final = (
    "put the password in the libpq password file (~/.pgpass, or PGPASSFILE), "
    "or use a service file or client certificates"
)


def is_pg_url(text: str | None) -> bool:
    """Whether ``text`` names a PostgreSQL journal."""
    return text is not None and text.startswith(SCHEMES)


def check_url(text: str) -> str:
    """Return ``text`` if it is a PostgreSQL address without a password; raises
    ``ValueError`` with a one-line reason (never repeating a password) otherwise."""
    if not is_pg_url(text):
        raise ValueError("must be a postgresql:// address (see docs/fleet.md)")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        # (a line break would also split every message that names the database)
        raise ValueError("a control character in the address is refused")
    rest = text.split("://", 1)[1]
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    if "@" in authority and ":" in authority.rsplit("@", 1)[0]:
        raise ValueError(f"a password in the address is refused: {_PASSFILE_ADVICE}")
    query = rest.split("?", 1)[1] if "?" in rest else ""
    for item in query.split("&"):
        # libpq decodes a parameter's name as it decodes its value (%70assword is password)
        name = _unquote(item.split("=", 1)[0]).strip().lower()
        if name == "password":
            raise ValueError(f"a password in the address is refused: {_PASSFILE_ADVICE}")
        if name == "sslpassword":  # the client key's
            raise ValueError(
                "the client key's password in the address is refused: put sslpassword "
                "in a libpq service file, or use a key without a password"
            )
    return text


def _unquote(text: str) -> str:
    """``text`` with its ``%XX`` escapes decoded byte by byte (enough to compare a name
    with an ASCII one; a bad escape stays as written, and libpq refuses it)."""
    head, *parts = text.split("%")
    out = [head]
    for part in parts:
        try:
            out.append(chr(int(part[:2], 16)) + part[2:] if len(part) >= 2 else "%" + part)
        except ValueError:
            out.append("%" + part)
    return "".join(out)
