"""A provider without ``recovery.resumeTurn``, for tests that pin what a bridge does with
a run cut off while it waited on an interaction when its provider cannot continue it
(every CLI agent): the scripted provider (deterministic, no CLI) with the capability off,
installed in a bridge child through the ``agent_bridge.providers`` entry-point group."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from bridge_client import ROOT

__all__ = ["plain_scripted_env"]


def plain_scripted_env(folder: Path) -> dict[str, str]:
    """Write the provider ``scripted-plain`` under ``folder``; return the environment
    (``PYTHONPATH``) a bridge child needs to have it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plain_scripted_provider.py").write_text(
        textwrap.dedent(
            """
            import msgspec
            from agent_bridge.adapters.scripted import ScriptedProvider
            from agent_bridge.wire.providers import RecoveryCapability

            class PlainScriptedProvider(ScriptedProvider):
                id = "scripted-plain"

                def _build_descriptor(self):
                    built = super()._build_descriptor()
                    capabilities = msgspec.structs.replace(
                        built.capabilities, recovery=RecoveryCapability(resume=True)
                    )
                    return msgspec.structs.replace(built, capabilities=capabilities)
            """
        )
    )
    dist = folder / "plain_scripted_provider-1.0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: plain-scripted-provider\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[agent_bridge.providers]\nscripted-plain = plain_scripted_provider:PlainScriptedProvider\n"
    )
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(folder)])}
