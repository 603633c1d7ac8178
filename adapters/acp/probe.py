"""Discovery for ``providers/list`` with ``probe``: is the agent there, and what does its
own ``initialize`` advertise.

The probe starts the agent with a throwaway ``HOME`` and ``TMPDIR`` (unless the entry
sets them), sends one ``initialize`` over the project's JSON-RPC connection (the kit's
:func:`~agent_bridge.adapters.kit.rpc_child.probe_rpc`), reads the
answer and stops the agent: bounded in time, silent, and nothing is written under the
user's home.  Silent is not automatic: Gemini CLI posts usage statistics from an
initialize-only run unless its settings say not to, so the throwaway home holds the
user's own settings file with the agent's quiet settings laid over it
(:func:`~agent_bridge.adapters.acp.launch.probe_home_files`).  The answer feeds the
provider's descriptor (:mod:`~agent_bridge.adapters.acp.provider`).
ACP has no way to ask whether someone is logged in, so authentication stays ``unknown``.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping

from agent_bridge import __version__ as BRIDGE_VERSION
from agent_bridge.adapters.acp import protocol as p
from agent_bridge.adapters.kit.rpc_child import probe_rpc, request_quietly
from agent_bridge.processes import ProcessSpec
from agent_bridge.rpc.connection import Connection

__all__ = ["PROBE_TIMEOUT", "probe_initialize"]

log = logging.getLogger("agent_bridge.acp")

PROBE_TIMEOUT = 14.0  # within the runtime's 15 s; node agents start slowly on a busy machine


async def probe_initialize(
    argv: tuple[str, ...],
    env: Mapping[str, str],
    *,
    private_home: bool = True,
    home_files: Mapping[str, bytes] | None = None,
    home_envs: tuple[str, ...] = (),
    timeout: float = PROBE_TIMEOUT,
) -> p.AgentInfo | None:
    """Run the agent, ask ``initialize``, stop it; the advertised info or ``None``.
    With ``private_home`` the agent gets a throwaway ``HOME`` and ``TMPDIR`` (and so do
    the variables ``home_envs``, e.g. an agent's own configuration home), holding
    ``home_files`` (relative path -> content: the user's settings, made quiet)."""
    with tempfile.TemporaryDirectory(prefix="agent-bridge-acp-") as scratch:
        probe_env = dict(env)
        if private_home:
            probe_env["HOME"] = probe_env["TMPDIR"] = scratch
            for name in home_envs:
                if name in probe_env:
                    probe_env[name] = scratch
            for relative, content in (home_files or {}).items():
                path = os.path.join(scratch, relative)
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
                with open(path, "wb") as fh:
                    fh.write(content)
        spec = ProcessSpec(argv, cwd=scratch, env=probe_env, name=f"{argv[0]} (probe)")

        async def ask(conn: Connection) -> p.AgentInfo:
            caps = p.client_capabilities(fs=False, terminal=False, elicitation=False)
            result = await request_quietly(
                conn, "initialize", p.initialize_params(BRIDGE_VERSION, caps)
            )
            return p.AgentInfo.from_result(result)

        return await probe_rpc(spec, ask, jsonrpc=True, timeout=timeout, log=log)
