"""SQL that the SQLite and PostgreSQL journals share, written once with ``?`` markers.

The two backends differ in their parameter marker (SQLite's ``?``, psycopg's ``%s``);
what a statement asks is the same, so it is written once here and each backend passes
its marker.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["Marker", "marked", "sessions_filter"]

#: a backend's parameter marker
Marker = Literal["?", "%s"]


def marked(statement: str, marker: Marker) -> str:
    """Return ``statement`` (written with ``?`` markers, and no other ``?``) with
    ``marker`` in their place."""
    return statement if marker == "?" else statement.replace("?", marker)


def sessions_filter(
    provider: str | None, workspace: str | None, cursor: int | None, marker: Marker
) -> tuple[str, list[Any]]:
    """Return the ``WHERE`` clause (``""`` when nothing filters) and its arguments that
    select the sessions of ``provider`` in ``workspace`` below key ``cursor``, each
    ``None`` meaning any."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("provider_id =", provider), ("workspace =", workspace)):
        if value is not None:
            where.append(f"{column} {marker}")
            args.append(value)
    if cursor is not None:
        where.append(f"skey < {marker}")
        args.append(cursor)
    return (" WHERE " + " AND ".join(where)) if where else "", args
