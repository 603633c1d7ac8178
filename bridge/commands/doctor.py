"""``agent-bridge doctor``: what a new user needs to know before a host spawns the bridge.

Every provider's availability (its own probe: silent, loopback only, bounded in time),
the state directory, the journal's health and size (read-only: a missing journal is
reported, never created) and the config file in use (none yet: the bridge reads its
settings from options and the environment).  Exit status 0 when at least one real provider
is available (the scripted one counts only with ``--provider scripted``), 1 otherwise.
A table (status marks on a terminal) or ``--json``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parsers", "run", "run_doctor"]


def add_parsers(sub: Any) -> None:
    """Add ``doctor`` to the subcommand parsers ``sub``."""
    doctor = sub.add_parser(
        "doctor",
        help="check providers, the state directory and the journal",
        description="Probe every provider (no network but loopback, bounded in time) and "
        "check the state directory and journal (read-only). Exit status 1 when no provider "
        "that drives an agent is usable (installed and not logged out): the built-in "
        "scripted one counts only with --provider scripted.",
        epilog="example: agent-bridge doctor --provider claude-code --json",
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON object")
    doctor.add_argument("--provider", metavar="ID", help="check only this provider")
    doctor.add_argument(
        "--state-dir", metavar="DIR", help="the state directory to check (default: as serve)"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``doctor`` (see :func:`run_doctor`)."""
    return run_doctor(as_json=args.json, provider=args.provider, state_dir=args.state_dir)


#: The whole probe phase is bounded: a provider still probing after this is reported as
#: timed out.
PROBE_BUDGET: Final = 30.0


def _state_dir(option: str | None) -> str | None:
    from agent_bridge.journal.paths import MEMORY, resolve_state_dir

    chosen = resolve_state_dir(option)
    return None if chosen == MEMORY else chosen


def _journal(state_dir: str | None) -> dict[str, Any]:
    from agent_bridge.journal.paths import JOURNAL_FILE

    if state_dir is None:
        return {"status": "none", "reason": "the journal is kept in memory (:memory:)"}
    from agent_bridge.journal.errors import JournalError
    from agent_bridge.journal.schema import check_files

    path = os.path.join(state_dir, JOURNAL_FILE)
    try:
        check_files(path)  # what serve refuses at start (a named pipe would hang a read)
    except JournalError as exc:
        return {"path": path, "status": "unreadable", "reason": str(exc)}
    if not os.path.isfile(path):
        return {"status": "absent", "reason": "no journal yet: the first `serve` creates it"}
    size = sum(
        os.path.getsize(path + suffix)
        for suffix in ("", "-wal", "-shm")
        if os.path.exists(path + suffix)
    )
    out: dict[str, Any] = {"path": path, "bytes": size}
    try:
        # Read-only and immutable-safe: mode=ro never creates the file or its WAL.
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            row = conn.execute("PRAGMA quick_check").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return out | {"status": "unreadable", "reason": type(exc).__name__}
    ok = row is not None and row[0] == "ok"
    return out | {"status": "ok" if ok else "damaged"}


async def _probe_all(only: str | None) -> list[dict[str, Any]]:
    import anyio
    import msgspec

    from agent_bridge.registry import ProviderRegistry

    results: list[dict[str, Any]] = []
    for prov in ProviderRegistry.default().all():
        descriptor = prov.describe()
        if only is not None and descriptor.id != only:
            continue
        entry: dict[str, Any] = {"id": descriptor.id, "name": descriptor.display_name}
        with anyio.move_on_after(PROBE_BUDGET) as scope:
            availability = await prov.probe()
            entry |= msgspec.to_builtins(availability)
        if scope.cancelled_caught:
            entry |= {"status": "unknown", "reason": "the probe did not finish in time"}
        results.append(entry)
    return results


def _table(report: dict[str, Any], colour: bool) -> str:
    # No colour escapes: the source tree keeps terminal escape sequences out of its
    # literals (tests/hardening/test_hard_static_spawn.py); a terminal gets a status
    # mark instead, a pipe plain words.
    def paint(text: str, status: str) -> str:
        if not colour:
            return text
        mark = {"available": "+", "ok": "+", "unavailable": "x", "damaged": "x"}.get(status, "?")
        return f"{mark} {text}"

    rows = [("provider", "status", "version", "auth", "next step")]
    for p in report["providers"]:
        rows.append(
            (
                p["id"],
                p.get("status", "?"),
                p.get("version") or "-",
                p.get("authentication") or "-",
                p.get("nextStep") or p.get("reason") or "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[c].ljust(widths[c]) for c in range(4)]
        if i:
            cells[1] = paint(cells[1], row[1])
        lines.append("  ".join([*cells, row[4]]).rstrip())
    journal = report["journal"]
    lines += [
        "",
        f"state directory: {report['stateDir'] or '(none: :memory:)'}",
        "journal: "
        + paint(journal["status"], journal["status"])
        + (f" ({journal['bytes']} bytes, {journal['path']})" if "bytes" in journal else "")
        + (f" - {journal['reason']}" if "reason" in journal else ""),
        f"config file: {report['configFile'] or '(none: options and environment only)'}",
        f"daemon: {report['daemon']}",
    ]
    return "\n".join(lines) + "\n"


def run_doctor(*, as_json: bool, provider: str | None, state_dir: str | None) -> int:
    """Print the report; return 0 when some provider is usable, 1 otherwise (2 for an
    unknown ``provider``)."""
    import anyio
    import msgspec

    from agent_bridge.registry import ProviderRegistry

    known = [p.id for p in ProviderRegistry.default().all()]
    if provider is not None and provider not in known:
        sys.stderr.write(
            f"agent-bridge doctor: no provider {provider!r} (known: {', '.join(known)})\n"
        )
        return 2
    providers = anyio.run(_probe_all, provider)
    directory = _state_dir(state_dir)
    report: dict[str, Any] = {
        "providers": providers,
        "stateDir": directory,
        "journal": _journal(directory),
        "configFile": None,
        "daemon": "none (each host spawns its own `serve`)",
    }
    if as_json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
    else:
        colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        sys.stdout.write(_table(report, colour))
    # Usable: installed and not known to be logged out ("unknown" -- a key variable, an
    # ACP agent -- cannot be told offline, so it is not held against the provider).  The
    # scripted provider is always there and drives no agent: it counts only when asked
    # for by name.
    usable = any(
        p.get("status") == "available"
        and p.get("authentication") != "unauthenticated"
        and (p["id"] != "scripted" or provider == "scripted")
        for p in providers
    )
    return 0 if usable else 1
