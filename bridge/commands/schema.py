"""``agent-bridge schema``: write (or check) the published wire contract in ``schemas/``.

The generation itself is :mod:`agent_bridge.schema`; this is its door.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parsers", "run"]


def add_parsers(sub: Any) -> None:
    """Add ``schema`` to the subcommand parsers ``sub``."""
    schema = sub.add_parser(
        "schema",
        help="write the published wire schemas",
        description="Write the published wire contract (docs/protocol.md): "
        "agent-bridge.schema.json, methods.json, agent-bridge.d.ts, and the runtime values "
        "as ES and CommonJS modules (agent-bridge.mjs, .cjs) with their declarations "
        "(.d.mts, .d.cts).",
        epilog="example: agent-bridge schema --out schemas --check",
    )
    schema.add_argument(
        "--out", default="schemas", metavar="DIR", help="directory to write (default: schemas)"
    )
    schema.add_argument("--check", action="store_true", help="fail if files differ instead")


def run(args: argparse.Namespace) -> int:
    """Write the schemas to ``args.out`` (with ``--check``: compare instead); return the
    exit status."""
    from agent_bridge.schema import write_schemas

    return write_schemas(args.out, check=args.check)
